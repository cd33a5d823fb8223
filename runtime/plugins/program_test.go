package plugins

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"
)

// A program's sum is remembered by its file's identity, and any change of the file, even one that keeps
// its size and modification time, is a new identity: the sum is that of the content served.
func TestReadProgramRemembersSums(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the sum is remembered on Linux only (status-change time)")
	}
	path := filepath.Join(t.TempDir(), "plugin")
	write := func(content string, mtime time.Time) {
		t.Helper()
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE, 0o755) // in place: same inode
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.WriteAt([]byte(content), 0); err != nil {
			t.Fatal(err)
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(path, mtime, mtime); err != nil {
			t.Fatal(err)
		}
	}
	want := func(content string) string {
		s := sha256.Sum256([]byte(content))
		return hex.EncodeToString(s[:])
	}
	check := func(content string) program {
		t.Helper()
		p, err := readProgram(path)
		if err != nil {
			t.Fatal(err)
		}
		if p.sum != want(content) {
			t.Fatalf("sum of %q: %s, want %s", content, p.sum, want(content))
		}
		return p
	}
	mtime := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	write("first version", mtime)
	p := check("first version")
	id, ok := programID(p.info)
	if !ok {
		t.Fatal("no identity for a file on Linux")
	}
	if sum, ok := programSums.Get(id); !ok || sum != p.sum {
		t.Fatalf("the sum was not remembered: %q %v", sum, ok)
	}
	check("first version")
	// Same size, same modification time, same inode: only the status-change time tells.
	time.Sleep(10 * time.Millisecond)
	write("other version", mtime)
	check("other version")
}

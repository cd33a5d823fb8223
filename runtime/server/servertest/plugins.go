package servertest

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/workspace-records/records/runtime/plugins"
)

// The plugins the shipped definitions name, by directory under plugins/.
var shipped = []string{"deal-rules", "signal-rules", "task-rules"}

var (
	pluginsOnce sync.Once
	shippedDir  string
	pluginsErr  error
)

// RepoDir is the repository's root directory.
func RepoDir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "..")
}

// ShippedPlugins returns a directory holding the shipped plugins (plugins/deal-rules, …) built from the
// working tree, as `make plugins` builds them. It builds once per source state: the directory is named
// by a hash of every Go file under plugins/ and of go.mod and go.sum, kept in the system's temporary
// directory and reused by later test binaries, and put in place by an atomic rename so that concurrent
// test binaries never run a half-written program.
func ShippedPlugins(t testing.TB) string {
	t.Helper()
	pluginsOnce.Do(func() { shippedDir, pluginsErr = buildShipped() })
	if pluginsErr != nil {
		t.Fatalf("build shipped plugins: %v", pluginsErr)
	}
	return shippedDir
}

// PluginsDir returns a new plugins directory of the test holding the shipped plugins (as links), for
// tests that add their own (BuildPlugin).
func PluginsDir(t testing.TB) string {
	t.Helper()
	dir := t.TempDir()
	shipped := ShippedPlugins(t)
	entries, err := os.ReadDir(shipped)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if err := os.Symlink(filepath.Join(shipped, e.Name()), filepath.Join(dir, e.Name())); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// PluginStatus returns host's status of the named plugin.
func PluginStatus(t testing.TB, host *plugins.Host, name string) plugins.Status {
	t.Helper()
	for _, st := range host.Statuses() {
		if st.Name == name {
			return st
		}
	}
	t.Fatalf("plugin %s not loaded: %+v", name, host.Statuses())
	return plugins.Status{}
}

// WaitGone waits until process pid no longer exists (or is a zombie), for at most 5 s.
func WaitGone(t testing.TB, pid int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		if err := syscall.Kill(pid, 0); err == syscall.ESRCH {
			return
		}
		// A killed child stays a zombie until reaped; go-plugin reaps its children.
		if data, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat")); err == nil && strings.Contains(string(data), ") Z ") {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Errorf("plugin process %d still running", pid)
}

func buildShipped() (string, error) {
	root := RepoDir()
	sum, err := sourceHash(root)
	if err != nil {
		return "", err
	}
	dir := filepath.Join(os.TempDir(), "records-test-plugins-"+sum[:16])
	if complete(dir) {
		return dir, nil
	}
	stage, err := os.MkdirTemp(os.TempDir(), "records-test-plugins-stage-")
	if err != nil {
		return "", fmt.Errorf("staging directory: %w", err)
	}
	defer os.RemoveAll(stage)
	for _, name := range shipped {
		cmd := exec.Command("go", "build", "-o", filepath.Join(stage, name), "./plugins/"+name)
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			return "", fmt.Errorf("go build %s: %w\n%s", name, err, out)
		}
	}
	if err := os.Rename(stage, dir); err != nil && !complete(dir) {
		return "", fmt.Errorf("put plugins in %s: %w", dir, err)
	}
	return dir, nil
}

func complete(dir string) bool {
	for _, name := range shipped {
		if st, err := os.Stat(filepath.Join(dir, name)); err != nil || st.Mode()&0o111 == 0 {
			return false
		}
	}
	return true
}

// sourceHash hashes the plugins' sources and the module files.
func sourceHash(root string) (string, error) {
	var files []string
	err := filepath.WalkDir(filepath.Join(root, "plugins"), func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && d.Name() == "bin" {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(path, ".go") {
			files = append(files, path)
		}
		return nil
	})
	if err != nil {
		return "", fmt.Errorf("walk plugins: %w", err)
	}
	sort.Strings(files)
	files = append(files, filepath.Join(root, "go.mod"), filepath.Join(root, "go.sum"))
	h := sha256.New()
	fmt.Fprintln(h, runtime.Version())
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return "", fmt.Errorf("hash %s: %w", f, err)
		}
		rel, _ := filepath.Rel(root, f)
		fmt.Fprintf(h, "%s %d\n", rel, len(data))
		h.Write(data)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

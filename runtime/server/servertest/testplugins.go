package servertest

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// BuildPlugin builds the plugin program in package pkg (a path from the repository's root, such as
// "./runtime/server/testdata/chaos-rules") into dir/name and returns that path. The program is written
// beside it and renamed into place, so that a build replacing one that is running never writes into a
// running program's file.
func BuildPlugin(t testing.TB, dir, name, pkg string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	tmp := filepath.Join(dir, "."+name+".new")
	cmd := exec.Command("go", "build", "-o", tmp, pkg)
	cmd.Dir = RepoDir()
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build plugin %s from %s: %v\n%s", name, pkg, err, out)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatalf("put plugin %s in place: %v", name, err)
	}
	return path
}

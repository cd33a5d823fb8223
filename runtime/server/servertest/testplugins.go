package servertest

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// BuildPlugin puts the plugin program of package pkg (a path from the repository's root, such as
// "./runtime/server/testdata/chaos-rules") in dir/name and returns that path. The program is built once
// per source state (the package's Go files, those under plugins/, go.mod and go.sum) and kept in the
// system's temporary directory, as ShippedPlugins does; dir gets its own copy, written beside and
// renamed into place, so that a test may change or replace it and a running program's file is never
// written into.
func BuildPlugin(t testing.TB, dir, name, pkg string) string {
	t.Helper()
	return BuildPluginWith(t, dir, name, pkg, "")
}

// BuildPluginWith is BuildPlugin with go build's -ldflags (such as "-X main.version=v2"); each set of
// flags is built once per source state, as BuildPlugin's build.
func BuildPluginWith(t testing.TB, dir, name, pkg, ldflags string) string {
	t.Helper()
	built, err := buildPlugin(pkg, ldflags)
	if err != nil {
		t.Fatalf("build plugin %s from %s: %v", name, pkg, err)
	}
	path := filepath.Join(dir, name)
	tmp := filepath.Join(dir, "."+name+".new")
	if err := copyProgram(built, tmp); err != nil {
		t.Fatalf("copy plugin %s: %v", name, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatalf("put plugin %s in place: %v", name, err)
	}
	return path
}

func buildPlugin(pkg, ldflags string) (string, error) {
	root := RepoDir()
	sum, err := sourceHash(root)
	if err != nil {
		return "", err
	}
	files, err := filepath.Glob(filepath.Join(root, pkg, "*.go"))
	if err != nil {
		return "", err
	}
	sort.Strings(files)
	h := sha256.New()
	fmt.Fprintln(h, sum, pkg, ldflags)
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return "", fmt.Errorf("hash %s: %w", f, err)
		}
		fmt.Fprintf(h, "%s %d\n", filepath.Base(f), len(data))
		h.Write(data)
	}
	base := strings.NewReplacer("/", "-", ".", "").Replace(strings.Trim(pkg, "./"))
	out := filepath.Join(os.TempDir(), "records-test-plugin-"+base+"-"+hex.EncodeToString(h.Sum(nil))[:16])
	if st, err := os.Stat(out); err == nil && st.Mode()&0o111 != 0 {
		return out, nil
	}
	stage, err := os.CreateTemp(os.TempDir(), "records-test-plugin-stage-")
	if err != nil {
		return "", err
	}
	stage.Close()
	defer os.Remove(stage.Name())
	args := []string{"build", "-o", stage.Name()}
	if ldflags != "" {
		args = append(args, "-ldflags", ldflags)
	}
	cmd := exec.Command("go", append(args, pkg)...)
	cmd.Dir = root
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build: %w\n%s", err, b)
	}
	if err := os.Rename(stage.Name(), out); err != nil {
		return "", fmt.Errorf("keep the build: %w", err)
	}
	return out, nil
}

func copyProgram(from, to string) error {
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o755)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

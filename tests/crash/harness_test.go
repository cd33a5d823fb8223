package crash_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/workspace-records/records/internal/proc"
	"github.com/workspace-records/records/runtime/server/servertest"
)

// binDir holds recordsd and recordsctl built from the working tree for this test binary.
var binDir string

func TestMain(m *testing.M) {
	os.Exit(servertest.RunWithBinaries(m, proc.RunTests, &binDir, "recordsd", "recordsctl"))
}

// ctl runs recordsctl --json against db and returns its JSON output.
func ctl(t testing.TB, db string, args ...string) map[string]any {
	t.Helper()
	out, err := proc.JSON(context.Background(), filepath.Join(binDir, "recordsctl"), append([]string{"--db", db, "--definitions", servertest.DefinitionsDir(), "--json"}, args...)...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// newProcess is the recordsd under test: it keeps its address across restarts.
func newProcess(t testing.TB, args func(addr string) []string) *proc.Process {
	t.Helper()
	addr, err := proc.FreeAddr()
	if err != nil {
		t.Fatal(err)
	}
	return &proc.Process{Name: "recordsd", Path: filepath.Join(binDir, "recordsd"), Args: args(addr), Probe: "http://" + addr + "/v1", Log: &proc.Buffer{}}
}

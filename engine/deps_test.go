// Package engine_test enforces the dependency direction of DESIGN.md §2: the engine is pure.
package engine_test

import (
	"os/exec"
	"strings"
	"testing"
)

// denied lists imports no engine package may have, with the reason.
var denied = map[string]string{
	"net/http":                       "the engine produces plans; runtime/httpapi serves them",
	"database/sql":                   "the engine builds SQL text; runtime/store executes it",
	"log/slog":                       "the engine never logs",
	"os":                             "the engine reads definitions through an fs.FS only",
	"github.com/jackc/pgx/v5":        "no database driver in the engine",
	"modernc.org/sqlite":             "no database driver in the engine",
	"github.com/uptrace/bunrouter":   "routes are data in engine/route; runtime mounts them",
	"github.com/hashicorp/go-plugin": "plugins are a runtime concern",
	"github.com/workspace-records/records/runtime": "engine must not import runtime",
	"github.com/workspace-records/records/cmd":     "nothing imports cmd",
}

func TestEngineImports(t *testing.T) {
	out, err := exec.Command("go", "list", "-f", `{{.ImportPath}}{{range .Imports}} {{.}}{{end}}`, "./...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Fields(line)
		pkg := fields[0]
		for _, imp := range fields[1:] {
			for bad, why := range denied {
				if imp == bad || strings.HasPrefix(imp, bad+"/") {
					t.Errorf("%s imports %s: %s", pkg, imp, why)
				}
			}
		}
	}
}

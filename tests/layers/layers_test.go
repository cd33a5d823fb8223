package layers_test

import (
	"maps"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
)

var real = rules{layers: layers, siblings: siblings, denials: denials, isHelper: isHelper}

// TestLayers checks the module's real import graph (non-test files, transitive) against the rules.
func TestLayers(t *testing.T) {
	g := moduleGraph(t)
	for _, v := range check(g, real) {
		t.Error(v)
	}
}

// TestRulesBrokenOnPurpose adds to the real graph one import that breaks each kind of rule, and expects
// the test to fail on it, naming the chain of imports.
func TestRulesBrokenOnPurpose(t *testing.T) {
	base := moduleGraph(t)
	m := base.module
	for name, tc := range map[string]struct {
		from, to string // to is a module package when it has no dot in its first element
		want     string
	}{
		"engine imports runtime":               {"engine/field", "runtime/store", `engine/field → runtime/store: layer "engine leaves" imports layer "store" above it`},
		"config imports records":               {"runtime/config", "runtime/records", `runtime/config → runtime/records: layer "runtime leaves" imports layer "records" above it`},
		"unlisted sibling":                     {"runtime/auth", "runtime/limits", `runtime/auth → runtime/limits: both in layer "services"`},
		"engine imports net/http":              {"engine/model", "net/http", "engine/model → net/http: denied"},
		"engine reaches pgx through a library": {"gopkg.in/yaml.v3", "github.com/jackc/pgx/v5", "engine/spec → gopkg.in/yaml.v3 → github.com/jackc/pgx/v5: denied"},
		"engine imports os":                    {"engine/route", "os", "engine/route → os: denied (the engine reads definitions through an fs.FS only)"},
		"recordsctl imports httpapi again":     {"cmd/recordsctl", "runtime/httpapi", "cmd/recordsctl → runtime/httpapi: denied"},
		"program imports a test helper":        {"tools/bench", "runtime/server/servertest", "tools/bench imports the test helper runtime/server/servertest"},
		"runtime imports a test helper":        {"runtime/migrate", "engine/model/modeltest", "runtime/migrate imports the test helper engine/model/modeltest"},
		"new package in no layer":              {"runtime/records", "runtime/journal", "runtime/journal is in no layer"},
		"plugin program imports the engine":    {"plugins/deal-rules", "engine/field", "plugins/deal-rules → engine/field: denied"},
		"httpapi builds SQL":                   {"runtime/httpapi", "engine/sqlgen", "runtime/httpapi → engine/sqlgen: denied"},
		"sdk imports definitions":              {"plugins/sdk", "definitions", `plugins/sdk → definitions: both in layer "contract and data"`},
	} {
		t.Run(name, func(t *testing.T) {
			g := graph{module: m, imports: maps.Clone(base.imports)}
			from, to := full(m, tc.from), full(m, tc.to)
			g.imports[from] = append(slices.Clone(g.imports[from]), to)
			if _, ok := g.imports[to]; !ok {
				g.imports[to] = nil
			}
			got := check(g, real)
			if !slices.ContainsFunc(got, func(v string) bool { return strings.Contains(v, tc.want) }) {
				t.Errorf("no violation containing %q; got %q", tc.want, got)
			}
		})
	}
}

// full makes a path of the test tables an import path: a path whose first element has no dot is the
// module's, except for the few standard library packages the tables name.
func full(module, p string) string {
	first, _, _ := strings.Cut(p, "/")
	if strings.Contains(first, ".") || p == "os" || p == "fmt" || strings.HasPrefix(p, "net/") {
		return p
	}
	return module + "/" + p
}

// TestCheck runs the checker on a small synthetic module whose rules have the shape of the real table.
func TestCheck(t *testing.T) {
	const m = "example.com/m"
	mini := rules{
		layers: []layer{
			{"commands", pkgs("./cmd/...")},
			{"server", pkgs("./runtime/server", "./runtime/server/servertest")},
			{"http", pkgs("./runtime/httpapi")},
			{"records", pkgs("./runtime/records")},
			{"services", pkgs("./runtime/auth", "./runtime/limits", "./runtime/idempotency")},
			{"store", pkgs("./runtime/store")},
			{"engine planners", pkgs("./engine/sqlgen", "./engine/model/modeltest")},
			{"engine model", pkgs("./engine/model")},
		},
		siblings: []edge{{"./runtime/auth", "./runtime/limits"}, {"./runtime/server/servertest", "./runtime/server"}},
		denials: []denial{
			{"./engine/...", pkgs("net/http", "./runtime/..."), reach, "pure"},
			{"./engine/...", pkgs("os"), direct, "fs.FS only"},
			{"./runtime/httpapi", pkgs("./runtime/store", "./engine/sqlgen"), direct, "httpapi goes through records"},
		},
		isHelper: isHelper,
	}
	// base keeps every rule of mini.
	base := map[string][]string{
		"cmd/ctl":                   {"runtime/server", "fmt"},
		"runtime/server":            {"runtime/httpapi", "runtime/auth"},
		"runtime/server/servertest": {"runtime/server", "engine/model/modeltest"},
		"runtime/httpapi":           {"runtime/records", "net/http"},
		"runtime/records":           {"runtime/store", "runtime/limits", "engine/sqlgen"},
		"runtime/auth":              {"runtime/limits", "runtime/store"},
		"runtime/limits":            {"runtime/store"},
		"runtime/idempotency":       {"runtime/store"},
		"runtime/store":             {"engine/sqlgen", "os"},
		"engine/sqlgen":             {"engine/model"},
		"engine/model":              {"fmt"},
		"engine/model/modeltest":    {"engine/model"},
		"fmt":                       {"os"},
		"os":                        nil,
		"net/http":                  {"fmt"},
	}
	for _, tc := range []struct {
		name string
		add  [][2]string // edges importer → imported added to base
		drop string      // a package removed from base
		want []string    // the violations, each a part of one message
	}{
		{name: "clean"},
		{name: "lower layer imports a higher one", add: [][2]string{{"runtime/store", "runtime/records"}},
			want: []string{`runtime/store → runtime/records: layer "store" imports layer "records" above it`}},
		{name: "reach through a lower package", add: [][2]string{{"engine/model", "runtime/idempotency"}},
			want: []string{
				`engine/model → runtime/idempotency: layer "engine model" imports layer "services" above it`,
				"engine/model → runtime/idempotency: denied (pure)",
				"engine/model → runtime/idempotency → runtime/store: denied (pure)",
			}},
		{name: "denied package reached through a library", add: [][2]string{{"engine/model", "example.com/lib"}, {"example.com/lib", "net/http"}},
			want: []string{"engine/model → example.com/lib → net/http: denied (pure)"}},
		{name: "direct denial: os through fmt is allowed"},
		{name: "direct denial: os imported", add: [][2]string{{"engine/sqlgen", "os"}},
			want: []string{"engine/sqlgen → os: denied (fs.FS only)"}},
		{name: "one-line rule: httpapi imports store", add: [][2]string{{"runtime/httpapi", "runtime/store"}},
			want: []string{"runtime/httpapi → runtime/store: denied (httpapi goes through records)"}},
		{name: "unlisted sibling", add: [][2]string{{"runtime/idempotency", "runtime/auth"}},
			want: []string{`runtime/idempotency → runtime/auth: both in layer "services", and the edge is not listed in siblings`}},
		{name: "test helper imported by a program", add: [][2]string{{"cmd/ctl", "runtime/server/servertest"}},
			want: []string{"cmd/ctl → runtime/server/servertest: cmd/ctl imports the test helper runtime/server/servertest"}},
		{name: "test helper imported by the runtime", add: [][2]string{{"runtime/idempotency", "engine/model/modeltest"}},
			want: []string{"runtime/idempotency → engine/model/modeltest: runtime/idempotency imports the test helper"}},
		{name: "listed sibling", add: [][2]string{{"runtime/server/servertest", "runtime/server"}}},
		{name: "package in no layer", add: [][2]string{{"runtime/records", "runtime/audit"}},
			want: []string{"runtime/audit is in no layer"}},
		{name: "pattern that matches nothing", drop: "runtime/idempotency",
			want: []string{`layer "services": ./runtime/idempotency matches no package`}},
		{name: "sibling edge that is no import", drop: "runtime/auth",
			want: []string{"layer \"services\": ./runtime/auth matches no package", "sibling edge ./runtime/auth → ./runtime/limits"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := graph{module: m, imports: map[string][]string{}}
			add := func(from, to string) {
				from, to = full(m, from), full(m, to)
				g.imports[from] = append(g.imports[from], to)
				if _, ok := g.imports[to]; !ok {
					g.imports[to] = nil
				}
			}
			for from, tos := range base {
				if from == tc.drop {
					continue
				}
				g.imports[full(m, from)] = nil
				for _, to := range tos {
					if to != tc.drop {
						add(from, to)
					}
				}
			}
			for _, e := range tc.add {
				add(e[0], e[1])
			}
			got := check(g, mini)
			for _, w := range tc.want {
				if !slices.ContainsFunc(got, func(v string) bool { return strings.Contains(v, w) }) {
					t.Errorf("missing a violation containing %q", w)
				}
			}
			if len(got) != len(tc.want) {
				t.Errorf("got %d violations, want %d:\n%s", len(got), len(tc.want), strings.Join(got, "\n"))
			}
		})
	}
}

// TestMatch pins the pattern syntax of the rules.
func TestMatch(t *testing.T) {
	g := graph{module: "example.com/m"}
	for _, tc := range []struct {
		pattern, path string
		want          bool
	}{
		{"./runtime/store", "example.com/m/runtime/store", true},
		{"./runtime/store", "example.com/m/runtime/store/postgres", false},
		{"./runtime/store/...", "example.com/m/runtime/store", true},
		{"./runtime/store/...", "example.com/m/runtime/store/postgres", true},
		{"./runtime/store/...", "example.com/m/runtime/storex", false},
		{"./runtime/...", "runtime/debug", false}, // the module's runtime/ is not the standard library's
		{"./plugins/...-rules", "example.com/m/plugins/deal-rules", true},
		{"./plugins/...-rules", "example.com/m/plugins/sdk", false},
		{"./...", "example.com/m", true},
		{"./...", "example.com/mx/a", false},
		{"net/http", "net/http", true},
		{"net/http", "net/http/httptest", false},
		{"github.com/jackc/pgx/v5/...", "github.com/jackc/pgx/v5/pgxpool", true},
		{"os", "os/exec", false},
	} {
		if got := g.match(tc.pattern, tc.path); got != tc.want {
			t.Errorf("match(%q, %q) = %v, want %v", tc.pattern, tc.path, got, tc.want)
		}
	}
	for rel, want := range map[string]bool{
		"runtime/server/servertest": true, "runtime/server/servertest/x": true, "engine/model/modeltest": true,
		"plugins/sdk/sdktest": true, "tests/cluster": false, "internal/proc": false, "engine/test": false,
	} {
		if got := isHelper(rel); got != want {
			t.Errorf("isHelper(%q) = %v, want %v", rel, got, want)
		}
	}
}

// moduleGraph returns the import graph of the module's packages and everything they reach, from
// `go list -deps` (non-test files: what the programs link).
var moduleGraph = func() func(t *testing.T) graph {
	var once sync.Once
	var g graph
	var err error
	var out []byte
	return func(t *testing.T) graph {
		t.Helper()
		once.Do(func() {
			var mod []byte
			if mod, err = exec.Command("go", "list", "-m", "-f", "{{.Path}} {{.Dir}}").Output(); err != nil {
				return
			}
			path, dir, _ := strings.Cut(strings.TrimSpace(string(mod)), " ")
			cmd := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}}{{range .Imports}} {{.}}{{end}}", "./...")
			cmd.Dir = dir
			if out, err = cmd.Output(); err != nil {
				return
			}
			g = graph{module: path, imports: map[string][]string{}}
			for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
				f := strings.Fields(line)
				g.imports[f[0]] = f[1:]
			}
		})
		if err != nil {
			if ee, ok := err.(*exec.ExitError); ok {
				t.Fatalf("go list: %v\n%s", err, ee.Stderr)
			}
			t.Fatalf("go list: %v", err)
		}
		return g
	}
}()

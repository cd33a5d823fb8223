package cmd_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/workspace-records/records/runtime/server/servertest"
)

// fiveMistakes is a resource with five different mistakes, one a line: an unknown type, a value of the
// wrong type (meta-schema), an unknown key (meta-schema), a reference to an unknown resource
// (cross-reference) and a formula that does not type-check (CEL: decimal * int).
const fiveMistakes = `version: 1
name: widgets
label: Widget
group: custom
operations: [list, query, get, create, update, archive, restore]
fields:
  name: {type: string, required: true}
  size: {type: strng}
  weight: {type: decimal, minimum: lots}
  maker_id: {type: reference, target: makers}
  total: {type: decimal, formula: "weight * 2"}
  colour: {type: string, colour: red}
`

// TestLintPointsAtEveryMistake: recordsctl definitions lint prints one file:line:col: path: message line
// on stderr per mistake, all at once, with the file named under the directory as given, and exits 1;
// --json lists the same problems; recordsd refuses to start with the same lines.
func TestLintPointsAtEveryMistake(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	defs := filepath.Join(dir, "defs")
	if err := os.CopyFS(defs, os.DirFS(servertest.DefinitionsDir())); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(defs, "resources", "widgets.yaml"), []byte(fiveMistakes), 0o644); err != nil {
		t.Fatal(err)
	}
	file := "./defs/resources/widgets.yaml"
	want := []string{
		file + `:8:16: fields.size.type: value must be one of "string", `,
		file + `:9:36: fields.weight.minimum: expected number, but got string`,
		file + `:10:39: fields.maker_id.target: unknown resource "makers"`,
		file + `:11:43: fields.total.formula: found no matching overload for '_*_' applied to '(double, int)'`,
		file + `:12:26: fields.colour: additionalProperties 'colour' not allowed`,
	}
	located := regexp.MustCompile(`^[^:]+:\d+:\d+: `)
	check := func(what, stderr string, code int, summary string) {
		t.Helper()
		if code != 1 {
			t.Errorf("%s: status %d, want 1", what, code)
		}
		var lines []string
		for _, l := range strings.Split(strings.TrimSpace(stderr), "\n") {
			if located.MatchString(l) {
				lines = append(lines, l)
			}
		}
		if len(lines) != len(want) {
			t.Errorf("%s: %d file:line:col lines, want %d:\n%s", what, len(lines), len(want), stderr)
		}
		for i, w := range want {
			if i < len(lines) && !strings.HasPrefix(lines[i], w) {
				t.Errorf("%s: line %d\n got %s\nwant %s…", what, i+1, lines[i], w)
			}
		}
		if !strings.Contains(stderr, summary) {
			t.Errorf("%s: stderr has no %q:\n%s", what, summary, stderr)
		}
	}

	stdout, stderr, code := exe(t, "recordsctl", dir, "definitions", "lint", "./defs")
	check("lint", stderr, code, "recordsctl: definitions lint: 5 problems in the definitions in ./defs")
	if stdout != "" {
		t.Errorf("lint printed on stdout: %q", stdout)
	}

	stdout, stderr, code = exe(t, "recordsctl", dir, "--json", "definitions", "lint", "./defs")
	check("lint --json", stderr, code, ": 5 problems in the definitions in ./defs")
	var out struct {
		OK       *bool    `json:"ok"`
		Errors   []string `json:"errors"`
		Problems []struct {
			File         string
			Line, Column int
			Path, Code   string
		} `json:"problems"`
	}
	if err := json.Unmarshal([]byte(stdout), &out); err != nil || out.OK == nil || *out.OK || len(out.Errors) != 5 || len(out.Problems) != 5 {
		t.Fatalf("lint --json printed %s (%v)", stdout, err)
	}
	if p := out.Problems[2]; p.File != file || p.Line != 10 || p.Column != 39 || p.Path != "fields.maker_id.target" || p.Code != "reference_not_found" {
		t.Errorf("problems[2] %+v", p)
	}

	// The server refuses the same definitions with the same lines.
	_, stderr, code = exe(t, "recordsd", dir, "serve", "--addr", "127.0.0.1:0", "--db", "sqlite:"+filepath.Join(dir, "r.db"), "--definitions", "./defs")
	check("recordsd serve", stderr, code, "recordsd: definitions:")

	// Fixed, the same directory is valid.
	if err := os.Remove(filepath.Join(defs, "resources", "widgets.yaml")); err != nil {
		t.Fatal(err)
	}
	if stdout, stderr, code := exe(t, "recordsctl", dir, "--json", "definitions", "lint", "./defs"); code != 0 || strings.TrimSpace(stdout) != `{"ok":true}` {
		t.Errorf("lint of the shipped definitions: status %d, %s %s", code, stdout, stderr)
	}
}

// A syntax error points at its line too; the other files' problems are still listed.
func TestLintSyntaxAndOtherFiles(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := os.CopyFS(dir, os.DirFS(servertest.DefinitionsDir())); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "resources", "widgets.yaml"), []byte("version: 1\nname: widgets\nfields:\n  a: {type: [string}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	roles, err := os.ReadFile(filepath.Join(dir, "roles.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "roles.yaml"), append(roles, "  extra: {label: X, permissions: [], resources: {}, colour: red}\n"...), 0o644); err != nil {
		t.Fatal(err)
	}
	n := strings.Count(string(roles), "\n") + 1
	_, stderr, code := exe(t, "recordsctl", dir, "definitions", "lint", dir)
	for _, w := range []string{
		filepath.Join(dir, "resources", "widgets.yaml") + ":4:3: yaml: ",
		filepath.Join(dir, "roles.yaml") + ":" + itoa(n) + ":53: roles.extra: additionalProperties 'colour' not allowed",
	} {
		if !strings.Contains(stderr, "\n"+w) && !strings.HasPrefix(stderr, w) {
			t.Errorf("no line starting %q in:\n%s", w, stderr)
		}
	}
	if code != 1 || !strings.Contains(stderr, ": 2 problems in the definitions in "+dir) {
		t.Errorf("status %d, stderr:\n%s", code, stderr)
	}
}

func itoa(n int) string {
	b, _ := json.Marshal(n)
	return string(b)
}

package model_test

import (
	"io/fs"
	"strings"
	"testing"
	"testing/fstest"

	"gopkg.in/yaml.v3"

	"github.com/workspace-records/records/definitions"
	"github.com/workspace-records/records/engine/model"
	"github.com/workspace-records/records/engine/spec"
)

// located loads and compiles the shipped definitions with files replaced, as recordsctl definitions lint
// does (Compile runs on a set the meta-schema refused in part, not on one with a file missing), and
// returns every problem as file:line:col: path: message.
func located(t *testing.T, files map[string]string) []string {
	t.Helper()
	set, errs := spec.Load(shippedWith(t, files))
	if !set.Partial {
		_, cerrs := model.Compile(set)
		errs = append(errs, cerrs...)
	}
	return errs.Located("")
}

// TestCompilePositions: cross-reference and formula problems point at the line and column of the value
// (for a formula, of the token inside the expression, whatever the scalar's style), and a value the
// meta-schema refused is reported once.
func TestCompilePositions(t *testing.T) {
	const file = "resources/widgets.yaml"
	// widget's fields start on line 7; each case's lines follow from line 8.
	for _, tc := range []struct {
		name  string
		lines string
		want  []string
	}{
		{"unknown target",
			"  owner: {type: reference, target: people}\n",
			[]string{`:8:36: fields.owner.target: unknown resource "people"`}},
		{"unknown target, block mapping",
			"  owner:\n    type: reference\n    target: people\n",
			[]string{`:10:13: fields.owner.target: unknown resource "people"`}},
		{"search names an unknown field",
			"search: [name, nope]\n",
			[]string{`:8:16: search[1]: unknown field "nope"`}},
		{"bad default",
			"  n: {type: integer, maximum: 5, default: 9}\n",
			[]string{`:8:43: fields.n.default: must be at most 5`}},
		{"reserved field key: the key",
			"  created_at:\n    type: string\n",
			[]string{`:8:3: fields.created_at: is reserved`}},
		{"formula, plain",
			"  n: {type: integer}\n  twice: {type: integer, formula: n * m}\n",
			[]string{`:9:39: fields.twice.formula: undeclared reference to 'm'`}},
		{"formula, type error",
			"  amount: {type: decimal}\n  p: {type: integer}\n  w: {type: decimal, formula: \"amount * p / 100\"}\n",
			[]string{`:10:39: fields.w.formula: found no matching overload for '_*_' applied to '(double, int)'`}},
		{"formula, single-quoted with a quote doubled",
			"  s: {type: string, formula: 'name + ''x'' + nope'}\n",
			[]string{`:8:46: fields.s.formula: undeclared reference to 'nope'`}},
		{"formula, double-quoted with escapes",
			"  s: {type: string, formula: \"name + \\\"\\u00e9\\\" + nope\"}\n",
			[]string{`:8:51: fields.s.formula: undeclared reference to 'nope'`}},
		{"formula, literal block: the expression's second line",
			"  l:\n    type: integer\n    formula: |\n      1 +\n        nope\n",
			[]string{`:12:9: fields.l.formula: undeclared reference to 'nope'`}},
		{"formula, folded block",
			"  l:\n    type: integer\n    formula: >\n      1 +\n      nope\n",
			[]string{`:12:7: fields.l.formula: undeclared reference to 'nope'`}},
		{"formula, plain over two lines",
			"  l:\n    type: integer\n    formula: 1 +\n      nope\n",
			[]string{`:11:7: fields.l.formula: undeclared reference to 'nope'`}},
		{"formula, every problem of the expression",
			"  l: {type: integer, formula: \"a + b\"}\n",
			[]string{`:8:32: fields.l.formula: undeclared reference to 'a'`, `:8:36: fields.l.formula: undeclared reference to 'b'`}},
		{"a type the meta-schema refused: reported once, formulas reading it not failed",
			"  bad: {type: strin, default: 3}\n  f: {type: integer, formula: \"bad + 1\"}\n",
			[]string{`:8:15: fields.bad.type: value must be one of `}},
		{"a repeated field key and the rest of the file at once",
			"  owner: {type: reference, target: people}\n  name: {type: text}\n",
			[]string{`:9:3: duplicate key "name"`, `:8:36: fields.owner.target: unknown resource "people"`}},
		{"the meta-schema's problems and the cross-references at once",
			"  owner: {type: reference, target: people}\n  size: {type: string, max_length: many}\n",
			[]string{`:9:36: fields.size.max_length: expected integer, but got string`, `:8:36: fields.owner.target: unknown resource "people"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := located(t, map[string]string{file: widget + tc.lines})
			if len(got) != len(tc.want) {
				t.Errorf("%d problems, want %d:\n%s", len(got), len(tc.want), strings.Join(got, "\n"))
			}
			for i, w := range tc.want {
				if i < len(got) && !strings.HasPrefix(got[i], file+w) {
					t.Errorf("problem %d:\n got %s\nwant %s…", i, got[i], file+w)
				}
			}
		})
	}
}

// TestCompilePositionsOtherFiles: problems found across files point into the file they are about.
func TestCompilePositionsOtherFiles(t *testing.T) {
	roles := "version: 1\nroles:\n  x:\n    label: X\n    permissions: []\n    resources: {gizmos: read}\n"
	got := located(t, map[string]string{"roles.yaml": roles,
		"resources/widgets.yaml": widget + "associations:\n  deals: {target: deals, inverse: widgets}\n"})
	want := []string{
		`resources/widgets.yaml:9:35: associations.deals.inverse: deals has no association "widgets"`,
		`roles.yaml:6:25: roles.x.resources.gizmos: unknown resource`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("got:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// A file that is not YAML leaves the set partial: cross-references to what it declares are not checked
// (they would only say it is missing).
func TestCompileNotOnPartialSet(t *testing.T) {
	set, errs := spec.Load(shippedWith(t, map[string]string{"resources/deals.yaml": "name: [deals\n"}))
	if !set.Partial || len(errs) != 1 || errs[0].Line != 1 || errs[0].File != "resources/deals.yaml" {
		t.Errorf("partial %v, problems %v (line %d)", set.Partial, errs, errs[0].Line)
	}
}

// TestCompileRefusedValues: every value of a resource replaced, in turn, by values the meta-schema
// refuses (a number for a string, a string for a number, a list, an unknown key) still loads and
// compiles without a panic, and every problem names its file and line.
func TestCompileRefusedValues(t *testing.T) {
	rich := widget + `  amount: {type: decimal, minimum: 0, maximum: 100, sortable: true}
  p: {type: integer, default: 3}
  w: {type: decimal, formula: "amount * 2.0"}
  kind: {type: string, options: [a, b], default: a}
  tag_id: {type: reference, target: tags, required: true}
search: [name]
associations:
  tags: {target: tags, label: Tags, attributes: {note: {type: string, max_length: 20}}}
`
	tags, err := fs.ReadFile(definitions.FS, "resources/tags.yaml")
	if err != nil {
		t.Fatal(err)
	}
	plans, err := fs.ReadFile(definitions.FS, "plans.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var doc yaml.Node
	if err := yaml.Unmarshal([]byte(rich), &doc); err != nil {
		t.Fatal(err)
	}
	var scalars []*yaml.Node
	var walk func(n *yaml.Node)
	walk = func(n *yaml.Node) {
		if n.Kind == yaml.ScalarNode {
			scalars = append(scalars, n)
		}
		for _, c := range n.Content {
			walk(c)
		}
	}
	walk(&doc)
	for i, n := range scalars {
		old := *n
		for _, bad := range []yaml.Node{
			{Kind: yaml.ScalarNode, Tag: "!!int", Value: "42"},
			{Kind: yaml.ScalarNode, Tag: "!!str", Value: "x y"},
			{Kind: yaml.SequenceNode, Content: []*yaml.Node{{Kind: yaml.ScalarNode, Tag: "!!str", Value: "a"}}},
			{Kind: yaml.MappingNode, Content: []*yaml.Node{{Kind: yaml.ScalarNode, Tag: "!!str", Value: "colour"}, {Kind: yaml.ScalarNode, Tag: "!!str", Value: "red"}}},
		} {
			*n = bad
			text, err := yaml.Marshal(&doc)
			*n = old
			if err != nil {
				t.Fatal(err)
			}
			fsys := fstest.MapFS{
				"resources/widgets.yaml": {Data: text},
				"resources/tags.yaml":    {Data: tags},
				"roles.yaml":             {Data: []byte(fuzzRoles)},
				"plans.yaml":             {Data: plans},
			}
			set, errs := spec.Load(fsys)
			if !set.Partial {
				_, cerrs := model.Compile(set)
				errs = append(errs, cerrs...)
			}
			for _, e := range errs {
				if e.File == "" || e.Line == 0 {
					t.Errorf("scalar %d (%q) replaced: %q is not placed\n%s", i, old.Value, e.Located(""), text)
				}
			}
		}
	}
}

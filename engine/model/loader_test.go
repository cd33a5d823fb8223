package model_test

import (
	"io/fs"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/workspace-records/records/definitions"
	"github.com/workspace-records/records/engine/model"
	"github.com/workspace-records/records/engine/spec"
)

// shippedWith returns the shipped definitions with files replaced or added.
func shippedWith(t *testing.T, files map[string]string) fs.FS {
	t.Helper()
	m := fstest.MapFS{}
	err := fs.WalkDir(definitions.FS, ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := fs.ReadFile(definitions.FS, path)
		m[path] = &fstest.MapFile{Data: data}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	for name, text := range files {
		if text == "" {
			delete(m, name)
			continue
		}
		m[name] = &fstest.MapFile{Data: []byte(text)}
	}
	return m
}

func load(fsys fs.FS) []string {
	set, errs := spec.Load(fsys)
	if len(errs) == 0 {
		_, errs = model.Compile(set)
	}
	out := make([]string, len(errs))
	for i, e := range errs {
		out[i] = e.Error()
	}
	return out
}

const widget = `version: 1
name: widgets
label: Widget
group: custom
operations: [list, query, get, create, update, archive, restore]
fields:
  name: {type: string, required: true, sortable: true}
`

func TestLoaderErrors(t *testing.T) {
	cases := []struct {
		name  string
		files map[string]string
		want  []string // each must appear as a line prefix of some error
	}{
		{"unknown key", map[string]string{"resources/widgets.yaml": widget + "colour: red\n"},
			[]string{"resources/widgets.yaml: additionalProperties 'colour' not allowed"}},
		{"unknown field key", map[string]string{"resources/widgets.yaml": widget + "  size: {type: string, maxlen: 3}\n"},
			[]string{"resources/widgets.yaml: fields.size: additionalProperties 'maxlen' not allowed"}},
		{"bad type", map[string]string{"resources/widgets.yaml": widget + "  size: {type: float}\n"},
			[]string{"resources/widgets.yaml: fields.size.type:"}},
		{"name differs from file", map[string]string{"resources/widgets.yaml": strings.Replace(widget, "name: widgets", "name: gadgets", 1)},
			[]string{`resources/widgets.yaml: name: name "gadgets" must equal the file name "widgets"`}},
		{"relation name taken by a field", map[string]string{"resources/widgets.yaml": widget + "  company: {type: string}\n  company_id: {type: reference, target: companies}\n"},
			[]string{`resources/widgets.yaml: fields.company_id: its relation name "company" (for expand and filter paths) is also a field of widgets`}},
		{"unknown target", map[string]string{"resources/widgets.yaml": widget + "  owner: {type: reference, target: people}\n"},
			[]string{`resources/widgets.yaml: fields.owner.target: unknown resource "people"`}},
		{"reference without target", map[string]string{"resources/widgets.yaml": widget + "  owner: {type: reference}\n"},
			[]string{"resources/widgets.yaml: fields.owner: missing properties: 'target'"}},
		{"text sortable", map[string]string{"resources/widgets.yaml": widget + "  notes: {type: text, sortable: true}\n"},
			[]string{"resources/widgets.yaml: fields.notes"}},
		{"search on a number", map[string]string{"resources/widgets.yaml": widget + "  n: {type: integer}\nsearch: [n, missing]\n"},
			[]string{`resources/widgets.yaml: search[0]: field "n" is integer`, `resources/widgets.yaml: search[1]: unknown field "missing"`}},
		{"reserved resource name", map[string]string{"resources/events.yaml": strings.NewReplacer("widgets", "events", "Widget", "Event").Replace(widget)},
			[]string{"resources/events.yaml: name: is reserved: /v1/events is a route of the API itself"}},
		{"association named after a record route", map[string]string{"resources/widgets.yaml": widget + "associations:\n  history: {target: tags}\n"},
			[]string{"resources/widgets.yaml: associations.history: is a reserved path segment"}},
		{"managed name", map[string]string{"resources/widgets.yaml": widget + "  created_at: {type: datetime}\n"},
			[]string{"resources/widgets.yaml: fields.created_at: is reserved"}},
		{"default outside options", map[string]string{"resources/widgets.yaml": widget + "  size: {type: string, options: [s, m], default: xl}\n"},
			[]string{"resources/widgets.yaml: fields.size.default"}},
		{"inverse missing", map[string]string{"resources/widgets.yaml": widget + "associations:\n  deals: {target: deals, inverse: widgets}\n"},
			[]string{`resources/widgets.yaml: associations.deals.inverse: deals has no association "widgets"`}},
		{"required cycle", map[string]string{
			"resources/widgets.yaml": widget + "  gadget_id: {type: reference, target: gadgets, required: true}\n",
			"resources/gadgets.yaml": strings.NewReplacer("widgets", "gadgets", "Widget", "Gadget").Replace(widget) + "  widget_id: {type: reference, target: widgets, required: true}\n"},
			[]string{"resources/widgets.yaml: fields.gadget_id: required references form a cycle"}},
		{"role names unknown resource", map[string]string{"roles.yaml": "version: 1\nroles:\n  x: {label: X, permissions: [], resources: {gizmos: read}}\n"},
			[]string{"roles.yaml: roles.x.resources.gizmos: unknown resource"}},
		{"formula unknown field", map[string]string{"resources/widgets.yaml": widget + "  n: {type: integer}\n  twice: {type: integer, formula: \"n * m\"}\n"},
			[]string{"resources/widgets.yaml: fields.twice.formula: undeclared reference to 'm'"}},
		{"formula type error", map[string]string{"resources/widgets.yaml": widget + "  amount: {type: decimal}\n  p: {type: integer}\n  w: {type: decimal, formula: \"amount * p / 100\"}\n"},
			[]string{"resources/widgets.yaml: fields.w.formula: found no matching overload for '_*_' applied to '(double, int)'"}},
		{"formula result type", map[string]string{"resources/widgets.yaml": widget + "  n: {type: integer}\n  label: {type: string, formula: \"n + 1\"}\n"},
			[]string{"resources/widgets.yaml: fields.label.formula: yields int, which a string field cannot hold"}},
		{"formula reads formula", map[string]string{"resources/widgets.yaml": widget + "  n: {type: integer}\n  a: {type: integer, formula: \"n + 1\"}\n  b: {type: integer, formula: \"a + 1\"}\n"},
			[]string{`resources/widgets.yaml: fields.b.formula: reads formula field "a"`}},
		{"formula required", map[string]string{"resources/widgets.yaml": widget + "  n: {type: integer}\n  a: {type: integer, formula: \"n + 1\", required: true}\n"},
			[]string{"resources/widgets.yaml: fields.a: a formula field is computed"}},
		{"unique text", map[string]string{"resources/widgets.yaml": widget + "  notes: {type: text, unique: true}\n"},
			[]string{"resources/widgets.yaml: fields.notes.unique: a text field cannot be unique"}},
		{"unique boolean", map[string]string{"resources/widgets.yaml": widget + "  on: {type: boolean, unique: true}\n"},
			[]string{"resources/widgets.yaml: fields.on.unique: a boolean field cannot be unique"}},
		{"unique with default", map[string]string{"resources/widgets.yaml": widget + "  code: {type: string, unique: true, default: x}\n"},
			[]string{"resources/widgets.yaml: fields.code.unique: a unique field cannot have a default"}},
		{"unique formula", map[string]string{"resources/widgets.yaml": widget + "  n: {type: integer}\n  m: {type: integer, unique: true, formula: \"n + 1\"}\n"},
			[]string{"resources/widgets.yaml: fields.m.unique: a formula field cannot be unique"}},
		{"unique attribute", map[string]string{"resources/widgets.yaml": widget + "associations:\n  tags: {target: tags, attributes: {code: {type: string, unique: true}}}\n"},
			[]string{"resources/widgets.yaml: associations.tags.attributes.code: association attributes cannot be sortable, filterable or unique"}},
		{"plans missing", map[string]string{"plans.yaml": ""},
			[]string{"plans.yaml: open plans.yaml"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := load(shippedWith(t, c.files))
			for _, w := range c.want {
				found := false
				for _, g := range got {
					found = found || strings.HasPrefix(g, w)
				}
				if !found {
					t.Errorf("want an error starting %q; got:\n%s", w, strings.Join(got, "\n"))
				}
			}
		})
	}
}

// Every problem of a file is reported at once, not just the first.
func TestLoaderReportsAll(t *testing.T) {
	bad := widget + "  a: {type: reference, target: nope1}\n  b: {type: reference, target: nope2}\n"
	got := load(shippedWith(t, map[string]string{"resources/widgets.yaml": bad}))
	if len(got) != 2 {
		t.Errorf("want 2 errors, got %d:\n%s", len(got), strings.Join(got, "\n"))
	}
}

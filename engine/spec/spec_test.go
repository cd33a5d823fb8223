package spec_test

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/workspace-records/records/engine/field"
	"github.com/workspace-records/records/engine/spec"
)

const (
	widgets = `version: 1
name: widgets
label: Widget
group: custom
operations: [list, query, get, create, update, archive, restore]
search: [name]
fields:
  name: {type: string, label: Name, required: true, sortable: true, max_length: 80}
  size: {type: string, options: [s, m, l], default: m}
  weight: {type: decimal, minimum: 0}
associations:
  parts: {target: widgets, label: Parts}
`
	roles = `version: 1
roles:
  admin: {label: Admin, permissions: [api.access], resources: {"*": write}, record_rules: {"*": all}}
  viewer:
    label: Viewer
    permissions: []
    resources: {"*": read}
    field_rules: {widgets: {weight: hidden}}
`
	plans = `version: 1
plans:
  free: {label: Free, api_access: false, limits: {key_per_minute: 0, key_per_hour: 0, workspace_per_minute: 0, monthly_quota: 0}}
  big: {label: Big, api_access: true, features: [custom_data_models], limits: {key_per_minute: 10, key_per_hour: 100, workspace_per_minute: 20, monthly_quota: null}}
`
)

// definitions returns a small valid definitions tree with files replaced, added or (with "") removed.
func definitions(files map[string]string) fstest.MapFS {
	m := fstest.MapFS{
		"resources/widgets.yaml": {Data: []byte(widgets)},
		"roles.yaml":             {Data: []byte(roles)},
		"plans.yaml":             {Data: []byte(plans)},
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

func TestLoadDecodes(t *testing.T) {
	set, errs := spec.Load(definitions(nil))
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	if len(set.Resources) != 1 || len(set.Roles) != 2 || len(set.Plans) != 2 {
		t.Fatalf("%d resources, %d roles, %d plans", len(set.Resources), len(set.Roles), len(set.Plans))
	}
	r := set.Resources[0]
	if r.File != "resources/widgets.yaml" || r.Name != "widgets" || r.Version != 1 || r.Group != "custom" ||
		len(r.Operations) != 7 || !reflect.DeepEqual(r.Search, []string{"name"}) {
		t.Errorf("resource %+v", r)
	}
	var keys []string
	for _, f := range r.Fields {
		keys = append(keys, f.Key)
	}
	if !reflect.DeepEqual(keys, []string{"name", "size", "weight"}) {
		t.Errorf("fields %v, want the file's order", keys)
	}
	name, size, weight := r.Fields[0], r.Fields[1], r.Fields[2]
	if !name.Required || !name.Sortable || name.MaxLength == nil || *name.MaxLength != 80 || name.HasDefault || name.Label != "Name" {
		t.Errorf("name %+v", name)
	}
	if !size.HasDefault || size.Default != "m" || !reflect.DeepEqual(size.Options, []string{"s", "m", "l"}) {
		t.Errorf("size %+v", size)
	}
	if weight.Minimum == nil || *weight.Minimum != 0 || weight.Maximum != nil {
		t.Errorf("weight minimum %v maximum %v", weight.Minimum, weight.Maximum)
	}
	if len(r.Associations) != 1 || r.Associations[0].Name != "parts" || r.Associations[0].Target != "widgets" {
		t.Errorf("associations %+v", r.Associations)
	}
	if v := set.Roles[1]; v.Name != "viewer" || v.Resources["*"] != "read" || v.FieldRules["widgets"]["weight"] != "hidden" {
		t.Errorf("roles[1] %+v, want viewer in file order", v)
	}
	free, big := set.Plans[0], set.Plans[1]
	if free.Name != "free" || free.APIAccess || free.Limits.KeyPerMinute == nil || *free.Limits.KeyPerMinute != 0 {
		t.Errorf("free %+v", free)
	}
	if !big.APIAccess || big.Limits.MonthlyQuota != nil || *big.Limits.KeyPerHour != 100 || !big.HasFeature("custom_data_models") || free.HasFeature("custom_data_models") {
		t.Errorf("big %+v (null monthly_quota is unlimited: nil)", big)
	}
}

func TestDefaultIsJSON(t *testing.T) {
	set, errs := spec.Load(definitions(map[string]string{
		"resources/widgets.yaml": strings.Replace(widgets, "weight: {type: decimal, minimum: 0}", "weight: {type: integer, default: 3}", 1)}))
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	if d := set.Resources[0].Fields[2].Default; d != json.Number("3") {
		t.Errorf("default %#v, want json.Number 3", d)
	}
}

// TestLoadErrors: every problem is an error naming its file, its line and column and the path of the
// value in the document (file:line:col: path: message), all of them at once.
func TestLoadErrors(t *testing.T) {
	for _, tc := range []struct {
		name  string
		files map[string]string
		want  []string // "file:line:col: path: message" start, each matching one error; no other error
	}{
		{"unknown key", map[string]string{"resources/widgets.yaml": widgets + "colour: red\n"},
			[]string{"resources/widgets.yaml:13:1: additionalProperties 'colour' not allowed"}},
		{"unknown field key", map[string]string{"resources/widgets.yaml": strings.Replace(widgets, "max_length: 80", "maxlen: 80", 1)},
			[]string{"resources/widgets.yaml:8:69: fields.name: additionalProperties 'maxlen' not allowed"}},
		{"wrong type", map[string]string{"resources/widgets.yaml": strings.Replace(widgets, "required: true", "required: yes please", 1)},
			[]string{"resources/widgets.yaml:8:47: fields.name.required: expected boolean, but got string"}},
		{"wrong type in roles", map[string]string{"roles.yaml": strings.Replace(roles, `{"*": read}`, `{"*": 3}`, 1)},
			[]string{`roles.yaml:7:22: roles.viewer.resources.*: value must be one of "none", "read", "write"`}},
		{"wrong type in plans", map[string]string{"plans.yaml": strings.Replace(plans, "key_per_minute: 10,", "key_per_minute: many,", 1)},
			[]string{"plans.yaml:4:96: plans.big.limits.key_per_minute: expected integer or null, but got string"}},
		{"missing required", map[string]string{"resources/widgets.yaml": strings.Replace(widgets, "label: Widget\n", "", 1)},
			[]string{"resources/widgets.yaml:1:1: missing properties: 'label'"}},
		{"missing required in a field", map[string]string{"resources/widgets.yaml": widgets[:strings.Index(widgets, "associations:")] + "  owner: {type: reference}\n"},
			[]string{"resources/widgets.yaml:11:3: fields.owner: missing properties: 'target'"}},
		{"duplicate key", map[string]string{"resources/widgets.yaml": widgets + "name: widgets\n"},
			[]string{`resources/widgets.yaml:13:1: duplicate key "name"`}},
		{"duplicate field", map[string]string{"resources/widgets.yaml": strings.Replace(widgets, "  weight:", "  size: {type: string}\n  weight:", 1)},
			[]string{`resources/widgets.yaml:10:3: duplicate key "size"`}},
		{"name differs from the file", map[string]string{"resources/widgets.yaml": strings.Replace(widgets, "name: widgets", "name: gadgets", 1)},
			[]string{`resources/widgets.yaml:2:7: name: name "gadgets" must equal the file name "widgets"`}},
		{"not YAML", map[string]string{"resources/widgets.yaml": "name: [widgets\n"},
			[]string{"resources/widgets.yaml:1:1: yaml: did not find expected ',' or ']'"}},
		{"empty file", map[string]string{"resources/widgets.yaml": "\n"},
			[]string{"resources/widgets.yaml:1:1: empty document"}},
		{"no resources", map[string]string{"resources/widgets.yaml": ""},
			[]string{"resources: no resource definitions (resources/*.yaml)"}},
		{"roles missing", map[string]string{"roles.yaml": ""},
			[]string{"roles.yaml: open roles.yaml: file does not exist"}},
		{"every problem at once", map[string]string{
			"resources/widgets.yaml": widgets + "colour: red\n",
			"resources/gadgets.yaml": strings.Replace(widgets, "name: widgets", "name: gizmos", 1),
			"plans.yaml":             ""},
			[]string{
				"resources/gadgets.yaml:2:7: name: name \"gizmos\" must equal the file name \"gadgets\"",
				"resources/widgets.yaml:13:1: additionalProperties 'colour' not allowed",
				"plans.yaml: open plans.yaml: file does not exist",
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, errs := spec.Load(definitions(tc.files))
			got := errs.Located("")
		want:
			for _, w := range tc.want {
				for _, g := range got {
					if strings.HasPrefix(g, w) {
						continue want
					}
				}
				t.Errorf("no error starting %q in:\n%s", w, strings.Join(got, "\n"))
			}
			if len(got) != len(tc.want) {
				t.Errorf("%d errors, want %d:\n%s", len(got), len(tc.want), strings.Join(got, "\n"))
			}
			for _, e := range errs {
				if e.Code != field.CodeInvalid && e.Code != field.CodeRequired {
					t.Errorf("%v: code %v", e, e.Code)
				}
			}
		})
	}
}

func TestParseRoles(t *testing.T) {
	rs, errs := spec.ParseRoles("workspace roles", []byte(roles))
	if len(errs) > 0 || len(rs) != 2 || rs[0].Name != "admin" || rs[0].RecordRules["*"] != "all" {
		t.Errorf("roles %+v, errors %v", rs, errs)
	}
	for _, tc := range []struct{ name, text, want string }{
		{"unknown key", strings.Replace(roles, "label: Viewer", "label: Viewer\n    colour: red", 1),
			"workspace roles: roles.viewer: additionalProperties 'colour' not allowed"},
		{"duplicate role", roles + "  viewer: {label: V, permissions: []}\n", `workspace roles: duplicate key "viewer"`},
		{"empty", "", "workspace roles: empty document"},
	} {
		rs, errs := spec.ParseRoles("workspace roles", []byte(tc.text))
		if rs != nil || len(errs) != 1 || !strings.HasPrefix(errs[0].Error(), tc.want) {
			t.Errorf("%s: roles %v errors %v, want one starting %q", tc.name, rs, errs, tc.want)
		}
	}
}

// TestSyntaxErrorLine: a file that is not YAML is placed at the line where it stops being YAML (yaml.v3
// itself names the line before it for parser errors), at that line's first character.
func TestSyntaxErrorLine(t *testing.T) {
	for _, tc := range []struct {
		text      string
		line, col int
	}{
		{"version: 1\nname: widgets\nfields:\n  a: {type: [string}\n", 4, 3},
		{"name: [widgets\n", 1, 1},
		{"a: 1\nb: [1, 2\nc: 3\n", 2, 1},
		{"a: 1\nb: 'x\n", 2, 1},
		{"a:\n  b: 1\n   c: 2\n", 3, 4},
		{"a: 1\n\tb: 2\n", 2, 2},
		{"a: 1\nb: @x\n", 2, 1},
	} {
		_, errs := spec.Load(definitions(map[string]string{"resources/widgets.yaml": tc.text}))
		if len(errs) != 1 || errs[0].Line != tc.line || errs[0].Column != tc.col || !strings.HasPrefix(errs[0].Message, "yaml: ") {
			t.Errorf("%q: %v, want one yaml problem at %d:%d", tc.text, errs.Located(""), tc.line, tc.col)
		}
	}
}

// TestValidatedTextsRemembered: a text the meta-schema accepted is not validated again, and reading it
// again answers the same; a refused text is refused every time, and a text that differs by one
// character from an accepted one is validated on its own.
func TestValidatedTextsRemembered(t *testing.T) {
	for range 3 {
		rs, errs := spec.ParseRoles("workspace roles", []byte(roles))
		if len(errs) > 0 || len(rs) != 2 {
			t.Fatalf("roles %+v, errors %v", rs, errs)
		}
	}
	bad := strings.Replace(roles, "label: Viewer", "label: Viewer\n    colour: red", 1)
	for range 3 {
		if rs, errs := spec.ParseRoles("workspace roles", []byte(bad)); rs != nil || len(errs) != 1 {
			t.Fatalf("a refused text read again: roles %v errors %v", rs, errs)
		}
	}
	// Accepted once as a whole, then changed in one key: the change is validated.
	if _, errs := spec.ParseRoles("workspace roles", []byte(strings.Replace(roles, "label: Viewer", "lable: Viewer", 1))); len(errs) == 0 {
		t.Fatal("a misspelt key in a text close to an accepted one was accepted")
	}
}

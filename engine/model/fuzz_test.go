package model_test

import (
	"io/fs"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/workspace-records/records/definitions"
	"github.com/workspace-records/records/engine/access"
	"github.com/workspace-records/records/engine/catalog"
	"github.com/workspace-records/records/engine/model"
	"github.com/workspace-records/records/engine/route"
	"github.com/workspace-records/records/engine/sample"
	"github.com/workspace-records/records/engine/schema"
	"github.com/workspace-records/records/engine/spec"
	"github.com/workspace-records/records/engine/sqlgen"
)

// fuzzRoles grants every resource, so that a fuzzed resource never fails for a role's sake.
const fuzzRoles = `version: 1
roles:
  admin:
    label: Administrator
    permissions: [api.access, api.manage]
    resources: {"*": write}
    record_rules: {"*": all}
`

// FuzzDefinition loads an arbitrary resources/widgets.yaml next to the shipped tags resource, plans and
// a one-role roles file, and compiles it, as recordsd does at start and `recordsctl definitions lint`
// does. Nothing may panic. A refused definition is reported with every error naming its file (and its
// line, when the file parsed). An
// accepted one must be servable: its JSON Schemas compile, the DDL and list SQL of both dialects,
// its routes, its catalog document and the OpenAPI document build, and a sample record made for it
// passes its own create schema.
func FuzzDefinition(f *testing.F) {
	tags, err := fs.ReadFile(definitions.FS, "resources/tags.yaml")
	if err != nil {
		f.Fatal(err)
	}
	plans, err := fs.ReadFile(definitions.FS, "plans.yaml")
	if err != nil {
		f.Fatal(err)
	}
	deals, err := fs.ReadFile(definitions.FS, "resources/deals.yaml")
	if err != nil {
		f.Fatal(err)
	}
	for _, s := range []string{
		widget,
		widget + "  size: {type: integer, minimum: 5, maximum: 1, default: 7}\n",
		widget + "  price: {type: decimal, minimum: 0, sortable: true, filterable: true}\n  total: {type: decimal, formula: \"price * 2\", sortable: true}\n",
		widget + "  tag_id: {type: reference, target: tags, required: true, filterable: true}\n",
		widget + "  kind: {type: string, options: [a, b], default: c}\n",
		widget + "  labels: {type: multi_select, options: [x, y, x]}\n",
		widget + "  due: {type: date, sortable: true}\n  at: {type: datetime, default: \"2026-01-01T00:00:00Z\"}\n",
		widget + "associations:\n  tags: {target: tags}\n",
		widget + "associations:\n  tags: {target: tags, inverse: widgets}\n",
		widget + "search: [name]\nhooks: [widget-rules]\n",
		widget + "  \"Name\": {type: string}\n  \"na me\": {type: string}\n  \"\": {type: string}\n",
		widget + "  n: {type: integer, formula: \"n + 1\"}\n",
		strings.Replace(string(deals), "name: deals", "name: widgets", 1),
		"version: 2\nname: widgets\n", "name: widgets\n", "", "---\n---\n", "[]", "{a: [}", "name: &a widgets\nlabel: *a\n",
		"version: 1\nname: widgets\nlabel: W\ngroup: custom\noperations: [list]\nfields: {}\n",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		fsys := fstest.MapFS{
			"resources/widgets.yaml": {Data: []byte(text)},
			"resources/tags.yaml":    {Data: tags},
			"roles.yaml":             {Data: []byte(fuzzRoles)},
			"plans.yaml":             {Data: plans},
		}
		set, errs := spec.Load(fsys)
		if !set.Partial {
			// As lint does: a file the meta-schema refused in part is compiled as far as it goes.
			_, cerrs := model.Compile(set)
			errs = append(errs, cerrs...)
		}
		if len(errs) > 0 {
			for _, e := range errs {
				msg := e.Located("")
				if e.Message == "" || !(e.File == "resources/widgets.yaml" || e.File == "resources/tags.yaml") {
					t.Fatalf("error %q does not name the definition file it is about", msg)
				}
				if set.Files[e.File] != nil && e.Line == 0 {
					t.Fatalf("error %q of a file that parsed has no line", msg)
				}
			}
			return
		}
		cat, _ := model.Compile(set)
		res, ok := cat.Resource("widgets")
		if !ok {
			t.Fatal("accepted without a widgets resource")
		}
		schemas, err := schema.Compile(cat)
		if err != nil {
			t.Fatalf("definition accepted but its schemas do not compile: %v\n%s", err, text)
		}
		for _, d := range []sqlgen.Dialect{sqlgen.New(sqlgen.Postgres), sqlgen.New(sqlgen.SQLite)} {
			if ddl := d.CreateTable(d.TableOf(res), res); !strings.Contains(ddl, `"rec_widgets"`) {
				t.Fatalf("%s DDL names no table: %s", d, ddl)
			}
			_ = d.Indexes(res)
		}
		_ = route.Table(cat)
		_ = catalog.Document(res, schemas.Resource("widgets"), access.Unrestricted(res), nil)
		_ = catalog.OpenAPI(cat, schemas)
		if !res.Ops.Has(model.OpCreate) {
			return
		}
		ref := func(string) []string { return []string{"0190a6d4-0000-7000-8000-000000000001"} }
		body := sample.New(1).Body(res, ref, time.Date(2026, 1, 15, 12, 0, 0, 0, time.UTC))
		if _, errs := schemas.Resource("widgets").Validate(body, schema.Create); len(errs) > 0 {
			t.Fatalf("a sample record %v fails its own create schema: %v\n%s", body, errs, text)
		}
	})
}

package migrate_test

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/workspace-records/records/engine/model"
	"github.com/workspace-records/records/engine/spec"
	"github.com/workspace-records/records/engine/sqlgen"
	"github.com/workspace-records/records/runtime/migrate"
	"github.com/workspace-records/records/runtime/store"
)

// widgets returns a catalog of one resource, widgets, with the given fields and search list (YAML).
func widgets(t *testing.T, fields, search string) *model.Catalog {
	t.Helper()
	res := "version: 1\nname: widgets\nlabel: Widget\ngroup: custom\n" +
		"operations: [list, query, get, create, update, archive, restore]\n" +
		"search: [" + search + "]\nfields:\n  name: {type: string, required: true}\n" + fields
	set, errs := spec.Load(fstest.MapFS{
		"resources/widgets.yaml": {Data: []byte(res)},
		"roles.yaml":             {Data: []byte("version: 1\nroles:\n  admin: {label: Admin, permissions: [], resources: {\"*\": write}}\n")},
		"plans.yaml":             {Data: []byte("version: 1\nplans:\n  free: {label: Free, api_access: true, limits: {key_per_minute: 1, key_per_hour: 1, workspace_per_minute: 1, monthly_quota: null}}\n")},
	})
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	cat, errs := model.Compile(set)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	return cat
}

func openSQLite(t *testing.T) *store.SQLite {
	t.Helper()
	st, err := store.OpenSQLite(context.Background(), filepath.Join(t.TempDir(), "records.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

func run(t *testing.T, st store.Store, cat *model.Catalog, opts migrate.Options) *migrate.Result {
	t.Helper()
	res, err := migrate.Run(context.Background(), st, cat, opts)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// columnsOf returns the columns of table as SQLite reports them, name → type.
func columnsOf(t *testing.T, st store.Store, table string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := st.Query(context.Background(), sqlgen.Stmt{SQL: "SELECT name, type FROM pragma_table_info(?)", Args: []any{table}},
		func(row []any) error { out[store.Text(row[0])] = store.Text(row[1]); return nil })
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestFirstRun creates the system tables and the record table with its indexes and search, and a second
// run over the same definitions has nothing to do.
func TestFirstRun(t *testing.T) {
	st := openSQLite(t)
	cat := widgets(t, "  size: {type: string, sortable: true}\n", "name")
	r, _ := cat.Resource("widgets")
	table := st.Dialect().TableOf(r).Name
	res := run(t, st, cat, migrate.Options{})
	for _, want := range []string{"create table records_schema", "create table " + table, "create search on " + table + " (name) for 0 records"} {
		if !slices.Contains(res.Applied, want) {
			t.Errorf("first run: no %q in\n%s", want, strings.Join(res.Applied, "\n"))
		}
	}
	for _, ix := range st.Dialect().Indexes(r) {
		if !slices.Contains(res.Applied, "create index "+ix.Name) {
			t.Errorf("first run: index %s not created", ix.Name)
		}
	}
	if len(res.Pending) > 0 {
		t.Errorf("first run: pending %v", res.Pending)
	}
	if cols := columnsOf(t, st, table); cols["size"] == "" || cols["name"] == "" || cols["workspace_id"] == "" || cols[sqlgen.SearchColumn] != "TEXT" {
		t.Errorf("columns %v", cols)
	}
	again := run(t, st, cat, migrate.Options{})
	if len(again.Applied) != 0 || len(again.Pending) != 0 {
		t.Errorf("second run applied %v, pending %v; want nothing", again.Applied, again.Pending)
	}
}

// TestPlans migrates a database made for one version of the definitions to the next: additive changes
// are applied, destructive ones reported and left alone unless allowed.
func TestPlans(t *testing.T) {
	const (
		base     = "  size: {type: string, sortable: true}\n  notes: {type: text}\n"
		noSize   = "  notes: {type: text}\n"
		intSize  = "  size: {type: integer, sortable: true}\n  notes: {type: text}\n"
		addColor = base + "  color: {type: string}\n"
		addRank  = base + "  rank: {type: integer, sortable: true}\n"
	)
	for _, tc := range []struct {
		name             string
		fields, search   string // the next version; the first is base with search [name]
		opts             migrate.Options
		applied, pending []string // exactly; {t} is the table, {rank index} the index on rank
		gone, kept       []string // columns the migration drops, keeps
	}{
		{name: "no change", fields: base, search: "name"},
		{name: "add a field", fields: addColor, search: "name",
			applied: []string{"add column {t}.color TEXT"}},
		{name: "add a sortable field", fields: addRank, search: "name",
			applied: []string{"add column {t}.rank INTEGER", "create index {rank index}"}},
		{name: "search another field", fields: base, search: "name, notes",
			applied: []string{"create search on {t} (name,notes) for 0 records"}},
		{name: "search nothing", fields: base, search: "",
			applied: []string{"drop search on {t}"}, gone: []string{sqlgen.SearchColumn}},
		{name: "drop a field, not allowed", fields: noSize, search: "name",
			pending: []string{"drop column {t}.size (no field declares it; run migrate --allow-destructive)"},
			kept:    []string{"size"}},
		{name: "drop an indexed field, allowed", fields: noSize, search: "name", opts: migrate.Options{AllowDestructive: true},
			applied: []string{"drop column {t}.size"},
			gone:    []string{"size"}},
		{name: "change a type", fields: intSize, search: "name", opts: migrate.Options{AllowDestructive: true},
			pending: []string{"change type of {t}.size from TEXT to INTEGER (destructive; migrate the data by hand)"},
			kept:    []string{"size"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := openSQLite(t)
			v1 := widgets(t, base, "name")
			run(t, st, v1, migrate.Options{})
			v2 := widgets(t, tc.fields, tc.search)
			r, _ := v2.Resource("widgets")
			table := st.Dialect().TableOf(r).Name
			names := strings.NewReplacer("{t}", table, "{rank index}", sqlgen.IndexName(table, "rank"))
			fill := func(lines []string) []string {
				out := []string{}
				for _, l := range lines {
					out = append(out, names.Replace(l))
				}
				return out
			}
			res := run(t, st, v2, tc.opts)
			if want := fill(tc.applied); !slices.Equal(res.Applied, want) {
				t.Errorf("applied\n%q\nwant\n%q", res.Applied, want)
			}
			if want := fill(tc.pending); !slices.Equal(orEmpty(res.Pending), want) {
				t.Errorf("pending\n%q\nwant\n%q", res.Pending, want)
			}
			cols := columnsOf(t, st, table)
			for _, c := range tc.gone {
				if _, ok := cols[c]; ok {
					t.Errorf("column %s is still there", c)
				}
			}
			for _, c := range tc.kept {
				if _, ok := cols[c]; !ok {
					t.Errorf("column %s was dropped", c)
				}
			}
			// What was left pending stays pending; what was applied is not applied again.
			again := run(t, st, v2, tc.opts)
			if len(again.Applied) != 0 || !slices.Equal(orEmpty(again.Pending), orEmpty(res.Pending)) {
				t.Errorf("run again: applied %q pending %q", again.Applied, again.Pending)
			}
		})
	}
}

func orEmpty(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

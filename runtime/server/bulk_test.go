package server_test

import (
	"context"
	"fmt"
	"net/url"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/workspace-records/records/engine/model"
	"github.com/workspace-records/records/engine/sample"
	"github.com/workspace-records/records/engine/sqlgen"
	"github.com/workspace-records/records/runtime/audit"
	"github.com/workspace-records/records/runtime/customfields"
	"github.com/workspace-records/records/runtime/records"
	"github.com/workspace-records/records/runtime/server"
	"github.com/workspace-records/records/runtime/server/servertest"
	"github.com/workspace-records/records/runtime/store"
)

// The bulk path — what `recordsctl seed` runs (Records.PrepareLoad, then WriteLoad: COPY on
// PostgreSQL, reused multi-row statements on SQLite) and `records import` — stores exactly what a create
// through the API stores for the same body: every column of the record (owner, custom_fields document,
// search text and PostgreSQL's tsvector included), its custom_values rows and its audit entry's
// changes; the answer of a GET is the same. Only the id and the times differ. Generated companies with
// custom fields of every type are written both ways: first in bulk, then, once those rows are deleted,
// one by one through the API.
func TestBulkWritesWhatTheAPIWrites(t *testing.T) {
	t.Parallel()
	for _, b := range servertest.Backends {
		t.Run(string(b), func(t *testing.T) {
			t.Parallel()
			e := servertest.Start(t, b, servertest.Options{})
			be := e.Server.Backend()
			ctx := context.Background()
			for _, d := range []customfields.Def{
				{Key: "erp_id", Type: "text", Unique: true}, {Key: "notes", Type: "long_text"},
				{Key: "employee_target", Type: "integer"}, {Key: "score", Type: "decimal"},
				{Key: "vip", Type: "boolean"}, {Key: "since", Type: "date"}, {Key: "audited_at", Type: "datetime"},
				{Key: "tier", Type: "select", Options: []string{"gold", "silver", "bronze"}},
				{Key: "regions", Type: "multi_select", Options: []string{"emea", "amer", "apac"}},
				{Key: "billing_email", Type: "email"}, {Key: "portal", Type: "url"}, {Key: "hotline", Type: "phone"},
			} {
				d.Resource = "companies"
				d.Required = d.Key == "tier" // always present: a required custom field too
				if _, err := be.Current().Custom.Create(ctx, e.Workspace, d); err != nil {
					t.Fatalf("field %s: %v", d.Key, err)
				}
			}
			parent := e.Do("POST", "/v1/companies", map[string]any{"name": "Parent Holdings", "cf__tier": "gold"}).Data()["id"].(string)
			refs := func(resource string) []string {
				switch resource {
				case "companies":
					return []string{parent}
				case "entity_members":
					return []string{e.Member}
				}
				return nil
			}
			companies, _ := be.Current().Catalog.Resource("companies")
			a := records.Actor{Workspace: e.Workspace, Member: e.Member} // the API key's member
			c, err := be.Current().Records.Collection(ctx, a, companies, "")
			if err != nil {
				t.Fatal(err)
			}
			custom := make([]*model.Field, len(c.Fields.Defs))
			for i, d := range c.Fields.Defs {
				custom[i] = c.Fields.Field(d)
			}
			gen := sample.New(7)
			now := time.Now()
			bodies := make([]map[string]any, 60)
			for i := range bodies {
				bodies[i] = gen.Body(companies, refs, now)
				gen.Custom(companies, custom, bodies[i], refs, now)
			}
			l, err := be.Current().Records.PrepareLoad(a, c, bodies)
			if err != nil {
				t.Fatal(err)
			}
			if n, err := be.Current().Records.WriteLoad(ctx, l); err != nil || n != len(bodies) {
				t.Fatalf("bulk write: %d %v", n, err)
			}
			bulk := snapshotCompanies(t, e, be, bodies)
			// The search index has them: PostgreSQL's generated tsvector, SQLite's FTS5 table (a trigger).
			for _, s := range bulk[:5] {
				if l := e.Do("GET", "/v1/companies?search="+url.QueryEscape(s.name), nil).List(); !hasID(l, s.id) {
					t.Errorf("search %q does not find the bulk-written record", s.name)
				}
			}
			// The bulk rows go; the API writes the same bodies.
			wctx := store.WithWorkspace(ctx, e.Workspace)
			d := be.Store.Dialect()
			err = be.Store.Tx(wctx, func(q store.Querier) error {
				for _, s := range bulk {
					for _, table := range []string{"custom_values", companies.Table} {
						col := "id"
						if table == "custom_values" {
							col = "record_id"
						}
						if _, err := q.Exec(wctx, d.Bind(fmt.Sprintf("DELETE FROM %s WHERE workspace_id = ? AND %s = ?", sqlgen.Quote(table), col), e.Workspace, s.id)); err != nil {
							return err
						}
					}
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			for _, body := range bodies {
				e.Expect(e.Do("POST", "/v1/companies", body), 201, "")
			}
			api := snapshotCompanies(t, e, be, bodies)
			for i := range bodies {
				got, want := bulk[i], api[i]
				if !reflect.DeepEqual(got.columns, want.columns) {
					for k := range want.columns {
						if got.columns[k] != want.columns[k] {
							t.Errorf("%s: column %s: bulk %s, API %s", want.name, k, got.columns[k], want.columns[k])
						}
					}
				}
				if !reflect.DeepEqual(got.custom, want.custom) {
					t.Errorf("%s: custom_values: bulk %q, API %q", want.name, got.custom, want.custom)
				}
				if got.changes != want.changes || got.action != "import" || want.action != "create" {
					t.Errorf("%s: audit: bulk %s %s, API %s %s", want.name, got.action, got.changes, want.action, want.changes)
				}
				if got.get != want.get {
					t.Errorf("%s: GET answers differ:\nbulk %s\nAPI  %s", want.name, got.get, want.get)
				}
			}
		})
	}
}

// companySnapshot is what the database holds for one company, with its id and times left out.
type companySnapshot struct {
	id, name string
	columns  map[string]string // by column; search columns included
	custom   []string          // custom_values rows: field, text, number
	action   string            // of its audit entry
	changes  string            // JSON of its audit entry's changes
	get      string            // JSON of GET /v1/companies/{id}'s data, id and times left out
}

// snapshotCompanies reads the companies written from bodies (found by their unique names), in the
// order of bodies.
func snapshotCompanies(t *testing.T, e *servertest.Env, be *server.Backend, bodies []map[string]any) []companySnapshot {
	t.Helper()
	ctx := store.WithWorkspace(context.Background(), e.Workspace)
	d := be.Store.Dialect()
	r, _ := be.Current().Catalog.Resource("companies")
	var cols, names []string
	for _, f := range r.Fields {
		cols = append(cols, sqlgen.Quote(f.Column))
		names = append(names, f.Column)
	}
	cols, names = append(cols, sqlgen.Quote(sqlgen.SearchColumn)), append(names, sqlgen.SearchColumn)
	if d.Kind() == sqlgen.Postgres {
		cols, names = append(cols, `"_search"::text`), append(names, "_search")
	}
	skip := map[string]bool{"id": true, "created_at": true, "updated_at": true}
	out := make([]companySnapshot, len(bodies))
	for i, body := range bodies {
		s := companySnapshot{name: body["name"].(string), columns: map[string]string{}}
		found, err := store.QueryOne(ctx, be.Store, d.Bind(fmt.Sprintf("SELECT %s FROM %s WHERE workspace_id = ? AND name = ?", strings.Join(cols, ", "), sqlgen.Quote(r.Table)), e.Workspace, s.name),
			func(row []any) error {
				for j, v := range row {
					if names[j] == "id" {
						s.id = store.UUIDText(v)
					}
					if !skip[names[j]] {
						s.columns[names[j]] = fmt.Sprintf("%#v", v)
					}
				}
				return nil
			})
		if err != nil || !found || len(s.columns) != len(names)-len(skip) {
			t.Fatalf("company %q: %v (found %v, %d columns)", s.name, err, found, len(s.columns))
		}
		err = be.Store.Query(ctx, d.Bind(`SELECT field_id, t, n FROM custom_values WHERE workspace_id = ? AND record_id = ? ORDER BY field_id, t`, e.Workspace, s.id),
			func(row []any) error {
				s.custom = append(s.custom, fmt.Sprintf("%s %q %#v", store.UUIDText(row[0]), row[1], row[2]))
				return nil
			})
		if err != nil {
			t.Fatal(err)
		}
		entries := auditOf(t, e, audit.Query{Resource: "companies", RecordID: s.id})
		if len(entries) != 1 {
			t.Fatalf("company %q: %d audit entries", s.name, len(entries))
		}
		s.action, s.changes = entries[0].Action, auditJSON(entries[0].Changes)
		data := e.Do("GET", "/v1/companies/"+s.id, nil).Data()
		for _, k := range []string{"id", "created_at", "updated_at"} {
			delete(data, k)
		}
		s.get = auditJSON(data)
		out[i] = s
	}
	return out
}

func hasID(list []map[string]any, id string) bool {
	for _, r := range list {
		if r["id"] == id {
			return true
		}
	}
	return false
}

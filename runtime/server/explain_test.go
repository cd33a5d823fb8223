package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/workspace-records/records/engine/listplan"
	"github.com/workspace-records/records/engine/model"
	"github.com/workspace-records/records/engine/sqlgen"
	"github.com/workspace-records/records/runtime/server/servertest"
	"github.com/workspace-records/records/runtime/store"
)

// Every keyset page of every sort key of every resource is served by the (workspace_id, key, id) index
// in the ORDER BY direction, without a sort step, on both databases.
func TestKeysetPagesUseIndexes(t *testing.T) {
	t.Parallel()
	for _, b := range servertest.Backends {
		t.Run(string(b), func(t *testing.T) {
			t.Parallel()
			be := openBackend(t, servertest.DatabaseURL(t, b), servertest.DefinitionsDir(), false)
			defer be.Close()
			ctx := context.Background()
			d := be.Store.Dialect()
			for _, r := range be.Current().Catalog.Resources {
				for _, key := range r.SortKeys() {
					for _, order := range []string{"asc", "desc"} {
						c := "start"
						plan, errs := listplan.Build(r, listplan.Params{Sort: key, Order: order, Cursor: &c, ModelID: "0190a6d4-0000-7000-8000-000000000001"}, listplan.Scope{Workspace: "w"})
						if len(errs) > 0 {
							t.Fatal(errs)
						}
						f, _ := r.Field(key)
						var v any = "x"
						switch f.Type.String() {
						case "integer":
							v = int64(1)
						case "decimal":
							v = "1.5"
						case "boolean":
							v = true
						case "datetime":
							v = time.Now().UTC()
						case "date":
							v = "2026-01-01"
						case "reference", "uuid":
							v = "0190a6d4-0000-7000-8000-000000000002"
						}
						plan.After = &listplan.Position{Key: v, ID: "0190a6d4-0000-7000-8000-000000000003"}
						ws := "0190a6d4-0000-7000-8000-000000000004"
						stmts := d.List(plan, ws)
						plan.After.Key = nil
						if f.Nullable() {
							stmts = append(stmts, d.List(plan, ws)...)
						}
						for _, st := range stmts {
							explain(t, ctx, be.Store, d, st, r.Name+"."+key+" "+order)
						}
					}
				}
			}
		})
	}
}

func explain(t *testing.T, ctx context.Context, st store.Store, d sqlgen.Dialect, s sqlgen.Stmt, what string) {
	t.Helper()
	var lines []string
	err := st.Tx(ctx, func(q store.Querier) error {
		prefix := "EXPLAIN QUERY PLAN "
		if d.Kind() == sqlgen.Postgres {
			prefix = "EXPLAIN "
			// Empty tables make sequential scans cheapest; what matters is that the index can serve it.
			if _, err := q.Exec(ctx, sqlgen.Stmt{SQL: "SET LOCAL enable_seqscan = off"}); err != nil {
				return err
			}
		}
		return q.Query(ctx, sqlgen.Stmt{SQL: prefix + s.SQL, Args: s.Args}, func(row []any) error {
			lines = append(lines, fmt.Sprint(row[len(row)-1]))
			return nil
		})
	})
	if err != nil {
		t.Fatalf("%s: explain: %v", what, err)
	}
	plan := strings.Join(lines, "\n")
	bad := strings.Contains(plan, "TEMP B-TREE") || strings.Contains(plan, "Sort") || strings.Contains(plan, "Seq Scan") || strings.Contains(plan, "SCAN rec_")
	if bad || !strings.Contains(strings.ToLower(plan), "index") {
		t.Errorf("%s is not an index range scan:\n%s\n%s", what, s.SQL, plan)
	}
}

// Under row-level security (the suite's role is not a superuser), a selective custom-field eq or in
// filter over 20,000 rows is served by the custom_values index, not a scan. (Range filters are
// semi-joins the planner may still answer by walking the sort index: see docs/custom-fields.md.)
func TestCustomFilterUsesIndex(t *testing.T) {
	t.Parallel()
	be := openBackend(t, servertest.DatabaseURL(t, servertest.Postgres), servertest.DefinitionsDir(), false)
	defer be.Close()
	r, _ := be.Current().Catalog.Resource("deals")
	ws := "0190a6d4-0000-7000-8000-000000000004"
	field := "0190a6d4-0000-7000-8000-0000000000cf"
	ctx := store.WithWorkspace(context.Background(), ws)
	err := be.Store.Tx(ctx, func(q store.Querier) error {
		for _, sql := range []string{
			`INSERT INTO "rec_deals" (workspace_id, id, name, created_at, updated_at) SELECT $1::uuid, md5(i::text)::uuid, 'Deal ' || i, now(), now() FROM generate_series(1, 20000) i`,
			`INSERT INTO "custom_values" (workspace_id, field_id, record_id, t, n) SELECT $1::uuid, '` + field + `', md5(i::text)::uuid, 'v' || i, i FROM generate_series(1, 20000) i WHERE i % 2 = 0`, // half the records have a value
		} {
			if _, err := q.Exec(ctx, sqlgen.Stmt{SQL: sql, Args: []any{ws}}); err != nil {
				return err
			}
		}
		for _, table := range []string{"rec_deals", "custom_values"} {
			if _, err := q.Exec(ctx, sqlgen.Stmt{SQL: "ANALYZE " + sqlgen.Quote(table)}); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	f := &model.Field{Key: "cfv:" + field, Column: field, Type: model.Integer, Custom: true, Filterable: true, Sortable: true}
	explain := func(st sqlgen.Stmt) string {
		var lines []string
		err := be.Store.Tx(ctx, func(q store.Querier) error {
			return q.Query(ctx, sqlgen.Stmt{SQL: "EXPLAIN " + st.SQL, Args: st.Args}, func(row []any) error {
				lines = append(lines, fmt.Sprint(row[0]))
				return nil
			})
		})
		if err != nil {
			t.Fatal(err)
		}
		return strings.Join(lines, "\n")
	}
	// Sorting by the custom field: the first page and a cursor page deep into the value band walk the
	// custom_values number index in order (no sort of the whole set, no scan); the NULL band walks the
	// records' primary key.
	for _, desc := range []bool{false, true} {
		start := "start"
		plan, errs := listplan.Build(r, listplan.Params{Sort: f.Key, Order: map[bool]string{false: "asc", true: "desc"}[desc], Cursor: &start}, listplan.Scope{Workspace: ws, Custom: []*model.Field{f}})
		if len(errs) > 0 {
			t.Fatal(errs)
		}
		for _, after := range []*listplan.Position{nil, {Key: int64(15000), ID: "00000000-0000-7000-8000-000000000000"}} {
			plan.After = after
			stmts := be.Store.Dialect().List(plan, ws)
			for i, st := range stmts {
				p := explain(st)
				band := "value"
				if strings.Contains(st.SQL, `"_cv_id" IS NULL`) {
					band = "null"
				}
				want := "custom_values_num_idx"
				if band == "null" {
					want = "rec_deals_pkey"
				}
				if !strings.Contains(p, want) || strings.Contains(p, "Seq Scan") || strings.Contains(p, "Sort  ") {
					t.Errorf("sort desc=%v after=%v statement %d (%s band) is not an index walk on %s:\n%s", desc, after, i, band, want, p)
				}
			}
		}
	}
	for _, c := range []struct {
		op    string
		value any
		index string
	}{{"eq", json.Number("42"), "custom_values_text_idx"}, {"in", []any{json.Number("42"), json.Number("4242")}, "custom_values_text_idx"}} {
		plan, errs := listplan.Build(r, listplan.Params{Filters: []any{map[string]any{"field": f.Key, "op": c.op, "value": c.value}}},
			listplan.Scope{Workspace: ws, Custom: []*model.Field{f}})
		if len(errs) > 0 {
			t.Fatal(errs)
		}
		for _, st := range be.Store.Dialect().List(plan, ws) {
			if p := explain(st); !strings.Contains(p, c.index) || strings.Contains(p, "Seq Scan") {
				t.Errorf("custom field %s filter is not served by %s:\n%s", c.op, c.index, p)
			}
		}
	}
}

// Under row-level security, a selective filter path is served by indexes at every step: across a
// reference (company.name), the target's name index and the deals' (workspace_id, company_id, id)
// index; across an association (contacts.email), the contacts' email index, the associations'
// target index and the deals' primary key. No table is scanned.
func TestFilterPathsUseIndexes(t *testing.T) {
	t.Parallel()
	be := openBackend(t, servertest.DatabaseURL(t, servertest.Postgres), servertest.DefinitionsDir(), false)
	defer be.Close()
	cat := be.Current().Catalog
	deals, _ := cat.Resource("deals")
	companies, _ := cat.Resource("companies")
	contacts, _ := cat.Resource("contacts")
	ws := "0190a6d4-0000-7000-8000-000000000004"
	ctx := store.WithWorkspace(context.Background(), ws)
	err := be.Store.Tx(ctx, func(q store.Querier) error {
		for _, sql := range []string{
			`INSERT INTO "rec_companies" (workspace_id, id, name, billing_city, created_at, updated_at) SELECT $1::uuid, md5('c' || i)::uuid, 'Company ' || i, 'City ' || (i % 100), now(), now() FROM generate_series(1, 20000) i`,
			`INSERT INTO "rec_deals" (workspace_id, id, name, company_id, created_at, updated_at) SELECT $1::uuid, md5('d' || i)::uuid, 'Deal ' || i, md5('c' || (i % 20000 + 1))::uuid, now(), now() FROM generate_series(1, 20000) i`,
			`INSERT INTO "rec_contacts" (workspace_id, id, last_name, email, created_at, updated_at) SELECT $1::uuid, md5('p' || i)::uuid, 'Person ' || i, 'p' || i || '@x.example', now(), now() FROM generate_series(1, 20000) i`,
			`INSERT INTO "associations" (workspace_id, owner_resource, name, owner_id, target_resource, target_id, attributes, created_at, updated_at) SELECT $1::uuid, 'contacts', 'deals', md5('p' || i)::uuid, 'deals', md5('d' || i)::uuid, '{}', now(), now() FROM generate_series(1, 20000) i`,
		} {
			if _, err := q.Exec(ctx, sqlgen.Stmt{SQL: sql, Args: []any{ws}}); err != nil {
				return err
			}
		}
		for _, table := range []string{"rec_companies", "rec_deals", "rec_contacts", "associations"} {
			if _, err := q.Exec(ctx, sqlgen.Stmt{SQL: "ANALYZE " + sqlgen.Quote(table)}); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	explain := func(st sqlgen.Stmt) string {
		var lines []string
		err := be.Store.Tx(ctx, func(q store.Querier) error {
			return q.Query(ctx, sqlgen.Stmt{SQL: "EXPLAIN " + st.SQL, Args: st.Args}, func(row []any) error {
				lines = append(lines, fmt.Sprint(row[0]))
				return nil
			})
		})
		if err != nil {
			t.Fatal(err)
		}
		return strings.Join(lines, "\n")
	}
	targets := map[string]listplan.Target{"companies": {Resource: companies}, "contacts": {Resource: contacts}, "deals": {Resource: deals}}
	for _, c := range []struct {
		res          *model.Resource
		field, value string
		indexes      []string
	}{
		{deals, "company.name", "Company 77", []string{sqlgen.IndexName("rec_companies", "name"), sqlgen.IndexName("rec_deals", "company_id")}},
		// Links of deals.contacts are stored under contacts' side (owner_resource contacts, name deals).
		{deals, "contacts.email", "p77@x.example", []string{"rec_contacts_email_idx", "associations_owner_idx", "rec_deals_pkey"}},
		{contacts, "deals.name", "Deal 77", []string{sqlgen.IndexName("rec_deals", "name"), "associations_target_idx", "rec_contacts_pkey"}},
	} {
		for _, count := range []bool{false, true} {
			plan, errs := listplan.Build(c.res, listplan.Params{Filters: []any{map[string]any{"field": c.field, "op": "eq", "value": c.value}}}, listplan.Scope{Workspace: ws, Targets: targets})
			if len(errs) > 0 {
				t.Fatal(errs)
			}
			stmts := be.Store.Dialect().List(plan, ws)
			if count {
				stmts = []sqlgen.Stmt{be.Store.Dialect().Count(plan, ws, 0)}
			}
			for _, st := range stmts {
				p := explain(st)
				t.Logf("%s (count %v):\n%s", c.field, count, p)
				if strings.Contains(p, "Seq Scan") {
					t.Errorf("%s (count %v) scans a table:\n%s", c.field, count, p)
				}
				for _, ix := range c.indexes {
					if !strings.Contains(p, ix) {
						t.Errorf("%s (count %v) does not use %s:\n%s", c.field, count, ix, p)
					}
				}
			}
		}
	}
}

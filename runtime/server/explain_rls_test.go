package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/workspace-records/records/engine/listplan"
	"github.com/workspace-records/records/engine/model"
	"github.com/workspace-records/records/engine/sqlgen"
	"github.com/workspace-records/records/runtime/server/servertest"
	"github.com/workspace-records/records/runtime/store"
)

// TestListPlansUnderRowSecurity: row-level security costs a list nothing in its plan. On 20,000
// companies, the server's role (the database owner, neither superuser nor BYPASSRLS, RLS forced) gets
// for the first page, a cursor page deep in the table, a declared filter, a decimal filter and a
// custom-field filter exactly the plan the superuser gets (the same nodes and indexes, the same index
// conditions), plus one One-Time Filter on the workspace setting, evaluated once per statement: the
// policy's condition is never checked row by row, and never keeps a condition out of an index. (A
// policy whose condition were not a constant of the statement — a per-row function, a non-leakproof
// operator — would show up here as a per-row Filter or a lost index condition.)
func TestListPlansUnderRowSecurity(t *testing.T) {
	t.Parallel()
	owner := servertest.DatabaseURL(t, servertest.Postgres)
	be := openBackend(t, owner, servertest.DefinitionsDir(), false)
	defer be.Close()
	r, _ := be.Current().Catalog.Resource("companies")
	ws := "0190a6d4-0000-7000-8000-000000000004"
	field := "0190a6d4-0000-7000-8000-0000000000cf"
	ctx := store.WithWorkspace(context.Background(), ws)
	err := be.Store.Tx(ctx, func(q store.Querier) error {
		for _, sql := range []string{
			`INSERT INTO "rec_companies" (workspace_id, id, name, employee_count, annual_revenue, created_at, updated_at)
SELECT $1::uuid, md5(i::text)::uuid, 'Company ' || i, i % 5000, (i % 7000) * 1.5, now() - i * interval '1 second', now() FROM generate_series(1, 20000) i`,
			`INSERT INTO "custom_values" (workspace_id, field_id, record_id, t, n) SELECT $1::uuid, '` + field + `', md5(i::text)::uuid, (i % 5000)::text, i % 5000 FROM generate_series(1, 20000) i`,
		} {
			if _, err := q.Exec(ctx, sqlgen.Stmt{SQL: sql, Args: []any{ws}}); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	su, err := pgx.Connect(context.Background(), servertest.SuperuserURL(t, owner))
	if err != nil {
		t.Fatal(err)
	}
	defer su.Close(context.Background())
	for _, table := range []string{"rec_companies", "custom_values"} {
		if _, err := su.Exec(context.Background(), "ANALYZE "+table); err != nil {
			t.Fatal(err)
		}
	}
	var super, bypass bool
	if err := be.Store.Query(ctx, sqlgen.Stmt{SQL: "SELECT rolsuper, rolbypassrls FROM pg_roles WHERE rolname = current_user"}, func(row []any) error {
		super, bypass = store.Bool(row[0]), store.Bool(row[1])
		return nil
	}); err != nil || super || bypass {
		t.Fatalf("the server's role must be subject to row-level security (superuser %v, bypassrls %v, %v)", super, bypass, err)
	}

	custom := &model.Field{Key: "cfv:" + field, Column: field, Type: model.Integer, Custom: true, Filterable: true, Sortable: true}
	start := "start"
	lists := map[string]listplan.Params{
		"first page":     {Cursor: &start},
		"deep page":      {Cursor: &start},
		"declared":       {Filters: []any{map[string]any{"field": "employee_count", "op": "eq", "value": int64(1234)}}},
		"decimal":        {Filters: []any{map[string]any{"field": "annual_revenue", "op": "eq", "value": json.Number("1851")}}},
		"custom field":   {Filters: []any{map[string]any{"field": custom.Key, "op": "eq", "value": int64(1234)}}},
		"declared range": {Filters: []any{map[string]any{"field": "employee_count", "op": "gte", "value": int64(4990)}}},
	}
	for name, params := range lists {
		plan, errs := listplan.Build(r, params, listplan.Scope{Workspace: ws, Custom: []*model.Field{custom}})
		if len(errs) > 0 {
			t.Fatalf("%s: %v", name, errs)
		}
		if name == "deep page" {
			plan.After = &listplan.Position{Key: time.Now().Add(-10000 * time.Second).UTC(), ID: "ffffffff-ffff-7fff-bfff-ffffffffffff"}
		}
		for i, st := range be.Store.Dialect().List(plan, ws) {
			what := fmt.Sprintf("%s (statement %d)", name, i)
			var ownerPlan []string
			if err := be.Store.Tx(ctx, func(q store.Querier) error {
				return q.Query(ctx, sqlgen.Stmt{SQL: "EXPLAIN (COSTS OFF) " + st.SQL, Args: st.Args}, func(row []any) error {
					ownerPlan = append(ownerPlan, fmt.Sprint(row[0]))
					return nil
				})
			}); err != nil {
				t.Fatalf("%s: explain as the owner: %v", what, err)
			}
			var superPlan []string
			rows, err := su.Query(context.Background(), "EXPLAIN (COSTS OFF) "+st.SQL, st.Args...)
			if err != nil {
				t.Fatalf("%s: explain as the superuser: %v", what, err)
			}
			for rows.Next() {
				var line string
				if err := rows.Scan(&line); err != nil {
					t.Fatal(err)
				}
				superPlan = append(superPlan, line)
			}
			if rows.Err() != nil {
				t.Fatal(rows.Err())
			}
			checkRLSPlan(t, what, ownerPlan, superPlan)
		}
	}
}

var (
	planNode   = regexp.MustCompile(`^\s*(->\s*)?`)
	oneTime    = regexp.MustCompile(`One-Time Filter: .*current_setting\('records\.workspace_id'`)
	rowSetting = regexp.MustCompile(`(Filter|Cond): .*current_setting`)
)

// checkRLSPlan compares the owner's plan with the superuser's: once the owner's Result nodes that only
// carry the One-Time Filter on the workspace setting are taken out, both list the same nodes, indexes and
// conditions; and the setting appears in no per-row condition.
func checkRLSPlan(t *testing.T, what string, owner, super []string) {
	t.Helper()
	norm := func(plan []string) []string {
		var out []string
		for _, line := range plan {
			s := strings.TrimSpace(planNode.ReplaceAllString(line, ""))
			if s == "Result" || oneTime.MatchString(line) {
				continue
			}
			out = append(out, s)
		}
		return out
	}
	found := false
	for _, line := range owner {
		if oneTime.MatchString(line) {
			found = true
		} else if rowSetting.MatchString(line) {
			t.Errorf("%s: the workspace setting is checked row by row under RLS: %q\n%s", what, line, strings.Join(owner, "\n"))
		}
	}
	if !found {
		t.Errorf("%s: no One-Time Filter on the workspace setting in the owner's plan — is RLS applied?\n%s", what, strings.Join(owner, "\n"))
	}
	o, s := norm(owner), norm(super)
	if strings.Join(o, "\n") != strings.Join(s, "\n") {
		t.Errorf("%s: the plan under row-level security differs from the superuser's:\nowner:\n%s\nsuperuser:\n%s", what, strings.Join(owner, "\n"), strings.Join(super, "\n"))
	}
}

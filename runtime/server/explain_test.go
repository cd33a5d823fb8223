package server_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/workspace-records/records/engine/listplan"
	"github.com/workspace-records/records/engine/sqlgen"
	"github.com/workspace-records/records/runtime/server/servertest"
	"github.com/workspace-records/records/runtime/store"
)

// Every keyset page of every sort key of every resource is served by the (workspace_id, key, id) index
// in the ORDER BY direction, without a sort step, on both databases.
func TestKeysetPagesUseIndexes(t *testing.T) {
	for _, b := range servertest.Backends {
		t.Run(string(b), func(t *testing.T) {
			t.Parallel()
			be := openBackend(t, servertest.DatabaseURL(t, b), servertest.DefinitionsDir(), false)
			defer be.Close()
			ctx := context.Background()
			d := be.Store.Dialect()
			for _, r := range be.Catalog.Resources {
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

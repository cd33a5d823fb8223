package server_test

import (
	"context"
	"testing"

	"github.com/workspace-records/records/engine/sqlgen"
	"github.com/workspace-records/records/runtime/server/servertest"
	"github.com/workspace-records/records/runtime/store"
)

// PostgreSQL refuses rows of other workspaces even to a statement that forgets the workspace predicate.
func TestRowLevelSecurity(t *testing.T) {
	e := servertest.Start(t, servertest.Postgres, servertest.Options{})
	ctx := context.Background()
	st := e.Server.Backend().Store
	wsB, _, keyB := e.NewWorkspace("growth", "admin", "write")
	e.Do("POST", "/v1/companies", map[string]any{"name": "A1"})
	e.Do("POST", "/v1/companies", map[string]any{"name": "A2"})
	e.DoKey(keyB, "POST", "/v1/companies", map[string]any{"name": "B1"})

	count := func(ctx context.Context) int {
		n := 0
		if err := st.Query(ctx, sqlgen.Stmt{SQL: `SELECT id FROM "rec_companies"`}, func([]any) error { n++; return nil }); err != nil {
			t.Fatal(err)
		}
		return n
	}
	if n := count(store.WithWorkspace(ctx, e.Workspace)); n != 2 {
		t.Errorf("scoped to A, an unfiltered select sees %d rows, want 2", n)
	}
	if n := count(store.WithWorkspace(ctx, wsB)); n != 1 {
		t.Errorf("scoped to B: %d rows, want 1", n)
	}
	if n := count(ctx); n != 0 {
		t.Errorf("unscoped: %d rows, want 0", n)
	}
	err := st.Tx(store.WithWorkspace(ctx, e.Workspace), func(q store.Querier) error {
		_, err := q.Exec(ctx, sqlgen.Stmt{SQL: `UPDATE "rec_companies" SET name = 'taken'`})
		if err != nil {
			return err
		}
		_, err = q.Exec(ctx, sqlgen.Stmt{SQL: `INSERT INTO "rec_companies" (workspace_id, id, name, created_at, updated_at) VALUES ($1, '0190a6d4-0000-7000-8000-000000000001', 'x', now(), now())`, Args: []any{wsB}})
		return err
	})
	if err == nil {
		t.Fatal("inserting a row of B while scoped to A succeeded")
	}
	if l := e.DoKey(keyB, "GET", "/v1/companies", nil).List(); len(l) != 1 || l[0]["name"] != "B1" {
		t.Errorf("B's companies after A's unfiltered update: %v", l)
	}
}

package server_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/workspace-records/records/engine/sqlgen"
	"github.com/workspace-records/records/runtime/server/servertest"
	"github.com/workspace-records/records/runtime/server/servertest/tenancy"
	"github.com/workspace-records/records/runtime/store"
)

// TestPoolWorkspaceLeak (T4) sends two workspaces' requests, interleaved and concurrent (tenancy.PoolLeak),
// with the workspace predicate on. It runs on SQLite, which has no row-level security: the predicate is
// the guard. The PostgreSQL run is TestUnscopedRowSecurity/pool_leak, over a pool of two connections
// with the predicate taken out, where only each session's workspace setting keeps the answers apart
// (with the predicate on, a wrong setting would not show); the store itself is driven the same way by
// TestRowLevelSecurity (runStoreScopeLeak).
func TestPoolWorkspaceLeak(t *testing.T) {
	t.Parallel()
	tenancy.PoolLeak(t, servertest.Start(t, servertest.SQLite, servertest.Options{}), 1000)
}

// runStoreScopeLeak drives n statements straight at e's PostgreSQL store, from eight workers, scoped in
// turn to workspace A, workspace B and no workspace: plain reads, failing statements, transactions that
// roll back or commit, statements cancelled by their context, updates. Every statement must run with
// its own workspace's setting (or none) and see only that workspace's rows.
func runStoreScopeLeak(t *testing.T, e *servertest.Env, n int) {
	t.Helper()
	st := e.Server.Backend().Store
	wsA, _, keyA := e.NewWorkspace("growth", "admin", "write")
	wsB, _, keyB := e.NewWorkspace("growth", "admin", "write")
	rows := map[string]int64{"": 0, wsA: 3, wsB: 2}
	for ws, key := range map[string]string{wsA: keyA, wsB: keyB} {
		for i := int64(0); i < rows[ws]; i++ {
			e.Expect(e.DoKey(key, "POST", "/v1/companies", map[string]any{"name": "scope-" + ws}), 201, "")
		}
	}
	const probe = `SELECT coalesce(current_setting('records.workspace_id', true), ''), (SELECT count(*) FROM "rec_companies"), (SELECT count(*) FROM "rec_companies" WHERE name <> 'scope-' || coalesce(current_setting('records.workspace_id', true), ''))`
	check := func(ws string, row []any) string {
		setting, seen, foreign := row[0].(string), row[1].(int64), row[2].(int64)
		if setting != ws || seen != rows[ws] || foreign != 0 {
			return fmt.Sprintf("scoped to %q: setting %q, %d rows (want %d), %d of another workspace", ws, setting, seen, rows[ws], foreign)
		}
		return ""
	}
	problems := make([]string, n)
	ops := map[string]int{}
	unavailable := 0
	var mu sync.Mutex
	jobs := make(chan int)
	var wg sync.WaitGroup
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range jobs {
				ws := []string{wsA, wsB, ""}[i%3]
				ctx := context.Background()
				if ws != "" {
					ctx = store.WithWorkspace(ctx, ws)
				}
				op := (i / 3) % 6
				name := ""
				var problem string
				down := false // the database was out of reach
				failed := func(err error) bool {
					down = down || errors.Is(err, store.ErrUnavailable)
					return err != nil && !down
				}
				switch op {
				case 0:
					name = "read"
					err := st.Query(ctx, sqlgen.Stmt{SQL: probe}, func(row []any) error { problem = check(ws, row); return nil })
					if failed(err) {
						problem = fmt.Sprintf("read for %q: %v", ws, err)
					}
				case 1:
					name = "failing statement"
					err := st.Query(ctx, sqlgen.Stmt{SQL: `SELECT 1 / (count(*) - count(*)) FROM "rec_companies"`}, func([]any) error { return nil })
					_ = failed(err) // notes an unreachable database
					if err == nil {
						problem = "a division by zero succeeded"
					}
				case 2, 5:
					name = "transaction, committed"
					errRollback := errors.New("roll back")
					if op == 2 {
						name = "transaction, rolled back"
					}
					err := st.Tx(ctx, func(q store.Querier) error {
						if err := q.Query(ctx, sqlgen.Stmt{SQL: probe}, func(row []any) error { problem = check(ws, row); return nil }); err != nil {
							return err
						}
						if op == 2 {
							return errRollback
						}
						return nil
					})
					if !errors.Is(err, errRollback) && failed(err) {
						problem = fmt.Sprintf("transaction for %q: %v", ws, err)
					}
				case 3:
					name = "cancelled"
					cctx, cancel := context.WithTimeout(ctx, time.Duration(i%4)*time.Millisecond)
					err := st.Query(cctx, sqlgen.Stmt{SQL: `SELECT pg_sleep(0.002), ` + strings.TrimPrefix(probe, "SELECT ")}, func(row []any) error { problem = check(ws, row[1:]); return nil })
					cancel()
					if err != nil && !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, store.ErrUnavailable) {
						problem = fmt.Sprintf("cancelled read for %q: %v", ws, err)
					}
				case 4:
					name = "update"
					n, err := st.Exec(ctx, sqlgen.Stmt{SQL: `UPDATE "rec_companies" SET updated_at = updated_at WHERE name LIKE 'scope-%'`})
					if failed(err) || (!down && n != rows[ws]) {
						problem = fmt.Sprintf("update for %q: %d rows (want %d), %v", ws, n, rows[ws], err)
					}
				}
				mu.Lock()
				ops[name]++
				if down { // a new connection timing out on a loaded machine is not a leak (see runPoolLeak)
					unavailable++
				}
				mu.Unlock()
				problems[i] = problem
			}
		}()
	}
	for i := 0; i < n; i++ {
		jobs <- i
	}
	close(jobs)
	wg.Wait()
	bad := 0
	for _, p := range problems {
		if p != "" {
			bad++
			if bad <= 10 {
				t.Error(p)
			}
		}
	}
	if unavailable > n/10 {
		t.Errorf("%d of %d statements found the database unavailable: too few to conclude", unavailable, n)
	}
	t.Logf("%d statements on the store scoped to A, B and no workspace over a pool of 2 (%v; %d found the database unavailable): %d saw another scope or rows", n, ops, unavailable, bad)
}

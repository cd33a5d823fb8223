package solo_test

// TestDatabaseFaults D3 and D4: the database turned read-only, and a statement that cannot finish before
// the request deadline.

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/workspace-records/records/runtime/server/servertest"
)

// D3: the database turns read-only under the server, as after a failover that left it talking to a
// standby (SQLSTATE 25006 on every write). Writes answer 503, never 500; when the database takes writes
// again, the server recovers without a restart, although its pooled sessions were opened read-only.
func testReadOnlyDatabase(t *testing.T, fe *faultEnv) {
	l := newLoad(fe)
	id := l.create(t, "Before", 0)
	fe.sql(t, "", func(ctx context.Context, c *pgx.Conn) error {
		if _, err := c.Exec(ctx, "ALTER DATABASE "+fe.db+" SET default_transaction_read_only = on"); err != nil {
			return err
		}
		// The failover: every session ends; the server's next ones are opened read-only.
		_, err := c.Exec(ctx, "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND application_name = $2", fe.db, faultApp)
		return err
	})
	var reads []int
	for i := range 12 {
		lw := &logicalWrite{key: uuid.NewString(), name: fmt.Sprintf("read-only %d", i), score: 100 + i}
		l.writes = append(l.writes, lw)
		if l.attempt(lw) {
			t.Errorf("create %d acknowledged by a read-only database", i)
		}
		if res := l.do("PATCH", "/v1/companies/"+id, map[string]any{"description": "v-1", "cf__score": -1}); res != nil && res.Status != 503 {
			t.Errorf("PATCH on a read-only database: %d %s", res.Status, res.Raw)
		}
		if res := l.do("GET", "/v1/companies/"+id, nil); res != nil {
			reads = append(reads, res.Status)
		}
	}
	writes503 := l.count("503")
	fe.sql(t, "", func(ctx context.Context, c *pgx.Conn) error {
		_, err := c.Exec(ctx, "ALTER DATABASE "+fe.db+" RESET default_transaction_read_only")
		return err
	})
	// No restart and no session ended from outside: the server itself must drop the read-only sessions.
	back := time.Now()
	streak, failed := 0, 0
	for streak < 20 && time.Since(back) < 10*time.Second {
		lw := &logicalWrite{key: uuid.NewString(), name: fmt.Sprintf("after %d", len(l.writes)), score: 1000 + len(l.writes)}
		l.writes = append(l.writes, lw)
		for !l.attempt(lw) && time.Since(back) < 10*time.Second {
			failed++
			streak = 0
			time.Sleep(10 * time.Millisecond)
		}
		streak++
	}
	took := time.Since(back)
	if streak < 20 {
		t.Errorf("writes still failing %v after the database took writes again (%d failed attempts)", took, failed)
	}
	t.Logf("read-only: %d write answers 503; reads answered %v; after RESET, %d writes failed before 20 in a row succeeded, %v in all",
		writes503, reads, failed, took.Round(time.Millisecond))
	l.finish(t, faultTimeout+servertest.Budget(faultMargin, faultMarginLoaded))
	fe.noStuckSessions(t)
	fe.verify(t, l)
}

// D4: a statement that cannot finish (it waits on a lock the test holds) meets the request deadline:
// the answer is a 503 within the deadline plus a small margin, and the statement is cancelled on the
// server, not left waiting there with its connection slot.
func testStatementCancelled(t *testing.T, fe *faultEnv) {
	l := newLoad(fe)
	id := l.create(t, "Locked", 0)
	ctx := context.Background()
	holder, err := pgx.Connect(ctx, fe.direct)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Close(ctx)
	tx, err := holder.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)

	blocked := func(what string, lock string, reqs [][2]string, args ...any) {
		t.Helper()
		if _, err := tx.Exec(ctx, lock, args...); err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		var mu sync.Mutex
		var took []time.Duration
		for _, r := range reqs {
			wg.Go(func() {
				start := time.Now()
				var body any
				if r[0] == "PATCH" {
					body = map[string]any{"description": "v-1", "cf__score": -1}
				}
				res := l.do(r[0], r[1], body)
				d := time.Since(start)
				mu.Lock()
				took = append(took, d)
				mu.Unlock()
				if res != nil && res.Status != 503 {
					t.Errorf("%s %s behind a %s: %d %s", r[0], r[1], what, res.Status, res.Raw)
				}
				if res != nil && r[0] == "PATCH" {
					mu.Lock()
					l.updates[res.Header.Get("X-Request-Id")] = strconv.Itoa(res.Status)
					mu.Unlock()
				}
			})
		}
		// While they wait, the server's statements are on the server, waiting for the lock.
		waiting := 0
		if _, ok := servertest.WaitFor(faultTimeout/2, func() bool {
			waiting = fe.appSessions(t, "wait_event_type = 'Lock'")
			return waiting == len(reqs)
		}); !ok {
			t.Errorf("behind a %s: %d of %d statements waiting on the server", what, waiting, len(reqs))
		}
		wg.Wait()
		gone, ok := servertest.WaitFor(time.Second, func() bool { return fe.appSessions(t, "wait_event_type = 'Lock'") == 0 })
		if !ok {
			t.Errorf("behind a %s: %d statements still waiting on the server %v after their requests answered 503: not cancelled",
				what, fe.appSessions(t, "wait_event_type = 'Lock'"), gone)
		}
		slices.Sort(took)
		t.Logf("behind a %s: %d requests with %d statements waiting on the server; answered 503 in %v..%v; statements gone from pg_stat_activity %v after the last answer",
			what, len(reqs), waiting, took[0].Round(time.Millisecond), took[len(took)-1].Round(time.Millisecond), gone.Round(time.Millisecond))
	}
	patch := [2]string{"PATCH", "/v1/companies/" + id}
	blocked("row lock", "SELECT 1 FROM rec_companies WHERE id = $1 FOR UPDATE", [][2]string{patch, patch, patch, patch}, id)
	get := [2]string{"GET", "/v1/companies/" + id}
	list := [2]string{"GET", "/v1/companies?page_size=5"}
	blocked("table lock", "LOCK TABLE rec_companies IN ACCESS EXCLUSIVE MODE", [][2]string{get, list, get, list, patch})
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	fe.Expect(fe.Do("PATCH", "/v1/companies/"+id, map[string]any{"description": "v7", "cf__score": 7}), 200, "")
	l.finish(t, faultTimeout+servertest.Budget(cancelMargin, cancelMarginLoaded))
	if committed := fe.verify(t, l); committed != 0 {
		t.Errorf("%d PATCHes answered 503 at their deadline were written all the same", committed)
	}
}

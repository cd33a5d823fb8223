package store_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/workspace-records/records/engine/sqlgen"
	"github.com/workspace-records/records/runtime/server/servertest"
	"github.com/workspace-records/records/runtime/store"
)

// Statements queued with store.Later run in order inside their transaction, with the next statement or
// the COMMIT; a queued statement that must write a row and wrote none fails the transaction, and its
// COMMIT (sent in the same round trip on PostgreSQL) does not commit; nor does one after a failing
// queued statement. Both backends.
func TestLater(t *testing.T) {
	for _, b := range servertest.Backends {
		t.Run(string(b), func(t *testing.T) {
			ctx := context.Background()
			st, err := store.Open(ctx, servertest.DatabaseURL(t, b))
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			d := st.Dialect()
			if _, err := st.Exec(ctx, d.Bind("CREATE TABLE later_t (id integer PRIMARY KEY, n integer NOT NULL)")); err != nil {
				t.Fatal(err)
			}
			count := func() (n int64) {
				t.Helper()
				if err := st.Query(ctx, d.Bind("SELECT count(*) FROM later_t"), func(row []any) error { n = toInt(row[0]); return nil }); err != nil {
					t.Fatal(err)
				}
				return n
			}
			ins := func(id int) sqlgen.Stmt { return d.Bind("INSERT INTO later_t (id, n) VALUES (?, 0)", id) }
			// Queued, then read by the next statement in the same transaction; the last one goes with COMMIT.
			err = st.Tx(ctx, func(q store.Querier) error {
				if err := store.Later(ctx, q, ins(1), true, nil); err != nil {
					return err
				}
				var seen int64
				if err := q.Query(ctx, d.Bind("SELECT count(*) FROM later_t"), func(row []any) error { seen = toInt(row[0]); return nil }); err != nil {
					return err
				}
				if seen != 1 {
					t.Errorf("the next statement saw %d rows, want the queued one", seen)
				}
				return store.Later(ctx, q, ins(2), false, nil)
			})
			if err != nil || count() != 2 {
				t.Fatalf("commit: %v, %d rows, want 2", err, count())
			}
			// A queued write that must change a row and changes none: nothing commits.
			lost := errors.New("lost")
			err = st.Tx(ctx, func(q store.Querier) error {
				if err := store.Later(ctx, q, ins(3), false, nil); err != nil {
					return err
				}
				return store.Later(ctx, q, d.Bind("UPDATE later_t SET n = 1 WHERE id = ?", 99), true, func(err error) error {
					if errors.Is(err, store.ErrNoRowsAffected) {
						return lost
					}
					return err
				})
			})
			if !errors.Is(err, lost) || count() != 2 {
				t.Fatalf("a queued write that wrote nothing: %v, %d rows, want lost and 2", err, count())
			}
			// A failing queued statement (a duplicate key) fails the next statement and the transaction.
			err = st.Tx(ctx, func(q store.Querier) error {
				if err := store.Later(ctx, q, ins(4), false, nil); err != nil {
					return err
				}
				if err := store.Later(ctx, q, ins(1), false, nil); err != nil {
					return err // SQLite: at once
				}
				_, err := q.Exec(ctx, ins(5))
				return err
			})
			if !errors.Is(err, store.ErrConflict) || count() != 2 {
				t.Fatalf("a failing queued statement: %v, %d rows, want a conflict and 2", err, count())
			}
			// The connection is usable after all this.
			if err := st.Tx(ctx, func(q store.Querier) error { return store.Later(ctx, q, ins(6), true, nil) }); err != nil || count() != 3 {
				t.Fatalf("after failures: %v, %d rows, want 3", err, count())
			}
		})
	}
}

func toInt(v any) int64 {
	switch x := v.(type) {
	case int64:
		return x
	case int32:
		return int64(x)
	}
	return -1
}

// A statement run on a PostgreSQL transaction from another goroutine (a plugin's lookup reads
// through the write's transaction) may still be under way when the write gives up and rolls back:
// the rollback waits for it, and once the transaction has ended a further statement gets
// store.ErrTxDone instead of reaching a connection back in the pool. Run under -race by the CI's race
// step.
func TestTxStatementAfterRollback(t *testing.T) {
	ctx := context.Background()
	st, err := store.Open(ctx, servertest.DatabaseURL(t, servertest.Postgres))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	d := st.Dialect()
	gaveUp := errors.New("the hook's deadline passed")
	started := make(chan struct{})
	type outcome struct {
		err error
		at  time.Time
	}
	finished := make(chan outcome, 1)
	var tx store.Querier
	err = st.Tx(ctx, func(q store.Querier) error {
		tx = q
		if err := q.Query(ctx, d.Bind("SELECT 1"), func([]any) error { return nil }); err != nil {
			return err
		}
		go func() {
			close(started)
			// The time is taken while the statement still holds the transaction (its row is being
			// read), not after Query returns: the goroutine may be descheduled between the two, and
			// Tx may rightly return in that gap (seen under -race on a loaded machine).
			var at time.Time
			err := q.Query(ctx, d.Bind("SELECT pg_sleep(0.3)"), func([]any) error { at = time.Now(); return nil })
			finished <- outcome{err, at}
		}()
		<-started
		time.Sleep(20 * time.Millisecond) // most often the lookup is under way when the write gives up
		return gaveUp
	})
	returned := time.Now()
	if !errors.Is(err, gaveUp) {
		t.Fatalf("Tx: %v, want the function's error", err)
	}
	// The lookup either ran before the rollback, and Tx returned after it, or found the transaction
	// ended.
	select {
	case o := <-finished:
		switch {
		case o.err == nil && returned.Before(o.at):
			t.Fatal("Tx returned while a statement on its transaction was still running")
		case o.err != nil && !errors.Is(o.err, store.ErrTxDone):
			t.Fatalf("the concurrent statement: %v", o.err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the concurrent statement did not end")
	}
	if err := tx.Query(ctx, d.Bind("SELECT 1"), func([]any) error { return nil }); !errors.Is(err, store.ErrTxDone) {
		t.Fatalf("a statement after the rollback: %v, want ErrTxDone", err)
	}
}

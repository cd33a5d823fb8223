package store_test

import (
	"context"
	"errors"
	"testing"

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

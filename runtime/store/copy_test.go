package store_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/workspace-records/records/engine/sqlgen"
	"github.com/workspace-records/records/runtime/server/servertest"
	"github.com/workspace-records/records/runtime/store"
)

// store.Copy, the bulk path's writes (COPY through a staged table on PostgreSQL, a reused prepared
// multi-row INSERT on SQLite), stores what the one INSERT of Dialect.InsertRows stores: rows of every
// column type, in full statements and a remainder, twice in one transaction; IgnoreConflicts skips
// stored keys and counts only what it wrote; a conflict without it fails as ErrConflict, writes
// nothing of its transaction, and leaves the store usable.
func TestCopy(t *testing.T) {
	for _, b := range servertest.Backends {
		t.Run(string(b), func(t *testing.T) {
			ctx := context.Background()
			var st store.Store
			var err error
			ddl := "(k bigint PRIMARY KEY, u uuid, s text, n numeric, f double precision, at timestamptz, yes boolean, doc jsonb)"
			if b == servertest.Postgres {
				st, err = store.OpenPostgres(ctx, servertest.DatabaseURL(t, b))
			} else {
				st, err = store.OpenSQLite(ctx, filepath.Join(t.TempDir(), "copy.db"))
				ddl = "(k INTEGER PRIMARY KEY, u TEXT, s TEXT, n TEXT, f REAL, at TEXT, yes INTEGER, doc TEXT) STRICT"
			}
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			d := st.Dialect()
			for _, table := range []string{"copied", "inserted"} {
				if _, err := st.Exec(ctx, sqlgen.Stmt{SQL: "CREATE TABLE " + table + " " + ddl}); err != nil {
					t.Fatal(err)
				}
			}
			at := time.Date(2026, 1, 31, 9, 30, 0, 123456000, time.UTC)
			rowsOf := func(table string, from, to int) sqlgen.Rows {
				r := sqlgen.Rows{Table: table, Columns: []string{"k", "u", "s", "n", "f", "at", "yes", "doc"}}
				for k := from; k < to; k++ {
					var u, s, n any // some NULLs
					if k%7 != 0 {
						u, s, n = fmt.Sprintf("0190a6d4-0000-7000-8000-%012d", k), fmt.Sprintf("it's \"%d\"\t\\ ünïcode", k), fmt.Sprintf("%d.%02d", k*1000, k%100)
					}
					r.Values = append(r.Values, []any{d.Arg(int64(k)), d.Arg(u), d.Arg(s), d.Arg(n), d.Arg(float64(k) / 3), d.Arg(at.Add(time.Duration(k) * time.Second)), d.Arg(k%2 == 0), d.Arg(fmt.Sprintf(`{"k": %d}`, k))})
				}
				return r
			}
			const total = 300 // several full SQLite statements and a remainder
			err = st.Tx(ctx, func(q store.Querier) error {
				for _, part := range [][2]int{{0, 200}, {200, total}} { // the same table twice in one transaction
					if n, err := store.Copy(ctx, q, d, rowsOf("copied", part[0], part[1])); err != nil || n != int64(part[1]-part[0]) {
						return fmt.Errorf("copy %v: %d, %w", part, n, err)
					}
				}
				_, err := q.Exec(ctx, d.InsertRows(rowsOf("inserted", 0, total)))
				return err
			})
			if err != nil {
				t.Fatal(err)
			}
			read := func(table string) []string {
				var out []string
				err := st.Query(ctx, sqlgen.Stmt{SQL: "SELECT k, u, s, n, f, at, yes, doc FROM " + table + " ORDER BY k"}, func(row []any) error {
					out = append(out, fmt.Sprintf("%#v", row))
					return nil
				})
				if err != nil {
					t.Fatal(err)
				}
				return out
			}
			copied, inserted := read("copied"), read("inserted")
			if len(copied) != total || !reflect.DeepEqual(copied, inserted) {
				t.Fatalf("copied %d rows, inserted %d; first copied %v, first inserted %v", len(copied), len(inserted), copied[:1], inserted[:1])
			}

			// Conflicts skipped: only the new half is written and counted.
			skip := rowsOf("copied", total-100, total+100)
			skip.IgnoreConflicts = true
			err = st.Tx(ctx, func(q store.Querier) error {
				n, err := store.Copy(ctx, q, d, skip)
				if err == nil && n != 100 {
					err = fmt.Errorf("wrote %d rows, want 100", n)
				}
				return err
			})
			if err != nil {
				t.Fatal(err)
			}
			// A conflict fails the transaction whole, rows written before it included.
			err = st.Tx(ctx, func(q store.Querier) error {
				if _, err := store.Copy(ctx, q, d, rowsOf("copied", 1000, 1100)); err != nil {
					return err
				}
				_, err := store.Copy(ctx, q, d, rowsOf("copied", total+50, total+150))
				return err
			})
			if !errors.Is(err, store.ErrConflict) {
				t.Errorf("copy of stored keys: %v, want ErrConflict", err)
			}
			if got := len(read("copied")); got != total+100 {
				t.Errorf("%d rows after the failed copy, want %d", got, total+100)
			}
			// The store goes on.
			err = st.Tx(ctx, func(q store.Querier) error {
				_, err := store.Copy(ctx, q, d, rowsOf("copied", 2000, 2070))
				return err
			})
			if got := len(read("copied")); err != nil || got != total+170 {
				t.Errorf("copy after a failed one: %v, %d rows", err, got)
			}
		})
	}
}

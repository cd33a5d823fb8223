package store

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"

	sqlite3 "modernc.org/sqlite/lib"

	"github.com/workspace-records/records/engine/sqlgen"
)

func openTestSQLite(t *testing.T) *SQLite {
	t.Helper()
	s, err := OpenSQLite(context.Background(), filepath.Join(t.TempDir(), "cache.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// cached returns the statement texts a connection of db keeps, most recently used first.
func cached(t *testing.T, db *sql.DB) []string {
	t.Helper()
	c, err := db.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var texts []string
	err = c.Raw(func(dc any) error {
		sc, ok := dc.(*stmtConn)
		if !ok {
			return fmt.Errorf("the connection is a %T, not a *stmtConn", dc)
		}
		sc.mu.Lock()
		defer sc.mu.Unlock()
		if len(sc.byText) != sc.lru.Len() {
			return fmt.Errorf("the cache's index holds %d statements, its list %d", len(sc.byText), sc.lru.Len())
		}
		for e := sc.lru.Front(); e != nil; e = e.Next() {
			s := e.Value.(*cachedStmt)
			if s.busy {
				return fmt.Errorf("%q is busy with no query running", s.text)
			}
			texts = append(texts, s.text)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return texts
}

// The SQLite store keeps each connection's prepared statements by SQL text and runs a text seen before
// without parsing it again, with the same results as a fresh statement: after a failed step (a
// constraint), after an abandoned iteration (a cancelled context), when the same text runs again
// while its rows are open (nested in a transaction: a one-shot statement then), and after another
// connection changed the table's schema (SQLite prepares the statement again by itself). The cache of
// a connection holds at most StmtCacheSize statements, the least recently used leaving first.
func TestSQLiteStatementCache(t *testing.T) {
	ctx := context.Background()
	s := openTestSQLite(t)
	exec := func(q string, args ...any) int64 {
		t.Helper()
		n, err := s.Exec(ctx, sqlgen.Stmt{SQL: q, Args: args})
		if err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		return n
	}
	ids := func(q Querier, text string, args ...any) []int64 {
		t.Helper()
		var out []int64
		if err := q.Query(ctx, sqlgen.Stmt{SQL: text, Args: args}, func(row []any) error {
			out = append(out, row[0].(int64))
			return nil
		}); err != nil {
			t.Fatalf("%s: %v", text, err)
		}
		return out
	}
	exec("CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT NOT NULL)")
	const ins = "INSERT INTO t (id, v) VALUES (?, ?)"
	for i := range 10 {
		exec(ins, i, fmt.Sprint("v", i))
	}
	if got := cached(t, s.write); len(got) == 0 || got[0] != ins {
		t.Fatalf("the writer's cache after 10 inserts: %q, want the insert first", got)
	}
	// A failed step leaves the statement reusable.
	if _, err := s.Exec(ctx, sqlgen.Stmt{SQL: ins, Args: []any{3, "dup"}}); !errors.Is(err, ErrConflict) {
		t.Fatalf("duplicate insert: %v, want ErrConflict", err)
	}
	if n := exec(ins, 10, "v10"); n != 1 {
		t.Fatalf("insert after a failed one: %d rows", n)
	}

	// Reads through the pool: every reader keeps the text once and answers with fresh arguments.
	const byID = "SELECT id FROM t WHERE id >= ? ORDER BY id"
	var wg sync.WaitGroup
	for g := range ReadConns() {
		wg.Go(func() {
			for i := range 20 {
				from := (g + i) % 11
				var got []int64
				if err := s.Query(ctx, sqlgen.Stmt{SQL: byID, Args: []any{from}}, func(row []any) error {
					got = append(got, row[0].(int64))
					return nil
				}); err != nil {
					t.Error(err)
					return
				}
				if len(got) != 11-from || got[0] != int64(from) {
					t.Errorf("from %d: %v", from, got)
					return
				}
			}
		})
	}
	wg.Wait()
	if st := s.read.Stats(); st.MaxIdleClosed != 0 || st.OpenConnections > ReadConns() {
		t.Errorf("reader pool: %d connections closed for want of an idle slot, %d open (max %d)", st.MaxIdleClosed, st.OpenConnections, ReadConns())
	}
	if got := cached(t, s.read); len(got) != 1 || got[0] != byID {
		t.Errorf("a reader's cache: %q, want the one query", got)
	}

	// Iterations abandoned half way (by the callback, by the context), then the same text again.
	stop := errors.New("stop")
	if err := s.Query(ctx, sqlgen.Stmt{SQL: byID, Args: []any{0}}, func([]any) error { return stop }); !errors.Is(err, stop) {
		t.Errorf("abandoned iteration: %v", err)
	}
	if got := ids(s, byID, 0); len(got) != 11 {
		t.Errorf("after an abandoned iteration: %v", got)
	}
	cctx, cancel := context.WithCancel(ctx)
	_ = s.Query(cctx, sqlgen.Stmt{SQL: byID, Args: []any{0}}, func([]any) error { cancel(); return nil })
	if got := ids(s, byID, 0); len(got) != 11 {
		t.Errorf("after a cancelled iteration: %v", got)
	}

	// The same text inside its own iteration (one connection: a transaction).
	err := s.Tx(ctx, func(q Querier) error {
		outer := 0
		return q.Query(ctx, sqlgen.Stmt{SQL: byID, Args: []any{8}}, func(row []any) error {
			outer++
			if inner := ids(q, byID, 0); len(inner) != 11 {
				return fmt.Errorf("nested run of the same text: %v", inner)
			}
			if outer > 3 {
				return fmt.Errorf("outer iteration saw %d rows of 3", outer)
			}
			return nil
		})
	})
	if err != nil {
		t.Error(err)
	}
	if got := cached(t, s.write); slicesCount(got, byID) != 1 {
		t.Errorf("the writer's cache after the nested run: %q, want the text once", got)
	}

	// Another connection changes the schema: the cached statement follows it.
	const all = "SELECT * FROM t WHERE id = ?"
	cols := func() int {
		t.Helper()
		n := 0
		if err := s.Query(ctx, sqlgen.Stmt{SQL: all, Args: []any{1}}, func(row []any) error { n = len(row); return nil }); err != nil {
			t.Fatal(err)
		}
		return n
	}
	if n := cols(); n != 2 {
		t.Fatalf("%d columns", n)
	}
	exec("ALTER TABLE t ADD COLUMN w TEXT")
	if n := cols(); n != 3 {
		t.Errorf("after ADD COLUMN by the writer: %d columns, want 3", n)
	}
	exec("DROP TABLE t")
	exec("CREATE TABLE t (id INTEGER PRIMARY KEY, a TEXT, b TEXT, c TEXT)")
	exec("INSERT INTO t (id, a) VALUES (1, 'x')")
	if n := cols(); n != 4 {
		t.Errorf("after the table was dropped and created again: %d columns, want 4", n)
	}

	// The bound: the least recently used leave.
	for i := range StmtCacheSize + 10 {
		if got := ids(s.liteWriter(), fmt.Sprintf("SELECT id + %d FROM t WHERE id = 1", i)); len(got) != 1 || got[0] != int64(i+1) {
			t.Fatalf("statement %d: %v", i, got)
		}
	}
	got := cached(t, s.write)
	if len(got) != StmtCacheSize || got[0] != fmt.Sprintf("SELECT id + %d FROM t WHERE id = 1", StmtCacheSize+9) || slicesCount(got, ins) != 0 {
		t.Errorf("after %d statements the writer keeps %d, newest %q, the insert %d times", StmtCacheSize+10, len(got), got[0], slicesCount(got, ins))
	}
}

// Once a database is analyzed (sqlite_stat4 holds samples of every index), SQLite would plan a
// statement again every time a parameter compared with an indexed column is bound: a connection of
// the store plans without the samples (keepPlans), so a cached statement runs with new arguments as
// prepared, never planned again.
func TestSQLiteStatementsStayPrepared(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "analyzed.db")
	// Analyzed by a plain connection, as by the sqlite3 shell or another program (the store's own
	// connections, without the samples, would not collect them).
	plain, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	for _, q := range []string{
		"PRAGMA journal_mode = WAL",
		"CREATE TABLE r (ws TEXT NOT NULL, id INTEGER NOT NULL, n INTEGER, PRIMARY KEY (ws, id))",
		"CREATE INDEX r_n ON r (ws, n)",
		// Skewed: one workspace holds a tenth of the rows, so the samples differ by value.
		"WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < 5000) INSERT INTO r SELECT CASE WHEN i % 10 = 0 THEN 'a' ELSE 'b' END, i, i % 100 FROM c",
		"ANALYZE",
	} {
		if _, err := plain.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	s, err := OpenSQLite(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	samples := 0
	if err := s.Query(ctx, sqlgen.Stmt{SQL: "SELECT count(*) FROM sqlite_stat4"}, func(row []any) error { samples = int(row[0].(int64)); return nil }); err != nil || samples == 0 {
		t.Fatalf("ANALYZE kept %d samples (%v): the test needs some", samples, err)
	}
	c, err := s.read.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	err = c.Raw(func(dc any) error {
		sc := dc.(*stmtConn)
		db, tls, err := sqliteHandle(sc.Conn)
		if err != nil {
			return err
		}
		if off := sqliteOptimizationsOff(db, tls); off != sqlite3.SQLITE_Stat4 {
			return fmt.Errorf("optimizations off on a reader: %#x, want SQLITE_Stat4 alone", off)
		}
		for _, q := range []string{
			"SELECT id FROM r WHERE ws = ? ORDER BY id LIMIT 5",
			"SELECT id FROM r WHERE ws = ? AND n = ? ORDER BY id LIMIT 5",
			"SELECT id FROM r WHERE ws = ? AND id < ? ORDER BY id DESC LIMIT 5",
		} {
			for i := range 6 {
				args := []driver.NamedValue{{Ordinal: 1, Value: []string{"a", "b"}[i%2]}}
				switch {
				case strings.Contains(q, "n = ?"):
					args = append(args, driver.NamedValue{Ordinal: 2, Value: []int64{10, 13, 20, 27, 30, 41}[i]})
				case strings.Contains(q, "id < ?"):
					args = append(args, driver.NamedValue{Ordinal: 2, Value: int64(1000 + 500*i)})
				}
				rows, err := sc.QueryContext(ctx, q, args)
				if err != nil {
					return err
				}
				dest := make([]driver.Value, 1)
				n := 0
				for rows.Next(dest) == nil {
					n++
				}
				rows.Close()
				if n == 0 {
					return fmt.Errorf("%s %v: no rows", q, args)
				}
			}
			e, ok := sc.byText[q]
			if !ok {
				return fmt.Errorf("%s: not cached", q)
			}
			pstmt := reflect.ValueOf(e.Value.(*cachedStmt).st).Elem().FieldByName("pstmt")
			if !pstmt.IsValid() || pstmt.Kind() != reflect.Uintptr || pstmt.Uint() == 0 {
				return fmt.Errorf("%s: the driver's statement has no handle where expected", q)
			}
			if n := sqlite3.Xsqlite3_stmt_status(tls, uintptr(pstmt.Uint()), sqlite3.SQLITE_STMTSTATUS_REPREPARE, 0); n != 0 {
				t.Errorf("%s: planned again %d times in 6 runs", q, n)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// liteWriter runs queries on the writer connection (as a transaction's statements do).
func (s *SQLite) liteWriter() Querier { return liteq{s.write} }

func slicesCount(list []string, s string) int {
	n := 0
	for _, x := range list {
		if x == s {
			n++
		}
	}
	return n
}

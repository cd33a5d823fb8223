package store_test

import (
	"context"
	"errors"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/workspace-records/records/engine/sqlgen"
	"github.com/workspace-records/records/runtime/server/servertest"
	"github.com/workspace-records/records/runtime/store"
)

// Two transactions that lock two rows in opposite orders deadlock; PostgreSQL rolls one back (40P01).
// The loser is store.ErrUnavailable (the API's 503 with Retry-After: the request is safe to send again),
// never an unmapped error that would be a 500, and the winner commits.
func TestPostgresDeadlockIsRetryable(t *testing.T) {
	ctx := context.Background()
	st, err := store.OpenPostgres(ctx, servertest.DatabaseURL(t, servertest.Postgres))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	for _, sql := range []string{"CREATE TABLE pair (id int PRIMARY KEY, n int NOT NULL)", "INSERT INTO pair VALUES (1, 0), (2, 0)"} {
		if _, err := st.Exec(ctx, sqlgen.Stmt{SQL: sql}); err != nil {
			t.Fatal(err)
		}
	}
	bump := func(q store.Querier, id int) error {
		_, err := q.Exec(ctx, sqlgen.Stmt{SQL: "UPDATE pair SET n = n + 1 WHERE id = $1", Args: []any{id}})
		return err
	}
	var wg sync.WaitGroup
	var first sync.WaitGroup
	first.Add(2)
	errs := make([]error, 2)
	for i, order := range [][2]int{{1, 2}, {2, 1}} {
		wg.Go(func() {
			errs[i] = st.Tx(ctx, func(q store.Querier) error {
				if err := bump(q, order[0]); err != nil {
					first.Done()
					return err
				}
				first.Done()
				first.Wait() // both hold their first row: the second updates now wait on each other
				return bump(q, order[1])
			})
		})
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("the deadlock was not broken within 30 s")
	}
	var failed int
	for _, err := range errs {
		if err != nil {
			failed++
			if !errors.Is(err, store.ErrUnavailable) {
				t.Errorf("the deadlock's loser: %v; want store.ErrUnavailable", err)
			}
		}
	}
	if failed != 1 {
		t.Fatalf("%d of 2 transactions failed (%v); want exactly one", failed, errs)
	}
	var sum int64
	if err := st.Query(ctx, sqlgen.Stmt{SQL: "SELECT sum(n) FROM pair"}, func(row []any) error {
		sum, _ = row[0].(int64)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if sum != 2 {
		t.Fatalf("sum %d after one committed transaction of two updates, want 2 (the loser rolled back whole)", sum)
	}
}

// Every pooled session ends a transaction left idle for a minute (a frozen client must not hold locks
// and a pool slot for ever); a URL may set its own value.
func TestPostgresIdleInTransactionTimeout(t *testing.T) {
	ctx := context.Background()
	url := servertest.DatabaseURL(t, servertest.Postgres)
	for _, c := range []struct{ url, want string }{
		{url, "1min"},
		{url + "&idle_in_transaction_session_timeout=5000", "5s"},
	} {
		st, err := store.OpenPostgres(ctx, c.url)
		if err != nil {
			t.Fatal(err)
		}
		var got string
		err = st.Query(ctx, sqlgen.Stmt{SQL: "SHOW idle_in_transaction_session_timeout"}, func(row []any) error {
			got, _ = row[0].(string)
			return nil
		})
		st.Close()
		if err != nil || got != c.want {
			t.Errorf("%s: idle_in_transaction_session_timeout %q (%v), want %q", c.url, got, err, c.want)
		}
	}
}

// The pool waits store.ConnectTimeout for a new session unless the URL sets connect_timeout, which wins
// in either direction; store.WithConnectTimeout sets it only where the URL sets none.
func TestPostgresConnectTimeout(t *testing.T) {
	ctx := context.Background()
	u, err := url.Parse(servertest.DatabaseURL(t, servertest.Postgres))
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Del("connect_timeout") // the tests' URLs may carry one (servertest, outside strict timing)
	u.RawQuery = q.Encode()
	base := u.String()
	for _, c := range []struct {
		url  string
		want time.Duration
	}{
		{base, store.ConnectTimeout},
		{base + "&connect_timeout=7", 7 * time.Second},
		{base + "&connect_timeout=1", time.Second},
		{store.WithConnectTimeout(base, store.CommandConnectTimeout), store.CommandConnectTimeout},
		{store.WithConnectTimeout(base+"&connect_timeout=3", store.CommandConnectTimeout), 3 * time.Second},
	} {
		st, err := store.OpenPostgres(ctx, c.url)
		if err != nil {
			t.Fatal(err)
		}
		got := st.Pool().Config().ConnConfig.ConnectTimeout
		st.Close()
		if got != c.want {
			t.Errorf("%s: connect timeout %s, want %s", c.url, got, c.want)
		}
	}
	for _, other := range []string{"sqlite:/tmp/x.db", "/tmp/x.db"} {
		if got := store.WithConnectTimeout(other, time.Minute); got != other {
			t.Errorf("WithConnectTimeout(%q) = %q: only PostgreSQL URLs take connect_timeout", other, got)
		}
	}
	if got := store.WithConnectTimeout("postgres://h/db", 1500*time.Millisecond); got != "postgres://h/db?connect_timeout=1" {
		t.Errorf("WithConnectTimeout without a query: %q", got)
	}
}

package server_test

import (
	"context"
	"testing"
	"time"

	"github.com/workspace-records/records/engine/sqlgen"
	"github.com/workspace-records/records/runtime/auth"
	"github.com/workspace-records/records/runtime/server"
	"github.com/workspace-records/records/runtime/server/servertest"
)

// TestKeyCache shows what remembering authenticated keys may and may not change. A server answers a
// known key without reading it again for up to auth.PrincipalMaxAge; a revocation, deactivation or plan
// change made through any process's Directory (here a second backend on the same database, as
// recordsctl or another replica would be) still applies on the very next request. On PostgreSQL a
// change made to the tables by hand, which announces nothing, applies within PrincipalMaxAge; on SQLite
// the database counts every change, by hand included (triggers, migrate.AuthChangesTable), and the
// server reads the count on every request: the change by hand applies at once too.
func TestKeyCache(t *testing.T) {
	t.Parallel()
	for _, backend := range servertest.Backends {
		t.Run(string(backend), func(t *testing.T) {
			t.Parallel()
			// A server of its own: it changes keys and plans by hand, through a second backend, and watches the key cache.
			e := servertest.Start(t, backend, servertest.Options{Private: true})
			ctx := context.Background()
			dir := e.Server.Backend().Directory
			if backend == servertest.Postgres {
				deadline := time.Now().Add(5 * time.Second)
				for !dir.Watching() && time.Now().Before(deadline) {
					time.Sleep(10 * time.Millisecond)
				}
				if !dir.Watching() {
					t.Fatal("the server does not listen for key changes")
				}
			}
			other, err := server.Open(ctx, e.Config)
			if err != nil {
				t.Fatal(err)
			}
			defer other.Close()

			// A change by hand: the cached key keeps working on PostgreSQL until PrincipalMaxAge.
			hand := e.NewKey(e.Member, auth.KeyOptions{Access: "read"})
			loaded := time.Now() // the server reads the key during this request, not before: the cached copy is at most this old
			e.Expect(e.DoKey(hand, "GET", "/v1/me", nil), 200, "")
			keyID := e.DoKey(hand, "GET", "/v1/me", nil).Data()["key"].(map[string]any)["id"].(string)
			st := e.Server.Backend().Store
			if _, err := st.Exec(ctx, st.Dialect().Bind("UPDATE api_keys SET revoked_at = ? WHERE id = ?", time.Now().UTC(), keyID)); err != nil {
				t.Fatal(err)
			}
			changed := time.Now()
			first := e.DoKey(hand, "GET", "/v1/me", nil)
			switch {
			case backend == servertest.SQLite:
				e.Expect(first, 401, "invalid_api_key")
			case time.Since(loaded) < auth.PrincipalMaxAge/2:
				// The key was read and the change made, and this answer came, all within half the
				// cache's age limit: the copy read first was still fresh, so only the cache can answer 200.
				// (Timed from the read, not the change: under load the UPDATE alone can outlast the limit.)
				e.Expect(first, 200, "") // remembered: proves the cache serves
			}
			untilRefused(t, e, hand, changed, "a key revoked by hand")

			// Changes through another process's Directory apply on the next request.
			key := e.NewKey(e.Member, auth.KeyOptions{Access: "write"})
			e.Expect(e.DoKey(key, "GET", "/v1/companies", nil), 200, "")
			keyID = e.DoKey(key, "GET", "/v1/me", nil).Data()["key"].(map[string]any)["id"].(string)
			if err := other.Directory.RevokeKey(ctx, keyID); err != nil {
				t.Fatal(err)
			}
			waitAnnounced(t, backend, func() bool { return e.DoKey(key, "GET", "/v1/companies", nil).Status == 401 })
			e.Expect(e.DoKey(key, "GET", "/v1/companies", nil), 401, "invalid_api_key")

			e.Expect(e.Do("GET", "/v1/companies", nil), 200, "")
			if err := other.Members.SetPlan(ctx, e.Workspace, "free"); err != nil {
				t.Fatal(err)
			}
			waitAnnounced(t, backend, func() bool { return e.Do("GET", "/v1/companies", nil).Status == 403 })
			e.Expect(e.Do("GET", "/v1/companies", nil), 403, "plan_upgrade_required")
			if err := other.Members.SetPlan(ctx, e.Workspace, "growth"); err != nil {
				t.Fatal(err)
			}
			waitAnnounced(t, backend, func() bool { return e.Do("GET", "/v1/companies", nil).Status == 200 })
			e.Expect(e.Do("GET", "/v1/companies", nil), 200, "")
			if err := other.Members.Deactivate(ctx, e.Member); err != nil {
				t.Fatal(err)
			}
			waitAnnounced(t, backend, func() bool { return e.Do("GET", "/v1/companies", nil).Status == 401 })
			e.Expect(e.Do("GET", "/v1/companies", nil), 401, "invalid_api_key")
		})
	}
}

// TestKeyCacheSQLite shows that a SQLite server does remember keys, and what keeps it right: with
// the trigger that counts changes to api_keys dropped, a key revoked by hand is still answered from
// memory (so the cache serves, and the count is what makes it see the change), for at most
// auth.PrincipalMaxAge. Other changes, still counted, empty the cache at once.
func TestKeyCacheSQLite(t *testing.T) {
	t.Parallel()
	// A server of its own: it drops one of the database's triggers.
	e := servertest.Start(t, servertest.SQLite, servertest.Options{Private: true})
	ctx := context.Background()
	if !e.Server.Backend().Directory.Watching() {
		t.Fatal("a SQLite server does not remember keys")
	}
	other, err := server.Open(ctx, e.Config)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	st := other.Store
	if _, err := st.Exec(ctx, sqlgen.Stmt{SQL: "DROP TRIGGER auth_changes_api_keys_update"}); err != nil {
		t.Fatal(err)
	}
	key := e.NewKey(e.Member, auth.KeyOptions{Access: "read"})
	loaded := time.Now() // the server reads the key during this request: the cached copy is at most this old
	keyID := e.DoKey(key, "GET", "/v1/me", nil).Data()["key"].(map[string]any)["id"].(string)
	e.Expect(e.DoKey(key, "GET", "/v1/me", nil), 200, "")
	if _, err := st.Exec(ctx, st.Dialect().Bind("UPDATE api_keys SET revoked_at = ? WHERE id = ?", time.Now().UTC(), keyID)); err != nil {
		t.Fatal(err)
	}
	changed := time.Now()
	first := e.DoKey(key, "GET", "/v1/me", nil)
	if time.Since(loaded) < auth.PrincipalMaxAge/2 { // timed from the read, as in TestKeyCache
		e.Expect(first, 200, "") // remembered: the uncounted change is not seen
	}
	untilRefused(t, e, key, changed, "a key revoked by hand, uncounted,")

	// Counted changes: the plan, through the other process's Directory.
	e.Expect(e.Do("GET", "/v1/companies", nil), 200, "")
	e.Expect(e.Do("GET", "/v1/companies", nil), 200, "")
	if err := other.Members.SetPlan(ctx, e.Workspace, "free"); err != nil {
		t.Fatal(err)
	}
	e.Expect(e.Do("GET", "/v1/companies", nil), 403, "plan_upgrade_required")
}

// untilRefused asks GET /v1/me with key until it is refused (401), and fails if a request sent more
// than auth.PrincipalMaxAge after changed, with a margin, still succeeds: unbounded caching would never
// end. The time counted is when each request was sent, not when its answer came, so that a loaded
// machine (these tests run beside the parallel ones) slows the loop without failing it.
func untilRefused(t *testing.T, e *servertest.Env, key string, changed time.Time, what string) {
	t.Helper()
	for {
		sent := time.Now()
		if e.DoKey(key, "GET", "/v1/me", nil).Status == 401 {
			return
		}
		if after := sent.Sub(changed); after > auth.PrincipalMaxAge+1500*time.Millisecond {
			t.Fatalf("%s still works in a request sent %s after the change", what, after)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// waitAnnounced waits until probe holds, the sign that a change another process announced (PostgreSQL
// NOTIFY) has reached the server, for at most half of auth.PrincipalMaxAge: many times what a
// notification takes to cross a loopback socket, even on a loaded machine, and short of the cache's own
// ageing (each caller's key was read just before the change), so the assertion that follows still
// shows that the change does not wait for the cache to age. On SQLite the server reads the change
// count on every request: probe is asked once, and the change must already apply.
func waitAnnounced(t *testing.T, backend servertest.Backend, probe func() bool) {
	t.Helper()
	limit := time.Duration(0)
	if backend == servertest.Postgres {
		limit = auth.PrincipalMaxAge / 2
	}
	servertest.WaitFor(limit, probe)
}

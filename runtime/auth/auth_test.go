package auth_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/workspace-records/records/engine/apierr"
	"github.com/workspace-records/records/engine/sqlgen"
	"github.com/workspace-records/records/runtime/auth"
	"github.com/workspace-records/records/runtime/members"
	"github.com/workspace-records/records/runtime/server/servertest"
	"github.com/workspace-records/records/runtime/store"
)

// counting is a real store that records every statement run through it. It hides the store's
// optional interfaces (LISTEN/NOTIFY), so a Directory over it on PostgreSQL never remembers keys; on
// SQLite it does (the change count is plain SQL), and each key below is authenticated once, so every
// authentication is the uncached worst case.
type counting struct {
	store.Store
	mu    sync.Mutex
	stmts []sqlgen.Stmt
}

func (c *counting) note(s sqlgen.Stmt) {
	c.mu.Lock()
	c.stmts = append(c.stmts, s)
	c.mu.Unlock()
}

func (c *counting) Query(ctx context.Context, s sqlgen.Stmt, fn func([]any) error) error {
	c.note(s)
	return c.Store.Query(ctx, s, fn)
}

func (c *counting) Exec(ctx context.Context, s sqlgen.Stmt) (int64, error) {
	c.note(s)
	return c.Store.Exec(ctx, s)
}

func (c *counting) Tx(ctx context.Context, fn func(store.Querier) error) error {
	return c.Store.Tx(ctx, func(q store.Querier) error { return fn(countingQ{q, c}) })
}

type countingQ struct {
	q store.Querier
	c *counting
}

func (q countingQ) Query(ctx context.Context, s sqlgen.Stmt, fn func([]any) error) error {
	q.c.note(s)
	return q.q.Query(ctx, s, fn)
}

func (q countingQ) Exec(ctx context.Context, s sqlgen.Stmt) (int64, error) {
	q.c.note(s)
	return q.q.Exec(ctx, s)
}

func (c *counting) take() []sqlgen.Stmt {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := c.stmts
	c.stmts = nil
	return out
}

// TestAuthenticateQueries (K2, K3) counts the statements Authenticate runs, on a real migrated
// database of each backend: a malformed key runs none (it is refused by its shape: wrong prefix or
// length, non-hex, upper case, whitespace); any well-formed key — unknown, revoked, expired,
// assurance-stale, of a deactivated member, of a workspace without API access, of an owner without
// api.access, or valid — runs exactly one, the lookup by the secret's hash (unique index
// api_keys_secret_idx); on SQLite it is preceded by the read of the change count (the key cache's
// check, migrate.AuthChangesTable), which carries nothing of the key. Only after that lookup matched
// does the answer say why a key is refused.
func TestAuthenticateQueries(t *testing.T) {
	for _, b := range servertest.Backends {
		t.Run(string(b), func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			be := servertest.OpenBackend(t, b)
			dir := be.Directory
			ws, err := be.Members.CreateWorkspace(ctx, "Counted", "growth")
			if err != nil {
				t.Fatal(err)
			}
			n := 0
			member := func(role string) string {
				n++
				m, err := be.Members.CreateMember(ctx, ws.ID, members.MemberProfile{Email: fmt.Sprintf("m%d@count.example", n), Role: role})
				if err != nil {
					t.Fatal(err)
				}
				return m.ID
			}
			key := func(m string, life time.Duration) (*auth.Key, string) {
				k, secret, err := dir.CreateKey(ctx, m, auth.KeyOptions{Access: "read", ExpiresIn: life})
				if err != nil {
					t.Fatal(err)
				}
				return k, secret
			}
			_, valid := key(member("admin"), time.Hour)
			rk, revoked := key(member("admin"), time.Hour)
			_, expiring := key(member("admin"), time.Hour)
			sm := member("admin")
			_, stale := key(sm, time.Hour)
			dm := member("admin")
			_, deactivated := key(dm, time.Hour)
			pm := member("admin")
			_, noAPI := key(pm, time.Hour)
			ws2, err := be.Members.CreateWorkspace(ctx, "Downgraded", "growth")
			if err != nil {
				t.Fatal(err)
			}
			m2, err := be.Members.CreateMember(ctx, ws2.ID, members.MemberProfile{Email: "d@count.example", Role: "admin"})
			if err != nil {
				t.Fatal(err)
			}
			_, downgraded, err := dir.CreateKey(ctx, m2.ID, auth.KeyOptions{Access: "read", ExpiresIn: time.Hour})
			if err != nil {
				t.Fatal(err)
			}
			time.Sleep(2 * time.Millisecond)
			for _, err := range []error{dir.RevokeKey(ctx, rk.ID), be.Members.MFAVerified(ctx, sm), be.Members.Deactivate(ctx, dm), be.Members.SetRole(ctx, pm, "no_api"), be.Members.SetPlan(ctx, ws2.ID, "free")} {
				if err != nil {
					t.Fatal(err)
				}
			}

			cs := &counting{Store: be.Store}
			counted := auth.NewDirectory(cs, be.Current().Catalog, nil)
			later := auth.NewDirectory(cs, be.Current().Catalog, func() time.Time { return time.Now().Add(2 * time.Hour) }) // the keys have expired

			body := valid[4:]
			for name, s := range map[string]string{
				"empty": "", "prefix only": "wsk_", "wrong prefix": "sk_" + body, "prefix upper": "WSK_" + body,
				"no separator": "wsk" + body, "63 hex": "wsk_" + body[:63], "65 hex": valid + "0", "non-hex": "wsk_" + body[:63] + "g",
				"upper hex": "wsk_" + strings.ToUpper(body), "space": "wsk_" + body[:10] + " " + body[11:], "newline": valid + "\n",
				"NUL": valid[:20] + "\x00" + valid[21:], "long": "wsk_" + strings.Repeat("a", 1<<16),
			} {
				_, err := counted.Authenticate(ctx, s)
				var ae *apierr.Error
				if !errors.As(err, &ae) || ae.Status() != 401 || ae.Code != "invalid_api_key" {
					t.Errorf("%s: %v", name, err)
				}
				if got := cs.take(); len(got) != 0 {
					t.Errorf("%s: %d statements for a malformed key: %v", name, len(got), got)
				}
			}

			unknownHex := strings.Repeat("0", 60) + body[60:] // the valid key's hint, every other digit wrong
			for _, c := range []struct {
				name, secret string
				dir          *auth.Directory
				status       int
				code         string
			}{
				{"valid", valid, counted, 0, ""},
				{"unknown", "wsk_" + unknownHex, counted, 401, "invalid_api_key"},
				{"revoked", revoked, counted, 401, "invalid_api_key"},
				{"expired", expiring, later, 401, "expired_api_key"},
				{"assurance stale", stale, counted, 401, "key_assurance_stale"},
				{"member deactivated", deactivated, counted, 401, "invalid_api_key"},
				{"no api.access", noAPI, counted, 403, "permission_denied"},
				{"plan without API access", downgraded, counted, 403, "plan_upgrade_required"},
			} {
				p, err := c.dir.Authenticate(ctx, c.secret)
				var ae *apierr.Error
				switch {
				case c.status == 0 && (err != nil || p == nil):
					t.Errorf("%s: %v", c.name, err)
				case c.status != 0 && (!errors.As(err, &ae) || ae.Status() != c.status || string(ae.Code) != c.code):
					t.Errorf("%s: %v, want %d %s", c.name, err, c.status, c.code)
				}
				got := cs.take()
				if b == servertest.SQLite {
					if len(got) == 0 || !strings.Contains(got[0].SQL, "FROM auth_changes") || len(got[0].Args) != 0 {
						t.Errorf("%s: statements %v, want the change count first", c.name, got)
					} else {
						got = got[1:]
					}
				}
				if len(got) != 1 || !strings.Contains(got[0].SQL, "secret_hash = ") || strings.Contains(fmt.Sprint(got[0].Args), c.secret) {
					t.Errorf("%s: statements %v, want one lookup by the secret's hash (never by the secret)", c.name, got)
				}
				if c.name == "unknown" && b == servertest.SQLite {
					var plan []string
					err := be.Store.Query(ctx, sqlgen.Stmt{SQL: "EXPLAIN QUERY PLAN " + got[0].SQL, Args: got[0].Args}, func(row []any) error {
						plan = append(plan, fmt.Sprint(row[len(row)-1]))
						return nil
					})
					if err != nil {
						t.Fatal(err)
					}
					if p := strings.Join(plan, "; "); !strings.Contains(p, "SEARCH k USING INDEX api_keys_secret_idx") {
						t.Errorf("the key lookup does not use the secret's index: %s", p)
					}
				}
			}
		})
	}
}

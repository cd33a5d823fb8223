package cmd_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/workspace-records/records/runtime/server/servertest"
	"github.com/workspace-records/records/runtime/store"
)

// TestKeyCreateCommand (K4, K13) runs `recordsctl key create` as an operator would: a key's lifetime
// is at most one year (365 days) and always set (the default is 90 days, so no key is without
// expiry); zero, negative, longer or unreadable lifetimes, unknown access modes, resources and
// allowlist entries are refused with a message naming the problem, and create nothing. The secret is
// printed once by key create and never again: key list holds neither it nor its hash.
//
// It runs on SQLite only: the command's checks are the same code on both backends, and the Directory
// they call is checked on both by TestKeys (K4); each recordsctl run on PostgreSQL costs a connection
// and a migration check, about a second here.
func TestKeyCreateCommand(t *testing.T) {
	t.Parallel()
	for _, b := range []servertest.Backend{servertest.SQLite} {
		t.Run(string(b), func(t *testing.T) {
			t.Parallel()
			c := migrated(t, b)
			c.run("migrate") // again: nothing to do, and no error
			ws := c.run("workspace", "create", "--name", "Keys", "--plan", "growth")["id"].(string)
			member := c.run("member", "create", "--workspace", ws, "--email", "ops@keys.example", "--role", "admin")["id"].(string)
			create := func(extra ...string) []string {
				return append([]string{"key", "create", "--member", member, "--access", "read"}, extra...)
			}

			for _, life := range []string{"366d", "8761h", "0", "-1h", "0d", "-5d", "1y", "abc", "", "90 d", "d"} {
				msg := c.fail(create("--expires-in", life)...)
				if !strings.Contains(msg, "expir") {
					t.Errorf("--expires-in %q: the message does not say what is wrong: %s", life, msg)
				}
			}
			for _, bad := range [][]string{
				{"--allow-ip", "10.0.0.0/33"}, {"--allow-ip", "fe80::1%eth0"}, {"--allow-ip", "10.0.0.1-10.0.0.9"},
				{"--resources", "companies,widgets"},
			} {
				c.fail(create(bad...)...)
			}
			c.fail("key", "create", "--member", member, "--access", "owner") // read, write or admin
			if keys := c.run("key", "list", "--workspace", ws)["data"].([]any); len(keys) != 0 {
				t.Fatalf("refused key creations created %d keys", len(keys))
			}

			var secrets []string
			for _, c2 := range []struct {
				args []string
				life time.Duration
			}{
				{create("--expires-in", "365d"), 365 * 24 * time.Hour},
				{create("--expires-in", "8760h"), 365 * 24 * time.Hour},
				{create("--expires-in", "1h"), time.Hour},
				{create(), 90 * 24 * time.Hour}, // the default
				{create("--allow-ip", "::ffff:10.0.0.0/104, 2001:db8::/32"), 90 * 24 * time.Hour},
			} {
				before := time.Now()
				out := c.run(c2.args...)
				secret, _ := out["secret"].(string)
				secrets = append(secrets, secret)
				exp, err := time.Parse(time.RFC3339, out["expires_at"].(string))
				if err != nil {
					t.Fatalf("%v: expires_at %v", c2.args, out["expires_at"])
				}
				if d := exp.Sub(before); d < c2.life-2*time.Second || d > c2.life+time.Minute {
					t.Errorf("%v: expires %v from now, want %v", c2.args, d, c2.life)
				}
			}
			listed := mustString(c.run("key", "list", "--workspace", ws))
			for _, s := range secrets {
				sum := sha256.Sum256([]byte(s))
				if strings.Contains(listed, s[4:]) || strings.Contains(listed, hex.EncodeToString(sum[:])) {
					t.Errorf("key list shows a secret or its hash: %s", listed)
				}
			}
			if strings.Count(listed, `"hint"`) != len(secrets) || strings.Contains(listed, "secret") {
				t.Errorf("key list: %s", listed)
			}
		})
	}
}

// TestKeyCreateWithoutAPIAccess: `recordsctl key create` for a member whose role lacks api.access
// exits non-zero with a message naming the missing permission, and creates no key.
func TestKeyCreateWithoutAPIAccess(t *testing.T) {
	t.Parallel()
	for _, b := range servertest.Backends {
		t.Run(string(b), func(t *testing.T) {
			t.Parallel()
			c := migrated(t, b)
			ws := c.run("workspace", "create", "--name", "No API", "--plan", "growth")["id"].(string)
			member := c.run("member", "create", "--workspace", ws, "--email", "app@noapi.example", "--role", "no_api")["id"].(string)
			msg := c.fail("key", "create", "--member", member, "--access", "read")
			if !strings.Contains(msg, "api.access") {
				t.Errorf("the message does not name the missing permission: %s", msg)
			}
			if keys := c.run("key", "list", "--workspace", ws)["data"].([]any); len(keys) != 0 {
				t.Errorf("a refused key create left %d keys", len(keys))
			}
		})
	}
}

// TestKeyLastUsedWritten: recordsd writes each key's last use and client address every
// --key-usage-interval and once more when it stops, so `recordsctl key list` shows them: with an interval
// of an hour only the shutdown writes it, with 100 ms it appears while the server runs.
func TestKeyLastUsedWritten(t *testing.T) {
	t.Parallel()
	for _, b := range servertest.Backends {
		t.Run(string(b), func(t *testing.T) {
			t.Parallel()
			c := migrated(t, b)
			ws := c.run("workspace", "create", "--name", "Used", "--plan", "growth")["id"].(string)
			member := c.run("member", "create", "--workspace", ws, "--email", "ops@used.example", "--role", "admin")["id"].(string)
			secret := c.run("key", "create", "--member", member, "--access", "read")["secret"].(string)
			lastUse := func() (string, any) {
				keys := c.run("key", "list", "--workspace", ws)["data"].([]any)
				k := keys[0].(map[string]any)
				at, _ := k["last_used_at"].(string)
				return at, k["last_used_ip"]
			}
			if at, ip := lastUse(); at != "" || ip != nil {
				t.Fatalf("a new key: last_used_at %q, last_used_ip %v", at, ip)
			}

			p := serve(t, c, nil, "--key-usage-interval", "1h")
			if code, _, body := request(t, p.url, secret, "GET", "/v1/me", ""); code != 200 {
				t.Fatalf("GET /v1/me: %d %s", code, body)
			}
			if at, _ := lastUse(); at != "" {
				t.Errorf("written before the interval or the shutdown: %s", at)
			}
			if err := p.stop(30 * time.Second); err != nil {
				t.Fatalf("stop: %v", err)
			}
			first, ip := lastUse()
			if first == "" || ip != "127.0.0.1" {
				t.Fatalf("after the shutdown: last_used_at %q, last_used_ip %v; want set, 127.0.0.1", first, ip)
			}

			p = serve(t, c, nil, "--key-usage-interval", "100ms")
			if code, _, body := request(t, p.url, secret, "GET", "/v1/me", ""); code != 200 {
				t.Fatalf("GET /v1/me: %d %s", code, body)
			}
			if _, ok := servertest.WaitFor(10*time.Second, func() bool { at, _ := lastUse(); return later(at, first) }); !ok {
				t.Errorf("a use is not written within 10 s with --key-usage-interval 100ms")
			}
		})
	}
}

// later reports whether RFC 3339 time a is after b.
func later(a, b string) bool {
	ta, err1 := time.Parse(time.RFC3339Nano, a)
	tb, err2 := time.Parse(time.RFC3339Nano, b)
	return err1 == nil && err2 == nil && ta.After(tb)
}

// TestExpiryNotificationOutbox: a running recordsd turns a due expiry reminder into a key_expiring
// notification for the key's owner, which `recordsctl notification list` shows and `notification read`
// marks read; an unknown id is refused with exit 1.
func TestExpiryNotificationOutbox(t *testing.T) {
	t.Parallel()
	for _, b := range servertest.Backends {
		t.Run(string(b), func(t *testing.T) {
			t.Parallel()
			c := migrated(t, b)
			ws := c.run("workspace", "create", "--name", "Outbox", "--plan", "growth")["id"].(string)
			member := c.run("member", "create", "--workspace", ws, "--email", "ops@outbox.example", "--role", "admin")["id"].(string)
			key := c.run("key", "create", "--member", member, "--access", "read", "--expires-in", "20d")
			// The 14-day reminder falls due in 6 days; make it due now, as the passing time would.
			st, err := store.Open(context.Background(), c.db)
			if err != nil {
				t.Fatal(err)
			}
			_, err = st.Exec(context.Background(), st.Dialect().Bind("UPDATE key_reminders SET due_at = ? WHERE key_id = ? AND days_before = 14", time.Now().UTC().Add(-time.Minute), key["id"]))
			st.Close()
			if err != nil {
				t.Fatal(err)
			}
			if list := c.run("notification", "list", "--workspace", ws)["data"].([]any); len(list) != 0 {
				t.Fatalf("notifications before any server ran: %v", list)
			}
			serve(t, c, nil) // sends due reminders as it starts
			var list []any
			if _, ok := servertest.WaitFor(10*time.Second, func() bool {
				list = c.run("notification", "list", "--workspace", ws, "--member", member, "--unread")["data"].([]any)
				return len(list) > 0
			}); !ok {
				t.Fatal("no notification within 10 s of recordsd starting")
			}
			n := list[0].(map[string]any)
			if len(list) != 1 || n["kind"] != "key_expiring" || n["key_id"] != key["id"] || n["member_id"] != member || fmt.Sprint(n["days_before"]) != "14" || n["read_at"] != nil {
				t.Fatalf("notification list: %v", list)
			}
			read := c.run("notification", "read", n["id"].(string))
			if read["id"] != n["id"] || read["read_at"] == nil {
				t.Errorf("notification read: %v", read)
			}
			if unread := c.run("notification", "list", "--workspace", ws, "--unread")["data"].([]any); len(unread) != 0 {
				t.Errorf("unread after notification read: %v", unread)
			}
			c.fail("notification", "read", "01a20f6d-045d-7963-b7fe-12c7dca58a02")
		})
	}
}

// TestRecordsctlChangesApplyOnNextRequest: on SQLite, recordsd remembers an authenticated key (the key
// cache, checked against the database's change count on every request: migrate.AuthChangesTable),
// and what `recordsctl` changes in the same file while it runs — a key revoked, a member deactivated,
// given a role without api.access or a new MFA factor, a workspace moved to a plan without API access —
// applies to the very next request after recordsctl exits, with no wait. Each key is used twice just
// before its change, so that the server remembers it.
func TestRecordsctlChangesApplyOnNextRequest(t *testing.T) {
	t.Parallel()
	c := migrated(t, servertest.SQLite)
	ws := c.run("workspace", "create", "--name", "Cached", "--plan", "growth")["id"].(string)
	type change struct {
		name   string
		args   func(member, key string) []string
		status int
		code   string
		ws     string
	}
	changes := []change{
		{name: "key revoke", args: func(_, key string) []string { return []string{"key", "revoke", key} }, status: 401, code: "invalid_api_key"},
		{name: "member deactivate", args: func(m, _ string) []string { return []string{"member", "deactivate", m} }, status: 401, code: "invalid_api_key"},
		{name: "member set-role", args: func(m, _ string) []string { return []string{"member", "set-role", m, "--role", "no_api"} }, status: 403, code: "permission_denied"},
		{name: "member mfa-verified", args: func(m, _ string) []string { return []string{"member", "mfa-verified", m} }, status: 401, code: "key_assurance_stale"},
		{name: "workspace set-plan", args: func(string, string) []string { return []string{"workspace", "set-plan", ws, "--plan", "free"} }, status: 403, code: "plan_upgrade_required", ws: ws},
	}
	type holder struct{ member, key, secret string }
	holders := make([]holder, len(changes))
	for i := range changes {
		w := ws
		if changes[i].ws == "" {
			// Every other change in a workspace of its own, so that the plan change affects its key alone.
			w = c.run("workspace", "create", "--name", "Cached "+changes[i].name, "--plan", "growth")["id"].(string)
		}
		m := c.run("member", "create", "--workspace", w, "--email", fmt.Sprintf("m%d@cached.example", i), "--role", "admin")["id"].(string)
		k := c.run("key", "create", "--member", m, "--access", "read")
		holders[i] = holder{m, k["id"].(string), k["secret"].(string)}
	}
	other := c.run("workspace", "create", "--name", "Untouched", "--plan", "growth")["id"].(string)
	om := c.run("member", "create", "--workspace", other, "--email", "o@cached.example", "--role", "admin")["id"].(string)
	untouched := c.run("key", "create", "--member", om, "--access", "read")["secret"].(string)
	p := serve(t, c, nil)
	for i, ch := range changes {
		h := holders[i]
		for range 2 {
			if code, _, body := request(t, p.url, h.secret, "GET", "/v1/companies", ""); code != 200 {
				t.Fatalf("%s: before the change: %d %s", ch.name, code, body)
			}
		}
		c.run(ch.args(h.member, h.key)...)
		code, _, body := request(t, p.url, h.secret, "GET", "/v1/companies", "")
		if code != ch.status || !strings.Contains(body, `"`+ch.code+`"`) {
			t.Errorf("%s: the next request got %d %s, want %d %s", ch.name, code, body, ch.status, ch.code)
		}
	}
	// A key none of the changes touched is still served.
	if code, _, body := request(t, p.url, untouched, "GET", "/v1/companies", ""); code != 200 {
		t.Errorf("an untouched key after the changes: %d %s", code, body)
	}
}

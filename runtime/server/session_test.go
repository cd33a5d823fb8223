package server_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/workspace-records/records/engine/route"
	"github.com/workspace-records/records/runtime/auth"
	"github.com/workspace-records/records/runtime/server/servertest"
	"github.com/workspace-records/records/runtime/store"
)

// consoleSession is a signed-in console session as a browser holds it: the cookie's secret and the
// CSRF token the session endpoint gave.
type consoleSession struct {
	secret, csrf string
}

// headers are the headers of a console request: the cookie and the CSRF token.
func (s consoleSession) headers(extra ...string) []string {
	return append([]string{"Cookie", "records_session=" + s.secret, "X-CSRF-Token", s.csrf}, extra...)
}

// signIn makes a one-time link for member (as recordsctl console-link does) and redeems it through
// POST /console/session, checking the cookie's attributes.
func signIn(t *testing.T, e *servertest.Env, member string, extra ...string) consoleSession {
	t.Helper()
	token, _, err := e.Server.Backend().Directory.CreateSignInLink(context.Background(), member, 0)
	if err != nil {
		t.Fatal(err)
	}
	r := e.DoKey("", "POST", "/console/session", map[string]any{"token": token}, extra...)
	if r.Status != 200 {
		t.Fatalf("sign in: %d %s", r.Status, r.Raw)
	}
	var cookie *http.Cookie
	for _, c := range (&http.Response{Header: r.Header}).Cookies() {
		if c.Name == "records_session" {
			cookie = c
		}
	}
	if cookie == nil || !cookie.HttpOnly || cookie.SameSite != http.SameSiteStrictMode || cookie.Path != "/" || len(cookie.Value) != 64 {
		t.Fatalf("sign in: the session cookie is %+v, want HttpOnly, SameSite=Strict, Path=/ and a 64-character secret", cookie)
	}
	csrf, _ := r.Data()["csrf_token"].(string)
	if csrf != auth.CSRFToken(cookie.Value) {
		t.Fatalf("sign in: csrf_token %q is not the session's", csrf)
	}
	if r := e.DoKey("", "POST", "/console/session", map[string]any{"token": token}); r.Status != 401 {
		t.Errorf("a sign-in link used twice: %d %s, want 401", r.Status, r.Raw)
	}
	return consoleSession{secret: cookie.Value, csrf: csrf}
}

// TestConsoleSession: a one-time link signs a member in once; the session's cookie authenticates the
// console's routes only with the CSRF token and from the server's own pages, never the record routes; a
// cookie planted before sign-in is never the session; sign-out, idleness, deactivation and a new MFA
// factor end it.
func TestConsoleSession(t *testing.T) {
	t.Parallel()
	for _, b := range servertest.Backends {
		t.Run(string(b), func(t *testing.T) {
			t.Parallel()
			e := servertest.Start(t, b, servertest.Options{})
			ctx := context.Background()
			dir := e.Server.Backend().Directory

			// Session fixation: a cookie the browser already holds is not taken over at sign-in.
			planted := strings.Repeat("ab", 32)
			s := signIn(t, e, e.Member, "Cookie", "records_session="+planted)
			if s.secret == planted {
				t.Fatal("sign-in kept the planted cookie as the session")
			}
			e.Expect(e.DoKey("", "GET", "/console/session", nil, "Cookie", "records_session="+planted), 401, "invalid_api_key")
			e.Expect(e.DoKey("", "GET", "/v1/me/keys", nil, consoleSession{secret: planted, csrf: auth.CSRFToken(planted)}.headers()...), 401, "invalid_api_key")

			if r := e.DoKey("", "GET", "/console/session", nil, "Cookie", "records_session="+s.secret); r.Status != 200 || r.Data()["member"].(map[string]any)["id"] != e.Member {
				t.Fatalf("GET /console/session: %d %s", r.Status, r.Raw)
			}
			if r := e.DoKey("", "GET", "/v1/me/keys", nil, s.headers()...); r.Status != 200 {
				t.Fatalf("GET /v1/me/keys with the session: %d %s", r.Status, r.Raw)
			}
			// CSRF: the token is needed whatever the method, and requests from another site are refused.
			for name, h := range map[string][]string{
				"no token":             {"Cookie", "records_session=" + s.secret},
				"another token":        {"Cookie", "records_session=" + s.secret, "X-CSRF-Token", auth.CSRFToken(planted)},
				"another origin":       s.headers("Origin", "https://evil.example"),
				"a cross-site request": s.headers("Sec-Fetch-Site", "cross-site"),
			} {
				e.Expect(e.DoKey("", "GET", "/v1/me/keys", nil, h...), 403, "forbidden")
				e.Expect(e.DoKey("", "POST", "/v1/me/keys", map[string]any{"access": "read"}, h...), 403, "forbidden")
				if t.Failed() {
					t.Fatalf("%s was not refused", name)
				}
			}
			e.Expect(e.DoKey("", "POST", "/console/session", map[string]any{"token": strings.Repeat("0", 64)}, "Origin", "https://evil.example"), 403, "forbidden")
			e.Expect(e.DoKey("", "POST", "/console/session", []byte(`token=x`), "Content-Type", "application/x-www-form-urlencoded"), 400, "invalid_request")
			// The admin routes take a session of a member whose role holds api.manage, every GET of the table.
			plain := signIn(t, e, e.NewMember("plain@session.example", "member", ""))
			for _, rt := range route.Fixed() {
				if rt.Endpoint != route.Admin || rt.Scope != route.ScopeAdmin || rt.Method != "GET" || strings.Contains(rt.Path, ":") {
					continue
				}
				if r := e.DoKey("", "GET", rt.Path, nil, s.headers()...); r.Status != 200 {
					t.Errorf("GET %s with an admin's session: %d %s", rt.Path, r.Status, r.Raw)
				}
				e.Expect(e.DoKey("", "GET", rt.Path, nil, plain.headers()...), 403, "permission_denied")
				e.Expect(e.DoKey("", "GET", rt.Path, nil, "Cookie", "records_session="+s.secret), 403, "forbidden")
			}
			// /v1/me serves a session too; the console's requests are rate-limited but count neither
			// against the monthly quota nor in any key's usage.
			if r := e.DoKey("", "GET", "/v1/me", nil, s.headers()...); r.Status != 200 || r.Header.Get("X-Quota-Limit") != "" || r.Header.Get("X-RateLimit-Limit") == "" {
				t.Errorf("GET /v1/me with a session: %d %v %s", r.Status, r.Header, r.Raw)
			}
			sessionID := e.DoKey("", "GET", "/console/session", nil, "Cookie", "records_session="+s.secret).Data()["session"].(map[string]any)["id"].(string)
			if _, err := dir.FlushUsage(ctx); err != nil {
				t.Fatal(err)
			}
			usage := e.DoKey(e.NewKey(e.Member, auth.KeyOptions{Access: auth.AccessAdmin}), "GET", "/v1/admin/usage", nil)
			if usage.Status != 200 || strings.Contains(string(usage.Raw), sessionID) {
				t.Errorf("the usage report counts the console session: %d %s", usage.Status, usage.Raw)
			}
			// The cookie is not a key: the record routes and the feed ignore it.
			e.Expect(e.DoKey("", "GET", "/v1/companies", nil, s.headers()...), 401, "invalid_api_key")
			e.Expect(e.DoKey("", "GET", "/v1/events", nil, s.headers()...), 401, "invalid_api_key")

			// Idle for longer than SessionIdle: ended.
			idle := signIn(t, e, e.Member)
			ageSession(t, e, idle, "last_seen_at", auth.SessionIdle+time.Minute)
			e.Expect(e.DoKey("", "GET", "/v1/me/keys", nil, idle.headers()...), 401, "invalid_api_key")

			// Sign-out ends the session for good and clears the cookie.
			out := e.DoKey("", "DELETE", "/console/session", nil, s.headers()...)
			if out.Status != 204 || !strings.Contains(out.Header.Get("Set-Cookie"), "records_session=;") {
				t.Fatalf("sign out: %d %v", out.Status, out.Header)
			}
			e.Expect(e.DoKey("", "GET", "/console/session", nil, "Cookie", "records_session="+s.secret), 401, "invalid_api_key")

			// A new MFA factor after the sign-in makes the session stale; deactivation ends it.
			m := e.NewMember("mfa@session.example", "member", "")
			ms := signIn(t, e, m)
			time.Sleep(2 * time.Millisecond)
			if err := e.Server.Backend().Members.MFAVerified(ctx, m); err != nil {
				t.Fatal(err)
			}
			e.Expect(e.DoKey("", "GET", "/console/session", nil, "Cookie", "records_session="+ms.secret), 401, "key_assurance_stale")
			ds := signIn(t, e, m)
			if err := e.Server.Backend().Members.Deactivate(ctx, m); err != nil {
				t.Fatal(err)
			}
			e.Expect(e.DoKey("", "GET", "/console/session", nil, "Cookie", "records_session="+ds.secret), 401, "invalid_api_key")
			if _, _, err := dir.CreateSignInLink(ctx, m, 0); err == nil {
				t.Error("a sign-in link was made for an inactive member")
			}
		})
	}
}

// ageSession moves column (signed_in_at or last_seen_at) of session s back by d in the database, as if
// that much time had passed.
func ageSession(t *testing.T, e *servertest.Env, s consoleSession, column string, d time.Duration) {
	t.Helper()
	st := e.Server.Backend().Store
	sum := sha256.Sum256([]byte(s.secret))
	n, err := st.Exec(context.Background(), st.Dialect().Bind("UPDATE console_sessions SET "+column+" = ? WHERE token_hash = ?",
		time.Now().UTC().Add(-d).Truncate(time.Microsecond), hex.EncodeToString(sum[:])))
	if err != nil || n != 1 {
		t.Fatalf("age the session: %d rows, %v", n, err)
	}
	// A server remembers a session it read for up to PrincipalMaxAge (on PostgreSQL): the edit is read
	// after that, as the passing of time would be.
	time.Sleep(auth.PrincipalMaxAge)
}

// TestOwnKeys: a member creates, rolls and revokes their own keys from a console session signed in
// recently; the key delegates that sign-in; an API key lists and revokes but never makes keys; another
// member's key is 404; every write is audited; no answer after creation holds a secret.
func TestOwnKeys(t *testing.T) {
	t.Parallel()
	for _, b := range servertest.Backends {
		t.Run(string(b), func(t *testing.T) {
			t.Parallel()
			e := servertest.Start(t, b, servertest.Options{})
			ctx := context.Background()
			dir := e.Server.Backend().Directory
			m := e.NewMember("own@keys.example", "member", "")
			s := signIn(t, e, m)

			created := e.DoKey("", "POST", "/v1/me/keys", map[string]any{"access": "write", "name": "sync job", "expires_in": "30d", "resources": []string{"companies"}}, s.headers()...)
			if created.Status != 201 {
				t.Fatalf("create: %d %s", created.Status, created.Raw)
			}
			secret := created.Data()["secret"].(string)
			key := created.Data()["key"].(map[string]any)
			id := key["id"].(string)
			if key["assured_at"] == nil || key["name"] != "sync job" || key["access"] != "write" {
				t.Errorf("created key: %v", key)
			}
			if r := e.DoKey(secret, "GET", "/v1/me", nil); r.Status != 200 {
				t.Fatalf("the new key: %d %s", r.Status, r.Raw)
			}
			e.Expect(e.DoKey(secret, "GET", "/v1/deals", nil), 403, "insufficient_scope") // its resource allowlist

			// Refusals: field errors together, admin without api.manage, an API key, a stale session.
			bad := e.DoKey("", "POST", "/v1/me/keys", map[string]any{"access": "owner", "expires_in": "400d", "resources": []string{"widgets"}, "allow_ips": []string{"10.0.0.0/33"}, "colour": "red"}, s.headers()...)
			e.Expect(bad, 422, "validation_failed")
			if n := len(bad.Body["error"].(map[string]any)["details"].(map[string]any)["errors"].([]any)); n != 5 {
				t.Errorf("five problems, %d listed: %s", n, bad.Raw)
			}
			e.Expect(e.DoKey("", "POST", "/v1/me/keys", map[string]any{"access": "admin"}, s.headers()...), 403, "permission_denied")
			e.Expect(e.DoKey(secret, "POST", "/v1/me/keys", map[string]any{"access": "read"}), 403, "insufficient_scope")
			e.Expect(e.DoKey(secret, "POST", "/v1/me/keys/"+id+"/roll", nil), 403, "insufficient_scope")
			stale := signIn(t, e, m)
			ageSession(t, e, stale, "signed_in_at", auth.RecentSignIn+time.Minute)
			e.Expect(e.DoKey("", "POST", "/v1/me/keys", map[string]any{"access": "read"}, stale.headers()...), 401, "key_assurance_stale")
			if r := e.DoKey("", "GET", "/v1/me/keys", nil, stale.headers()...); r.Status != 200 {
				t.Errorf("listing from an older session: %d %s", r.Status, r.Raw)
			}

			// Roll with an overlap: both work; a second roll of the same key is a conflict.
			rolled := e.DoKey("", "POST", "/v1/me/keys/"+id+"/roll", map[string]any{"overlap": "1h"}, s.headers()...)
			if rolled.Status != 201 {
				t.Fatalf("roll: %d %s", rolled.Status, rolled.Raw)
			}
			next := rolled.Data()["secret"].(string)
			nextID := rolled.Data()["key"].(map[string]any)["id"].(string)
			if rolled.Data()["rolled"].(map[string]any)["rolled_to"] != nextID || rolled.Data()["key"].(map[string]any)["rolled_from"] != id ||
				rolled.Data()["key"].(map[string]any)["name"] != "sync job" {
				t.Errorf("roll answer: %s", rolled.Raw)
			}
			for _, k := range []string{secret, next} {
				if r := e.DoKey(k, "GET", "/v1/me", nil); r.Status != 200 {
					t.Errorf("during the overlap: %d %s", r.Status, r.Raw)
				}
			}
			e.Expect(e.DoKey("", "POST", "/v1/me/keys/"+id+"/roll", nil, s.headers()...), 409, "conflict")
			e.Expect(e.DoKey("", "POST", "/v1/me/keys/"+nextID+"/roll", map[string]any{"overlap": "8d"}, s.headers()...), 422, "validation_failed")
			// Overlap 0: the old key stops at once.
			third := e.DoKey("", "POST", "/v1/me/keys/"+nextID+"/roll", map[string]any{"overlap": "0s"}, s.headers()...)
			if third.Status != 201 {
				t.Fatalf("roll with no overlap: %d %s", third.Status, third.Raw)
			}
			e.Expect(e.DoKey(next, "GET", "/v1/me", nil), 401, "expired_api_key")
			last := third.Data()["secret"].(string)
			lastID := third.Data()["key"].(map[string]any)["id"].(string)

			// Another member's key is not there; revoking one's own works from a key too.
			other := e.NewKey(e.Member, auth.KeyOptions{Access: "read"})
			otherKeys, _ := dir.MemberKeys(ctx, e.Workspace, e.Member)
			e.Expect(e.DoKey("", "POST", "/v1/me/keys/"+otherKeys[0].ID+"/revoke", nil, s.headers()...), 404, "not_found")
			e.Expect(e.DoKey("", "POST", "/v1/me/keys/"+otherKeys[0].ID+"/roll", nil, s.headers()...), 404, "not_found")
			e.Expect(e.DoKey(last, "POST", "/v1/me/keys/not-a-uuid/revoke", nil), 404, "not_found")
			// Another workspace's key id: 404 on every own-key route that takes an id (from the route table).
			otherWS, otherMember, _ := e.NewWorkspace("growth", "admin", "read")
			foreign, _ := dir.MemberKeys(ctx, otherWS, otherMember)
			for _, rt := range route.Fixed() {
				if rt.Endpoint == route.Admin && strings.HasPrefix(rt.Path, "/v1/me/keys/:id") {
					e.Expect(e.DoKey("", rt.Method, strings.Replace(rt.Path, ":id", foreign[0].ID, 1), nil, s.headers()...), 404, "not_found")
				}
			}
			if k, err := dir.KeyOf(ctx, otherWS, "", foreign[0].ID); err != nil || k.RevokedAt != nil || k.RolledTo != nil {
				t.Errorf("another workspace's key after the attempts: %+v, %v", k, err)
			}
			if r := e.DoKey(other, "GET", "/v1/me", nil); r.Status != 200 {
				t.Fatalf("the other member's key stopped working: %d", r.Status)
			}
			if r := e.DoKey(last, "POST", "/v1/me/keys/"+lastID+"/revoke", nil); r.Status != 200 || r.Data()["state"] != "revoked" {
				t.Fatalf("revoke: %d %s", r.Status, r.Raw)
			}
			e.Expect(e.DoKey(last, "GET", "/v1/me", nil), 401, "invalid_api_key")

			// The list: every key of the member, no secret anywhere.
			list := e.DoKey("", "GET", "/v1/me/keys", nil, s.headers()...)
			if n := len(list.List()); n != 3 {
				t.Errorf("%d keys listed, want 3: %s", n, list.Raw)
			}
			for _, sec := range []string{secret, next, last} {
				if strings.Contains(string(list.Raw), sec) || strings.Contains(string(list.Raw), sec[4:]) {
					t.Error("a secret is in the key list")
				}
			}
			// The keys delegate the session's sign-in: a new MFA factor makes them stale.
			assured := signIn(t, e, m)
			fresh := e.DoKey("", "POST", "/v1/me/keys", map[string]any{"access": "read"}, assured.headers()...).Data()["secret"].(string)
			time.Sleep(2 * time.Millisecond)
			if err := e.Server.Backend().Members.MFAVerified(ctx, m); err != nil {
				t.Fatal(err)
			}
			e.Expect(e.DoKey(fresh, "GET", "/v1/me", nil), 401, "key_assurance_stale")

			// Audited: create ×3 (one per roll too), roll ×2, revoke ×1, and the last create.
			actions := map[string]int{}
			st := e.Server.Backend().Store
			if err := st.Query(store.WithWorkspace(ctx, e.Workspace), st.Dialect().Bind("SELECT action FROM audit_log WHERE workspace_id = ? AND resource = ?", e.Workspace, "admin.api_keys"), func(row []any) error {
				actions[row[0].(string)]++
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			if actions["create"] != 4 || actions["roll"] != 2 || actions["revoke"] != 1 {
				t.Errorf("audit entries of key writes: %v, want 4 create, 2 roll, 1 revoke", actions)
			}
		})
	}
}

// setSession sets column of session s in the database to at, as if that much time had passed. Unlike
// ageSession it does not wait out the time a server remembers a session it read: for a session not used
// since its sign-in, which no server remembers yet.
func setSession(t *testing.T, e *servertest.Env, s consoleSession, column string, at time.Time) {
	t.Helper()
	st := e.Server.Backend().Store
	sum := sha256.Sum256([]byte(s.secret))
	n, err := st.Exec(context.Background(), st.Dialect().Bind("UPDATE console_sessions SET "+column+" = ? WHERE token_hash = ?",
		at.UTC().Truncate(time.Microsecond), hex.EncodeToString(sum[:])))
	if err != nil || n != 1 {
		t.Fatalf("set the session's %s: %d rows, %v", column, n, err)
	}
}

// signInUnread starts a session for member through the Directory, as POST /console/session does but
// for the read of the new session its answer makes (which a server on PostgreSQL then remembers for
// auth.PrincipalMaxAge): no server has read the session yet.
func signInUnread(t *testing.T, e *servertest.Env, member string) consoleSession {
	t.Helper()
	dir := e.Server.Backend().Directory
	token, _, err := dir.CreateSignInLink(context.Background(), member, 0)
	if err != nil {
		t.Fatal(err)
	}
	secret, _, err := dir.SignIn(context.Background(), token)
	if err != nil {
		t.Fatal(err)
	}
	return consoleSession{secret: secret, csrf: auth.CSRFToken(secret)}
}

// sessionProbe is a request made with a session's cookie and CSRF token after an event, and its answer.
type sessionProbe struct {
	method, path string
	status       int
	code         string
}

// ended are the probes of a session that has ended: every console route answers 401.
func ended(code string) []sessionProbe {
	return []sessionProbe{{"GET", "/console/session", 401, code}, {"GET", "/v1/me", 401, code}, {"GET", "/v1/me/keys", 401, code}, {"GET", "/v1/admin/members", 401, code}}
}

// TestConsoleSessionLifecycle: what becomes of a console session's cookie after each event in its
// member's life. A session ends for good on sign-out, idleness, its lifetime, a new MFA factor and
// deactivation — activating the member again does not bring it back, by recordsctl or the admin API,
// as it brings back no key. It outlives what changes no one's credentials: a role change (the session
// acts with the new role from its next request), the revocation of one of the member's keys, another
// session's sign-out, another member's deactivation. Each row signs a new member in, uses the session
// once (but where the row ages it before any server reads it), makes the event and sends the old cookie.
func TestConsoleSessionLifecycle(t *testing.T) {
	t.Parallel()
	for _, b := range servertest.Backends {
		t.Run(string(b), func(t *testing.T) {
			t.Parallel()
			e := servertest.Start(t, b, servertest.Options{})
			ctx := context.Background()
			ak := e.NewKey(e.Member, auth.KeyOptions{Access: auth.AccessAdmin})
			admin := func(method, path string, body any) {
				t.Helper()
				if r := e.DoKey(ak, method, path, body); r.Status != 200 {
					t.Fatalf("%s %s: %d %s", method, path, r.Status, r.Raw)
				}
			}
			for i, row := range []struct {
				name string
				// unread: the event comes before any server reads the session (signInUnread).
				unread bool
				event  func(t *testing.T, member string, s consoleSession)
				probes []sessionProbe
				// signInAgain: the member can sign in again afterwards, and that session works.
				signInAgain bool
			}{
				{name: "signed out", event: func(t *testing.T, _ string, s consoleSession) {
					if r := e.DoKey("", "DELETE", "/console/session", nil, s.headers()...); r.Status != 204 {
						t.Fatalf("sign out: %d %s", r.Status, r.Raw)
					}
				}, probes: ended("invalid_api_key"), signInAgain: true},
				{name: "idle for longer than SessionIdle", unread: true, event: func(t *testing.T, _ string, s consoleSession) {
					setSession(t, e, s, "last_seen_at", time.Now().Add(-auth.SessionIdle-time.Minute))
				}, probes: ended("invalid_api_key")},
				{name: "past SessionLifetime", unread: true, event: func(t *testing.T, _ string, s consoleSession) {
					setSession(t, e, s, "signed_in_at", time.Now().Add(-auth.SessionLifetime-time.Minute))
					setSession(t, e, s, "expires_at", time.Now().Add(-time.Minute))
				}, probes: ended("invalid_api_key")},
				{name: "a new MFA factor verified after the sign-in", event: func(t *testing.T, m string, s consoleSession) {
					setSession(t, e, s, "signed_in_at", time.Now().Add(-time.Minute))
					if err := e.Server.Backend().Members.MFAVerified(ctx, m); err != nil {
						t.Fatal(err)
					}
				}, probes: ended("key_assurance_stale"), signInAgain: true},
				{name: "deactivated (recordsctl)", event: func(t *testing.T, m string, _ consoleSession) {
					if err := e.Server.Backend().Members.Deactivate(ctx, m); err != nil {
						t.Fatal(err)
					}
				}, probes: ended("invalid_api_key")},
				{name: "deactivated, then activated again (recordsctl)", event: func(t *testing.T, m string, _ consoleSession) {
					if err := e.Server.Backend().Members.Deactivate(ctx, m); err != nil {
						t.Fatal(err)
					}
					if err := e.Server.Backend().Members.Activate(ctx, m); err != nil {
						t.Fatal(err)
					}
				}, probes: ended("invalid_api_key"), signInAgain: true},
				{name: "deactivated (admin API)", event: func(t *testing.T, m string, _ consoleSession) {
					admin("POST", "/v1/admin/members/"+m+"/deactivate", nil)
				}, probes: ended("invalid_api_key")},
				{name: "deactivated, then activated again (admin API)", event: func(t *testing.T, m string, _ consoleSession) {
					admin("POST", "/v1/admin/members/"+m+"/deactivate", nil)
					admin("POST", "/v1/admin/members/"+m+"/activate", nil)
				}, probes: ended("invalid_api_key"), signInAgain: true},
				{name: "given a role without api.manage (admin API)", event: func(t *testing.T, m string, _ consoleSession) {
					admin("PATCH", "/v1/admin/members/"+m, map[string]any{"role": "member"})
				}, probes: []sessionProbe{{"GET", "/console/session", 200, ""}, {"GET", "/v1/me/keys", 200, ""}, {"GET", "/v1/admin/members", 403, "permission_denied"}}},
				{name: "one of the member's keys revoked (admin API)", event: func(t *testing.T, m string, _ consoleSession) {
					admin("POST", "/v1/admin/keys/"+adminKeyIDOf(t, e, e.NewKey(m, auth.KeyOptions{Access: "read"}))+"/revoke", nil)
				}, probes: []sessionProbe{{"GET", "/console/session", 200, ""}, {"GET", "/v1/me/keys", 200, ""}, {"GET", "/v1/admin/members", 200, ""}}},
				{name: "another session of the member signed out", event: func(t *testing.T, m string, _ consoleSession) {
					other := signIn(t, e, m)
					if r := e.DoKey("", "DELETE", "/console/session", nil, other.headers()...); r.Status != 204 {
						t.Fatalf("sign out: %d %s", r.Status, r.Raw)
					}
				}, probes: []sessionProbe{{"GET", "/console/session", 200, ""}, {"GET", "/v1/admin/members", 200, ""}}},
				{name: "another member deactivated", event: func(t *testing.T, m string, _ consoleSession) {
					other := e.NewMember("other-"+m+"@lifecycle.example", "admin", "")
					signIn(t, e, other)
					admin("POST", "/v1/admin/members/"+other+"/deactivate", nil)
				}, probes: []sessionProbe{{"GET", "/console/session", 200, ""}, {"GET", "/v1/admin/members", 200, ""}}},
			} {
				m := e.NewMember(fmt.Sprintf("m%d@lifecycle.example", i), "admin", "")
				var s consoleSession
				if row.unread {
					s = signInUnread(t, e, m)
				} else {
					s = signIn(t, e, m)
					if r := e.DoKey("", "GET", "/v1/admin/members", nil, s.headers()...); r.Status != 200 {
						t.Fatalf("%s: the session before the event: %d %s", row.name, r.Status, r.Raw)
					}
				}
				row.event(t, m, s)
				for _, p := range row.probes {
					r := e.DoKey("", p.method, p.path, nil, s.headers()...)
					if r.Status != p.status || (p.code != "" && r.Code() != p.code) {
						t.Errorf("%s: %s %s with the old cookie: %d %s, want %d %s", row.name, p.method, p.path, r.Status, r.Raw, p.status, p.code)
					}
				}
				if row.signInAgain {
					again := signIn(t, e, m)
					if r := e.DoKey("", "GET", "/v1/me/keys", nil, again.headers()...); r.Status != 200 {
						t.Errorf("%s: a new sign-in: %d %s", row.name, r.Status, r.Raw)
					}
				}
			}
		})
	}
}

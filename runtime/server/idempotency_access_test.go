package server_test

// Idempotency-Key scenarios I9 and I11 of the reliability note: the key's format, and a replay
// authenticated and authorized like any other answer.

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/workspace-records/records/runtime/auth"
	"github.com/workspace-records/records/runtime/server/servertest"
)

// I9: the key is optional; an empty one, one of 256 characters, one with a control or non-ASCII
// character, or the header twice is 400 invalid_request with the envelope, and nothing is stored or
// written. 255 printable characters (spaces and quotes included) are a valid key.
func idemKeyFormat(t *testing.T, e *servertest.Env, b servertest.Backend) {
	kid := keyID(t, e)
	e.Expect(e.Do("POST", "/v1/companies", map[string]any{"name": "Without a key"}), 201, "")
	if n := idemKeyRows(t, e, kid, ""); n != 0 {
		t.Errorf("a write without a key stored %d keys", n)
	}
	for _, k := range []string{"", strings.Repeat("k", 256), "tab\there", "caf\u00e9", "nbsp\u00a0"} {
		r := e.Do("POST", "/v1/companies", map[string]any{"name": "Bad key"}, "Idempotency-Key", k)
		e.Expect(r, 400, "invalid_request")
	}
	// The header twice (the Go client cannot send a control character other than tab, so that
	// case is above).
	req, _ := http.NewRequest("POST", e.URL+"/v1/companies", strings.NewReader(`{"name":"Bad key"}`))
	req.Header.Set("Authorization", "Bearer "+e.Key)
	req.Header.Set("Content-Type", "application/json")
	req.Header["Idempotency-Key"] = []string{"twice-1", "twice-2"}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != 400 || !strings.Contains(string(raw), `"code":"invalid_request"`) || !strings.Contains(string(raw), res.Header.Get("X-Request-Id")) {
		t.Errorf("two Idempotency-Key headers: %d %s", res.StatusCode, raw)
	}
	if n := idemKeyRows(t, e, kid, ""); n != 0 {
		t.Errorf("refused keys stored %d rows", n)
	}
	if n := idemNamed(t, e, "companies", "Bad key"); n != 0 {
		t.Errorf("requests with a refused key wrote %d records", n)
	}
	longest := strings.Repeat("k", 254) + "~"
	for _, k := range []string{longest, `"quoted key"`, "with spaces inside", "!#$%&'()*+,-./:;<=>?@[\\]^_`{|}~"} {
		r := e.Do("POST", "/v1/companies", map[string]any{"name": "Good key " + k[:5]}, "Idempotency-Key", k)
		e.Expect(r, 201, "")
		if again := e.Do("POST", "/v1/companies", map[string]any{"name": "Good key " + k[:5]}, "Idempotency-Key", k); !isReplayOf(again, r) {
			t.Errorf("key %q: the repeat does not replay", k)
		}
	}
	if n := idemKeyRows(t, e, kid, longest); n != 1 {
		t.Errorf("the 255-character key is stored %d times", n)
	}
}

// I11: a replay is an answer like any other: the key is authenticated and authorized first, with the
// member's and the workspace's current state, and the stored body passes the current field rules. A
// revoked or expired key gets 401, a member who lost write access or API access 403, a workspace on a
// plan without API access 403 plan_upgrade_required — never the stored 201; once access returns, the
// stored answer replays again (it was neither lost nor replaced).
func idemAuthBeforeReplay(t *testing.T, e *servertest.Env, b servertest.Backend) {
	dir := e.Server.Backend().Directory
	ctx := context.Background()
	body := map[string]any{"name": "Replay guarded", "annual_revenue": 7654321}
	type caller struct{ member, keyID, secret string }
	newCaller := func(email string) caller {
		m := e.NewMember(email, "admin", "")
		k, secret, err := dir.CreateKey(ctx, m, auth.KeyOptions{Access: "write", ExpiresIn: 30 * 24 * time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		return caller{m, k.ID, secret}
	}
	// refusedUntil retries with c until the answer is want (a server may remember a key for up to
	// auth.PrincipalMaxAge), then checks that a replay was never among the answers after the
	// change was visible to a plain request.
	check := func(name string, c caller, first *servertest.Response, status int, code string) {
		t.Helper()
		if _, ok := servertest.WaitFor(3*time.Second, func() bool { return e.DoKey(c.secret, "GET", "/v1/companies?page_size=1", nil).Status == status }); !ok {
			t.Fatalf("%s: a plain request is not refused with %d within 3 s", name, status)
		}
		r := e.DoKey(c.secret, "POST", "/v1/companies", body, "Idempotency-Key", "i11-"+c.member)
		if r.Status != status || (code != "" && r.Code() != code) || r.Header.Get("Idempotent-Replayed") != "" || strings.Contains(string(r.Raw), first.Data()["id"].(string)) {
			t.Errorf("%s: retry answered %d %s, want %d %s and not the stored answer", name, r.Status, r.Raw, status, code)
		}
	}
	replays := func(name string, c caller, first *servertest.Response) {
		t.Helper()
		var r *servertest.Response
		if _, ok := servertest.WaitFor(3*time.Second, func() bool {
			r = e.DoKey(c.secret, "POST", "/v1/companies", body, "Idempotency-Key", "i11-"+c.member)
			return r.Status != 401 && r.Status != 403
		}); !ok || !isReplayOf(r, first) {
			t.Errorf("%s: after access returned: %d %s, want the stored answer", name, r.Status, r.Raw)
		}
	}
	start := func(c caller) *servertest.Response {
		t.Helper()
		first := e.DoKey(c.secret, "POST", "/v1/companies", body, "Idempotency-Key", "i11-"+c.member)
		e.Expect(first, 201, "")
		if r := e.DoKey(c.secret, "POST", "/v1/companies", body, "Idempotency-Key", "i11-"+c.member); !isReplayOf(r, first) {
			t.Fatalf("no replay to begin with: %s", r.Raw)
		}
		return first
	}

	c := newCaller("revoked@i11.example")
	first := start(c)
	if err := dir.RevokeKey(ctx, c.keyID); err != nil {
		t.Fatal(err)
	}
	check("revoked key", c, first, 401, "")

	c = newCaller("expired@i11.example")
	first = start(c)
	idemExec(t, e, "UPDATE api_keys SET expires_at = ? WHERE id = ?", time.Now().Add(-time.Second), c.keyID)
	check("expired key", c, first, 401, "")

	c = newCaller("deactivated@i11.example")
	first = start(c)
	if err := e.Server.Backend().Members.Deactivate(ctx, c.member); err != nil {
		t.Fatal(err)
	}
	check("member deactivated", c, first, 401, "")

	for _, role := range []string{"viewer", "no_api"} {
		c = newCaller(role + "@i11.example")
		first = start(c)
		if err := e.Server.Backend().Members.SetRole(ctx, c.member, role); err != nil {
			t.Fatal(err)
		}
		if role == "viewer" {
			// viewer still reads: the plain probe is a write without a key.
			if _, ok := servertest.WaitFor(3*time.Second, func() bool {
				return e.DoKey(c.secret, "POST", "/v1/companies", map[string]any{"name": "probe"}).Status == 403
			}); !ok {
				t.Fatal("role viewer: a write is not refused within 3 s")
			}
			r := e.DoKey(c.secret, "POST", "/v1/companies", body, "Idempotency-Key", "i11-"+c.member)
			if r.Status != 403 || r.Header.Get("Idempotent-Replayed") != "" {
				t.Errorf("role viewer: retry answered %d %s, want 403", r.Status, r.Raw)
			}
		} else {
			check("role "+role, c, first, 403, "")
		}
		if err := e.Server.Backend().Members.SetRole(ctx, c.member, "admin"); err != nil {
			t.Fatal(err)
		}
		replays("role "+role+" then admin again", c, first)
	}

	// The field rules of the current role apply to the replay: annual_revenue is masked for
	// members.
	c = newCaller("masked@i11.example")
	first = start(c)
	if !strings.Contains(string(first.Raw), "7654321") {
		t.Fatalf("admin does not see the revenue: %s", first.Raw)
	}
	if err := e.Server.Backend().Members.SetRole(ctx, c.member, "member"); err != nil {
		t.Fatal(err)
	}
	var masked *servertest.Response
	if _, ok := servertest.WaitFor(3*time.Second, func() bool {
		masked = e.DoKey(c.secret, "POST", "/v1/companies", body, "Idempotency-Key", "i11-"+c.member)
		return !strings.Contains(string(masked.Raw), "7654321")
	}); !ok || masked.Header.Get("Idempotent-Replayed") != "true" || masked.Status != 201 {
		t.Errorf("replay after the field became masked: %d %s", masked.Status, masked.Raw)
	}

	// The plan loses API access.
	ws, member, secret := e.NewWorkspace("growth", "admin", "write")
	pc := caller{member: member, secret: secret}
	first = start(pc)
	if err := e.Server.Backend().Members.SetPlan(ctx, ws, "free"); err != nil {
		t.Fatal(err)
	}
	check("plan free", pc, first, 403, "plan_upgrade_required")
	if err := e.Server.Backend().Members.SetPlan(ctx, ws, "growth"); err != nil {
		t.Fatal(err)
	}
	replays("plan growth again", pc, first)
}

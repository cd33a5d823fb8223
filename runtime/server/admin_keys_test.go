package server_test

// The keys area of the admin API (docs/issue-24.md): members' keys, usage per key and day, webhooks and
// their deliveries. Two servers share one database on each backend: A serves the tests, B (which refuses
// private webhook addresses) is the other replica and owns a second workspace for the isolation matrix.

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"github.com/workspace-records/records/runtime/dispatch"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/workspace-records/records/engine/route"
	"github.com/workspace-records/records/runtime/auth"
	"github.com/workspace-records/records/runtime/server/servertest"
	"github.com/workspace-records/records/runtime/store"
)

// keyAdminRouteTable returns the routes of the keys area from the route table: admin routes whose label
// is a keys, usage or webhooks operation.
func keyAdminRouteTable(t *testing.T) []route.Route {
	t.Helper()
	var out []route.Route
	for _, rt := range route.Fixed() {
		if rt.Endpoint == route.Admin && (strings.HasPrefix(rt.Label, "admin.keys.") || rt.Label == "admin.usage" || strings.HasPrefix(rt.Label, "admin.webhooks.")) {
			out = append(out, rt)
		}
	}
	if len(out) != 12 {
		t.Fatalf("%d routes of the keys area in the route table, want 12", len(out))
	}
	return out
}

// adminKeysFixture is one backend's pair of servers and what the tests made.
type adminKeysFixture struct {
	a, b     *servertest.Env
	admin    string // an admin key of A's workspace (A's member, role admin)
	admin2   string // an admin key of B's workspace
	secrets  []string
	ctx      context.Context
	t        *testing.T
	backend  servertest.Backend
	checkRaw []string // raw bodies that must hold no secret
}

func (f *adminKeysFixture) secret(s string) string {
	f.secrets = append(f.secrets, s)
	return s
}

// read sends a request whose answer must hold no secret.
func (f *adminKeysFixture) read(e *servertest.Env, key, method, path string, body any) *servertest.Response {
	f.t.Helper()
	r := e.DoKey(key, method, path, body)
	f.checkRaw = append(f.checkRaw, string(r.Raw))
	return r
}

// adminKeyIDOf returns the id of the key whose secret is secret.
func adminKeyIDOf(t *testing.T, e *servertest.Env, secret string) string {
	t.Helper()
	r := e.DoKey(secret, "GET", "/v1/me", nil)
	e.Expect(r, 200, "")
	return r.Data()["key"].(map[string]any)["id"].(string)
}

// adminAuditOf returns the admin audit entry the request with id reqID wrote in workspace: resource, record
// id, action, changes (JSON text), member and key.
func adminAuditOf(t *testing.T, e *servertest.Env, workspace, reqID string) (entry map[string]string, found bool) {
	t.Helper()
	st := e.Server.Backend().Store
	ctx := store.WithWorkspace(context.Background(), workspace)
	entry = map[string]string{}
	n := 0
	err := st.Query(ctx, st.Dialect().Bind("SELECT resource, record_id, action, CAST(changes AS TEXT), CAST(previous AS TEXT), member_id, key_id FROM audit_log WHERE workspace_id = ? AND request_id = ?", workspace, reqID),
		func(row []any) error {
			n++
			entry["resource"], entry["record_id"], entry["action"] = store.Text(row[0]), store.UUIDText(row[1]), store.Text(row[2])
			entry["changes"], entry["previous"], entry["member_id"], entry["key_id"] = store.Text(row[3]), store.Text(row[4]), store.UUIDText(row[5]), store.UUIDText(row[6])
			return nil
		})
	if err != nil {
		t.Fatal(err)
	}
	if n > 1 {
		t.Errorf("request %s wrote %d audit entries, want 1", reqID, n)
	}
	return entry, n == 1
}

// expectAudited checks that the admin write answered r wrote its audit entry: resource, record id and
// action, by the calling admin key's member and key, with no secret in it.
func (f *adminKeysFixture) expectAudited(e *servertest.Env, workspace string, r *servertest.Response, resource, recordID, action, adminKey string) {
	f.t.Helper()
	entry, ok := adminAuditOf(f.t, e, workspace, r.Header.Get("X-Request-Id"))
	if !ok {
		f.t.Errorf("%s %s of %s: no audit entry", resource, action, recordID)
		return
	}
	if entry["resource"] != resource || entry["record_id"] != recordID || entry["action"] != action || entry["key_id"] != adminKeyIDOf(f.t, e, adminKey) {
		f.t.Errorf("audit entry %v; want resource %s, record %s, action %s by the admin key", entry, resource, recordID, action)
	}
	for _, s := range f.secrets {
		if strings.Contains(entry["changes"]+entry["previous"], s) {
			f.t.Errorf("audit entry of %s %s holds a secret: %v", resource, action, entry)
		}
	}
}

func startAdminKeys(t *testing.T, b servertest.Backend) *adminKeysFixture {
	db := servertest.DatabaseURL(t, b)
	f := &adminKeysFixture{t: t, ctx: context.Background(), backend: b}
	f.a = servertest.Start(t, b, servertest.Options{DB: db})
	// Both servers deliver the workspace's webhooks (any of them may lease a delivery), so both let
	// endpoints name the loopback receivers of the tests; the refusal of internal addresses over the
	// admin API is TestWebhookAccessAndFailure's.
	f.b = servertest.Start(t, b, servertest.Options{DB: db})
	f.secret(f.a.Key)
	f.secret(f.b.Key)
	f.admin = f.secret(f.a.NewKey(f.a.Member, auth.KeyOptions{Access: auth.AccessAdmin}))
	f.admin2 = f.secret(f.b.NewKey(f.b.Member, auth.KeyOptions{Access: auth.AccessAdmin}))
	if b == servertest.Postgres {
		for _, e := range []*servertest.Env{f.a, f.b} {
			if _, ok := servertest.WaitFor(5*time.Second, e.Server.Backend().Directory.Watching); !ok {
				t.Fatal("a server does not listen for key changes")
			}
		}
	}
	return f
}

// TestAdminKeys: every member's keys (list with filters, get, revoke, never a secret), audited revocation
// refused on the next request by another server, webhooks as recordsctl webhook (create with the
// secret once, update, rotate, deliveries paged, replay, delete, the SSRF check), each write audited.
func TestAdminKeys(t *testing.T) {
	t.Parallel()
	for _, b := range servertest.Backends {
		t.Run(string(b), func(t *testing.T) {
			t.Parallel()
			f := startAdminKeys(t, b)
			a := f.a
			other := a.NewMember("dev@adminkeys.example", "member", "")
			otherKey := f.secret(a.NewKey(other, auth.KeyOptions{Access: "write", Resources: []string{"companies"}, AllowIPs: []string{"127.0.0.0/8"}}))
			otherID := adminKeyIDOf(t, a, otherKey)

			// The list: every member's keys, each with its owner; filters by member and state.
			r := f.read(a, f.admin, "GET", "/v1/admin/keys", nil)
			a.Expect(r, 200, "")
			if m, _ := r.Body["meta"].(map[string]any); m == nil || m["next_cursor"] != nil {
				t.Errorf("meta %v, want next_cursor null", r.Body["meta"])
			}
			byID := map[string]map[string]any{}
			for _, k := range r.List() {
				byID[k["id"].(string)] = k
			}
			if len(byID) != 3 {
				t.Errorf("%d keys listed, want 3 (A's write and admin keys, the other member's)", len(byID))
			}
			k := byID[otherID]
			if k == nil || k["member"].(map[string]any)["email"] != "dev@adminkeys.example" || k["state"] != "active" || k["access"] != "write" ||
				fmt.Sprint(k["resources"]) != "[companies]" || fmt.Sprint(k["allow_ips"]) != "[127.0.0.0/8]" {
				t.Errorf("the other member's key: %v", k)
			}
			if k != nil && k["last_used_at"] == nil { // keyID used it: this server's use, not flushed yet
				t.Errorf("last_used_at of a key just used: %v", k)
			}
			if l := f.read(a, f.admin, "GET", "/v1/admin/keys?member="+other, nil).List(); len(l) != 1 || l[0]["id"] != otherID {
				t.Errorf("?member: %v", l)
			}
			if l := f.read(a, f.admin, "GET", "/v1/admin/keys?state=revoked", nil).List(); len(l) != 0 {
				t.Errorf("?state=revoked before any revocation: %v", l)
			}
			for _, q := range []string{"state=gone", "member=nobody", "color=red", "state=active&state=revoked"} {
				a.Expect(a.DoKey(f.admin, "GET", "/v1/admin/keys?"+q, nil), 400, "invalid_request")
			}
			g := f.read(a, f.admin, "GET", "/v1/admin/keys/"+otherID, nil)
			a.Expect(g, 200, "")
			if g.Data()["id"] != otherID || g.Data()["hint"] != k["hint"] {
				t.Errorf("get: %v", g.Data())
			}
			a.Expect(a.DoKey(f.admin, "GET", "/v1/admin/keys/0190a6d4-0000-7000-8000-00000000dead", nil), 404, "not_found")
			a.Expect(a.DoKey(f.admin, "GET", "/v1/admin/keys/not-a-uuid", nil), 404, "not_found")

			// Revoked on A, refused by B on its next request, though B had just authenticated the key.
			f.b.Expect(f.b.DoKey(otherKey, "GET", "/v1/companies", nil), 200, "")
			f.b.Expect(f.b.DoKey(otherKey, "GET", "/v1/companies", nil), 200, "")
			a.Expect(a.DoKey(f.admin, "POST", "/v1/admin/keys/"+otherID+"/revoke", map[string]any{"reason": "x"}), 422, "validation_failed")
			rv := f.read(a, f.admin, "POST", "/v1/admin/keys/"+otherID+"/revoke", nil)
			a.Expect(rv, 200, "")
			if rv.Data()["state"] != "revoked" || rv.Data()["revoked_at"] == nil {
				t.Errorf("revoke answered %v", rv.Data())
			}
			revokedAt := rv.Data()["revoked_at"]
			waitAnnounced(t, b, func() bool { return f.b.DoKey(otherKey, "GET", "/v1/companies", nil).Status == 401 })
			f.b.Expect(f.b.DoKey(otherKey, "GET", "/v1/companies", nil), 401, "invalid_api_key")
			a.Expect(a.DoKey(otherKey, "GET", "/v1/companies", nil), 401, "invalid_api_key")
			f.expectAudited(a, a.Workspace, rv, "admin.api_keys", otherID, "revoke", f.admin)
			again := a.DoKey(f.admin, "POST", "/v1/admin/keys/"+otherID+"/revoke", []byte(`{}`))
			a.Expect(again, 200, "")
			if again.Data()["revoked_at"] != revokedAt {
				t.Errorf("a second revocation moved revoked_at: %v, was %v", again.Data()["revoked_at"], revokedAt)
			}
			f.expectAudited(a, a.Workspace, again, "admin.api_keys", otherID, "revoke", f.admin)
			if l := f.read(a, f.admin, "GET", "/v1/admin/keys?state=revoked", nil).List(); len(l) != 1 || l[0]["id"] != otherID {
				t.Errorf("?state=revoked: %v", l)
			}

			// Webhooks.
			rc := newHookReceiver(t, time.Now)
			cr := a.DoKey(f.admin, "POST", "/v1/admin/webhooks", map[string]any{"url": rc.URL + "/hook", "description": "CRM sync", "event_types": []string{"companies.created"}})
			a.Expect(cr, 201, "")
			ep := cr.Data()
			epID, _ := ep["id"].(string)
			secret, _ := ep["secret"].(string)
			if !strings.HasPrefix(secret, "whsec_") || ep["member_id"] != a.Member || ep["enabled"] != true {
				t.Fatalf("create answered %v", ep)
			}
			f.secret(secret)
			rc.mu.Lock()
			rc.secret = secret
			rc.mu.Unlock()
			f.expectAudited(a, a.Workspace, cr, "admin.webhook_endpoints", epID, "create", f.admin)
			if l := f.read(a, f.admin, "GET", "/v1/admin/webhooks", nil).List(); len(l) != 1 || l[0]["id"] != epID || l[0]["secret"] != nil {
				t.Errorf("webhook list: %v", l)
			}
			a.Expect(f.read(a, f.admin, "GET", "/v1/admin/webhooks/"+epID, nil), 200, "")
			up := f.read(a, f.admin, "PATCH", "/v1/admin/webhooks/"+epID, map[string]any{"description": "CRM sync (EU)", "event_types": nil})
			a.Expect(up, 200, "")
			if up.Data()["description"] != "CRM sync (EU)" || up.Data()["event_types"] != nil {
				t.Errorf("update answered %v", up.Data())
			}
			f.expectAudited(a, a.Workspace, up, "admin.webhook_endpoints", epID, "update", f.admin)
			if entry, _ := adminAuditOf(t, a, a.Workspace, up.Header.Get("X-Request-Id")); !strings.Contains(entry["previous"], `"CRM sync"`) || strings.Contains(entry["changes"], "url") {
				t.Errorf("update's audit entry: %v; want the description's previous value and no unchanged member", entry)
			}
			for _, bad := range []struct {
				body  any
				field string
			}{
				{map[string]any{"url": "ftp://example.com/x"}, "url"},
				{map[string]any{"description": "x", "color": "red"}, "color"},
				{map[string]any{"event_types": []string{"companies.exploded"}}, "event_types[0]"},
				{map[string]any{"enabled": "yes"}, "enabled"},
				{map[string]any{"member_id": other}, "member_id"},
			} {
				res := a.DoKey(f.admin, "PATCH", "/v1/admin/webhooks/"+epID, bad.body)
				a.Expect(res, 422, "validation_failed")
				if !strings.Contains(string(res.Raw), `"field":"`+bad.field+`"`) {
					t.Errorf("PATCH %v: %s; want an error naming %s", bad.body, res.Raw, bad.field)
				}
			}
			a.Expect(a.DoKey(f.admin, "PATCH", "/v1/admin/webhooks/"+epID, []byte(`{}`)), 400, "invalid_request")
			a.Expect(a.DoKey(f.admin, "PATCH", "/v1/admin/webhooks/"+epID, []byte(`{"description":"a","description":"b"}`)), 400, "invalid_request")
			a.Expect(a.DoKey(f.admin, "POST", "/v1/admin/webhooks", []byte(`{"url":`)), 400, "invalid_request")
			a.Expect(a.DoKey(f.admin, "POST", "/v1/admin/webhooks", map[string]any{"description": "no url"}), 422, "validation_failed")
			// An endpoint delivers its owner's view: an admin makes only endpoints they own, and points only
			// their own at a new URL; another member's may be disabled.
			a.Expect(a.DoKey(f.admin, "POST", "/v1/admin/webhooks", map[string]any{"url": rc.URL, "member_id": "0190a6d4-0000-7000-8000-00000000beef"}), 403, "permission_denied")
			a.Expect(a.DoKey(f.admin, "POST", "/v1/admin/webhooks", map[string]any{"url": rc.URL, "member_id": other}), 403, "permission_denied")
			theirs := newEndpointIn(t, a, a.Workspace, other, newHookReceiver(t, time.Now), dispatch.Input{})
			a.Expect(a.DoKey(f.admin, "PATCH", "/v1/admin/webhooks/"+theirs.ID, map[string]any{"url": rc.URL + "/elsewhere"}), 403, "permission_denied")
			if r := a.DoKey(f.admin, "PATCH", "/v1/admin/webhooks/"+theirs.ID, map[string]any{"enabled": false}); r.Status != 200 {
				t.Errorf("disabling another member's endpoint: %d %s", r.Status, r.Raw)
			}
			// A delivery, then a replay of every event: the log pages newest first with a cursor.
			a.Expect(a.Do("POST", "/v1/companies", map[string]any{"name": "Hooked"}), 201, "")
			rc.await(t, 30*time.Second, "the first delivery", func(got []received) bool { return len(got) >= 1 && got[0].verified })
			rp := a.DoKey(f.admin, "POST", "/v1/admin/webhooks/"+epID+"/replay", map[string]any{"after": 0})
			a.Expect(rp, 200, "")
			if n, _ := rp.Data()["queued"].(json.Number).Int64(); n < 1 {
				t.Errorf("replay answered %v", rp.Data())
			}
			f.expectAudited(a, a.Workspace, rp, "admin.webhook_endpoints", epID, "replay", f.admin)
			for _, body := range []any{map[string]any{}, map[string]any{"after": 0, "event_id": "0190a6d4-0000-7000-8000-00000000beef"}, map[string]any{"after": -1},
				map[string]any{"event_id": "0190a6d4-0000-7000-8000-00000000beef"}, map[string]any{"after": "3"}} {
				a.Expect(a.DoKey(f.admin, "POST", "/v1/admin/webhooks/"+epID+"/replay", body), 422, "validation_failed")
			}
			rc.await(t, 30*time.Second, "the replayed delivery", func(got []received) bool { return len(got) >= 2 })
			queued, _ := rp.Data()["queued"].(json.Number).Int64()
			var all *servertest.Response
			servertest.WaitFor(5*time.Second, func() bool {
				all = f.read(a, f.admin, "GET", "/v1/admin/webhooks/"+epID+"/deliveries", nil)
				attempts := 0
				for _, d := range all.List() {
					attempts += len(d["attempts"].([]any))
				}
				return attempts >= 2
			})
			a.Expect(all, 200, "")
			if int64(len(all.List())) != 1+queued {
				t.Errorf("%d deliveries after one delivery and a replay of %d: %s", len(all.List()), queued, all.Raw)
			}
			seen := map[any]bool{}
			cursor := ""
			for page := 0; ; page++ {
				path := "/v1/admin/webhooks/" + epID + "/deliveries?limit=1"
				if cursor != "" {
					path += "&cursor=" + url.QueryEscape(cursor)
				}
				res := f.read(a, f.admin, "GET", path, nil)
				a.Expect(res, 200, "")
				if l := res.List(); len(l) != 1 || seen[l[0]["id"]] || l[0]["id"] != all.List()[min(page, len(all.List())-1)]["id"] {
					t.Fatalf("page %d of one delivery: %s; the whole list %s", page, res.Raw, all.Raw)
				} else {
					seen[l[0]["id"]] = true
				}
				next, _ := res.Body["meta"].(map[string]any)["next_cursor"].(string)
				if next == "" {
					break
				}
				cursor = next
			}
			if len(seen) != len(all.List()) {
				t.Errorf("pages of one walked %d deliveries of %d", len(seen), len(all.List()))
			}
			a.Expect(a.DoKey(f.admin, "GET", "/v1/admin/webhooks/"+epID+"/deliveries?cursor=forged", nil), 400, "invalid_request")
			a.Expect(a.DoKey(f.admin, "GET", "/v1/admin/webhooks/"+epID+"/deliveries?state=lost", nil), 400, "invalid_request")
			a.Expect(a.DoKey(f.admin, "GET", "/v1/admin/webhooks/"+epID+"/deliveries?limit=0", nil), 400, "invalid_request")

			// Rotation: a new secret once, the old one signing for the overlap.
			a.Expect(a.DoKey(f.admin, "POST", "/v1/admin/webhooks/"+epID+"/rotate-secret", map[string]any{"overlap": "200h"}), 422, "validation_failed")
			a.Expect(a.DoKey(f.admin, "POST", "/v1/admin/webhooks/"+epID+"/rotate-secret", map[string]any{"overlap": 3600}), 422, "validation_failed")
			ro := a.DoKey(f.admin, "POST", "/v1/admin/webhooks/"+epID+"/rotate-secret", map[string]any{"overlap": "1h"})
			a.Expect(ro, 200, "")
			rotated, _ := ro.Data()["secret"].(string)
			if !strings.HasPrefix(rotated, "whsec_") || rotated == secret || ro.Data()["previous_secret_until"] == nil {
				t.Errorf("rotate answered %v", ro.Data())
			}
			f.secret(rotated)
			f.expectAudited(a, a.Workspace, ro, "admin.webhook_endpoints", epID, "rotate_secret", f.admin)
			ro0 := a.DoKey(f.admin, "POST", "/v1/admin/webhooks/"+epID+"/rotate-secret", map[string]any{"overlap": "0s"})
			a.Expect(ro0, 200, "")
			f.secret(ro0.Data()["secret"].(string))
			f.expectAudited(a, a.Workspace, ro0, "admin.webhook_endpoints", epID, "rotate_secret", f.admin)
			if ro0.Data()["previous_secret_until"] != nil {
				t.Errorf("a rotation without overlap answered previous_secret_until %v", ro0.Data()["previous_secret_until"])
			}
			dflt := a.DoKey(f.admin, "POST", "/v1/admin/webhooks/"+epID+"/rotate-secret", nil)
			a.Expect(dflt, 200, "")
			f.secret(dflt.Data()["secret"].(string))
			if until, err := time.Parse(time.RFC3339Nano, fmt.Sprint(dflt.Data()["previous_secret_until"])); err != nil || until.Sub(time.Now()) < 23*time.Hour {
				t.Errorf("a rotation without a body keeps the old secret until %v; want a day (recordsctl's default overlap)", dflt.Data()["previous_secret_until"])
			}
			a.Expect(f.read(a, f.admin, "GET", "/v1/admin/webhooks/"+epID, nil), 200, "")

			// Nothing any read answered holds a secret, a piece of a key's hash, or a hash.
			for _, raw := range f.checkRaw {
				for _, s := range f.secrets {
					sum := sha256.Sum256([]byte(s))
					if strings.Contains(raw, s) || strings.Contains(raw, hex.EncodeToString(sum[:])) || strings.Contains(raw, strings.TrimPrefix(strings.TrimPrefix(s, "wsk_"), "whsec_")) {
						t.Errorf("an answer holds a secret or its hash: %.300s", raw)
					}
				}
				if strings.Contains(raw, "secret") {
					t.Errorf("an answer names a secret: %.300s", raw)
				}
			}

			del := a.DoKey(f.admin, "DELETE", "/v1/admin/webhooks/"+epID, nil)
			a.Expect(del, 200, "")
			f.expectAudited(a, a.Workspace, del, "admin.webhook_endpoints", epID, "delete", f.admin)
			a.Expect(a.DoKey(f.admin, "GET", "/v1/admin/webhooks/"+epID, nil), 404, "not_found")
			a.Expect(a.DoKey(f.admin, "DELETE", "/v1/admin/webhooks/"+epID, nil), 404, "not_found")
		})
	}
}

// TestAdminKeysMatrices: the permission matrix (a data key is 403 insufficient_scope on every route of
// the area; an admin key whose owner's role lost api.manage is 403 permission_denied) and the isolation
// matrix (another workspace's key and webhook ids are 404 on every id route, and nothing of theirs
// changes), both driven from the route table.
func TestAdminKeysMatrices(t *testing.T) {
	t.Parallel()
	for _, b := range servertest.Backends {
		t.Run(string(b), func(t *testing.T) {
			t.Parallel()
			f := startAdminKeys(t, b)
			a := f.a
			routes := keyAdminRouteTable(t)
			rc := newHookReceiver(t, time.Now)
			mine := a.DoKey(f.admin, "POST", "/v1/admin/webhooks", map[string]any{"url": rc.URL})
			a.Expect(mine, 201, "")
			// B's workspace: a key and a webhook endpoint (B refuses private addresses; a host name passes).
			theirKey := f.b.NewKey(f.b.Member, auth.KeyOptions{Access: "read"})
			theirKeyID := adminKeyIDOf(t, f.b, theirKey)
			theirs := f.b.DoKey(f.admin2, "POST", "/v1/admin/webhooks", map[string]any{"url": "https://hooks.example.com/in", "description": "theirs"})
			f.b.Expect(theirs, 201, "")
			theirHook := theirs.Data()["id"].(string)

			request := func(rt route.Route, keyID, hookID string) (string, any) {
				path := rt.Path
				if strings.Contains(path, "/keys/") {
					path = strings.Replace(path, ":id", keyID, 1)
				} else {
					path = strings.Replace(path, ":id", hookID, 1)
				}
				switch rt.Label {
				case "admin.webhooks.create":
					return path, map[string]any{"url": rc.URL + "/x"}
				case "admin.webhooks.update":
					return path, map[string]any{"description": "changed"}
				case "admin.webhooks.replay":
					return path, map[string]any{"after": 0}
				}
				return path, nil
			}

			// Permissions: a data key, and an admin key whose owner was moved to a role without api.manage.
			lead := a.NewMember("lead@adminkeys.example", "admin", "")
			demoted := a.NewKey(lead, auth.KeyOptions{Access: auth.AccessAdmin})
			roles := `{"version": 1, "roles": {"integrator": {"label": "Integrator", "permissions": ["api.access"], "resources": {"*": "read"}}}}`
			if _, err := a.Server.Backend().Members.PutRoles(f.ctx, a.Workspace, "roles.yaml", []byte(roles), true); err != nil {
				t.Fatal(err)
			}
			if err := a.Server.Backend().Members.SetRole(f.ctx, lead, "integrator"); err != nil {
				t.Fatal(err)
			}
			myKeyID := adminKeyIDOf(t, a, a.Key)
			for _, rt := range routes {
				path, body := request(rt, myKeyID, mine.Data()["id"].(string))
				a.Expect(a.DoKey(a.Key, rt.Method, path, body), 403, "insufficient_scope")
				a.Expect(a.DoKey(demoted, rt.Method, path, body), 403, "permission_denied")
			}
			if l := a.DoKey(f.admin, "GET", "/v1/admin/keys?state=revoked", nil).List(); len(l) != 0 {
				t.Errorf("refused requests revoked keys: %v", l)
			}

			// Isolation: every id route with B's ids from A's admin key.
			ids := 0
			for _, rt := range routes {
				if !strings.Contains(rt.Path, ":id") {
					continue
				}
				ids++
				path, body := request(rt, theirKeyID, theirHook)
				a.Expect(a.DoKey(f.admin, rt.Method, path, body), 404, "not_found")
			}
			if ids != 8 {
				t.Errorf("%d id routes, want 8", ids)
			}
			a.Expect(a.DoKey(f.admin, "GET", "/v1/admin/usage?key="+theirKeyID, nil), 404, "not_found")
			for _, k := range a.DoKey(f.admin, "GET", "/v1/admin/keys", nil).List() {
				if k["id"] == theirKeyID {
					t.Errorf("A's list holds B's key")
				}
			}
			if l := a.DoKey(f.admin, "GET", "/v1/admin/webhooks", nil).List(); len(l) != 1 {
				t.Errorf("A's webhooks: %v", l)
			}
			f.b.Expect(f.b.DoKey(theirKey, "GET", "/v1/companies", nil), 200, "")
			got := f.b.DoKey(f.admin2, "GET", "/v1/admin/webhooks/"+theirHook, nil)
			if got.Status != 200 || got.Data()["description"] != "theirs" {
				t.Errorf("B's endpoint after A's attempts: %d %s", got.Status, got.Raw)
			}
			if l := f.b.DoKey(f.admin2, "GET", "/v1/admin/keys?state=revoked", nil).List(); len(l) != 0 {
				t.Errorf("B's revoked keys after A's attempts: %v", l)
			}
		})
	}
}

// TestAdminKeysUsage: requests and refusals (403, 429) per key and UTC day are exact once flushed, the
// counts of two servers on one database add up, the report covers the days asked (bad ranges are 400),
// and it carries the workspace's monthly quota.
func TestAdminKeysUsage(t *testing.T) {
	t.Parallel()
	for _, b := range servertest.Backends {
		t.Run(string(b), func(t *testing.T) {
			t.Parallel()
			f := startAdminKeys(t, b)
			a := f.a
			counted := a.NewKey(a.Member, auth.KeyOptions{Access: "read"})
			countedID := adminKeyIDOf(t, a, counted) // 1 on A
			for range 4 {
				a.Expect(a.DoKey(counted, "GET", "/v1/companies", nil), 200, "")
			}
			a.Expect(a.DoKey(counted, "GET", "/v1/admin/keys", nil), 403, "insufficient_scope")
			for range 3 {
				f.b.Expect(f.b.DoKey(counted, "GET", "/v1/companies", nil), 200, "")
			}
			f.b.Expect(f.b.DoKey(counted, "GET", "/v1/admin/usage", nil), 403, "insufficient_scope")
			today := time.Now().UTC().Format(time.DateOnly)
			report := func(e *servertest.Env, admin, query string, want func(map[string]any) bool) map[string]any {
				t.Helper()
				var last *servertest.Response
				servertest.WaitFor(5*time.Second, func() bool {
					for _, env := range []*servertest.Env{f.a, f.b} {
						if _, err := env.Server.Backend().Directory.FlushUsage(f.ctx); err != nil {
							t.Fatal(err)
						}
					}
					last = e.DoKey(admin, "GET", "/v1/admin/usage"+query, nil)
					return last.Status == 200 && want(last.Data())
				})
				e.Expect(last, 200, "")
				return last.Data()
			}
			keyDays := func(rep map[string]any, id string) []any {
				for _, k := range rep["keys"].([]any) {
					if k := k.(map[string]any); k["key_id"] == id {
						return k["days"].([]any)
					}
				}
				return nil
			}
			exact := func(id string, requests, refusals int) func(map[string]any) bool {
				return func(rep map[string]any) bool {
					days := keyDays(rep, id)
					return len(days) == 1 && fmt.Sprint(days[0].(map[string]any)["requests"]) == fmt.Sprint(requests) && fmt.Sprint(days[0].(map[string]any)["refusals"]) == fmt.Sprint(refusals)
				}
			}
			rep := report(a, f.admin, "?key="+countedID, exact(countedID, 10, 2))
			if days := keyDays(rep, countedID); !exact(countedID, 10, 2)(rep) {
				t.Fatalf("the counted key's days: %v; want one day, 10 requests of which 2 refused", days)
			} else if days[0].(map[string]any)["day"] != today {
				t.Errorf("counted on %v, want %s", days[0], today)
			}
			if len(rep["keys"].([]any)) != 1 {
				t.Errorf("?key reports %d keys", len(rep["keys"].([]any)))
			}
			key := rep["keys"].([]any)[0].(map[string]any)
			if key["member"].(map[string]any)["id"] != a.Member || key["access"] != "read" || key["state"] != "active" {
				t.Errorf("the key's entry: %v", key)
			}

			// The whole workspace: 30 days by default, today's totals the sum of the keys'.
			full := report(a, f.admin, "", exact(countedID, 10, 2))
			days := full["days"].([]any)
			if len(days) != 30 || days[29].(map[string]any)["day"] != today || full["to"] != today {
				t.Errorf("default range: %d days, last %v, to %v", len(days), days[len(days)-1], full["to"])
			}
			var sum int64
			for _, k := range full["keys"].([]any) {
				for _, d := range k.(map[string]any)["days"].([]any) {
					if d.(map[string]any)["day"] == today {
						n, _ := d.(map[string]any)["requests"].(json.Number).Int64()
						sum += n
					}
				}
			}
			if n, _ := days[29].(map[string]any)["requests"].(json.Number).Int64(); n != sum || n < 10 {
				t.Errorf("today's total %d, the keys' sum %d", n, sum)
			}
			// The quota as A knows it: its own count (6 requests of the counted key at least) or the stored
			// total of every server, whichever is higher; /v1/me, asked next, counts one more.
			me := a.DoKey(f.admin, "GET", "/v1/me", nil).Data()["quota"].(map[string]any)
			quota := full["quota"].(map[string]any)
			used, _ := quota["used"].(json.Number).Int64()
			meUsed, _ := me["used"].(json.Number).Int64()
			if fmt.Sprint(quota["limit"]) != fmt.Sprint(me["limit"]) || used < 6 || meUsed <= used || quota["period"] != time.Now().UTC().Format("2006-01") {
				t.Errorf("quota %v; /v1/me says %v", quota, me)
			}

			// Ranges.
			for _, q := range []string{"?from=2026-13-01", "?to=yesterday", "?from=2026-02-10&to=2026-02-01", "?from=2025-01-01&to=2026-01-02", "?key=nope", "?days=3"} {
				a.Expect(a.DoKey(f.admin, "GET", "/v1/admin/usage"+q, nil), 400, "invalid_request")
			}
			year := a.DoKey(f.admin, "GET", "/v1/admin/usage?from=2025-01-01&to=2026-01-01", nil)
			a.Expect(year, 200, "")
			if n := len(year.Data()["days"].([]any)); n != 366 || len(year.Data()["keys"].([]any)) != 0 {
				t.Errorf("2025-01-01 to 2026-01-01: %d days, keys %v", n, year.Data()["keys"])
			}

			// 429s are refusals: B's workspace allows each key 2 requests a minute, then the limit is lifted
			// again for the report.
			lim, lifted := int64(2), int64(1_000_000_000)
			if err := f.b.Server.Backend().Members.SetLimits(f.ctx, f.b.Workspace, auth.Limits{KeyPerMinute: &lim}); err != nil {
				t.Fatal(err)
			}
			tight := f.b.NewKey(f.b.Member, auth.KeyOptions{Access: "read"})
			tightID := adminKeyIDOf(t, f.b, tight)
			limited := 0
			for range 4 {
				switch st := f.b.DoKey(tight, "GET", "/v1/companies", nil).Status; st {
				case 429:
					limited++
				case 200:
				default:
					t.Fatalf("a rate-limited key answered %d", st)
				}
			}
			if limited < 2 {
				t.Fatalf("%d of 4 requests past a limit of 2 a minute were refused", limited)
			}
			if err := f.b.Server.Backend().Members.SetLimits(f.ctx, f.b.Workspace, auth.Limits{KeyPerMinute: &lifted}); err != nil {
				t.Fatal(err)
			}
			reader := f.b.NewKey(f.b.Member, auth.KeyOptions{Access: auth.AccessAdmin})
			report(f.b, reader, "?key="+tightID, exact(tightID, 5, limited))
		})
	}
}

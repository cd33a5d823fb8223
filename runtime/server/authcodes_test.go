package server_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/workspace-records/records/runtime/auth"
	"github.com/workspace-records/records/runtime/members"
	"github.com/workspace-records/records/runtime/server/servertest"
)

// Every row of the README's 401/403 table, through real HTTP.
func TestAuthCodes(t *testing.T) {
	t.Parallel()
	for _, b := range servertest.Backends {
		t.Run(string(b), func(t *testing.T) {
			t.Parallel()
			e := servertest.Start(t, b, servertest.Options{TrustedProxies: "127.0.0.1"})
			ctx := context.Background()
			dir := e.Server.Backend().Directory
			member := func(ws, role string) string {
				m, err := e.Server.Backend().Members.CreateMember(ctx, ws, members.MemberProfile{Email: role + strings.ReplaceAll(time.Now().Format("150405.000000"), ".", "") + "@x.example", Role: role})
				if err != nil {
					t.Fatal(err)
				}
				return m.ID
			}
			get := func(key, path string, header ...string) *servertest.Response {
				return e.DoKey(key, "GET", path, nil, header...)
			}

			// invalid_api_key
			e.Expect(get("", "/v1/me"), 401, "invalid_api_key")
			e.Expect(get("wsk_zz", "/v1/me"), 401, "invalid_api_key")
			e.Expect(get("wsk_"+strings.Repeat("a", 64), "/v1/me"), 401, "invalid_api_key")
			res := e.DoKey("", "GET", "/v1/me", nil, "Authorization", "Basic dXNlcjpwYXNz")
			e.Expect(res, 401, "invalid_api_key")
			if h := res.Header.Get("WWW-Authenticate"); !strings.HasPrefix(h, "Bearer realm=") {
				t.Errorf("WWW-Authenticate %q is not an RFC 6750 challenge", h)
			}
			if h := get("wsk_"+strings.Repeat("a", 64), "/v1/me").Header.Get("WWW-Authenticate"); !strings.Contains(h, `error="invalid_token"`) {
				t.Errorf("WWW-Authenticate for a bad token %q lacks error=\"invalid_token\"", h)
			}
			revokedMember := member(e.Workspace, "admin")
			_, revoked, _ := dir.CreateKey(ctx, revokedMember, auth.KeyOptions{Access: "read", ExpiresIn: time.Hour})
			keys, _ := dir.ListKeys(ctx, e.Workspace)
			for _, k := range keys {
				if k.Member == revokedMember {
					dir.RevokeKey(ctx, k.ID)
				}
			}
			e.Expect(get(revoked, "/v1/me"), 401, "invalid_api_key")

			// expired_api_key
			expiring := e.NewKey(member(e.Workspace, "admin"), auth.KeyOptions{Access: "read", ExpiresIn: 50 * time.Millisecond})
			time.Sleep(100 * time.Millisecond) // the key's life passing is the point
			e.Expect(get(expiring, "/v1/me"), 401, "expired_api_key")

			// key_assurance_stale
			mfa := member(e.Workspace, "admin")
			stale := e.NewKey(mfa, auth.KeyOptions{Access: "read"})
			e.Expect(get(stale, "/v1/me"), 200, "")
			time.Sleep(2 * time.Millisecond) // the factor is verified after the key was made
			e.Server.Backend().Members.MFAVerified(ctx, mfa)
			e.Expect(get(stale, "/v1/me"), 401, "key_assurance_stale")
			fresh := e.NewKey(mfa, auth.KeyOptions{Access: "read"})
			e.Expect(get(fresh, "/v1/me"), 200, "")

			// ip_not_allowed, with 127.0.0.1 as the trusted proxy of this server
			ipm := member(e.Workspace, "admin")
			office := e.NewKey(ipm, auth.KeyOptions{Access: "read", AllowIPs: []string{"10.0.0.0/8"}})
			e.Expect(get(office, "/v1/me"), 403, "ip_not_allowed")
			e.Expect(get(office, "/v1/me", "X-Forwarded-For", "10.1.2.3"), 200, "")
			e.Expect(get(office, "/v1/me", "X-Forwarded-For", "10.1.2.3, 192.0.2.7"), 403, "ip_not_allowed")
			local := e.NewKey(ipm, auth.KeyOptions{Access: "read", AllowIPs: []string{"127.0.0.1"}})
			e.Expect(get(local, "/v1/me", "X-Forwarded-For", "192.0.2.7"), 403, "ip_not_allowed")

			// permission_denied: the owner's role lacks api.access, checked on every request
			pd := member(e.Workspace, "admin")
			pdKey := e.NewKey(pd, auth.KeyOptions{Access: "read"})
			e.Expect(get(pdKey, "/v1/me"), 200, "")
			e.Server.Backend().Members.SetRole(ctx, pd, "no_api")
			e.Expect(get(pdKey, "/v1/me"), 403, "permission_denied")

			// plan_upgrade_required: the workspace moves to a plan without API access
			ws2, _, key2 := e.NewWorkspace("growth", "admin", "write")
			e.Expect(get(key2, "/v1/me"), 200, "")
			e.Server.Backend().Members.SetPlan(ctx, ws2, "free")
			e.Expect(get(key2, "/v1/companies"), 403, "plan_upgrade_required")

			// insufficient_scope: read key writing; resource outside the allowlist
			sm := member(e.Workspace, "admin")
			readKey := e.NewKey(sm, auth.KeyOptions{Access: "read"})
			e.Expect(e.DoKey(readKey, "POST", "/v1/companies", map[string]any{"name": "x"}), 403, "insufficient_scope")
			dealsOnly := e.NewKey(sm, auth.KeyOptions{Access: "write", Resources: []string{"deals"}})
			e.Expect(get(dealsOnly, "/v1/companies"), 403, "insufficient_scope")

			// feature_unavailable: custom data models are not on the Pro plan
			_, _, proKey := e.NewWorkspace("pro", "admin", "write")
			e.Expect(get(proKey, "/v1/data_model_records?model_id=0190a6d4-0000-7000-8000-000000000001"), 403, "feature_unavailable")
			e.Expect(get(proKey, "/v1/companies"), 200, "")

			// forbidden: the role gives no access, or read only
			viewer := e.NewKey(member(e.Workspace, "viewer"), auth.KeyOptions{Access: "write"})
			e.Expect(get(viewer, "/v1/automations"), 403, "forbidden")
			e.Expect(e.DoKey(viewer, "POST", "/v1/companies", map[string]any{"name": "x"}), 403, "forbidden")
			e.Expect(get(viewer, "/v1/companies"), 200, "")
			if l := get(viewer, "/v1/resources").List(); len(l) != 43 {
				t.Errorf("viewer lists %d resources, want 43 (all but automations)", len(l))
			}
		})
	}
}

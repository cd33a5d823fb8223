package server_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/workspace-records/records/runtime/auth"
	"github.com/workspace-records/records/runtime/server/servertest"
)

// TestKeyCreateNeedsAPIAccess: a key acts as its owner, so a key for a member whose role lacks
// api.access (the built-in no_api, or a workspace role without it) is refused at creation with
// ErrNotPermitted, and nothing is stored; once the member has a role with api.access, the key is made.
func TestKeyCreateNeedsAPIAccess(t *testing.T) {
	t.Parallel()
	for _, b := range servertest.Backends {
		t.Run(string(b), func(t *testing.T) {
			t.Parallel()
			e := servertest.Start(t, b, servertest.Options{})
			ctx := context.Background()
			dir := e.Server.Backend().Directory
			const appOnly = "version: 1\nroles:\n  app_only:\n    label: App only\n    permissions: [api.manage]\n    resources: {\"*\": read}\n    record_rules: {\"*\": all}\n"
			if _, err := e.Server.Backend().Members.PutRoles(ctx, e.Workspace, "roles.yaml", []byte(appOnly), true); err != nil {
				t.Fatal(err)
			}
			before, err := dir.ListKeys(ctx, e.Workspace)
			if err != nil {
				t.Fatal(err)
			}
			for _, role := range []string{"no_api", "app_only"} {
				m := e.NewMember(role+"@keycreate.example", role, "")
				_, secret, err := dir.CreateKey(ctx, m, auth.KeyOptions{Access: "read", ExpiresIn: 24 * time.Hour})
				if !errors.Is(err, auth.ErrNotPermitted) || secret != "" {
					t.Errorf("role %s: CreateKey = %q, %v; want ErrNotPermitted", role, secret, err)
				} else if !strings.Contains(err.Error(), "api.access") || !strings.Contains(err.Error(), role) {
					t.Errorf("role %s: the message does not say what is missing: %v", role, err)
				}
				if err := e.Server.Backend().Members.SetRole(ctx, m, "member"); err != nil {
					t.Fatal(err)
				}
				if _, _, err := dir.CreateKey(ctx, m, auth.KeyOptions{Access: "read", ExpiresIn: 24 * time.Hour}); err != nil {
					t.Errorf("role %s, then member: %v", role, err)
				}
			}
			after, err := dir.ListKeys(ctx, e.Workspace)
			if err != nil {
				t.Fatal(err)
			}
			if len(after) != len(before)+2 {
				t.Errorf("%d keys after two refusals and two creations, want %d", len(after), len(before)+2)
			}
		})
	}
}

// TestAdminKeyScope: an admin key needs an owner whose role holds api.manage, and it administers only:
// on the record routes, the feed and the catalog it is 403 insufficient_scope, while /v1/me serves it.
func TestAdminKeyScope(t *testing.T) {
	t.Parallel()
	for _, b := range servertest.Backends {
		t.Run(string(b), func(t *testing.T) {
			t.Parallel()
			e := servertest.Start(t, b, servertest.Options{})
			dir := e.Server.Backend().Directory
			m := e.NewMember("plain@adminkey.example", "member", "")
			if _, _, err := dir.CreateKey(context.Background(), m, auth.KeyOptions{Access: auth.AccessAdmin, ExpiresIn: time.Hour}); !errors.Is(err, auth.ErrNotPermitted) || !strings.Contains(err.Error(), "api.manage") {
				t.Errorf("admin key for a member without api.manage: %v, want ErrNotPermitted naming api.manage", err)
			}
			admin := e.NewKey(e.Member, auth.KeyOptions{Access: auth.AccessAdmin})
			for _, rq := range [][2]string{{"GET", "/v1/companies"}, {"POST", "/v1/companies"}, {"GET", "/v1/events"}, {"GET", "/v1/resources"}, {"GET", "/v1/resources/companies"}} {
				e.Expect(e.DoKey(admin, rq[0], rq[1], nil), 403, "insufficient_scope")
			}
			if r := e.DoKey(admin, "GET", "/v1/me", nil); r.Status != 200 || r.Data()["key"].(map[string]any)["access"] != "admin" {
				t.Errorf("GET /v1/me with an admin key: %d %s", r.Status, r.Raw)
			}
		})
	}
}

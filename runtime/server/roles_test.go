package server_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/workspace-records/records/runtime/auth"
	"github.com/workspace-records/records/runtime/members"
	"github.com/workspace-records/records/runtime/server/servertest"
)

const auditorRoles = `version: 1
roles:
  auditor:
    label: Auditor
    permissions: [api.access]
    resources: {"*": none, deals: read}
    record_rules: {deals: all}
    field_rules:
      deals: {amount: masked, next_step: hidden}
`

func TestWorkspaceRoles(t *testing.T) {
	t.Parallel()
	for _, b := range servertest.Backends {
		t.Run(string(b), func(t *testing.T) {
			t.Parallel()
			e := servertest.Start(t, b, servertest.Options{})
			ctx := context.Background()
			if _, err := e.Server.Backend().Members.PutRoles(ctx, e.Workspace, "roles.yaml", []byte(auditorRoles), true); err != nil {
				t.Fatal(err)
			}
			if _, err := e.Server.Backend().Members.PutRoles(ctx, e.Workspace, "roles.yaml", []byte(auditorRoles), true); !errors.Is(err, auth.ErrInvalid) {
				t.Errorf("creating an existing role: %v", err)
			}
			for _, bad := range []string{
				strings.Replace(auditorRoles, "auditor:", "admin:", 1),
				strings.Replace(auditorRoles, "deals: read", "gizmos: read", 1),
				strings.Replace(auditorRoles, "amount: masked", "nope: masked", 1),
				strings.Replace(auditorRoles, "label: Auditor", "lable: Auditor", 1),
			} {
				if _, err := e.Server.Backend().Members.PutRoles(ctx, e.Workspace, "roles.yaml", []byte(bad), false); err == nil {
					t.Errorf("accepted a bad role file:\n%s", bad)
				}
			}
			key := e.NewKey(e.NewMember("audit@x.example", "auditor", ""), auth.KeyOptions{Access: "read"})
			e.Do("POST", "/v1/deals", map[string]any{"name": "Big one", "amount": 123456.78, "next_step": "Sign the zqnextstep"})
			e.Expect(e.DoKey(key, "GET", "/v1/companies", nil), 403, "forbidden")
			res := e.DoKey(key, "GET", "/v1/deals", nil)
			e.Expect(res, 200, "")
			if strings.Contains(string(res.Raw), "123456") || strings.Contains(string(res.Raw), "zqnextstep") {
				t.Errorf("auditor sees restricted values: %s", res.Raw)
			}
			// Another workspace cannot use this workspace's role.
			ws2, _, _ := e.NewWorkspace("growth", "admin", "write")
			if _, err := e.Server.Backend().Members.CreateMember(ctx, ws2, members.MemberProfile{Email: "x@y.example", Role: "auditor"}); !errors.Is(err, auth.ErrInvalid) {
				t.Errorf("role of another workspace accepted: %v", err)
			}
			// An update applies to the next request.
			open := strings.Replace(auditorRoles, `"*": none`, `"*": read`, 1)
			if _, err := e.Server.Backend().Members.PutRoles(ctx, e.Workspace, "roles.yaml", []byte(open), false); err != nil {
				t.Fatal(err)
			}
			e.Expect(e.DoKey(key, "GET", "/v1/companies", nil), 200, "")
		})
	}
}

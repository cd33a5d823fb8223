package members_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/workspace-records/records/engine/field"
	"github.com/workspace-records/records/engine/model"
	"github.com/workspace-records/records/runtime/auth"
	"github.com/workspace-records/records/runtime/members"
	"github.com/workspace-records/records/runtime/server/servertest"
	"github.com/workspace-records/records/runtime/store"
)

// The members service on both backends: workspaces and plans, what it refuses and with which error, what a deactivation ends
// (keys and console sessions, in its transaction, for good), the last-manager rule on member and role
// changes, workspace roles from a file and one at a time, and limit overrides merged.
func TestMemberOperations(t *testing.T) {
	for _, b := range servertest.Backends {
		t.Run(string(b), func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			be := servertest.OpenBackend(t, b)
			dir, mem := be.Directory, be.Members
			ws, err := mem.CreateWorkspace(ctx, "Members", "growth")
			if err != nil {
				t.Fatal(err)
			}
			other, err := mem.CreateWorkspace(ctx, "Other", "growth")
			if err != nil {
				t.Fatal(err)
			}
			for name, err := range map[string]error{
				"empty name":   errOf(mem.CreateWorkspace(ctx, " ", "growth")),
				"unknown plan": errOf(mem.CreateWorkspace(ctx, "X", "gold")),
				"set plan":     mem.SetPlan(ctx, ws.ID, "gold"),
			} {
				if !errors.Is(err, auth.ErrInvalid) {
					t.Errorf("workspace, %s: %v, want ErrInvalid", name, err)
				}
			}
			if err := mem.SetPlan(ctx, store.NewID(), "free"); !errors.Is(err, auth.ErrNotFound) {
				t.Errorf("the plan of a workspace that is not there: %v", err)
			}
			if err := mem.SetPlan(ctx, other.ID, "free"); err != nil {
				t.Fatal(err)
			}
			if w, err := dir.Workspace(ctx, other.ID); err != nil || w.Plan != "free" {
				t.Errorf("after SetPlan: %+v %v", w, err)
			}
			admin, err := mem.CreateMember(ctx, ws.ID, members.MemberProfile{Email: " Ada@Members.example ", Role: "admin", FirstName: "Ada"})
			if err != nil {
				t.Fatal(err)
			}
			if admin.Email != "ada@members.example" || !admin.Active {
				t.Errorf("created %+v: the email is kept trimmed and in lower case, the member active", admin)
			}

			// Refusals: ErrInvalid for bad input (an unknown role names the roles there are), ErrNotFound
			// for a workspace or member that is not there.
			for name, err := range map[string]error{
				"email":      errOf(mem.CreateMember(ctx, ws.ID, members.MemberProfile{Email: "not-an-email", Role: "admin"})),
				"department": errOf(mem.CreateMember(ctx, ws.ID, members.MemberProfile{Email: "d@members.example", Role: "admin", Department: "sales"})),
				"duplicate":  errOf(mem.CreateMember(ctx, ws.ID, members.MemberProfile{Email: "ADA@members.example", Role: "admin"})),
				"role":       errOf(mem.CreateMember(ctx, ws.ID, members.MemberProfile{Email: "r@members.example", Role: "admn"})),
			} {
				if !errors.Is(err, auth.ErrInvalid) {
					t.Errorf("%s: %v, want ErrInvalid", name, err)
				}
			}
			if _, err := mem.CreateMember(ctx, ws.ID, members.MemberProfile{Email: "r@members.example", Role: "admn"}); err == nil || !strings.Contains(err.Error(), `did you mean "admin"`) {
				t.Errorf("an unknown role: %v, want a suggestion", err)
			}
			if _, err := mem.CreateMember(ctx, store.NewID(), members.MemberProfile{Email: "w@members.example", Role: "admin"}); !errors.Is(err, auth.ErrNotFound) {
				t.Errorf("a workspace that is not there: %v", err)
			}
			if _, err := mem.Member(ctx, other.ID, admin.ID); !errors.Is(err, auth.ErrNotFound) {
				t.Errorf("a member read in another workspace: %v, want ErrNotFound", err)
			}
			if err := mem.MFAVerified(ctx, store.NewID()); !errors.Is(err, auth.ErrNotFound) {
				t.Errorf("MFA of a member that is not there: %v", err)
			}

			// Deactivation revokes the member's keys and ends their console sessions; activation brings
			// neither back.
			rep, err := mem.CreateMember(ctx, ws.ID, members.MemberProfile{Email: "rep@members.example", Role: "member"})
			if err != nil {
				t.Fatal(err)
			}
			_, secret, err := dir.CreateKey(ctx, rep.ID, auth.KeyOptions{Access: "read", ExpiresIn: time.Hour})
			if err != nil {
				t.Fatal(err)
			}
			token, _, err := dir.CreateSignInLink(ctx, rep.ID, time.Minute)
			if err != nil {
				t.Fatal(err)
			}
			session, _, err := dir.SignIn(ctx, token)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := dir.Authenticate(ctx, secret); err != nil {
				t.Fatalf("the key before the deactivation: %v", err)
			}
			if err := mem.Deactivate(ctx, rep.ID); err != nil {
				t.Fatal(err)
			}
			if err := mem.Activate(ctx, rep.ID); err != nil {
				t.Fatal(err)
			}
			if _, err := dir.Authenticate(ctx, secret); err == nil {
				t.Error("a key revoked by a deactivation authenticates after the activation")
			}
			if _, err := dir.SessionPrincipal(ctx, session); err == nil {
				t.Error("a session ended by a deactivation is valid after the activation")
			}
			if m, err := mem.Member(ctx, ws.ID, rep.ID); err != nil || !m.Active {
				t.Errorf("after the activation: %+v %v", m, err)
			}

			// The last manager: neither a role change, nor a deactivation, nor a role replaced, may leave
			// the workspace without an active member holding api.manage.
			viewer := "viewer"
			if _, err := mem.ChangeMember(ctx, ws.ID, admin.ID, members.MemberChange{Role: &viewer}, nil, nil); !errors.Is(err, members.ErrLastManager) {
				t.Errorf("the last manager made a viewer: %v", err)
			}
			off := false
			if _, err := mem.ChangeMember(ctx, ws.ID, admin.ID, members.MemberChange{Active: &off}, nil, nil); !errors.Is(err, members.ErrLastManager) {
				t.Errorf("the last manager deactivated: %v", err)
			}
			keeper, err := mem.CompileRole("keeper", []byte(`{"label": "Keeper", "permissions": ["api.access", "api.manage"], "resources": {"*": "write"}}`))
			if err != nil {
				t.Fatal(err)
			}
			if err := mem.PutRole(ctx, ws.ID, keeper, true, nil, nil); err != nil {
				t.Fatal(err)
			}
			if err := mem.PutRole(ctx, ws.ID, keeper, true, nil, nil); !errors.As(err, new(*members.ExistsError)) {
				t.Errorf("a role created twice: %v, want ExistsError", err)
			}
			keeperName := "keeper"
			if _, err := mem.ChangeMember(ctx, ws.ID, admin.ID, members.MemberChange{Role: &keeperName}, nil, nil); err != nil {
				t.Fatal(err)
			}
			demoted, err := mem.CompileRole("keeper", []byte(`{"label": "Keeper", "permissions": ["api.access"], "resources": {"*": "read"}}`))
			if err != nil {
				t.Fatal(err)
			}
			if err := mem.PutRole(ctx, ws.ID, demoted, false, nil, nil); !errors.Is(err, members.ErrLastManager) {
				t.Errorf("the only manager's role stripped of api.manage: %v", err)
			}
			// The callback runs in the change's transaction: its error rolls the change back.
			refused := errors.New("refused in the transaction")
			if _, err := mem.ChangeMember(ctx, ws.ID, rep.ID, members.MemberChange{Role: &viewer}, nil, func(store.Querier, members.MemberEntry, members.MemberEntry) error { return refused }); !errors.Is(err, refused) {
				t.Errorf("the callback's error: %v", err)
			}
			if m, _ := mem.Member(ctx, ws.ID, rep.ID); m.Role != "member" {
				t.Errorf("a change whose callback failed was kept: role %q", m.Role)
			}
			// allow sees the new role before anything is written.
			if _, err := mem.ChangeMember(ctx, ws.ID, rep.ID, members.MemberChange{Role: &keeperName}, func(r *model.Role) error {
				if r.Name != "keeper" {
					t.Errorf("allow saw %q", r.Name)
				}
				return refused
			}, nil); !errors.Is(err, refused) {
				t.Errorf("allow's refusal: %v", err)
			}

			// Roles: a role's problems are placed from the entry; the workspace's roles follow the built-in
			// ones; a built-in name cannot be taken; roles from a file come back in its order.
			_, err = mem.CompileRole("broken", []byte(`{"label": "Broken", "permissions": ["api.fly"], "resources": {}}`))
			var invalid *members.InvalidError
			var list field.ErrorList
			if !errors.As(err, &invalid) || !errors.As(err, &list) || !errors.Is(err, auth.ErrInvalid) || !strings.HasPrefix(list[0].Field, "permissions") {
				t.Errorf("a role with an unknown permission: %v", err)
			}
			builtin, err := mem.CompileRole("admin", []byte(`{"label": "Mine", "permissions": [], "resources": {}}`))
			if err != nil {
				t.Fatal(err)
			}
			if err := mem.PutRole(ctx, ws.ID, builtin, true, nil, nil); !errors.As(err, &invalid) {
				t.Errorf("a built-in role's name taken: %v", err)
			}
			names, err := mem.PutRoles(ctx, ws.ID, "roles.yaml", []byte("version: 1\nroles:\n  zeta: {label: Z, permissions: [], resources: {}}\n  alpha: {label: A, permissions: [api.access], resources: {}}\n"), true)
			if err != nil || strings.Join(names, ",") != "zeta,alpha" {
				t.Fatalf("roles from a file: %v %v", names, err)
			}
			roles, err := mem.ListRoles(ctx, ws.ID)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, r := range roles {
				if !r.Builtin {
					got = append(got, r.Name)
				}
			}
			if strings.Join(got, ",") != "alpha,keeper,zeta" || !roles[0].Builtin {
				t.Errorf("workspace roles listed %v after the built-in ones", got)
			}
			if _, err := mem.Role(ctx, other.ID, "keeper"); !errors.Is(err, auth.ErrNotFound) {
				t.Errorf("a role read in another workspace: %v", err)
			}
			if err := mem.SetRole(ctx, rep.ID, "alpha"); err != nil {
				t.Fatal(err)
			}
			list2, err := mem.ListMembers(ctx, ws.ID)
			if err != nil || len(list2) != 2 || list2[0].Email != "ada@members.example" || list2[1].Role != "alpha" {
				t.Errorf("members listed: %+v %v", list2, err)
			}

			// Limits: negative numbers refused; overrides merged with the earlier ones.
			minus, five, nine := int64(-1), int64(5), int64(9)
			if err := mem.SetLimits(ctx, ws.ID, auth.Limits{KeyPerMinute: &minus}); !errors.Is(err, auth.ErrInvalid) {
				t.Errorf("a negative limit: %v", err)
			}
			if err := mem.SetLimits(ctx, ws.ID, auth.Limits{KeyPerMinute: &five}); err != nil {
				t.Fatal(err)
			}
			if err := mem.SetLimits(ctx, ws.ID, auth.Limits{MonthlyQuota: &nine}); err != nil {
				t.Fatal(err)
			}
			if err := mem.SetLimits(ctx, store.NewID(), auth.Limits{MonthlyQuota: &nine}); !errors.Is(err, auth.ErrNotFound) {
				t.Errorf("limits of a workspace that is not there: %v", err)
			}
			all, err := mem.ListWorkspaces(ctx)
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range all {
				if w.ID == ws.ID && (w.Limits.KeyPerMinute == nil || *w.Limits.KeyPerMinute != 5 || w.Limits.MonthlyQuota == nil || *w.Limits.MonthlyQuota != 9) {
					t.Errorf("limits after two overrides: %+v", w.Limits)
				}
			}
		})
	}
}

func errOf[T any](_ T, err error) error { return err }

package admin

import (
	"context"

	"github.com/workspace-records/records/engine/model"
	"github.com/workspace-records/records/runtime/audit"
	"github.com/workspace-records/records/runtime/members"
	"github.com/workspace-records/records/runtime/store"
)

// Members lists the workspace's members, by email.
func (s *Service) Members(ctx context.Context, a Actor) ([]members.MemberEntry, error) {
	return s.cfg.Members.ListMembers(ctx, a.workspace())
}

// Member returns member id of the workspace.
func (s *Service) Member(ctx context.Context, a Actor, id string) (members.MemberEntry, error) {
	m, err := s.cfg.Members.Member(ctx, a.workspace(), id)
	return m, explain("member", err)
}

// SetMemberRole gives member id role: a built-in role or one of the workspace's, granting nothing the
// actor's own role lacks (else 403 permission_denied), and not taking api.manage from the last active
// member holding it (409 conflict).
func (s *Service) SetMemberRole(ctx context.Context, a Actor, id, role string) (members.MemberEntry, error) {
	return s.changeMember(ctx, a, id, members.MemberChange{Role: &role}, audit.ActionUpdate)
}

// SetMemberActive deactivates member id (active false: their keys are revoked for good) or activates
// them again. The last active member holding api.manage cannot be deactivated (409 conflict).
func (s *Service) SetMemberActive(ctx context.Context, a Actor, id string, active bool) (members.MemberEntry, error) {
	action := audit.ActionDeactivate
	if active {
		action = audit.ActionActivate
	}
	return s.changeMember(ctx, a, id, members.MemberChange{Active: &active}, action)
}

func (s *Service) changeMember(ctx context.Context, a Actor, id string, c members.MemberChange, action string) (members.MemberEntry, error) {
	allow := func(r *model.Role) error {
		if over := exceeds(s.cfg.Catalog, a.Principal.Role, r); len(over) > 0 {
			return denied("Role " + r.Name + " grants what your role does not hold (" + joinFirst(over) + "); you cannot give it.")
		}
		return nil
	}
	m, err := s.cfg.Members.ChangeMember(a.scoped(ctx), a.workspace(), id, c, allow, func(q store.Querier, before, after members.MemberEntry) error {
		changes, previous := diff(memberValues(before), memberValues(after))
		return s.record(a.scoped(ctx), q, a, audit.AdminMembers, after.ID, action, changes, previous)
	})
	return m, explain("member", err)
}

// memberValues are a member's audited members: role and state.
func memberValues(m members.MemberEntry) map[string]any {
	return map[string]any{"role": m.Role, "active": m.Active}
}

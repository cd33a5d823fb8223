package admin

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/workspace-records/records/engine/access"
	"github.com/workspace-records/records/engine/apierr"
	"github.com/workspace-records/records/engine/model"
	"github.com/workspace-records/records/runtime/audit"
	"github.com/workspace-records/records/runtime/members"
	"github.com/workspace-records/records/runtime/store"
)

// Role is a role as the admin API shows it: its id in the audit trail and its roles.yaml entry.
type Role struct {
	ID string `json:"id"`
	members.RoleEntry
}

func (s *Service) role(a Actor, e members.RoleEntry) Role {
	return Role{ID: members.RoleID(a.workspace(), e.Name), RoleEntry: e}
}

// Roles lists the roles of the workspace: the built-in ones, then the workspace's by name.
func (s *Service) Roles(ctx context.Context, a Actor) ([]Role, error) {
	list, err := s.cfg.Members.ListRoles(ctx, a.workspace())
	if err != nil {
		return nil, err
	}
	out := make([]Role, len(list))
	for i, e := range list {
		out[i] = s.role(a, e)
	}
	return out, nil
}

// Role returns role name, built-in or the workspace's.
func (s *Service) Role(ctx context.Context, a Actor, name string) (Role, error) {
	e, err := s.cfg.Members.Role(ctx, a.workspace(), name)
	if err != nil {
		return Role{}, explain("role", err)
	}
	return s.role(a, e), nil
}

// CreateRole creates workspace role name from definition, the members of a roles.yaml entry as JSON
// (label, description, permissions, resources, record_rules, field_rules), checked as recordsctl role
// create checks them. It may grant nothing the actor's own role lacks (403 permission_denied).
func (s *Service) CreateRole(ctx context.Context, a Actor, name string, definition []byte) (Role, error) {
	r, err := s.cfg.Members.CompileRole(name, definition)
	if err != nil {
		return Role{}, explain("role", err)
	}
	return s.putRole(ctx, a, r, true)
}

// UpdateRole replaces the members of workspace role name that patch holds (the others are kept) and
// checks the result as CreateRole does. Built-in roles do not change (409 conflict); taking api.manage
// from the last active members holding it is 409 conflict too.
func (s *Service) UpdateRole(ctx context.Context, a Actor, name string, patch map[string]any) (Role, error) {
	cur, err := s.cfg.Members.Role(ctx, a.workspace(), name)
	if err != nil {
		return Role{}, explain("role", err)
	}
	if cur.Builtin {
		return Role{}, apierr.New(apierr.Conflict, "Role "+name+" is built in (definitions/roles.yaml) and does not change; create a workspace role instead.")
	}
	def := map[string]any{"label": cur.Label, "permissions": cur.Permissions, "resources": cur.Resources}
	if cur.Description != "" {
		def["description"] = cur.Description
	}
	if len(cur.RecordRules) > 0 {
		def["record_rules"] = cur.RecordRules
	}
	if len(cur.FieldRules) > 0 {
		def["field_rules"] = cur.FieldRules
	}
	for k, v := range patch {
		def[k] = v
	}
	data, err := json.Marshal(def)
	if err != nil {
		return Role{}, fmt.Errorf("update role %s: %w", name, err)
	}
	r, err := s.cfg.Members.CompileRole(name, data)
	if err != nil {
		return Role{}, explain("role", err)
	}
	return s.putRole(ctx, a, r, false)
}

func (s *Service) putRole(ctx context.Context, a Actor, r *model.Role, create bool) (Role, error) {
	allow := func(r *model.Role) error {
		if over := exceeds(s.cfg.Catalog, a.Principal.Role, r); len(over) > 0 {
			return denied("Role " + r.Name + " would grant what your role does not hold (" + joinFirst(over) + ").")
		}
		return nil
	}
	action := audit.ActionUpdate
	if create {
		action = audit.ActionCreate
	}
	after := members.RoleEntryOf(r, false)
	err := s.cfg.Members.PutRole(a.scoped(ctx), a.workspace(), r, create, allow, func(q store.Querier, before *model.Role) error {
		changes, previous := values(after), map[string]any(nil)
		if before != nil {
			changes, previous = diff(values(members.RoleEntryOf(before, false)), changes)
		}
		return s.record(a.scoped(ctx), q, a, audit.AdminRoles, members.RoleID(a.workspace(), r.Name), action, changes, previous)
	})
	if err != nil {
		return Role{}, explain("role", err)
	}
	return s.role(a, after), nil
}

// exceeds lists what role r grants beyond mine (nil: nothing): a permission mine lacks, more access to a
// resource, a broader record rule, or a field mine masks or hides that r shows.
func exceeds(cat *model.Catalog, mine, r *model.Role) []string {
	if mine == nil { // the operator
		return nil
	}
	var out []string
	for _, p := range r.Permissions {
		if !slices.Contains(mine.Permissions, p) {
			out = append(out, "the "+p+" permission")
		}
	}
	breadth := map[access.Rule]int{access.Owned: 0, access.Department: 1, access.All: 2}
	for _, res := range cat.Resources {
		theirs, own := access.For(r, res, "", ""), access.For(mine, res, "", "")
		if theirs.Level == access.None {
			continue
		}
		if theirs.Level > own.Level {
			out = append(out, theirs.Level.String()+" access to "+res.Name)
			continue
		}
		if breadth[theirs.Rule] > breadth[own.Rule] {
			out = append(out, "the "+theirs.Rule.String()+" record rule on "+res.Name)
		}
		for _, f := range res.Fields {
			if theirs.Visibility(f.Key) < own.Visibility(f.Key) {
				out = append(out, res.Name+"."+f.Key+" "+theirs.Visibility(f.Key).String())
			}
		}
	}
	return out
}

// joinFirst joins the first few items of list, counting the rest.
func joinFirst(list []string) string {
	const shown = 3
	if len(list) <= shown {
		return strings.Join(list, ", ")
	}
	return strings.Join(list[:shown], ", ") + fmt.Sprintf(" and %d more", len(list)-shown)
}

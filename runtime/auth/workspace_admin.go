package auth

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/google/uuid"

	"github.com/workspace-records/records/engine/field"
	"github.com/workspace-records/records/engine/model"
	"github.com/workspace-records/records/engine/spec"
	"github.com/workspace-records/records/runtime/store"
)

// The writes of the admin API (docs/issue-24.md) on members and roles. Each takes the workspace it acts
// in, so that an id of another workspace is ErrNotFound, and a callback run inside the transaction of the
// change, once written, where the admin API writes its audit entry (an error rolls the change back).
// Like the operator's writes they end with forget, so every server sees the change on its next request.

// ErrLastManager refuses a change that would leave a workspace without an active member whose role holds
// api.manage (the admin API answers 409 conflict).
var ErrLastManager = errors.New("the change would leave the workspace without an active member holding api.manage")

// RoleID is the id of role name of workspace in the audit trail: a UUID derived from both.
func RoleID(workspace, name string) string {
	ns, err := uuid.Parse(workspace)
	if err != nil {
		ns = uuid.Nil
	}
	return uuid.NewSHA1(ns, []byte("role:"+name)).String()
}

// Member returns member id of workspace (ErrNotFound when the workspace has none of that id).
func (d *Directory) Member(ctx context.Context, workspace, id string) (MemberEntry, error) {
	return d.member(ctx, d.st, strings.ToLower(workspace), strings.ToLower(id))
}

func (d *Directory) member(ctx context.Context, q store.Querier, workspace, id string) (MemberEntry, error) {
	if !model.IsUUID(id) {
		return MemberEntry{}, fmt.Errorf("member %s: %w", id, ErrNotFound)
	}
	m := MemberEntry{ID: id, Workspace: workspace}
	found, err := store.QueryOne(ctx, q, d.d.Bind("SELECT email, role, department_id, active, mfa_verified_at, created_at, updated_at FROM members WHERE workspace_id = ? AND id = ?", workspace, id), func(row []any) error {
		m.Email, m.Role, m.Active = store.Text(row[0]), store.Text(row[1]), store.Bool(row[3])
		if row[2] != nil {
			dept := store.UUIDText(row[2])
			m.Department = &dept
		}
		if row[4] != nil {
			t, err := store.Time(row[4])
			if err != nil {
				return err
			}
			m.MFAVerifiedAt = &t
		}
		return store.Times(row[5:], &m.CreatedAt, &m.UpdatedAt)
	})
	if err != nil {
		return MemberEntry{}, fmt.Errorf("read member: %w", err)
	}
	if !found {
		return MemberEntry{}, fmt.Errorf("member %s: %w", id, ErrNotFound)
	}
	return m, nil
}

// MemberChange is a change of one member: nil fields are kept.
type MemberChange struct {
	Role   *string
	Active *bool
}

// ChangeMember applies c to member id of workspace. allow, when set, sees the new role before anything
// is written and may refuse it (the admin API's "no escalation"). A change that takes api.manage from the
// last active member holding it is ErrLastManager. Deactivating revokes the member's keys and ends their
// console sessions for good, as Deactivate does. then runs in the transaction with the member before and after the change.
func (d *Directory) ChangeMember(ctx context.Context, workspace, id string, c MemberChange, allow func(*model.Role) error, then func(q store.Querier, before, after MemberEntry) error) (MemberEntry, error) {
	defer d.forget()
	workspace, id = strings.ToLower(workspace), strings.ToLower(id)
	var after MemberEntry
	err := d.st.Tx(ctx, func(q store.Querier) error {
		// Every change of a workspace's managers takes the workspace's row first, so that two admins
		// demoting each other at once cannot both pass the last-manager check.
		if err := d.lockWorkspace(ctx, q, workspace); err != nil {
			return err
		}
		before, err := d.member(ctx, q, workspace, id)
		if err != nil {
			return err
		}
		beforeRole, err := d.roleIn(ctx, q, workspace, before.Role)
		if err != nil {
			return err
		}
		after = before
		afterRole := beforeRole
		if c.Role != nil {
			if err := d.checkRole(ctx, q, workspace, *c.Role); err != nil {
				var list field.ErrorList
				if !errors.As(err, &list) {
					err = invalid(field.CodeOption, "role", strings.TrimPrefix(err.Error(), ErrInvalid.Error()+": "))
				}
				return err
			}
			if afterRole, err = d.roleIn(ctx, q, workspace, *c.Role); err != nil {
				return err
			}
			if allow != nil {
				if err := allow(afterRole); err != nil {
					return err
				}
			}
			after.Role = *c.Role
		}
		if c.Active != nil {
			after.Active = *c.Active
			// Activating a member gives their role's access back: the same grant as giving that role.
			if after.Active && !before.Active && c.Role == nil && allow != nil && afterRole != nil {
				if err := allow(afterRole); err != nil {
					return err
				}
			}
		}
		after.UpdatedAt = d.ts()
		if _, err := q.Exec(ctx, d.d.Bind("UPDATE members SET role = ?, active = ?, updated_at = ? WHERE workspace_id = ? AND id = ?", after.Role, after.Active, after.UpdatedAt, workspace, id)); err != nil {
			return fmt.Errorf("change member: %w", err)
		}
		if before.Active && !after.Active {
			if _, err := q.Exec(ctx, d.d.Bind("UPDATE api_keys SET revoked_at = ? WHERE workspace_id = ? AND member_id = ? AND revoked_at IS NULL", after.UpdatedAt, workspace, id)); err != nil {
				return fmt.Errorf("revoke keys of member: %w", err)
			}
		}
		if before.Active != after.Active {
			// Deactivated: signed out everywhere, for good. Activated: no session from before comes back.
			if err := d.endSessions(ctx, q, workspace, id, after.UpdatedAt); err != nil {
				return err
			}
		}
		manages := func(active bool, r *model.Role) bool { return active && r != nil && hasPermission(r, PermManage) }
		if manages(before.Active, beforeRole) && !manages(after.Active, afterRole) {
			if err := d.keepManager(ctx, q, workspace); err != nil {
				return err
			}
		}
		if then != nil {
			return then(q, before, after)
		}
		return nil
	})
	if err != nil {
		return MemberEntry{}, err
	}
	return after, nil
}

// lockWorkspace takes workspace's row for the rest of q's transaction (ErrNotFound when there is none).
func (d *Directory) lockWorkspace(ctx context.Context, q store.Querier, workspace string) error {
	n, err := q.Exec(ctx, d.d.Bind("UPDATE workspaces SET updated_at = updated_at WHERE id = ?", workspace))
	if err != nil {
		return fmt.Errorf("lock workspace: %w", err)
	}
	if n == 0 {
		return fmt.Errorf("workspace %s: %w", workspace, ErrNotFound)
	}
	return nil
}

// keepManager is ErrLastManager when no active member of workspace holds api.manage any more (read in
// q's transaction, after the change).
func (d *Directory) keepManager(ctx context.Context, q store.Querier, workspace string) error {
	managers := 0
	err := q.Query(ctx, d.d.Bind(`SELECT m.role, wr.definition FROM members m
LEFT JOIN workspace_roles wr ON wr.workspace_id = m.workspace_id AND wr.name = m.role
WHERE m.workspace_id = ? AND m.active = ?`, workspace, true), func(row []any) error {
		r, err := resolveRole(d.catalog(), store.Text(row[0]), row[1])
		if err != nil {
			return err
		}
		if r != nil && hasPermission(r, PermManage) {
			managers++
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("count managers: %w", err)
	}
	if managers == 0 {
		return ErrLastManager
	}
	return nil
}

// roleIn returns role name as members of workspace get it: built-in or the workspace's (nil when it is
// neither).
func (d *Directory) roleIn(ctx context.Context, q store.Querier, workspace, name string) (*model.Role, error) {
	if r, ok := d.catalog().Role(name); ok {
		return r, nil
	}
	var def any
	if _, err := store.QueryOne(ctx, q, d.d.Bind("SELECT definition FROM workspace_roles WHERE workspace_id = ? AND name = ?", workspace, name), func(row []any) error {
		def = row[0]
		return nil
	}); err != nil {
		return nil, fmt.Errorf("read role %s: %w", name, err)
	}
	return resolveRole(d.catalog(), name, def)
}

// Role returns role name of workspace: a built-in role or one of the workspace's (ErrNotFound otherwise).
func (d *Directory) Role(ctx context.Context, workspace, name string) (RoleEntry, error) {
	workspace = strings.ToLower(workspace)
	if _, err := d.Workspace(ctx, workspace); err != nil {
		return RoleEntry{}, err
	}
	r, err := d.roleIn(ctx, d.st, workspace, name)
	if err != nil {
		return RoleEntry{}, err
	}
	if r == nil {
		return RoleEntry{}, fmt.Errorf("role %s: %w", name, ErrNotFound)
	}
	_, builtin := d.catalog().Role(name)
	return RoleEntryOf(r, builtin), nil
}

// RoleEntryOf is role r as role list shows it.
func RoleEntryOf(r *model.Role, builtin bool) RoleEntry {
	return RoleEntry{Name: r.Name, Label: r.Label, Description: r.Description, Builtin: builtin, Permissions: nonNil(r.Permissions), Resources: nonNilMap(r.Resources),
		RecordRules: nonNilMap(r.RecordRules), FieldRules: nonNilRules(r.FieldRules)}
}

func nonNilRules(m map[string]map[string]string) map[string]map[string]string {
	if m == nil {
		return map[string]map[string]string{}
	}
	return m
}

// CompileRole reads one role in the format of a roles.yaml entry (definition: the entry's members as
// JSON or YAML, name apart) and checks it as role create does. Its problems are an *InvalidError whose
// paths start at the entry (permissions.0, resources.deals).
func (d *Directory) CompileRole(name string, definition []byte) (*model.Role, error) {
	const file = "role"
	doc := []byte(`{"version": 1, "roles": {` + quoteJSON(name) + `: ` + string(definition) + `}}`)
	parsed, errs := spec.ParseRoles(file, doc)
	if len(errs) == 0 {
		var roles []*model.Role
		roles, errs = d.catalog().CompileRoles(file, parsed)
		if len(errs) == 0 && len(roles) == 1 {
			return roles[0], nil
		}
	}
	out := make(field.ErrorList, len(errs))
	for i, e := range errs {
		p := strings.TrimPrefix(e.Field, "roles")
		p = strings.TrimPrefix(p, ".")
		switch {
		case p == name:
			p = ""
		case strings.HasPrefix(p, name+"."):
			p = strings.TrimPrefix(p, name+".")
		case p != "" && !strings.HasPrefix(p, name):
			p = "name" // the role's name broke the pattern of names
		}
		out[i] = &field.Error{Code: e.Code, Field: p, Message: e.Message}
	}
	return nil, &InvalidError{Errors: out}
}

func quoteJSON(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r < 0x20:
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// PutRole creates (create true) or replaces the workspace role r of workspace (checked by CompileRole).
// allow, when set, sees r before anything is written and may refuse it (no escalation). Replacing a role
// so that no active member holds api.manage any more is ErrLastManager. then runs in the transaction
// with the role it replaced (nil on create).
func (d *Directory) PutRole(ctx context.Context, workspace string, r *model.Role, create bool, allow func(*model.Role) error, then func(q store.Querier, before *model.Role) error) error {
	defer d.forget()
	workspace = strings.ToLower(workspace)
	if allow != nil {
		if err := allow(r); err != nil {
			return err
		}
	}
	return d.st.Tx(ctx, func(q store.Querier) error {
		if err := d.lockWorkspace(ctx, q, workspace); err != nil {
			return err
		}
		before, err := d.storeRole(ctx, q, workspace, r, create)
		if err != nil {
			return err
		}
		if before != nil && hasPermission(before, PermManage) && !hasPermission(r, PermManage) {
			if err := d.keepManager(ctx, q, workspace); err != nil {
				return err
			}
		}
		if then != nil {
			return then(q, before)
		}
		return nil
	})
}

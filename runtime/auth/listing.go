package auth

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/workspace-records/records/runtime/store"
)

// The listings of recordsctl's list commands. Every field is always present (null when unset), so that
// scripts reading `--json` see the same names on every row.

// WorkspaceEntry is a workspace as workspace list shows it.
type WorkspaceEntry struct {
	ID        string    `json:"id"`
	Name      string    `json:"name"`
	Plan      string    `json:"plan"`
	Limits    Limits    `json:"limits"` // the overrides of the plan's limits (set-limits); {} when none
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
}

// ListWorkspaces returns every workspace, oldest first.
func (d *Directory) ListWorkspaces(ctx context.Context) ([]WorkspaceEntry, error) {
	out := []WorkspaceEntry{}
	err := d.st.Query(ctx, d.d.Bind("SELECT id, name, plan, limits, created_at, updated_at FROM workspaces ORDER BY created_at, id"), func(row []any) error {
		w := WorkspaceEntry{ID: store.UUIDText(row[0]), Name: store.Text(row[1]), Plan: store.Text(row[2])}
		if row[3] != nil {
			if err := json.Unmarshal(store.JSON(row[3]), &w.Limits); err != nil {
				return fmt.Errorf("limits of workspace %s: %w", w.ID, err)
			}
		}
		if err := store.Times(row[4:], &w.CreatedAt, &w.UpdatedAt); err != nil {
			return err
		}
		out = append(out, w)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list workspaces: %w", err)
	}
	return out, nil
}

// MemberEntry is a member as member list shows it.
type MemberEntry struct {
	ID            string     `json:"id"`
	Workspace     string     `json:"workspace_id"`
	Email         string     `json:"email"`
	Role          string     `json:"role"`
	Department    *string    `json:"department_id"`
	Active        bool       `json:"active"`
	MFAVerifiedAt *time.Time `json:"mfa_verified_at"`
	CreatedAt     time.Time  `json:"created_at"`
	UpdatedAt     time.Time  `json:"updated_at"`
}

// ListMembers returns the members of workspace, by email.
func (d *Directory) ListMembers(ctx context.Context, workspace string) ([]MemberEntry, error) {
	workspace = strings.ToLower(workspace)
	if _, err := d.Workspace(ctx, workspace); err != nil {
		return nil, err
	}
	out := []MemberEntry{}
	err := d.st.Query(ctx, d.d.Bind("SELECT id, email, role, department_id, active, mfa_verified_at, created_at, updated_at FROM members WHERE workspace_id = ? ORDER BY email, id", workspace), func(row []any) error {
		m := MemberEntry{ID: store.UUIDText(row[0]), Workspace: workspace, Email: store.Text(row[1]), Role: store.Text(row[2]), Active: store.Bool(row[4])}
		if row[3] != nil {
			dept := store.UUIDText(row[3])
			m.Department = &dept
		}
		if row[5] != nil {
			t, err := store.Time(row[5])
			if err != nil {
				return err
			}
			m.MFAVerifiedAt = &t
		}
		if err := store.Times(row[6:], &m.CreatedAt, &m.UpdatedAt); err != nil {
			return err
		}
		out = append(out, m)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list members: %w", err)
	}
	return out, nil
}

// RoleEntry is a role as role list shows it: a built-in role of definitions/roles.yaml or a role of the
// workspace (role create).
type RoleEntry struct {
	Name        string            `json:"name"`
	Label       string            `json:"label"`
	Description string            `json:"description"`
	Builtin     bool              `json:"builtin"`
	Permissions []string          `json:"permissions"`
	Resources   map[string]string `json:"resources"` // resource → none, read or write
	// RecordRules and FieldRules are the role's record rules (resource → all, owned or department) and
	// field rules (resource → field → masked or hidden).
	RecordRules map[string]string            `json:"record_rules"`
	FieldRules  map[string]map[string]string `json:"field_rules"`
}

// ListRoles returns the roles a member of workspace may have: the built-in ones in the order of
// roles.yaml, then the workspace's by name.
func (d *Directory) ListRoles(ctx context.Context, workspace string) ([]RoleEntry, error) {
	workspace = strings.ToLower(workspace)
	if _, err := d.Workspace(ctx, workspace); err != nil {
		return nil, err
	}
	out := []RoleEntry{}
	for _, r := range d.catalog().Roles {
		out = append(out, RoleEntryOf(r, true))
	}
	err := d.st.Query(ctx, d.d.Bind("SELECT name, definition FROM workspace_roles WHERE workspace_id = ? ORDER BY name", workspace), func(row []any) error {
		r, err := decodeRole(store.Text(row[0]), row[1])
		if err != nil {
			return fmt.Errorf("role %s: %w", store.Text(row[0]), err)
		}
		out = append(out, RoleEntryOf(r, false))
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list roles: %w", err)
	}
	return out, nil
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func nonNilMap(m map[string]string) map[string]string {
	if m == nil {
		return map[string]string{}
	}
	return m
}

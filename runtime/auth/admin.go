package auth

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/workspace-records/records/engine/field"
	"github.com/workspace-records/records/runtime/notices"
	"github.com/workspace-records/records/runtime/store"
)

// SetRole changes a member's role (built-in or of the member's workspace).
func (d *Directory) SetRole(ctx context.Context, member, role string) error {
	defer d.forget()
	member = strings.ToLower(member)
	return d.st.Tx(ctx, func(q store.Querier) error {
		workspace, err := d.memberWorkspace(ctx, q, member)
		if err != nil {
			return fmt.Errorf("set role: %w", err)
		}
		if err := d.checkRole(ctx, q, workspace, role); err != nil {
			return fmt.Errorf("set role: %w", err)
		}
		if _, err := q.Exec(ctx, d.d.Bind("UPDATE members SET role = ?, updated_at = ? WHERE id = ?", role, d.ts(), member)); err != nil {
			return fmt.Errorf("set role: %w", err)
		}
		return nil
	})
}

// Deactivate makes a member inactive, revokes every key they own and ends their console sessions, for
// good: activating the member again brings neither back.
func (d *Directory) Deactivate(ctx context.Context, member string) error {
	return d.setActive(ctx, member, false)
}

// Activate makes a member active again. Their revoked keys stay revoked and their ended sessions ended;
// any session still open from before is ended now (endSessions): they sign in again.
func (d *Directory) Activate(ctx context.Context, member string) error {
	return d.setActive(ctx, member, true)
}

// setActive is Deactivate (active false) and Activate: both end the member's console sessions, and a
// deactivation revokes their keys, in the same transaction.
func (d *Directory) setActive(ctx context.Context, member string, active bool) error {
	defer d.forget()
	member = strings.ToLower(member)
	verb := map[bool]string{true: "activate", false: "deactivate"}[active]
	now := d.ts()
	return d.st.Tx(ctx, func(q store.Querier) error {
		workspace, err := d.memberWorkspace(ctx, q, member)
		if err != nil {
			return fmt.Errorf("%s member: %w", verb, err)
		}
		if _, err := q.Exec(ctx, d.d.Bind("UPDATE members SET active = ?, updated_at = ? WHERE id = ?", active, now, member)); err != nil {
			return fmt.Errorf("%s member: %w", verb, err)
		}
		if !active {
			if _, err := q.Exec(ctx, d.d.Bind("UPDATE api_keys SET revoked_at = ? WHERE member_id = ? AND revoked_at IS NULL", now, member)); err != nil {
				return fmt.Errorf("revoke keys of member: %w", err)
			}
		}
		return d.endSessions(ctx, q, workspace, member, now)
	})
}

// MFAVerified records that member verified a new MFA factor now. Keys created before it no longer
// carry enough sign-in assurance (401 key_assurance_stale).
func (d *Directory) MFAVerified(ctx context.Context, member string) error {
	return d.updateMember(ctx, member, "mfa_verified_at = ?", d.ts())
}

func (d *Directory) updateMember(ctx context.Context, member, set string, v any) error {
	defer d.forget()
	member = strings.ToLower(member)
	n, err := d.st.Exec(ctx, d.d.Bind("UPDATE members SET "+set+", updated_at = ? WHERE id = ?", v, d.ts(), member))
	if err != nil {
		return fmt.Errorf("update member: %w", err)
	}
	if n == 0 {
		return fmt.Errorf("member %s: %w", member, ErrNotFound)
	}
	return nil
}

// Limits overrides a workspace's plan limits; nil keeps the plan's number.
type Limits struct {
	KeyPerMinute       *int64 `json:"key_per_minute,omitempty"`
	KeyPerHour         *int64 `json:"key_per_hour,omitempty"`
	WorkspacePerMinute *int64 `json:"workspace_per_minute,omitempty"`
	MonthlyQuota       *int64 `json:"monthly_quota,omitempty"`
}

// SetLimits stores per-workspace overrides of the plan's limits (merged with earlier overrides).
func (d *Directory) SetLimits(ctx context.Context, workspace string, l Limits) error {
	defer d.forget()
	workspace = strings.ToLower(workspace)
	for _, v := range []*int64{l.KeyPerMinute, l.KeyPerHour, l.WorkspacePerMinute, l.MonthlyQuota} {
		if v != nil && *v < 0 {
			return fmt.Errorf("%w: limits must not be negative", ErrInvalid)
		}
	}
	return d.st.Tx(ctx, func(q store.Querier) error {
		var cur Limits
		found, err := store.QueryOne(ctx, q, d.d.Bind("SELECT limits FROM workspaces WHERE id = ?", workspace), func(row []any) error {
			switch x := row[0].(type) {
			case string:
				return json.Unmarshal([]byte(x), &cur)
			case map[string]any:
				data, _ := json.Marshal(x)
				return json.Unmarshal(data, &cur)
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("set limits: %w", err)
		}
		if !found {
			return fmt.Errorf("workspace %s: %w", workspace, ErrNotFound)
		}
		for _, p := range [][2]**int64{{&cur.KeyPerMinute, &l.KeyPerMinute}, {&cur.KeyPerHour, &l.KeyPerHour}, {&cur.WorkspacePerMinute, &l.WorkspacePerMinute}, {&cur.MonthlyQuota, &l.MonthlyQuota}} {
			if *p[1] != nil {
				*p[0] = *p[1]
			}
		}
		data, _ := json.Marshal(cur)
		if _, err := q.Exec(ctx, d.d.Bind("UPDATE workspaces SET limits = ?, updated_at = ? WHERE id = ?", string(data), d.ts(), workspace)); err != nil {
			return fmt.Errorf("set limits: %w", err)
		}
		return nil
	})
}

// InvalidError is a refused argument of an admin operation: ErrInvalid (errors.Is) with the problems
// by field (errors.As into a field.ErrorList gives them: the API answers them as 422
// validation_failed).
type InvalidError struct {
	Errors field.ErrorList
}

func (e *InvalidError) Error() string {
	texts := make([]string, len(e.Errors))
	for i, fe := range e.Errors {
		texts[i] = fe.Message
	}
	return ErrInvalid.Error() + ": " + strings.Join(texts, "; ")
}

// Unwrap gives ErrInvalid and the field errors.
func (e *InvalidError) Unwrap() []error { return []error{ErrInvalid, e.Errors} }

// invalid is an *InvalidError of one problem.
func invalid(code field.Code, path, message string) error {
	return &InvalidError{Errors: field.ErrorList{field.New(code, field.NewPath(path), message)}}
}

// ExistsError is a name the workspace already uses (a data model's, a role's): ErrInvalid, as the
// command line has always said; the API answers 409 conflict.
type ExistsError struct {
	Message string
}

func (e *ExistsError) Error() string { return ErrInvalid.Error() + ": " + e.Message }

// Unwrap gives ErrInvalid.
func (e *ExistsError) Unwrap() error { return ErrInvalid }

// Workspace returns the workspace id.
func (d *Directory) Workspace(ctx context.Context, id string) (*Workspace, error) {
	w := &Workspace{ID: strings.ToLower(id)}
	found, err := store.QueryOne(ctx, d.st, d.d.Bind("SELECT name, plan FROM workspaces WHERE id = ?", w.ID), func(row []any) error {
		w.Name, w.Plan = store.Text(row[0]), store.Text(row[1])
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("workspace: %w", err)
	}
	if !found {
		return nil, fmt.Errorf("workspace %s: %w", id, ErrNotFound)
	}
	return w, nil
}

// memberWorkspace returns the workspace of member (notices.MemberWorkspace, a missing member ErrNotFound).
func (d *Directory) memberWorkspace(ctx context.Context, q store.Querier, member string) (string, error) {
	ws, found, err := notices.MemberWorkspace(ctx, q, d.d, member)
	if err == nil && !found {
		err = fmt.Errorf("member %s: %w", member, ErrNotFound)
	}
	return ws, err
}

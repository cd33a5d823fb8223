// Package members keeps the workspaces and who belongs to them: a workspace's plan and the overrides of
// its limits, its members with their roles, and what each workspace role grants. recordsctl
// and the admin API write them here; runtime/auth reads them when it resolves a key or a console session
// to a principal.
//
// The package sits above auth and asks it for two things only (docs/architecture.md): Forget, once a
// change is committed, so that every server reads its principals again, and EndAccess, inside the
// change's transaction, when a member is deactivated (keys revoked, console sessions ended, for good)
// or activated again (no session from before comes back). Keys and sessions stay auth's; the rules of
// a role (built-in or stored) are resolved with auth.ResolveRole, as auth resolves them for a request.
package members

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/workspace-records/records/engine/field"
	"github.com/workspace-records/records/engine/model"
	"github.com/workspace-records/records/engine/sqlgen"
	"github.com/workspace-records/records/runtime/auth"
	"github.com/workspace-records/records/runtime/notices"
	"github.com/workspace-records/records/runtime/store"
)

// Service keeps the members, roles and limits of the workspaces in one database.
type Service struct {
	st  store.Store
	d   sqlgen.Dialect
	dir *auth.Directory
	cat func() *model.Catalog // the definitions version built-in roles and entity_members are read from
}

// New returns the Service over st. dir is told of every change (Forget, EndAccess); cat returns the
// definitions version to resolve built-in roles in: one version's, or the one served at each call.
func New(st store.Store, dir *auth.Directory, cat func() *model.Catalog) *Service {
	return &Service{st: st, d: st.Dialect(), dir: dir, cat: cat}
}

func (s *Service) ts() time.Time { return time.Now().UTC().Truncate(time.Microsecond) }

// SetRole changes a member's role (built-in or of the member's workspace).
func (s *Service) SetRole(ctx context.Context, member, role string) error {
	defer s.dir.Forget()
	member = strings.ToLower(member)
	return s.st.Tx(ctx, func(q store.Querier) error {
		workspace, err := s.memberWorkspace(ctx, q, member)
		if err != nil {
			return fmt.Errorf("set role: %w", err)
		}
		if err := s.checkRole(ctx, q, workspace, role); err != nil {
			return fmt.Errorf("set role: %w", err)
		}
		if _, err := q.Exec(ctx, s.d.Bind("UPDATE members SET role = ?, updated_at = ? WHERE id = ?", role, s.ts(), member)); err != nil {
			return fmt.Errorf("set role: %w", err)
		}
		return nil
	})
}

// Deactivate makes a member inactive, revokes every key they own and ends their console sessions, for
// good: activating the member again brings neither back.
func (s *Service) Deactivate(ctx context.Context, member string) error {
	return s.setActive(ctx, member, false)
}

// Activate makes a member active again. Their revoked keys stay revoked and their ended sessions ended;
// any session still open from before is ended now (auth.Directory.EndAccess): they sign in again.
func (s *Service) Activate(ctx context.Context, member string) error {
	return s.setActive(ctx, member, true)
}

// setActive is Deactivate (active false) and Activate: both end the member's console sessions, and a
// deactivation revokes their keys, in the same transaction.
func (s *Service) setActive(ctx context.Context, member string, active bool) error {
	defer s.dir.Forget()
	member = strings.ToLower(member)
	verb := map[bool]string{true: "activate", false: "deactivate"}[active]
	now := s.ts()
	return s.st.Tx(ctx, func(q store.Querier) error {
		workspace, err := s.memberWorkspace(ctx, q, member)
		if err != nil {
			return fmt.Errorf("%s member: %w", verb, err)
		}
		if _, err := q.Exec(ctx, s.d.Bind("UPDATE members SET active = ?, updated_at = ? WHERE id = ?", active, now, member)); err != nil {
			return fmt.Errorf("%s member: %w", verb, err)
		}
		return s.dir.EndAccess(ctx, q, workspace, member, now, !active)
	})
}

// MFAVerified records that member verified a new MFA factor now. Keys created before it no longer
// carry enough sign-in assurance (401 key_assurance_stale).
func (s *Service) MFAVerified(ctx context.Context, member string) error {
	return s.updateMember(ctx, member, "mfa_verified_at = ?", s.ts())
}

func (s *Service) updateMember(ctx context.Context, member, set string, v any) error {
	defer s.dir.Forget()
	member = strings.ToLower(member)
	n, err := s.st.Exec(ctx, s.d.Bind("UPDATE members SET "+set+", updated_at = ? WHERE id = ?", v, s.ts(), member))
	if err != nil {
		return fmt.Errorf("update member: %w", err)
	}
	if n == 0 {
		return fmt.Errorf("member %s: %w", member, auth.ErrNotFound)
	}
	return nil
}

// SetLimits stores per-workspace overrides of the plan's limits (merged with earlier overrides).
func (s *Service) SetLimits(ctx context.Context, workspace string, l auth.Limits) error {
	defer s.dir.Forget()
	workspace = strings.ToLower(workspace)
	for _, v := range []*int64{l.KeyPerMinute, l.KeyPerHour, l.WorkspacePerMinute, l.MonthlyQuota} {
		if v != nil && *v < 0 {
			return fmt.Errorf("%w: limits must not be negative", auth.ErrInvalid)
		}
	}
	return s.st.Tx(ctx, func(q store.Querier) error {
		var cur auth.Limits
		found, err := store.QueryOne(ctx, q, s.d.Bind("SELECT limits FROM workspaces WHERE id = ?", workspace), func(row []any) error {
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
			return fmt.Errorf("workspace %s: %w", workspace, auth.ErrNotFound)
		}
		for _, p := range [][2]**int64{{&cur.KeyPerMinute, &l.KeyPerMinute}, {&cur.KeyPerHour, &l.KeyPerHour}, {&cur.WorkspacePerMinute, &l.WorkspacePerMinute}, {&cur.MonthlyQuota, &l.MonthlyQuota}} {
			if *p[1] != nil {
				*p[0] = *p[1]
			}
		}
		data, _ := json.Marshal(cur)
		if _, err := q.Exec(ctx, s.d.Bind("UPDATE workspaces SET limits = ?, updated_at = ? WHERE id = ?", string(data), s.ts(), workspace)); err != nil {
			return fmt.Errorf("set limits: %w", err)
		}
		return nil
	})
}

// InvalidError is a refused argument of an admin operation: auth.ErrInvalid (errors.Is) with the problems
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
	return auth.ErrInvalid.Error() + ": " + strings.Join(texts, "; ")
}

// Unwrap gives auth.ErrInvalid and the field errors.
func (e *InvalidError) Unwrap() []error { return []error{auth.ErrInvalid, e.Errors} }

// invalid is an *InvalidError of one problem.
func invalid(code field.Code, path, message string) error {
	return &InvalidError{Errors: field.ErrorList{field.New(code, field.NewPath(path), message)}}
}

// ExistsError is a name the workspace already uses (a data model's, a role's): auth.ErrInvalid, as the
// command line has always said; the API answers 409 conflict.
type ExistsError struct {
	Message string
}

func (e *ExistsError) Error() string { return auth.ErrInvalid.Error() + ": " + e.Message }

// Unwrap gives auth.ErrInvalid.
func (e *ExistsError) Unwrap() error { return auth.ErrInvalid }

// memberWorkspace returns the workspace of member (notices.MemberWorkspace, a missing member auth.ErrNotFound).
func (s *Service) memberWorkspace(ctx context.Context, q store.Querier, member string) (string, error) {
	ws, found, err := notices.MemberWorkspace(ctx, q, s.d, member)
	if err == nil && !found {
		err = fmt.Errorf("member %s: %w", member, auth.ErrNotFound)
	}
	return ws, err
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
func (s *Service) ListMembers(ctx context.Context, workspace string) ([]MemberEntry, error) {
	workspace = strings.ToLower(workspace)
	if _, err := s.dir.Workspace(ctx, workspace); err != nil {
		return nil, err
	}
	out := []MemberEntry{}
	err := s.st.Query(ctx, s.d.Bind("SELECT "+memberColumns+" FROM members WHERE workspace_id = ? ORDER BY email, id", workspace), func(row []any) error {
		m, err := scanMember(workspace, row)
		if err != nil {
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

// memberColumns are the columns scanMember reads, in its order.
const memberColumns = "id, email, role, department_id, active, mfa_verified_at, created_at, updated_at"

// scanMember reads a member of workspace from a row of memberColumns.
func scanMember(workspace string, row []any) (MemberEntry, error) {
	m := MemberEntry{ID: store.UUIDText(row[0]), Workspace: workspace, Email: store.Text(row[1]), Role: store.Text(row[2]), Active: store.Bool(row[4])}
	if row[3] != nil {
		dept := store.UUIDText(row[3])
		m.Department = &dept
	}
	if row[5] != nil {
		t, err := store.Time(row[5])
		if err != nil {
			return MemberEntry{}, fmt.Errorf("member %s: %w", m.ID, err)
		}
		m.MFAVerifiedAt = &t
	}
	if err := store.Times(row[6:], &m.CreatedAt, &m.UpdatedAt); err != nil {
		return MemberEntry{}, fmt.Errorf("member %s: %w", m.ID, err)
	}
	return m, nil
}

// MemberProfile is what CreateMember records besides the role.
type MemberProfile struct {
	Email      string
	Role       string
	Department string // optional entity_departments id
	FirstName  string
	LastName   string
}

var emailRE = regexp.MustCompile(`^[^@\s]+@[^@\s]+\.[^@\s]+$`)

// CreateMember adds a member to workspace. The member also appears as an entity_members record with
// the same id, so that owner_id references resolve.
func (s *Service) CreateMember(ctx context.Context, workspace string, p MemberProfile) (*auth.Member, error) {
	p.Email = strings.ToLower(strings.TrimSpace(p.Email))
	if !emailRE.MatchString(p.Email) || len(p.Email) > 254 {
		return nil, fmt.Errorf("%w: invalid email %q", auth.ErrInvalid, p.Email)
	}
	if p.Department != "" && !model.IsUUID(p.Department) {
		return nil, fmt.Errorf("%w: department must be a UUID", auth.ErrInvalid)
	}
	workspace = strings.ToLower(workspace)
	m := &auth.Member{ID: store.NewID(), Email: p.Email, Role: p.Role, Active: true}
	ctx = store.WithWorkspace(ctx, workspace)
	now := s.ts()
	err := s.st.Tx(ctx, func(q store.Querier) error {
		found, err := store.QueryOne(ctx, q, s.d.Bind("SELECT 1 FROM workspaces WHERE id = ?", workspace), func([]any) error { return nil })
		if err != nil {
			return err
		}
		if !found {
			return fmt.Errorf("workspace %s: %w", workspace, auth.ErrNotFound)
		}
		if err := s.checkRole(ctx, q, workspace, p.Role); err != nil {
			return err
		}
		var dept any
		if p.Department != "" {
			dept = strings.ToLower(p.Department)
		}
		if _, err := q.Exec(ctx, s.d.Bind("INSERT INTO members (workspace_id, id, email, role, department_id, active, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
			workspace, m.ID, m.Email, m.Role, dept, true, now, now)); err != nil {
			if errors.Is(err, store.ErrConflict) {
				return fmt.Errorf("%w: %s is already a member of this workspace", auth.ErrInvalid, m.Email)
			}
			return err
		}
		if res, ok := s.cat().Resource("entity_members"); ok {
			values := map[string]any{"created_at": now, "updated_at": now, "custom_fields": "{}", "owner_id": m.ID}
			set := func(key string, v any) {
				if f, ok := res.Field(key); ok && !f.Managed && v != nil && v != "" {
					values[f.Column] = v
				}
			}
			set("email", m.Email)
			set("first_name", p.FirstName)
			set("last_name", p.LastName)
			set("status", "active")
			set("role", p.Role)
			set("department_id", dept)
			if _, err := q.Exec(ctx, s.d.Insert(res, sqlgen.Key{Workspace: workspace, ID: m.ID}, values)); err != nil {
				return fmt.Errorf("entity_members record: %w", err)
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("create member: %w", err)
	}
	return m, nil
}

// The writes of the admin API (docs/issue-24.md) on members and roles. Each takes the workspace it acts
// in, so that an id of another workspace is auth.ErrNotFound, and a callback run inside the transaction
// of the change, once written, where the admin API writes its audit entry (an error rolls the change
// back). Like the operator's writes they end with auth.Directory.Forget, so every server sees the change
// on its next request.

// ErrLastManager refuses a change that would leave a workspace without an active member whose role holds
// api.manage (the admin API answers 409 conflict).
var ErrLastManager = errors.New("the change would leave the workspace without an active member holding api.manage")

// Member returns member id of workspace (auth.ErrNotFound when the workspace has none of that id).
func (s *Service) Member(ctx context.Context, workspace, id string) (MemberEntry, error) {
	return s.member(ctx, s.st, strings.ToLower(workspace), strings.ToLower(id))
}

func (s *Service) member(ctx context.Context, q store.Querier, workspace, id string) (MemberEntry, error) {
	if !model.IsUUID(id) {
		return MemberEntry{}, fmt.Errorf("member %s: %w", id, auth.ErrNotFound)
	}
	var m MemberEntry
	found, err := store.QueryOne(ctx, q, s.d.Bind("SELECT "+memberColumns+" FROM members WHERE workspace_id = ? AND id = ?", workspace, id), func(row []any) error {
		var err error
		m, err = scanMember(workspace, row)
		return err
	})
	if err != nil {
		return MemberEntry{}, fmt.Errorf("read member: %w", err)
	}
	if !found {
		return MemberEntry{}, fmt.Errorf("member %s: %w", id, auth.ErrNotFound)
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
func (s *Service) ChangeMember(ctx context.Context, workspace, id string, c MemberChange, allow func(*model.Role) error, then func(q store.Querier, before, after MemberEntry) error) (MemberEntry, error) {
	defer s.dir.Forget()
	workspace, id = strings.ToLower(workspace), strings.ToLower(id)
	var after MemberEntry
	err := s.st.Tx(ctx, func(q store.Querier) error {
		// Every change of a workspace's managers takes the workspace's row first, so that two admins
		// demoting each other at once cannot both pass the last-manager check.
		if err := s.lockWorkspace(ctx, q, workspace); err != nil {
			return err
		}
		before, err := s.member(ctx, q, workspace, id)
		if err != nil {
			return err
		}
		beforeRole, err := s.roleIn(ctx, q, workspace, before.Role)
		if err != nil {
			return err
		}
		after = before
		afterRole := beforeRole
		if c.Role != nil {
			if err := s.checkRole(ctx, q, workspace, *c.Role); err != nil {
				var list field.ErrorList
				if !errors.As(err, &list) {
					err = invalid(field.CodeOption, "role", strings.TrimPrefix(err.Error(), auth.ErrInvalid.Error()+": "))
				}
				return err
			}
			if afterRole, err = s.roleIn(ctx, q, workspace, *c.Role); err != nil {
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
		after.UpdatedAt = s.ts()
		if _, err := q.Exec(ctx, s.d.Bind("UPDATE members SET role = ?, active = ?, updated_at = ? WHERE workspace_id = ? AND id = ?", after.Role, after.Active, after.UpdatedAt, workspace, id)); err != nil {
			return fmt.Errorf("change member: %w", err)
		}
		if before.Active != after.Active {
			// Deactivated: keys revoked and signed out everywhere, for good. Activated: no session from
			// before comes back.
			if err := s.dir.EndAccess(ctx, q, workspace, id, after.UpdatedAt, !after.Active); err != nil {
				return err
			}
		}
		manages := func(active bool, r *model.Role) bool {
			return active && r != nil && auth.HasPermission(r, auth.PermManage)
		}
		if manages(before.Active, beforeRole) && !manages(after.Active, afterRole) {
			if err := s.keepManager(ctx, q, workspace); err != nil {
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

// lockWorkspace takes workspace's row for the rest of q's transaction (auth.ErrNotFound when there is none).
func (s *Service) lockWorkspace(ctx context.Context, q store.Querier, workspace string) error {
	n, err := q.Exec(ctx, s.d.Bind("UPDATE workspaces SET updated_at = updated_at WHERE id = ?", workspace))
	if err != nil {
		return fmt.Errorf("lock workspace: %w", err)
	}
	if n == 0 {
		return fmt.Errorf("workspace %s: %w", workspace, auth.ErrNotFound)
	}
	return nil
}

package members

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/google/uuid"

	"github.com/workspace-records/records/engine/field"
	"github.com/workspace-records/records/engine/model"
	"github.com/workspace-records/records/engine/spec"
	"github.com/workspace-records/records/engine/suggest"
	"github.com/workspace-records/records/runtime/auth"
	"github.com/workspace-records/records/runtime/store"
)

// The workspace roles: created and replaced from a roles file (recordsctl) or one role at a time (the
// admin API), listed beside the built-in roles of the definitions version.

// PutRoles creates (create true) or replaces (create false) workspace roles from a file in the format of
// roles.yaml. Names of the built-in roles cannot be taken. It returns the role names, in file order.
func (s *Service) PutRoles(ctx context.Context, workspace, file string, data []byte, create bool) ([]string, error) {
	defer s.dir.Forget()
	workspace = strings.ToLower(workspace)
	parsed, errs := spec.ParseRoles(file, data)
	if len(errs) > 0 {
		// file:line:column: path: message, one a line, as recordsctl definitions lint prints them.
		return nil, fmt.Errorf("%w:\n%s", auth.ErrInvalid, strings.Join(errs.Located(""), "\n"))
	}
	roles, errs := s.cat().CompileRoles(file, parsed)
	if len(errs) > 0 {
		return nil, fmt.Errorf("%w:\n%v", auth.ErrInvalid, errs)
	}
	if _, err := s.dir.Workspace(ctx, workspace); err != nil {
		return nil, err
	}
	names := make([]string, 0, len(roles))
	err := s.st.Tx(ctx, func(q store.Querier) error {
		for _, r := range roles {
			if _, err := s.storeRole(ctx, q, workspace, r, create); err != nil {
				return err
			}
			names = append(names, r.Name)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return names, nil
}

// storeRole creates (create true) or replaces role r of workspace in q's transaction, and returns the
// role it replaced (nil on create).
func (s *Service) storeRole(ctx context.Context, q store.Querier, workspace string, r *model.Role, create bool) (*model.Role, error) {
	if _, builtin := s.cat().Role(r.Name); builtin {
		return nil, &InvalidError{Errors: field.ErrorList{field.New(field.CodeInvalid, field.NewPath("name"), r.Name+" is a built-in role (definitions/roles.yaml)")}}
	}
	def, _ := json.Marshal(r)
	now := s.ts()
	if create {
		_, err := q.Exec(ctx, s.d.Bind("INSERT INTO workspace_roles (workspace_id, name, definition, created_at, updated_at) VALUES (?, ?, ?, ?, ?)", workspace, r.Name, string(def), now, now))
		if errors.Is(err, store.ErrConflict) {
			return nil, &ExistsError{Message: fmt.Sprintf("role %s exists; use role update", r.Name)}
		}
		if err != nil {
			return nil, fmt.Errorf("store role %s: %w", r.Name, err)
		}
		return nil, nil
	}
	var prev *model.Role
	found, err := store.QueryOne(ctx, q, s.d.Bind("SELECT definition FROM workspace_roles WHERE workspace_id = ? AND name = ?", workspace, r.Name), func(row []any) error {
		var err error
		prev, err = auth.DecodeRole(r.Name, row[0])
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("read role %s: %w", r.Name, err)
	}
	if !found {
		return nil, fmt.Errorf("role %s: %w (use role create)", r.Name, auth.ErrNotFound)
	}
	if _, err := q.Exec(ctx, s.d.Bind("UPDATE workspace_roles SET definition = ?, updated_at = ? WHERE workspace_id = ? AND name = ?", string(def), now, workspace, r.Name)); err != nil {
		return nil, fmt.Errorf("store role %s: %w", r.Name, err)
	}
	return prev, nil
}

// checkRole checks that name is a built-in role or a role of workspace; when it is neither, the error
// lists the roles there are.
func (s *Service) checkRole(ctx context.Context, q store.Querier, workspace, name string) error {
	if _, ok := s.cat().Role(name); ok {
		return nil
	}
	names := s.cat().RoleNames()
	err := q.Query(ctx, s.d.Bind("SELECT name FROM workspace_roles WHERE workspace_id = ?", workspace), func(row []any) error {
		names = append(names, store.Text(row[0]))
		return nil
	})
	if err != nil {
		return fmt.Errorf("read roles: %w", err)
	}
	for _, n := range names {
		if n == name {
			return nil
		}
	}
	return fmt.Errorf("%w: %s", auth.ErrInvalid, suggest.Unknown("role", name, names))
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
func (s *Service) ListRoles(ctx context.Context, workspace string) ([]RoleEntry, error) {
	workspace = strings.ToLower(workspace)
	if _, err := s.dir.Workspace(ctx, workspace); err != nil {
		return nil, err
	}
	out := []RoleEntry{}
	for _, r := range s.cat().Roles {
		out = append(out, RoleEntryOf(r, true))
	}
	err := s.st.Query(ctx, s.d.Bind("SELECT name, definition FROM workspace_roles WHERE workspace_id = ? ORDER BY name", workspace), func(row []any) error {
		r, err := auth.DecodeRole(store.Text(row[0]), row[1])
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

// RoleID is the id of role name of workspace in the audit trail: a UUID derived from both.
func RoleID(workspace, name string) string {
	ns, err := uuid.Parse(workspace)
	if err != nil {
		ns = uuid.Nil
	}
	return uuid.NewSHA1(ns, []byte("role:"+name)).String()
}

// keepManager is ErrLastManager when no active member of workspace holds api.manage any more (read in
// q's transaction, after the change).
func (s *Service) keepManager(ctx context.Context, q store.Querier, workspace string) error {
	managers := 0
	err := q.Query(ctx, s.d.Bind(`SELECT m.role, wr.definition FROM members m
LEFT JOIN workspace_roles wr ON wr.workspace_id = m.workspace_id AND wr.name = m.role
WHERE m.workspace_id = ? AND m.active = ?`, workspace, true), func(row []any) error {
		r, err := auth.ResolveRole(s.cat(), store.Text(row[0]), row[1])
		if err != nil {
			return err
		}
		if r != nil && auth.HasPermission(r, auth.PermManage) {
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
func (s *Service) roleIn(ctx context.Context, q store.Querier, workspace, name string) (*model.Role, error) {
	if r, ok := s.cat().Role(name); ok {
		return r, nil
	}
	var def any
	if _, err := store.QueryOne(ctx, q, s.d.Bind("SELECT definition FROM workspace_roles WHERE workspace_id = ? AND name = ?", workspace, name), func(row []any) error {
		def = row[0]
		return nil
	}); err != nil {
		return nil, fmt.Errorf("read role %s: %w", name, err)
	}
	return auth.ResolveRole(s.cat(), name, def)
}

// Role returns role name of workspace: a built-in role or one of the workspace's (auth.ErrNotFound otherwise).
func (s *Service) Role(ctx context.Context, workspace, name string) (RoleEntry, error) {
	workspace = strings.ToLower(workspace)
	if _, err := s.dir.Workspace(ctx, workspace); err != nil {
		return RoleEntry{}, err
	}
	r, err := s.roleIn(ctx, s.st, workspace, name)
	if err != nil {
		return RoleEntry{}, err
	}
	if r == nil {
		return RoleEntry{}, fmt.Errorf("role %s: %w", name, auth.ErrNotFound)
	}
	_, builtin := s.cat().Role(name)
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
func (s *Service) CompileRole(name string, definition []byte) (*model.Role, error) {
	const file = "role"
	doc := []byte(`{"version": 1, "roles": {` + quoteJSON(name) + `: ` + string(definition) + `}}`)
	parsed, errs := spec.ParseRoles(file, doc)
	if len(errs) == 0 {
		var roles []*model.Role
		roles, errs = s.cat().CompileRoles(file, parsed)
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
func (s *Service) PutRole(ctx context.Context, workspace string, r *model.Role, create bool, allow func(*model.Role) error, then func(q store.Querier, before *model.Role) error) error {
	defer s.dir.Forget()
	workspace = strings.ToLower(workspace)
	if allow != nil {
		if err := allow(r); err != nil {
			return err
		}
	}
	return s.st.Tx(ctx, func(q store.Querier) error {
		if err := s.lockWorkspace(ctx, q, workspace); err != nil {
			return err
		}
		before, err := s.storeRole(ctx, q, workspace, r, create)
		if err != nil {
			return err
		}
		if before != nil && auth.HasPermission(before, auth.PermManage) && !auth.HasPermission(r, auth.PermManage) {
			if err := s.keepManager(ctx, q, workspace); err != nil {
				return err
			}
		}
		if then != nil {
			return then(q, before)
		}
		return nil
	})
}

package auth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/workspace-records/records/engine/field"
	"github.com/workspace-records/records/engine/model"
	"github.com/workspace-records/records/engine/spec"
	"github.com/workspace-records/records/engine/suggest"
	"github.com/workspace-records/records/runtime/store"
)

// PutRoles creates (create true) or replaces (create false) workspace roles from a file in the format of
// roles.yaml. Names of the built-in roles cannot be taken. It returns the role names, in file order.
func (d *Directory) PutRoles(ctx context.Context, workspace, file string, data []byte, create bool) ([]string, error) {
	defer d.forget()
	workspace = strings.ToLower(workspace)
	parsed, errs := spec.ParseRoles(file, data)
	if len(errs) > 0 {
		// file:line:column: path: message, one a line, as recordsctl definitions lint prints them.
		return nil, fmt.Errorf("%w:\n%s", ErrInvalid, strings.Join(errs.Located(""), "\n"))
	}
	roles, errs := d.catalog().CompileRoles(file, parsed)
	if len(errs) > 0 {
		return nil, fmt.Errorf("%w:\n%v", ErrInvalid, errs)
	}
	if _, err := d.Workspace(ctx, workspace); err != nil {
		return nil, err
	}
	names := make([]string, 0, len(roles))
	err := d.st.Tx(ctx, func(q store.Querier) error {
		for _, r := range roles {
			if _, err := d.storeRole(ctx, q, workspace, r, create); err != nil {
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
func (d *Directory) storeRole(ctx context.Context, q store.Querier, workspace string, r *model.Role, create bool) (*model.Role, error) {
	if _, builtin := d.catalog().Role(r.Name); builtin {
		return nil, &InvalidError{Errors: field.ErrorList{field.New(field.CodeInvalid, field.NewPath("name"), r.Name+" is a built-in role (definitions/roles.yaml)")}}
	}
	def, _ := json.Marshal(r)
	now := d.ts()
	if create {
		_, err := q.Exec(ctx, d.d.Bind("INSERT INTO workspace_roles (workspace_id, name, definition, created_at, updated_at) VALUES (?, ?, ?, ?, ?)", workspace, r.Name, string(def), now, now))
		if errors.Is(err, store.ErrConflict) {
			return nil, &ExistsError{Message: fmt.Sprintf("role %s exists; use role update", r.Name)}
		}
		if err != nil {
			return nil, fmt.Errorf("store role %s: %w", r.Name, err)
		}
		return nil, nil
	}
	var prev *model.Role
	found, err := store.QueryOne(ctx, q, d.d.Bind("SELECT definition FROM workspace_roles WHERE workspace_id = ? AND name = ?", workspace, r.Name), func(row []any) error {
		var err error
		prev, err = decodeRole(r.Name, row[0])
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("read role %s: %w", r.Name, err)
	}
	if !found {
		return nil, fmt.Errorf("role %s: %w (use role create)", r.Name, ErrNotFound)
	}
	if _, err := q.Exec(ctx, d.d.Bind("UPDATE workspace_roles SET definition = ?, updated_at = ? WHERE workspace_id = ? AND name = ?", string(def), now, workspace, r.Name)); err != nil {
		return nil, fmt.Errorf("store role %s: %w", r.Name, err)
	}
	return prev, nil
}

// checkRole checks that name is a built-in role or a role of workspace; when it is neither, the error
// lists the roles there are.
func (d *Directory) checkRole(ctx context.Context, q store.Querier, workspace, name string) error {
	if _, ok := d.catalog().Role(name); ok {
		return nil
	}
	names := d.catalog().RoleNames()
	err := q.Query(ctx, d.d.Bind("SELECT name FROM workspace_roles WHERE workspace_id = ?", workspace), func(row []any) error {
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
	return fmt.Errorf("%w: %s", ErrInvalid, suggest.Unknown("role", name, names))
}

// resolveRole returns cat's built-in role name or, failing that, the workspace role stored as def (nil
// when the workspace has no such role either).
func resolveRole(cat *model.Catalog, name string, def any) (*model.Role, error) {
	if r, ok := cat.Role(name); ok {
		return r, nil
	}
	if def == nil {
		return nil, nil
	}
	r, err := decodeRole(name, def)
	if err != nil {
		return nil, fmt.Errorf("role %s: %w", name, err)
	}
	return r, nil
}

func decodeRole(name string, def any) (*model.Role, error) {
	var r model.Role
	var data []byte
	switch x := def.(type) {
	case string:
		data = []byte(x)
	case []byte:
		data = x
	case map[string]any:
		data, _ = json.Marshal(x)
	default:
		return nil, fmt.Errorf("unexpected role definition %T", def)
	}
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, err
	}
	r.Name = name
	return &r, nil
}

package auth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/workspace-records/records/engine/field"
	"github.com/workspace-records/records/engine/model"
	"github.com/workspace-records/records/engine/suggest"
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

// ModelField is one field of a custom data model.
type ModelField struct {
	Type     string   `json:"type"`
	Label    string   `json:"label,omitempty"`
	Required bool     `json:"required,omitempty"`
	Options  []string `json:"options,omitempty"`
	Target   string   `json:"target,omitempty"`
}

// checkModelFields validates a data model's field definitions: an *InvalidError naming each field as
// fields.<key>.
func (d *Directory) checkModelFields(fields map[string]ModelField) error {
	keys := make([]string, 0, len(fields))
	for k := range fields {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var errs field.ErrorList
	for _, k := range keys {
		f := fields[k]
		t, ok := model.ParseType(f.Type)
		p := field.NewPath("fields").Child(k)
		switch {
		case !keyRE2.MatchString(k) || model.IsManaged(k):
			errs = append(errs, field.New(field.CodeFormat, p, fmt.Sprintf("field %q: keys are lowercase snake_case and not engine-managed names", k)))
		case !ok:
			errs = append(errs, field.New(field.CodeOption, p.Child("type"), fmt.Sprintf("field %q: %s", k, suggest.Unknown("type", f.Type, model.TypeNames()))))
		case t == model.Reference:
			if _, ok := d.catalog().Resource(f.Target); !ok {
				errs = append(errs, field.New(field.CodeOption, p.Child("target"), fmt.Sprintf("field %q: target: %s", k, suggest.Unknown("resource", f.Target, d.catalog().ResourceNames(false)))))
			}
		}
	}
	if len(errs) > 0 {
		return &InvalidError{Errors: errs}
	}
	return nil
}

// CheckModelFields returns the problems of a data model's fields, by field (nil: none), without storing
// anything.
func (d *Directory) CheckModelFields(fields map[string]ModelField) field.ErrorList {
	if e, ok := d.checkModelFields(fields).(*InvalidError); ok {
		return e.Errors
	}
	return nil
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

// CreateModel creates a custom data model with fields keyed by field key.
func (d *Directory) CreateModel(ctx context.Context, workspace, name string, fields map[string]ModelField) (string, error) {
	m, err := d.CreateModelThen(ctx, workspace, name, fields, nil)
	if err != nil {
		return "", err
	}
	return m.ID, nil
}

// CreateModelThen is CreateModel with then, when set, run inside the transaction that stores the model
// (the admin API writes its audit entry there).
func (d *Directory) CreateModelThen(ctx context.Context, workspace, name string, fields map[string]ModelField, then func(q store.Querier, m ModelEntry) error) (ModelEntry, error) {
	workspace = strings.ToLower(workspace)
	name = strings.TrimSpace(name)
	if name == "" || len(name) > 200 {
		return ModelEntry{}, invalid(field.CodeInvalid, "name", "model name must be 1 to 200 characters")
	}
	if err := d.checkModelFields(fields); err != nil {
		return ModelEntry{}, err
	}
	if fields == nil {
		fields = map[string]ModelField{}
	}
	data, _ := json.Marshal(fields)
	now := d.ts()
	m := ModelEntry{ID: store.NewID(), Workspace: workspace, Name: name, Fields: fields, CreatedAt: now, UpdatedAt: now}
	err := d.st.Tx(ctx, func(q store.Querier) error {
		found, err := store.QueryOne(ctx, q, d.d.Bind("SELECT 1 FROM workspaces WHERE id = ?", workspace), func([]any) error { return nil })
		if err != nil {
			return fmt.Errorf("create model: %w", err)
		}
		if !found {
			return fmt.Errorf("workspace %s: %w", workspace, ErrNotFound)
		}
		if _, err := q.Exec(ctx, d.d.Bind("INSERT INTO data_models (workspace_id, id, name, fields, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?)", workspace, m.ID, name, string(data), now, now)); err != nil {
			if errors.Is(err, store.ErrConflict) {
				return &ExistsError{Message: fmt.Sprintf("a model named %q exists", name)}
			}
			return fmt.Errorf("create model: %w", err)
		}
		if then != nil {
			return then(q, m)
		}
		return nil
	})
	if err != nil {
		return ModelEntry{}, err
	}
	return m, nil
}

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

// memberWorkspace returns the workspace of member.
func (d *Directory) memberWorkspace(ctx context.Context, q store.Querier, member string) (string, error) {
	var workspace string
	found, err := store.QueryOne(ctx, q, d.d.Bind("SELECT workspace_id FROM members WHERE id = ?", member), func(row []any) error {
		workspace = store.UUIDText(row[0])
		return nil
	})
	if err != nil {
		return "", err
	}
	if !found {
		return "", fmt.Errorf("member %s: %w", member, ErrNotFound)
	}
	return workspace, nil
}

// UpdateModel renames a data model (name "" keeps it) and replaces its fields (nil keeps them). Values of
// removed fields stay stored and reappear if a field of the same key returns.
func (d *Directory) UpdateModel(ctx context.Context, id, name string, fields map[string]ModelField) error {
	_, err := d.UpdateModelIn(ctx, "", id, name, fields, nil)
	return err
}

// UpdateModelIn is UpdateModel for a model of workspace ("" for the operator: whichever workspace holds
// it; a model of another workspace is ErrNotFound), with then, when set, run inside the transaction with
// the model before and after the change (the admin API writes its audit entry there).
func (d *Directory) UpdateModelIn(ctx context.Context, workspace, id, name string, fields map[string]ModelField, then func(q store.Querier, before, after ModelEntry) error) (ModelEntry, error) {
	id, workspace = strings.ToLower(id), strings.ToLower(workspace)
	now := d.ts()
	sets, args := []string{"updated_at = ?"}, []any{now}
	if name = strings.TrimSpace(name); name != "" {
		if len(name) > 200 {
			return ModelEntry{}, invalid(field.CodeTooLong, "name", "model name must be at most 200 characters")
		}
		sets, args = append(sets, "name = ?"), append(args, name)
	}
	if fields != nil {
		if err := d.checkModelFields(fields); err != nil {
			return ModelEntry{}, err
		}
		data, _ := json.Marshal(fields)
		sets, args = append(sets, "fields = ?"), append(args, string(data))
	}
	var after ModelEntry
	err := d.st.Tx(ctx, func(q store.Querier) error {
		before, err := d.model(ctx, q, workspace, id)
		if err != nil {
			return err
		}
		_, err = q.Exec(ctx, d.d.Bind("UPDATE data_models SET "+strings.Join(sets, ", ")+" WHERE workspace_id = ? AND id = ?", append(args, before.Workspace, id)...))
		if errors.Is(err, store.ErrConflict) {
			return &ExistsError{Message: fmt.Sprintf("a model named %q exists", name)}
		}
		if err != nil {
			return fmt.Errorf("update model: %w", err)
		}
		after = before
		after.UpdatedAt = now
		if name != "" {
			after.Name = name
		}
		if fields != nil {
			after.Fields = fields
		}
		if then != nil {
			return then(q, before, after)
		}
		return nil
	})
	return after, err
}

// Model returns data model id of workspace (ErrNotFound when the workspace has none of that id).
func (d *Directory) Model(ctx context.Context, workspace, id string) (ModelEntry, error) {
	return d.model(ctx, d.st, strings.ToLower(workspace), strings.ToLower(id))
}

// model reads data model id of workspace ("": of any workspace).
func (d *Directory) model(ctx context.Context, q store.Querier, workspace, id string) (ModelEntry, error) {
	if !model.IsUUID(id) {
		return ModelEntry{}, fmt.Errorf("model %s: %w", id, ErrNotFound)
	}
	sql, args := "SELECT id, workspace_id, name, fields, created_at, updated_at FROM data_models WHERE id = ?", []any{id}
	if workspace != "" {
		sql, args = sql+" AND workspace_id = ?", append(args, workspace)
	}
	var m ModelEntry
	found, err := store.QueryOne(ctx, q, d.d.Bind(sql, args...), scanModel(&m))
	if err != nil {
		return ModelEntry{}, fmt.Errorf("read model: %w", err)
	}
	if !found {
		return ModelEntry{}, fmt.Errorf("model %s: %w", id, ErrNotFound)
	}
	return m, nil
}

package customfields

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/workspace-records/records/engine/field"
	"github.com/workspace-records/records/engine/model"
	"github.com/workspace-records/records/engine/suggest"
	"github.com/workspace-records/records/runtime/store"
)

// The writes of data models, and their list (the reads that build records' fields are in models.go).

// Errors of the data model operations. ErrInvalidModel keeps the words the command line has always
// printed for a refused model.
var (
	ErrInvalidModel = errors.New("invalid argument")
	// ErrModelWorkspaceNotFound is a data model operation on a workspace that does not exist.
	ErrModelWorkspaceNotFound = errors.New("not found")
)

// invalidModel is an *InvalidError of a data model with one problem.
func invalidModel(code field.Code, path, message string) error {
	return &InvalidError{Errors: field.ErrorList{field.New(code, field.NewPath(path), message)}, kind: ErrInvalidModel}
}

// ExistsError is a data model name the workspace already uses: ErrInvalidModel, as the command line has
// always said; the API answers 409 conflict.
type ExistsError struct {
	Message string
}

func (e *ExistsError) Error() string { return ErrInvalidModel.Error() + ": " + e.Message }

// Unwrap gives ErrInvalidModel.
func (e *ExistsError) Unwrap() error { return ErrInvalidModel }

func (r *Registry) ts() time.Time { return r.now().UTC().Truncate(time.Microsecond) }

// forgetModel drops the cached fields of data model id of workspace (ForModel reads them again).
func (r *Registry) forgetModel(workspace, id string) {
	r.mu.Lock()
	delete(r.models, strings.ToLower(workspace)+"/"+strings.ToLower(id))
	r.mu.Unlock()
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
func (r *Registry) checkModelFields(fields map[string]ModelField) error {
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
		case !keyRE.MatchString(k) || model.IsManaged(k):
			errs = append(errs, field.New(field.CodeFormat, p, fmt.Sprintf("field %q: keys are lowercase snake_case and not engine-managed names", k)))
		case !ok:
			errs = append(errs, field.New(field.CodeOption, p.Child("type"), fmt.Sprintf("field %q: %s", k, suggest.Unknown("type", f.Type, model.TypeNames()))))
		case t == model.Reference:
			if _, ok := r.cat.Resource(f.Target); !ok {
				errs = append(errs, field.New(field.CodeOption, p.Child("target"), fmt.Sprintf("field %q: target: %s", k, suggest.Unknown("resource", f.Target, r.cat.ResourceNames(false)))))
			}
		}
	}
	if len(errs) > 0 {
		return &InvalidError{Errors: errs, kind: ErrInvalidModel}
	}
	return nil
}

// CheckModelFields returns the problems of a data model's fields, by field (nil: none), without storing
// anything.
func (r *Registry) CheckModelFields(fields map[string]ModelField) field.ErrorList {
	if e, ok := r.checkModelFields(fields).(*InvalidError); ok {
		return e.Errors
	}
	return nil
}

// CreateModel creates a custom data model with fields keyed by field key.
func (r *Registry) CreateModel(ctx context.Context, workspace, name string, fields map[string]ModelField) (string, error) {
	m, err := r.CreateModelThen(ctx, workspace, name, fields, nil)
	if err != nil {
		return "", err
	}
	return m.ID, nil
}

// CreateModelThen is CreateModel with then, when set, run inside the transaction that stores the model
// (the admin API writes its audit entry there).
func (r *Registry) CreateModelThen(ctx context.Context, workspace, name string, fields map[string]ModelField, then func(q store.Querier, m ModelEntry) error) (ModelEntry, error) {
	workspace = strings.ToLower(workspace)
	name = strings.TrimSpace(name)
	if name == "" || len(name) > 200 {
		return ModelEntry{}, invalidModel(field.CodeInvalid, "name", "model name must be 1 to 200 characters")
	}
	if err := r.checkModelFields(fields); err != nil {
		return ModelEntry{}, err
	}
	if fields == nil {
		fields = map[string]ModelField{}
	}
	data, _ := json.Marshal(fields)
	now := r.ts()
	m := ModelEntry{ID: store.NewID(), Workspace: workspace, Name: name, Fields: fields, CreatedAt: now, UpdatedAt: now}
	err := r.st.Tx(ctx, func(q store.Querier) error {
		found, err := store.QueryOne(ctx, q, r.st.Dialect().Bind("SELECT 1 FROM workspaces WHERE id = ?", workspace), func([]any) error { return nil })
		if err != nil {
			return fmt.Errorf("create model: %w", err)
		}
		if !found {
			return fmt.Errorf("workspace %s: %w", workspace, ErrModelWorkspaceNotFound)
		}
		if _, err := q.Exec(ctx, r.st.Dialect().Bind("INSERT INTO data_models (workspace_id, id, name, fields, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?)", workspace, m.ID, name, string(data), now, now)); err != nil {
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

// UpdateModel renames a data model (name "" keeps it) and replaces its fields (nil keeps them). Values of
// removed fields stay stored and reappear if a field of the same key returns.
func (r *Registry) UpdateModel(ctx context.Context, id, name string, fields map[string]ModelField) error {
	_, err := r.UpdateModelIn(ctx, "", id, name, fields, nil)
	return err
}

// UpdateModelIn is UpdateModel for a model of workspace ("" for the operator: whichever workspace holds
// it; a model of another workspace is ErrNotFound), with then, when set, run inside the transaction with
// the model before and after the change (the admin API writes its audit entry there).
func (r *Registry) UpdateModelIn(ctx context.Context, workspace, id, name string, fields map[string]ModelField, then func(q store.Querier, before, after ModelEntry) error) (ModelEntry, error) {
	id, workspace = strings.ToLower(id), strings.ToLower(workspace)
	now := r.ts()
	sets, args := []string{"updated_at = ?"}, []any{now}
	if name = strings.TrimSpace(name); name != "" {
		if len(name) > 200 {
			return ModelEntry{}, invalidModel(field.CodeTooLong, "name", "model name must be at most 200 characters")
		}
		sets, args = append(sets, "name = ?"), append(args, name)
	}
	if fields != nil {
		if err := r.checkModelFields(fields); err != nil {
			return ModelEntry{}, err
		}
		data, _ := json.Marshal(fields)
		sets, args = append(sets, "fields = ?"), append(args, string(data))
	}
	var after ModelEntry
	err := r.st.Tx(ctx, func(q store.Querier) error {
		before, err := r.model(ctx, q, workspace, id)
		if err != nil {
			return err
		}
		_, err = q.Exec(ctx, r.st.Dialect().Bind("UPDATE data_models SET "+strings.Join(sets, ", ")+" WHERE workspace_id = ? AND id = ?", append(args, before.Workspace, id)...))
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
	if err == nil {
		r.forgetModel(after.Workspace, after.ID) // this registry reads the new fields at once; others after MaxAge
	}
	return after, err
}

// Model returns data model id of workspace (ErrModelNotFound when the workspace has none of that id).
func (r *Registry) Model(ctx context.Context, workspace, id string) (ModelEntry, error) {
	return r.model(ctx, r.st, strings.ToLower(workspace), strings.ToLower(id))
}

// model reads data model id of workspace ("": of any workspace).
func (r *Registry) model(ctx context.Context, q store.Querier, workspace, id string) (ModelEntry, error) {
	if !model.IsUUID(id) {
		return ModelEntry{}, fmt.Errorf("model %s: %w", id, ErrModelNotFound)
	}
	sql, args := "SELECT id, workspace_id, name, fields, created_at, updated_at FROM data_models WHERE id = ?", []any{id}
	if workspace != "" {
		sql, args = sql+" AND workspace_id = ?", append(args, workspace)
	}
	var m ModelEntry
	found, err := store.QueryOne(ctx, q, r.st.Dialect().Bind(sql, args...), scanModel(&m))
	if err != nil {
		return ModelEntry{}, fmt.Errorf("read model: %w", err)
	}
	if !found {
		return ModelEntry{}, fmt.Errorf("model %s: %w", id, ErrModelNotFound)
	}
	return m, nil
}

// ModelEntry is a custom data model as model list shows it.
type ModelEntry struct {
	ID        string                `json:"id"`
	Workspace string                `json:"workspace_id"`
	Name      string                `json:"name"`
	Fields    map[string]ModelField `json:"fields"` // by field key
	CreatedAt time.Time             `json:"created_at"`
	UpdatedAt time.Time             `json:"updated_at"`
}

// ListModels returns the data models of workspace, by name.
func (r *Registry) ListModels(ctx context.Context, workspace string) ([]ModelEntry, error) {
	workspace = strings.ToLower(workspace)
	found, err := store.QueryOne(ctx, r.st, r.st.Dialect().Bind("SELECT 1 FROM workspaces WHERE id = ?", workspace), func([]any) error { return nil })
	if err != nil {
		return nil, fmt.Errorf("workspace: %w", err)
	}
	if !found {
		return nil, fmt.Errorf("workspace %s: %w", workspace, ErrModelWorkspaceNotFound)
	}
	out := []ModelEntry{}
	var m ModelEntry
	scan := scanModel(&m)
	err = r.st.Query(ctx, r.st.Dialect().Bind("SELECT id, workspace_id, name, fields, created_at, updated_at FROM data_models WHERE workspace_id = ? ORDER BY name, id", workspace), func(row []any) error {
		if err := scan(row); err != nil {
			return err
		}
		out = append(out, m)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list models: %w", err)
	}
	return out, nil
}

// scanModel reads a data model's id, workspace_id, name, fields, created_at and updated_at into m.
func scanModel(m *ModelEntry) func(row []any) error {
	return func(row []any) error {
		*m = ModelEntry{ID: store.UUIDText(row[0]), Workspace: store.UUIDText(row[1]), Name: store.Text(row[2]), Fields: map[string]ModelField{}}
		if err := json.Unmarshal(store.JSON(row[3]), &m.Fields); err != nil {
			return fmt.Errorf("fields of model %s: %w", m.ID, err)
		}
		return store.Times(row[4:], &m.CreatedAt, &m.UpdatedAt)
	}
}

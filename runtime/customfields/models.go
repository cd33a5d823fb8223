package customfields

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync/atomic"
	"time"

	"github.com/google/uuid"

	"github.com/workspace-records/records/engine/model"
	"github.com/workspace-records/records/engine/schema"
	"github.com/workspace-records/records/engine/sqlgen"
	"github.com/workspace-records/records/runtime/store"
)

// modelField is one field of a data model, as stored in data_models.fields (field types of the
// definitions format: string with options is a select).
type modelField struct {
	Type     string   `json:"type"`
	Label    string   `json:"label"`
	Required bool     `json:"required"`
	Options  []string `json:"options"`
	Target   string   `json:"target"`
}

type modelEntry struct {
	fields *Fields
	loaded int64
	used   atomic.Int64 // when a request last took it (Unix nanoseconds): see IdleAfter
}

// ErrModelNotFound is a data model that is not in the workspace.
var ErrModelNotFound = errors.New("data model not found")

// ForModel returns the fields of data model modelID as the custom fields of its records, or
// ErrModelNotFound when the workspace has no such model. Their ids are derived from the model id and
// the field key (UUID version 5), so filter keys are stable. Like workspace snapshots, a model's fields
// are read again after MaxAge; a model that was not found is not remembered, so a new one serves at once.
func (r *Registry) ForModel(ctx context.Context, workspace, modelID string) (*Fields, error) {
	if !model.IsUUID(modelID) {
		return nil, ErrModelNotFound
	}
	key := strings.ToLower(workspace) + "/" + strings.ToLower(modelID)
	now := r.now().UnixNano()
	r.mu.Lock()
	e := r.models[key]
	r.mu.Unlock()
	if e != nil && now-e.loaded < int64(MaxAge) {
		e.used.Store(now)
		return e.fields, nil
	}
	r.Loads.Add(1)
	var raw any
	found, err := store.QueryOne(ctx, r.st, r.st.Dialect().Bind("SELECT fields FROM data_models WHERE workspace_id = ? AND id = ?", strings.ToLower(workspace), strings.ToLower(modelID)), func(row []any) error {
		raw = row[0]
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("data model fields: %w", err)
	}
	if !found {
		return nil, ErrModelNotFound
	}
	defs := map[string]modelField{}
	if err := json.Unmarshal(store.JSON(raw), &defs); err != nil {
		return nil, fmt.Errorf("data model fields: %w", err)
	}
	keys := make([]string, 0, len(defs))
	for k := range defs {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	ns := uuid.MustParse(modelID)
	f := &Fields{byKey: map[string]*Def{}, byID: map[string]*Def{}}
	var fields []*model.Field
	for _, k := range keys {
		mf := defs[k]
		t, ok := model.ParseType(mf.Type)
		if !ok {
			continue // refused by model create; tolerate definitions written by a newer server
		}
		d := &Def{ID: uuid.NewSHA1(ns, []byte(k)).String(), Key: k, Type: mf.Type, Label: mf.Label, Required: mf.Required, Options: mf.Options, Target: mf.Target}
		fld := &model.Field{Key: k, Label: mf.Label, Type: t, Required: mf.Required, Options: mf.Options, Target: mf.Target, Column: d.ID, Filterable: true}
		if fld.Label == "" {
			fld.Label = strings.ReplaceAll(k, "_", " ")
		}
		switch {
		case t.Textual():
			fld.MaxLength = Types[map[model.Type]string{model.String: "text", model.Text: "long_text", model.Email: "email", model.URL: "url", model.Phone: "phone"}[t]].MaxLength
		case t == model.Integer:
			lo, hi := -float64(1<<53-1), float64(1<<53-1)
			fld.Minimum, fld.Maximum = &lo, &hi
		}
		fld.Sortable = sqlgen.CustomSortable(fld)
		f.Defs = append(f.Defs, d)
		f.byKey[k], f.byID[d.ID] = d, d
		fields = append(fields, fld)
	}
	f.Set = model.NewFieldSet(key+".model", fields)
	if len(fields) > 0 {
		if f.Schema, err = schema.CompileFieldSet(f.Set); err != nil {
			return nil, fmt.Errorf("data model fields: %w", err)
		}
	}
	e = &modelEntry{fields: f, loaded: now}
	e.used.Store(now)
	r.mu.Lock()
	r.models[key] = e
	r.sweepLocked(time.Unix(0, now))
	r.mu.Unlock()
	return f, nil
}

// ModelRef names one data model of a workspace.
type ModelRef struct {
	ID, Name string
}

// Models returns the data models of workspace, by name.
func (r *Registry) Models(ctx context.Context, workspace string) ([]ModelRef, error) {
	var out []ModelRef
	err := r.st.Query(ctx, r.st.Dialect().Bind("SELECT id, name FROM data_models WHERE workspace_id = ? ORDER BY name, id", strings.ToLower(workspace)), func(row []any) error {
		out = append(out, ModelRef{ID: store.UUIDText(row[0]), Name: store.Text(row[1])})
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list data models: %w", err)
	}
	return out, nil
}

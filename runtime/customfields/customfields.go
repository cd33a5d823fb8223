// Package customfields keeps the custom fields that workspace admins add to resources. Values live in
// each record's custom_fields column keyed by definition id, so renaming or archiving a definition never
// loses them. A server keeps one compiled snapshot per workspace for at most MaxAge, so a change made
// through recordsctl reaches every server within about a second without a restart.
package customfields

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/workspace-records/records/engine/model"
	"github.com/workspace-records/records/engine/schema"
	"github.com/workspace-records/records/engine/sqlgen"
	"github.com/workspace-records/records/engine/suggest"
	"github.com/workspace-records/records/runtime/store"
)

// MaxAge is how long a server uses a workspace's snapshot before reading the definitions again.
const MaxAge = time.Second

// Errors of the admin operations.
var (
	ErrInvalid  = errors.New("invalid custom field")
	ErrNotFound = errors.New("custom field not found")
)

// Types maps the custom field types to value types and default lengths.
var Types = map[string]struct {
	Type      model.Type
	MaxLength int
}{
	"text": {model.String, 255}, "long_text": {model.Text, 100000}, "integer": {model.Integer, 0},
	"decimal": {model.Decimal, 0}, "boolean": {model.Boolean, 0}, "date": {model.Date, 0},
	"datetime": {model.DateTime, 0}, "select": {model.String, 255}, "multi_select": {model.MultiSelect, 0},
	"email": {model.Email, 254}, "url": {model.URL, 2048}, "phone": {model.Phone, 50}, "reference": {model.Reference, 0},
}

// Def is a custom field definition.
type Def struct {
	ID          string   `json:"id"`
	Resource    string   `json:"resource"`
	Key         string   `json:"key"`
	Type        string   `json:"type"`
	Label       string   `json:"label"`
	Description string   `json:"description"`
	Required    bool     `json:"required"`
	Options     []string `json:"options,omitempty"`
	Target      string   `json:"target,omitempty"`
	// Unique makes the field a unique key of the resource in the workspace: at most one active record
	// holds each value (enforced in the write's transaction; see records' checkCustomKeys).
	Unique   bool `json:"unique"`
	Archived bool `json:"archived"`
}

// FilterKey is the identifier filters use for d: different from its write key.
func (d *Def) FilterKey() string { return "cfv:" + d.ID }

// Fields are the live custom fields of one resource in one workspace.
type Fields struct {
	Defs   []*Def // active definitions, by key
	Set    *model.Resource
	Schema *schema.Resource
	byKey  map[string]*Def
	byID   map[string]*Def
}

// ByKey returns the definition with write key key.
func (f *Fields) ByKey(key string) (*Def, bool) { d, ok := f.byKey[key]; return d, ok }

// ByID returns the active definition with id.
func (f *Fields) ByID(id string) (*Def, bool) { d, ok := f.byID[id]; return d, ok }

// FilterFields returns the custom fields as filter and sort fields, keyed by filter key (cfv:<id>),
// which is also their sort key where Sortable.
func (f *Fields) FilterFields() []*model.Field {
	out := make([]*model.Field, 0, len(f.Defs))
	for _, d := range f.Defs {
		fld := *f.Field(d)
		fld.Key, fld.Custom = d.FilterKey(), true
		out = append(out, &fld)
	}
	return out
}

// Field returns the model field of d (Key is the write key, Column the definition id).
func (f *Fields) Field(d *Def) *model.Field { fld, _ := f.Set.Field(d.Key); return fld }

// Snapshot is every custom field of a workspace.
type Snapshot struct {
	byResource map[string]*Fields
	loaded     time.Time
}

var empty = &Fields{Set: model.NewFieldSet("none", nil), byKey: map[string]*Def{}, byID: map[string]*Def{}}

// Empty returns the custom fields of a resource that has none.
func Empty() *Fields { return empty }

// Resource returns the custom fields of resource (empty when none).
func (s *Snapshot) Resource(name string) *Fields {
	if f, ok := s.byResource[name]; ok {
		return f
	}
	return empty
}

// Registry stores definitions and serves snapshots.
type Registry struct {
	st    store.Store
	cat   *model.Catalog
	mu    sync.Mutex
	cache map[string]*Snapshot
	// refreshing marks the workspaces whose expired snapshot one request is reloading.
	refreshing map[string]bool
	models     map[string]*modelEntry
	now        func() time.Time
}

// New returns a registry over st for the resources of cat.
func New(st store.Store, cat *model.Catalog) *Registry {
	return &Registry{st: st, cat: cat, cache: map[string]*Snapshot{}, refreshing: map[string]bool{}, models: map[string]*modelEntry{}, now: time.Now}
}

// For returns workspace's snapshot, reading the definitions again when the cached one is older than
// MaxAge.
func (r *Registry) For(ctx context.Context, workspace string) (*Snapshot, error) {
	r.mu.Lock()
	s := r.cache[workspace]
	switch {
	case s != nil && r.now().Sub(s.loaded) < MaxAge:
		r.mu.Unlock()
		return s, nil
	case s != nil && r.refreshing[workspace]:
		// Another request is reading the definitions again: use the snapshot it replaces meanwhile,
		// rather than every concurrent request of the workspace reading and compiling them at once.
		r.mu.Unlock()
		return s, nil
	case s != nil:
		r.refreshing[workspace] = true
		defer func() {
			r.mu.Lock()
			delete(r.refreshing, workspace)
			r.mu.Unlock()
		}()
	}
	r.mu.Unlock()
	defs, err := r.List(ctx, workspace)
	if err != nil {
		return nil, err
	}
	s = &Snapshot{byResource: map[string]*Fields{}, loaded: r.now()}
	byRes := map[string][]*Def{}
	for _, d := range defs {
		if !d.Archived {
			byRes[d.Resource] = append(byRes[d.Resource], d)
		}
	}
	for res, list := range byRes {
		f := &Fields{Defs: list, byKey: map[string]*Def{}, byID: map[string]*Def{}}
		var fields []*model.Field
		for _, d := range list {
			fields = append(fields, toField(d))
			f.byKey[d.Key], f.byID[d.ID] = d, d
		}
		f.Set = model.NewFieldSet(workspace+"."+res+".custom", fields)
		if f.Schema, err = schema.CompileFieldSet(f.Set); err != nil {
			return nil, fmt.Errorf("custom fields of %s: %w", res, err)
		}
		s.byResource[res] = f
	}
	r.mu.Lock()
	r.cache[workspace] = s
	r.mu.Unlock()
	return s, nil
}

func toField(d *Def) *model.Field {
	t := Types[d.Type]
	f := &model.Field{Key: d.Key, Label: d.Label, Description: d.Description, Type: t.Type, Required: d.Required,
		MaxLength: t.MaxLength, Options: d.Options, Target: d.Target, Column: d.ID, Filterable: true, Unique: d.Unique}
	f.Sortable = sqlgen.CustomSortable(f)
	if t.Type == model.Integer {
		lo, hi := -float64(1<<53-1), float64(1<<53-1)
		f.Minimum, f.Maximum = &lo, &hi
	}
	return f
}

// List returns every definition of workspace, archived ones included, by resource and key.
func (r *Registry) List(ctx context.Context, workspace string) ([]*Def, error) {
	var out []*Def
	err := r.st.Query(ctx, r.st.Dialect().Bind(`SELECT id, resource, key, type, label, description, required, options, target, archived, is_unique
FROM custom_field_defs WHERE workspace_id = ? ORDER BY resource, key`, strings.ToLower(workspace)), func(row []any) error {
		d := &Def{ID: store.UUIDText(row[0]), Resource: store.Text(row[1]), Key: store.Text(row[2]), Type: store.Text(row[3]),
			Label: store.Text(row[4]), Description: store.Text(row[5]), Required: store.Bool(row[6]), Target: store.Text(row[8]), Archived: store.Bool(row[9]), Unique: row[10] != nil && store.Bool(row[10])}
		if row[7] != nil {
			if err := json.Unmarshal(store.JSON(row[7]), &d.Options); err != nil {
				return err
			}
		}
		out = append(out, d)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list custom fields: %w", err)
	}
	return out, nil
}

// uniqueTypes are the custom types that may be unique keys: one value each, compared whole (long text
// and URLs may be longer than the indexed prefix of custom_values, booleans and multi-selects hold no
// key).
var uniqueTypes = map[string]bool{"text": true, "select": true, "email": true, "phone": true, "integer": true,
	"decimal": true, "date": true, "datetime": true, "reference": true}

var keyRE = regexp.MustCompile(`^[a-z][a-z0-9_]{0,62}$`)

// Create adds a custom field to a resource of workspace.
func (r *Registry) Create(ctx context.Context, workspace string, d Def) (*Def, error) {
	workspace = strings.ToLower(workspace)
	res, ok := r.cat.Resource(d.Resource)
	var problems []string
	switch {
	case !ok:
		problems = append(problems, suggest.Unknown("resource", d.Resource, r.cat.ResourceNames(true)))
	case res.ReadOnly():
		problems = append(problems, d.Resource+" is read-only: custom fields go on resources that take writes")
	}
	if !keyRE.MatchString(d.Key) {
		problems = append(problems, "key must be lowercase snake_case, at most 63 characters")
	}
	t, ok := Types[d.Type]
	if !ok {
		names := make([]string, 0, len(Types))
		for n := range Types {
			names = append(names, n)
		}
		problems = append(problems, suggest.Unknown("type", d.Type, names))
	}
	if (d.Type == "select" || d.Type == "multi_select") != (len(d.Options) > 0) {
		problems = append(problems, "options are required for select and multi_select, and only for them")
	}
	if t.Type == model.Reference {
		if _, ok := r.cat.Resource(d.Target); !ok && d.Target == "" {
			problems = append(problems, "a reference needs a target resource (--target)")
		} else if !ok {
			problems = append(problems, "target: "+suggest.Unknown("resource", d.Target, r.cat.ResourceNames(false)))
		}
	} else if d.Target != "" {
		problems = append(problems, "target applies to reference fields only")
	}
	if d.Unique && !uniqueTypes[d.Type] {
		problems = append(problems, "unique applies to text, select, email, phone, integer, decimal, date, datetime and reference fields")
	}
	if len(d.Label) > 100 || len(d.Description) > 1000 {
		problems = append(problems, "label is at most 100 characters and description at most 1000")
	}
	if len(problems) > 0 {
		return nil, fmt.Errorf("%w: %s", ErrInvalid, strings.Join(problems, "; "))
	}
	if d.Label == "" {
		d.Label = strings.ReplaceAll(d.Key, "_", " ")
	}
	d.ID = uuid.Must(uuid.NewV7()).String()
	now := r.now().UTC()
	var opts any
	if len(d.Options) > 0 {
		data, _ := json.Marshal(d.Options)
		opts = string(data)
	}
	var target any
	if d.Target != "" {
		target = d.Target
	}
	_, err := r.st.Exec(ctx, r.st.Dialect().Bind(`INSERT INTO custom_field_defs (workspace_id, id, resource, key, type, label, description, required, options, target, archived, created_at, updated_at, is_unique)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`, workspace, d.ID, d.Resource, d.Key, d.Type, d.Label, d.Description, d.Required, opts, target, false, now, now, d.Unique))
	if errors.Is(err, store.ErrConflict) {
		return nil, fmt.Errorf("%w: %s already has a custom field %q", ErrInvalid, d.Resource, d.Key)
	}
	if err != nil {
		return nil, fmt.Errorf("create custom field: %w", err)
	}
	r.forget(workspace)
	return &d, nil
}

// Change updates a definition's label, description, required flag or options (nil: unchanged), or
// archives / restores it. Archiving hides the field without losing values.
type Change struct {
	Label       *string
	Description *string
	Required    *bool
	Options     []string
	Archived    *bool
}

// Update applies c to definition id.
func (r *Registry) Update(ctx context.Context, id string, c Change) (*Def, error) {
	id = strings.ToLower(id)
	d := r.st.Dialect()
	var ws string
	found, err := store.QueryOne(ctx, r.st, d.Bind("SELECT workspace_id FROM custom_field_defs WHERE id = ?", id), func(row []any) error {
		ws = store.UUIDText(row[0])
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("update custom field: %w", err)
	}
	if !found {
		return nil, fmt.Errorf("%w: %s", ErrNotFound, id)
	}
	sets, args := []string{"updated_at = ?"}, []any{r.now().UTC()}
	if c.Label != nil {
		sets, args = append(sets, "label = ?"), append(args, *c.Label)
	}
	if c.Description != nil {
		sets, args = append(sets, "description = ?"), append(args, *c.Description)
	}
	if c.Required != nil {
		sets, args = append(sets, "required = ?"), append(args, *c.Required)
	}
	if c.Options != nil {
		data, _ := json.Marshal(c.Options)
		sets, args = append(sets, "options = ?"), append(args, string(data))
	}
	if c.Archived != nil {
		sets, args = append(sets, "archived = ?"), append(args, *c.Archived)
	}
	args = append(args, ws, id)
	if _, err := r.st.Exec(ctx, d.Bind("UPDATE custom_field_defs SET "+strings.Join(sets, ", ")+" WHERE workspace_id = ? AND id = ?", args...)); err != nil {
		return nil, fmt.Errorf("update custom field: %w", err)
	}
	r.forget(ws)
	defs, err := r.List(ctx, ws)
	if err != nil {
		return nil, err
	}
	for _, def := range defs {
		if def.ID == id {
			return def, nil
		}
	}
	return nil, fmt.Errorf("%w: %s", ErrNotFound, id)
}

func (r *Registry) forget(workspace string) {
	r.mu.Lock()
	delete(r.cache, workspace)
	r.mu.Unlock()
}

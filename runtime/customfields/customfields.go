// Package customfields keeps the custom fields that workspace admins add to resources, and the
// workspaces' data models (datamodels.go: their writes; models.go: their fields as records see them). Values live in
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
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/singleflight"

	"github.com/workspace-records/records/engine/field"
	"github.com/workspace-records/records/engine/model"
	"github.com/workspace-records/records/engine/schema"
	"github.com/workspace-records/records/engine/sqlgen"
	"github.com/workspace-records/records/engine/suggest"
	"github.com/workspace-records/records/runtime/store"
)

// MaxAge is how long a server uses a workspace's snapshot before reading the definitions again.
const MaxAge = time.Second

// IdleAfter is how long a workspace's snapshot (or a data model's fields) stays cached without a request
// using it: a server that has served many workspaces keeps only those in use, and one idle again reads
// its definitions afresh, as after MaxAge.
const IdleAfter = 10 * time.Minute

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
	// workspace holds the definition (read from the store; unused by Create).
	workspace string
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
	used       atomic.Int64 // when a request last took it (Unix nanoseconds): see IdleAfter
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
	// loads reads and compiles a workspace's definitions once for all the requests that need them at
	// the same moment: the first requests of a workspace not cached (a start, a burst) wait for one load
	// instead of each reading and compiling them.
	loads singleflight.Group
	// swept is when the cache was last swept of idle entries (under mu).
	swept time.Time
	// Loads counts the definitions reads (snapshots and data models), for tests.
	Loads atomic.Int64
}

// New returns a registry over st for the resources of cat.
func New(st store.Store, cat *model.Catalog) *Registry {
	return &Registry{st: st, cat: cat, cache: map[string]*Snapshot{}, refreshing: map[string]bool{}, models: map[string]*modelEntry{}, now: time.Now}
}

// For returns workspace's snapshot, reading the definitions again when the cached one is older than
// MaxAge.
func (r *Registry) For(ctx context.Context, workspace string) (*Snapshot, error) {
	now := r.now()
	r.mu.Lock()
	s := r.cache[workspace]
	switch {
	case s != nil && now.Sub(s.loaded) < MaxAge:
		r.mu.Unlock()
		s.used.Store(now.UnixNano())
		return s, nil
	case s != nil && r.refreshing[workspace]:
		// Another request is reading the definitions again: use the snapshot it replaces meanwhile,
		// rather than every concurrent request of the workspace reading and compiling them at once.
		r.mu.Unlock()
		s.used.Store(now.UnixNano())
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
	// No snapshot yet: every request of the workspace arriving now waits for one load (the first
	// request's, which goes on for the others if that request gives up).
	load := r.loads.DoChan(workspace, func() (any, error) { return r.load(context.WithoutCancel(ctx), workspace) })
	select {
	case res := <-load:
		if res.Err != nil {
			return nil, res.Err
		}
		return res.Val.(*Snapshot), nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// load reads and compiles workspace's definitions into a new snapshot and caches it.
func (r *Registry) load(ctx context.Context, workspace string) (*Snapshot, error) {
	r.Loads.Add(1)
	defs, err := r.List(ctx, workspace)
	if err != nil {
		return nil, err
	}
	s := &Snapshot{byResource: map[string]*Fields{}, loaded: r.now()}
	s.used.Store(s.loaded.UnixNano())
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
	r.sweepLocked(s.loaded)
	r.mu.Unlock()
	return s, nil
}

// sweepLocked drops the snapshots and data models no request used for IdleAfter, at most once every
// IdleAfter/10 (as entries are added, so an idle server does no work). The caller holds r.mu.
func (r *Registry) sweepLocked(now time.Time) {
	if now.Sub(r.swept) < IdleAfter/10 {
		return
	}
	r.swept = now
	idle := now.Add(-IdleAfter).UnixNano()
	for ws, s := range r.cache {
		if s.used.Load() < idle && !r.refreshing[ws] {
			delete(r.cache, ws)
		}
	}
	for key, e := range r.models {
		if e.used.Load() < idle {
			delete(r.models, key)
		}
	}
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
	err := r.st.Query(ctx, r.st.Dialect().Bind(defColumns+" FROM custom_field_defs WHERE workspace_id = ? ORDER BY resource, key", strings.ToLower(workspace)), func(row []any) error {
		d, err := scanDef(row)
		if err != nil {
			return err
		}
		out = append(out, d)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list custom fields: %w", err)
	}
	return out, nil
}

// defColumns are the columns scanDef reads.
const defColumns = "SELECT id, resource, key, type, label, description, required, options, target, archived, is_unique, workspace_id"

func scanDef(row []any) (*Def, error) {
	d := &Def{ID: store.UUIDText(row[0]), Resource: store.Text(row[1]), Key: store.Text(row[2]), Type: store.Text(row[3]),
		Label: store.Text(row[4]), Description: store.Text(row[5]), Required: store.Bool(row[6]), Target: store.Text(row[8]), Archived: store.Bool(row[9]),
		Unique: row[10] != nil && store.Bool(row[10]), workspace: store.UUIDText(row[11])}
	if row[7] != nil {
		if err := json.Unmarshal(store.JSON(row[7]), &d.Options); err != nil {
			return nil, fmt.Errorf("options of custom field %s: %w", d.ID, err)
		}
	}
	return d, nil
}

// uniqueTypes are the custom types that may be unique keys: one value each, compared whole (long text
// and URLs may be longer than the indexed prefix of custom_values, booleans and multi-selects hold no
// key).
var uniqueTypes = map[string]bool{"text": true, "select": true, "email": true, "phone": true, "integer": true,
	"decimal": true, "date": true, "datetime": true, "reference": true}

var keyRE = regexp.MustCompile(`^[a-z][a-z0-9_]{0,62}$`)

// Create adds a custom field to a resource of workspace.
func (r *Registry) Create(ctx context.Context, workspace string, d Def) (*Def, error) {
	return r.CreateThen(ctx, workspace, d, nil)
}

// CreateThen is Create with then, when set, run inside the transaction that stores the definition (the
// admin API writes its audit entry there). A definition refused is an *InvalidError: ErrInvalid with
// the problems by field.
func (r *Registry) CreateThen(ctx context.Context, workspace string, d Def, then func(q store.Querier, d *Def) error) (*Def, error) {
	workspace = strings.ToLower(workspace)
	if err := r.check(d).err(); err != nil {
		return nil, err
	}
	if d.Label == "" {
		d.Label = strings.ReplaceAll(d.Key, "_", " ")
	}
	d.ID = store.NewID()
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
	err := r.st.Tx(ctx, func(q store.Querier) error {
		_, err := q.Exec(ctx, r.st.Dialect().Bind(`INSERT INTO custom_field_defs (workspace_id, id, resource, key, type, label, description, required, options, target, archived, created_at, updated_at, is_unique)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`, workspace, d.ID, d.Resource, d.Key, d.Type, d.Label, d.Description, d.Required, opts, target, false, now, now, d.Unique))
		if errors.Is(err, store.ErrConflict) {
			return &DuplicateError{Resource: d.Resource, Key: d.Key}
		}
		if err != nil {
			return fmt.Errorf("create custom field: %w", err)
		}
		if then != nil {
			return then(q, &d)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	r.forget(workspace)
	return &d, nil
}

// problems are what check found wrong with a definition: each problem's field and the sentence the
// command line prints.
type problems []problem

type problem struct {
	field, text string
	code        field.Code
}

// err is nil without problems, else an *InvalidError.
func (ps problems) err() error {
	if len(ps) == 0 {
		return nil
	}
	e := &InvalidError{}
	for _, p := range ps {
		e.Errors = append(e.Errors, field.New(p.code, field.NewPath(p.field), p.text))
	}
	return e
}

// InvalidError is a custom field or data model refused: ErrInvalid or ErrInvalidModel (errors.Is) with every problem by field (errors.As
// into a field.ErrorList gives them: the API answers them as 422 validation_failed).
type InvalidError struct {
	Errors field.ErrorList
	kind   error // ErrInvalid (a custom field, when nil) or ErrInvalidModel
}

func (e *InvalidError) sentinel() error {
	if e.kind != nil {
		return e.kind
	}
	return ErrInvalid
}

func (e *InvalidError) Error() string {
	texts := make([]string, len(e.Errors))
	for i, fe := range e.Errors {
		texts[i] = fe.Message
	}
	return e.sentinel().Error() + ": " + strings.Join(texts, "; ")
}

// Unwrap gives ErrInvalid (ErrInvalidModel for a data model) and the field errors.
func (e *InvalidError) Unwrap() []error { return []error{e.sentinel(), e.Errors} }

// DuplicateError is a key a resource of the workspace already has a custom field for (ErrInvalid, as the
// command line has always said; the API answers 409 conflict).
type DuplicateError struct {
	Resource, Key string
}

func (e *DuplicateError) Error() string {
	return fmt.Sprintf("%v: %s already has a custom field %q", ErrInvalid, e.Resource, e.Key)
}

// Unwrap gives ErrInvalid.
func (e *DuplicateError) Unwrap() error { return ErrInvalid }

// Check returns the problems of a new definition, by field (nil: none), without storing anything.
func (r *Registry) Check(d Def) field.ErrorList {
	if e, ok := r.check(d).err().(*InvalidError); ok {
		return e.Errors
	}
	return nil
}

// check validates a new definition: the problems of field create, by field.
func (r *Registry) check(d Def) problems {
	res, ok := r.cat.Resource(d.Resource)
	var ps problems
	add := func(f string, code field.Code, text string) {
		ps = append(ps, problem{field: f, text: text, code: code})
	}
	switch {
	case !ok:
		add("resource", field.CodeOption, suggest.Unknown("resource", d.Resource, r.cat.ResourceNames(true)))
	case res.ReadOnly():
		add("resource", field.CodeReadOnly, d.Resource+" is read-only: custom fields go on resources that take writes")
	}
	if !keyRE.MatchString(d.Key) {
		add("key", field.CodeFormat, "key must be lowercase snake_case, at most 63 characters")
	}
	t, ok := Types[d.Type]
	if !ok {
		names := make([]string, 0, len(Types))
		for n := range Types {
			names = append(names, n)
		}
		sort.Strings(names)
		add("type", field.CodeOption, suggest.Unknown("type", d.Type, names))
	}
	if (d.Type == "select" || d.Type == "multi_select") != (len(d.Options) > 0) {
		add("options", field.CodeInvalid, "options are required for select and multi_select, and only for them")
	}
	ps = append(ps, checkOptions(d.Options)...)
	if t.Type == model.Reference {
		if _, ok := r.cat.Resource(d.Target); !ok && d.Target == "" {
			add("target", field.CodeRequired, "a reference needs a target resource (--target)")
		} else if !ok {
			add("target", field.CodeOption, "target: "+suggest.Unknown("resource", d.Target, r.cat.ResourceNames(false)))
		}
	} else if d.Target != "" {
		add("target", field.CodeInvalid, "target applies to reference fields only")
	}
	if d.Unique && !uniqueTypes[d.Type] {
		add("unique", field.CodeInvalid, "unique applies to text, select, email, phone, integer, decimal, date, datetime and reference fields")
	}
	ps = append(ps, checkTexts(d.Label, d.Description)...)
	return ps
}

// checkTexts checks a label and a description.
func checkTexts(label, description string) problems {
	var ps problems
	if len(label) > 100 {
		ps = append(ps, problem{field: "label", code: field.CodeTooLong, text: "label is at most 100 characters and description at most 1000"})
	}
	if len(description) > 1000 {
		ps = append(ps, problem{field: "description", code: field.CodeTooLong, text: "label is at most 100 characters and description at most 1000"})
	}
	return ps
}

// checkOptions checks the options of a select: each 1 to 255 characters, none twice.
func checkOptions(options []string) problems {
	var ps problems
	seen := map[string]bool{}
	for i, o := range options {
		p := field.NewPath("options").Index(i).String()
		switch {
		case o == "" || len(o) > 255:
			ps = append(ps, problem{field: p, code: field.CodeInvalid, text: fmt.Sprintf("option %q must be 1 to 255 characters", o)})
		case seen[o]:
			ps = append(ps, problem{field: p, code: field.CodeDuplicate, text: fmt.Sprintf("option %q is given twice", o)})
		}
		seen[o] = true
	}
	return ps
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
	return r.UpdateIn(ctx, "", id, c, nil)
}

// Get returns definition id of workspace (ErrNotFound when workspace has none of that id).
func (r *Registry) Get(ctx context.Context, workspace, id string) (*Def, error) {
	return r.get(ctx, r.st, strings.ToLower(workspace), strings.ToLower(id))
}

// get reads definition id (of workspace, or of any workspace when workspace is "").
func (r *Registry) get(ctx context.Context, q store.Querier, workspace, id string) (*Def, error) {
	if !model.IsUUID(id) {
		return nil, fmt.Errorf("%w: %s", ErrNotFound, id)
	}
	sql, args := defColumns+" FROM custom_field_defs WHERE id = ?", []any{id}
	if workspace != "" {
		sql, args = sql+" AND workspace_id = ?", append(args, workspace)
	}
	var d *Def
	var err error
	found, qerr := store.QueryOne(ctx, q, r.st.Dialect().Bind(sql, args...), func(row []any) error {
		d, err = scanDef(row)
		return err
	})
	if qerr != nil {
		return nil, fmt.Errorf("read custom field: %w", qerr)
	}
	if !found {
		return nil, fmt.Errorf("%w: %s", ErrNotFound, id)
	}
	return d, nil
}

// UpdateIn applies c to definition id of workspace ("" for the operator: whichever workspace holds it),
// running then, when set, inside the transaction with the definition before and after the change (the
// admin API writes its audit entry there). A definition of another workspace is ErrNotFound.
func (r *Registry) UpdateIn(ctx context.Context, workspace, id string, c Change, then func(q store.Querier, before, after *Def) error) (*Def, error) {
	id, workspace = strings.ToLower(id), strings.ToLower(workspace)
	d := r.st.Dialect()
	var after *Def
	err := r.st.Tx(ctx, func(q store.Querier) error {
		before, err := r.get(ctx, q, workspace, id)
		if err != nil {
			return err
		}
		var ps problems
		if c.Options != nil {
			if before.Type != "select" && before.Type != "multi_select" {
				ps = append(ps, problem{field: "options", code: field.CodeInvalid, text: "options apply to select and multi_select fields only"})
			} else if len(c.Options) == 0 {
				ps = append(ps, problem{field: "options", code: field.CodeRequired, text: "a select needs at least one option"})
			}
			ps = append(ps, checkOptions(c.Options)...)
		}
		var label, desc string
		if c.Label != nil {
			label = *c.Label
		}
		if c.Description != nil {
			desc = *c.Description
		}
		ps = append(ps, checkTexts(label, desc)...)
		if err := ps.err(); err != nil {
			return err
		}
		sets, args := []string{"updated_at = ?"}, []any{r.now().UTC()}
		next := *before
		if c.Label != nil {
			sets, args = append(sets, "label = ?"), append(args, *c.Label)
			next.Label = *c.Label
		}
		if c.Description != nil {
			sets, args = append(sets, "description = ?"), append(args, *c.Description)
			next.Description = *c.Description
		}
		if c.Required != nil {
			sets, args = append(sets, "required = ?"), append(args, *c.Required)
			next.Required = *c.Required
		}
		if c.Options != nil {
			data, _ := json.Marshal(c.Options)
			sets, args = append(sets, "options = ?"), append(args, string(data))
			next.Options = append([]string(nil), c.Options...)
		}
		if c.Archived != nil {
			sets, args = append(sets, "archived = ?"), append(args, *c.Archived)
			next.Archived = *c.Archived
		}
		args = append(args, before.workspace, id)
		if _, err := q.Exec(ctx, d.Bind("UPDATE custom_field_defs SET "+strings.Join(sets, ", ")+" WHERE workspace_id = ? AND id = ?", args...)); err != nil {
			return fmt.Errorf("update custom field: %w", err)
		}
		after = &next
		if then != nil {
			return then(q, before, after)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	r.forget(after.workspace)
	return after, nil
}

func (r *Registry) forget(workspace string) {
	r.mu.Lock()
	delete(r.cache, workspace)
	r.mu.Unlock()
}

// Package records runs the seven record operations for any resource of the model: it validates bodies
// with the compiled schemas, builds SQL with sqlgen, executes it on a store inside the caller's
// workspace, and turns rows into JSON-shaped records.
package records

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"sort"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/workspace-records/records/engine/access"
	"github.com/workspace-records/records/engine/field"
	"github.com/workspace-records/records/engine/listplan"
	"github.com/workspace-records/records/engine/model"
	"github.com/workspace-records/records/engine/schema"
	"github.com/workspace-records/records/engine/sqlgen"
	"github.com/workspace-records/records/runtime/customfields"
	"github.com/workspace-records/records/runtime/plugins"
	"github.com/workspace-records/records/runtime/store"
)

// Errors the service reports; package httpapi maps them to statuses.
var (
	ErrNotFound      = errors.New("record not found")
	ErrModelRequired = errors.New("model_id is required for data_model_records")
	ErrModelNotFound = errors.New("data model not found")
)

// ConflictError is a write that contradicts the record's state.
type ConflictError struct{ Message string }

func (e *ConflictError) Error() string { return e.Message }

// Actor is who a request acts as.
type Actor struct {
	Workspace  string
	Member     string
	Department string
	Key        string
	RequestID  string
	// Role limits records and fields through its record and field rules; nil is the unrestricted
	// admin path (recordsctl).
	Role *model.Role
	// OnWrite, when set, runs inside the transaction of a write, after it, with the record as the caller
	// sees it; an error rolls the write back. Idempotency stores the response there.
	OnWrite func(ctx context.Context, q store.Querier, rec Record) error
	// Synthetic marks generated data (recordsctl seed): Import writes no audit entries for it, which
	// would double a million-record load for rows nobody changed.
	Synthetic bool
}

// Policy returns the actor's policy on r.
func (a Actor) Policy(r *model.Resource) *access.Policy {
	return access.For(a.Role, r, a.Member, a.Department)
}

// Record is a JSON-shaped record.
type Record = map[string]any

// Service runs record operations. It is safe for concurrent use.
type Service struct {
	cat     *model.Catalog
	schemas *schema.Set
	st      store.Store
	d       sqlgen.Dialect
	secret  []byte
	now     func() time.Time
	custom  *customfields.Registry
	hooks   *plugins.Host
}

// Config configures a Service.
type Config struct {
	Catalog *model.Catalog
	Schemas *schema.Set
	Store   store.Store
	// CursorSecret signs list cursors; every server sharing a database must use the same one.
	CursorSecret []byte
	// Now returns the current time; defaults to time.Now.
	Now func() time.Time
	// Custom holds the workspaces' custom fields; nil refuses every custom field.
	Custom *customfields.Registry
	// Hooks runs the plugins definitions name; nil runs none.
	Hooks *plugins.Host
}

// New returns a Service.
func New(cfg Config) *Service {
	now := cfg.Now
	if now == nil {
		now = time.Now
	}
	return &Service{cat: cfg.Catalog, schemas: cfg.Schemas, st: cfg.Store, d: cfg.Store.Dialect(), secret: cfg.CursorSecret, now: now, custom: cfg.Custom, hooks: cfg.Hooks}
}

// Catalog returns the model the service serves.
func (s *Service) Catalog() *model.Catalog { return s.cat }

// Schemas returns the compiled write schemas.
func (s *Service) Schemas() *schema.Set { return s.schemas }

// CursorSecret returns the key that signs cursors.
func (s *Service) CursorSecret() []byte { return s.secret }

func (s *Service) timestamp() time.Time { return s.now().UTC().Truncate(time.Microsecond) }

// CheckModel verifies that a model-scoped request names an existing data model of the workspace.
func (s *Service) CheckModel(ctx context.Context, r *model.Resource, workspace, modelID string) error {
	if !r.ModelScoped {
		return nil
	}
	if modelID == "" {
		return ErrModelRequired
	}
	if !model.IsUUID(modelID) {
		return field.ErrorList{field.New(field.CodeFormat, field.NewPath("model_id"), "must be a UUID")}
	}
	found, err := store.QueryOne(ctx, s.st, s.d.Bind("SELECT 1 FROM data_models WHERE workspace_id = ? AND id = ?", workspace, strings.ToLower(modelID)), func([]any) error { return nil })
	if err != nil {
		return fmt.Errorf("look up data model: %w", err)
	}
	if !found {
		return ErrModelNotFound
	}
	return nil
}

// Get returns one record.
func (s *Service) Get(ctx context.Context, a Actor, r *model.Resource, modelID, id string) (Record, error) {
	ctx = store.WithWorkspace(ctx, a.Workspace)
	if !model.IsUUID(id) {
		return nil, ErrNotFound
	}
	pol := a.Policy(r)
	rec, err := s.get(ctx, s.st, r, sqlgen.Key{Workspace: a.Workspace, ModelID: modelID, ID: strings.ToLower(id), Policy: pol}, false)
	if err != nil {
		return nil, err
	}
	return s.view(ctx, a.Workspace, r, pol, rec)
}

// Fields returns the live custom fields of r in workspace; for a model-scoped resource, the fields of
// data model modelID.
func (s *Service) Fields(ctx context.Context, workspace string, r *model.Resource, modelID string) (*customfields.Fields, error) {
	if s.custom == nil {
		return customfields.Empty(), nil
	}
	if p, ok := ctx.Value(pinKey{}).(*pinned); ok && p.resource == r.Name && p.modelID == modelID {
		return p.fs, nil
	}
	if r.ModelScoped {
		return s.custom.ForModel(ctx, workspace, modelID)
	}
	snap, err := s.custom.For(ctx, workspace)
	if err != nil {
		return nil, err
	}
	return snap.Resource(r.Name), nil
}

type pinKey struct{}

type pinned struct {
	resource, modelID string
	fs                *customfields.Fields
}

// pinFields resolves the custom fields of r (model modelID) once, before a write's transaction opens,
// and returns a context in which Fields answers with that snapshot. Everything inside the transaction
// then sees one consistent set of definitions and never asks the pool for a second connection to read
// them: with every connection held by a transaction, that wait could only end at the request deadline.
func (s *Service) pinFields(ctx context.Context, workspace string, r *model.Resource, modelID string) (context.Context, error) {
	fs, err := s.Fields(ctx, workspace, r, modelID)
	if err != nil {
		return nil, err
	}
	return context.WithValue(ctx, pinKey{}, &pinned{resource: r.Name, modelID: modelID, fs: fs}), nil
}

// view turns a stored record into what the caller sees: custom field values keyed by their write key
// (archived definitions left out), and the caller's field rules applied.
func (s *Service) view(ctx context.Context, workspace string, r *model.Resource, pol *access.Policy, rec Record) (Record, error) {
	modelID, _ := rec["model_id"].(string)
	fs, err := s.Fields(ctx, workspace, r, modelID)
	if err != nil {
		return nil, err
	}
	present(fs, rec)
	return pol.Apply(rec), nil
}

func present(fs *customfields.Fields, rec Record) {
	stored, _ := rec["custom_fields"].(map[string]any)
	out := make(map[string]any, len(fs.Defs))
	for id, v := range stored {
		if d, ok := fs.ByID(id); ok {
			out[d.Key] = v
		}
	}
	rec["custom_fields"] = out
}

// customValues validates custom field values given by write key (both body forms end up here) against
// the workspace's compiled custom field schema, and returns the stored map (definition id -> value):
// current with the changes applied. On create, required custom fields must be present.
func (s *Service) customValues(ctx context.Context, workspace string, r *model.Resource, modelID string, in map[string]any, m schema.Mode, current map[string]any) (map[string]any, error) {
	out, _, err := s.customChanges(ctx, workspace, r, modelID, in, m, current)
	return out, err
}

// checkCustomReferences verifies, inside a write's transaction, that the reference-type custom values
// given (by key) name records of the same workspace.
func (s *Service) checkCustomReferences(ctx context.Context, q store.Querier, workspace string, r *model.Resource, modelID string, refs map[string]any) error {
	if len(refs) == 0 {
		return nil
	}
	fs, err := s.Fields(ctx, workspace, r, modelID)
	if err != nil {
		return err
	}
	err = s.checkReferences(ctx, q, fs.Set, workspace, refs)
	var fl field.ErrorList
	if errors.As(err, &fl) {
		for _, e := range fl {
			e.Field = "custom_fields." + e.Field
		}
	}
	return err
}

// customChanges is customValues that also returns the reference-type values given, by key, for
// checkCustomReferences.
func (s *Service) customChanges(ctx context.Context, workspace string, r *model.Resource, modelID string, in map[string]any, m schema.Mode, current map[string]any) (map[string]any, map[string]any, error) {
	fs, err := s.Fields(ctx, workspace, r, modelID)
	if err != nil {
		return nil, nil, err
	}
	out := make(map[string]any, len(current)+len(in))
	for k, v := range current {
		out[k] = v
	}
	if in == nil && m == schema.Update {
		return out, nil, nil
	}
	if in == nil {
		in = map[string]any{}
	}
	if fs.Schema == nil && len(in) == 0 {
		return out, nil, nil
	}
	var b *schema.Body
	var errs field.ErrorList
	if fs.Schema != nil {
		b, errs = fs.Schema.Validate(in, m)
	} else {
		for k := range in {
			errs = append(errs, field.New(field.CodeUnknown, field.NewPath(k), "is not a custom field of "+r.Name))
		}
	}
	if errs != nil {
		for _, e := range errs {
			if e.Code == field.CodeUnknown {
				e.Message = "is not a custom field of " + r.Name
			}
			e.Field = "custom_fields." + e.Field
		}
		sort.Slice(errs, func(i, j int) bool { return errs[i].Field < errs[j].Field })
		return nil, nil, errs
	}
	refs := map[string]any{}
	for key, v := range b.Values {
		d, _ := fs.ByKey(key)
		if v == nil {
			delete(out, d.ID)
			continue
		}
		f := fs.Field(d)
		out[d.ID] = model.JSONValue(f, v)
		if f.Type == model.Reference {
			refs[key] = v
		}
	}
	return out, refs, nil
}

func jsonText(v map[string]any) string {
	data, _ := json.Marshal(v)
	return string(data)
}

func (s *Service) get(ctx context.Context, q store.Querier, r *model.Resource, k sqlgen.Key, lock bool) (Record, error) {
	stmt := s.d.Get(r, k)
	if lock {
		stmt = s.d.GetForUpdate(r, k)
	}
	var rec Record
	found, err := store.QueryOne(ctx, q, stmt, func(row []any) error {
		var err error
		rec, err = s.toRecord(r, row, k.Workspace, k.ModelID)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("get %s %s: %w", r.Name, k.ID, err)
	}
	if !found {
		return nil, ErrNotFound
	}
	return rec, nil
}

// Page is one page of a list.
type Page struct {
	Records    []Record
	HasMore    bool
	NextCursor *string
}

// List returns one page of plan in the actor's workspace.
func (s *Service) List(ctx context.Context, a Actor, plan *listplan.Plan) (*Page, error) {
	ctx = store.WithWorkspace(ctx, a.Workspace)
	page := &Page{Records: []Record{}}
	want := plan.Limit + 1
	read := func(stmt sqlgen.Stmt) error {
		err := s.st.Query(ctx, stmt, func(row []any) error {
			if len(page.Records) >= want {
				return nil
			}
			rec, err := s.toRecord(plan.Resource, row, a.Workspace, plan.ModelID)
			if err != nil {
				return err
			}
			page.Records = append(page.Records, rec)
			return nil
		})
		if err != nil {
			return fmt.Errorf("list %s: %w", plan.Resource.Name, err)
		}
		return nil
	}
	for _, stmt := range s.d.List(plan, a.Workspace) {
		if len(page.Records) >= want {
			break
		}
		if err := read(stmt); err != nil {
			return nil, err
		}
	}
	if plan.Sort.Custom && !plan.CursorMode() && plan.Limit > 0 && len(page.Records) < want {
		if err := s.emptyBandPage(ctx, plan, a.Workspace, page, read); err != nil {
			return nil, err
		}
	}
	if len(page.Records) > plan.Limit {
		page.Records = page.Records[:plan.Limit]
		page.HasMore = true
	}
	if page.HasMore && len(page.Records) > 0 {
		last := page.Records[len(page.Records)-1]
		pos := listplan.Position{ID: last["id"].(string)}
		v := last[plan.Sort.Key]
		if plan.Sort.Custom {
			stored, _ := last["custom_fields"].(map[string]any)
			v = stored[plan.Sort.Column]
		}
		if v != nil {
			key, err := model.Canonical(plan.Sort, v)
			if err != nil {
				return nil, fmt.Errorf("list %s: cursor from %s: %w", plan.Resource.Name, plan.Sort.Key, err)
			}
			pos.Key = key
		}
		c := listplan.EncodeCursor(s.secret, plan, pos)
		page.NextCursor = &c
	}
	fs, err := s.Fields(ctx, a.Workspace, plan.Resource, plan.ModelID)
	if err != nil {
		return nil, err
	}
	for _, rec := range page.Records {
		present(fs, rec)
		if plan.Policy != nil {
			plan.Policy.Apply(rec)
		}
	}
	return page, nil
}

// emptyBandPage completes a page-mode page over a custom sort key with records that have no value,
// which follow all the values: the page's offset into them is its offset less the number of values.
func (s *Service) emptyBandPage(ctx context.Context, plan *listplan.Plan, workspace string, page *Page, read func(sqlgen.Stmt) error) error {
	values := plan.Offset + len(page.Records)
	if len(page.Records) == 0 && plan.Offset > 0 {
		found, err := store.QueryOne(ctx, s.st, s.d.CustomValueCount(plan, workspace, plan.Offset), func(row []any) error {
			values = int(store.Int(row[0]))
			return nil
		})
		if err != nil || !found {
			return fmt.Errorf("list %s: count values: %w", plan.Resource.Name, err)
		}
	}
	return read(s.d.CustomPage(plan, workspace, true, max(0, plan.Offset-values), plan.Limit+1-len(page.Records)))
}

// Create validates body and stores a new record owned by the actor.
func (s *Service) Create(ctx context.Context, a Actor, r *model.Resource, modelID string, body map[string]any) (Record, error) {
	ctx = store.WithWorkspace(ctx, a.Workspace)
	ctx, err := s.pinFields(ctx, a.Workspace, r, modelID)
	if err != nil {
		return nil, err
	}
	pol := a.Policy(r)
	if err := checkWritable(pol, body); err != nil {
		return nil, err
	}
	b, errs := s.schemas.Resource(r.Name).Validate(body, schema.Create)
	if errs != nil {
		return nil, errs
	}
	custom, customRefs, err := s.customChanges(ctx, a.Workspace, r, modelID, b.Custom, schema.Create, nil)
	if err != nil {
		return nil, err
	}
	id := NewID()
	now := s.timestamp()
	values := map[string]any{"owner_id": nullable(a.Member), "created_at": now, "updated_at": now, "custom_fields": jsonText(custom)}
	for k, v := range b.Values {
		f, _ := r.Field(k)
		values[f.Column] = v
	}
	key := sqlgen.Key{Workspace: a.Workspace, ModelID: modelID, ID: id}
	var rec, full Record
	err = s.st.Tx(ctx, func(q store.Querier) error {
		set, err := s.beforeHooks(ctx, q, a, r, "create", nil, b.Values)
		if err != nil {
			return err
		}
		for k, v := range set {
			f, _ := r.Field(k)
			b.Values[k], values[f.Column] = v, v
		}
		if err := setComputed(r, nil, b.Values, values); err != nil {
			return err
		}
		if err := s.checkReferences(ctx, q, r, a.Workspace, b.Values); err != nil {
			return err
		}
		if err := s.checkCustomReferences(ctx, q, a.Workspace, r, modelID, customRefs); err != nil {
			return err
		}
		if _, err := q.Exec(ctx, s.d.Insert(r, key, values)); err != nil {
			return fmt.Errorf("insert %s: %w", r.Name, err)
		}
		if len(custom) > 0 {
			fs, err := s.Fields(ctx, a.Workspace, r, modelID)
			if err != nil {
				return err
			}
			// A new record has no side-table rows yet: insert, with nothing to delete first.
			rows, err := s.customRows(nil, id, fs, custom, keysOf(custom))
			if err != nil {
				return err
			}
			if len(rows) > 0 {
				if _, err := q.Exec(ctx, s.d.InsertCustomValues(a.Workspace, rows)); err != nil {
					return fmt.Errorf("custom values of %s: %w", r.Name, err)
				}
			}
		}
		changes, err := s.createdValues(ctx, a.Workspace, r, modelID, b.Values, custom)
		if err != nil {
			return err
		}
		if err := s.audit(ctx, q, a, r, id, ActionCreate, changes, nil, now); err != nil {
			return err
		}
		return s.finish(ctx, q, a, r, key, pol, &rec, &full)
	})
	if err != nil {
		return nil, err
	}
	s.afterHooks(a, r, "create", b.Values, full)
	return rec, nil
}

// finish reads the written record back as the caller sees it (out) and as stored, unrestricted by the
// caller's role (full, for After hooks), and runs the actor's OnWrite hook, inside the write's transaction.
func (s *Service) finish(ctx context.Context, q store.Querier, a Actor, r *model.Resource, key sqlgen.Key, pol *access.Policy, out, full *Record) error {
	rec, err := s.get(ctx, q, r, key, false)
	if err != nil {
		return err
	}
	if s.hooks != nil && len(r.Hooks) > 0 {
		if *full, err = s.view(ctx, a.Workspace, r, access.Unrestricted(r), maps.Clone(rec)); err != nil {
			return err
		}
	}
	if *out, err = s.view(ctx, a.Workspace, r, pol, rec); err != nil {
		return err
	}
	if a.OnWrite != nil {
		return a.OnWrite(ctx, q, *out)
	}
	return nil
}

// checkWritable refuses body members naming fields the policy does not let the caller write.
func checkWritable(pol *access.Policy, body map[string]any) error {
	var errs field.ErrorList
	for k := range body {
		if f, ok := pol.Resource.Field(k); ok && f.Writable() && !pol.Writable(f) {
			errs = append(errs, field.New(field.CodeNotPermitted, field.NewPath(k), "your role may not write this field"))
		}
	}
	sort.Slice(errs, func(i, j int) bool { return errs[i].Field < errs[j].Field })
	return errs.Err()
}

// Update validates body and changes the given fields of one record.
func (s *Service) Update(ctx context.Context, a Actor, r *model.Resource, modelID, id string, body map[string]any) (Record, error) {
	pol := a.Policy(r)
	if err := checkWritable(pol, body); err != nil {
		return nil, err
	}
	b, errs := s.schemas.Resource(r.Name).Validate(body, schema.Update)
	if errs != nil {
		return nil, errs
	}
	if _, err := s.customValues(ctx, a.Workspace, r, modelID, b.Custom, schema.Update, nil); err != nil {
		return nil, err // refuse bad custom values before taking any lock
	}
	return s.change(ctx, a, r, modelID, id, func(ctx context.Context, q store.Querier, cur Record) (*edit, error) {
		if cur["archived"] == true {
			return nil, &ConflictError{Message: "the record is archived; restore it before changing it"}
		}
		if len(b.Values) == 0 && b.Custom == nil {
			return nil, nil
		}
		set, err := s.beforeHooks(ctx, q, a, r, "update", cur, b.Values)
		if err != nil {
			return nil, err
		}
		for k, v := range set {
			b.Values[k] = v
		}
		if err := s.checkReferences(ctx, q, r, a.Workspace, b.Values); err != nil {
			return nil, err
		}
		e := &edit{action: "update", values: map[string]any{}, changes: map[string]any{}}
		for k, v := range b.Values {
			f, _ := r.Field(k)
			e.values[f.Column] = v
			e.changes[k] = v
		}
		if err := setComputed(r, cur, b.Values, e.values); err != nil {
			return nil, err
		}
		if b.Custom != nil {
			current, _ := cur["custom_fields"].(map[string]any)
			custom, refs, err := s.customChanges(ctx, a.Workspace, r, modelID, b.Custom, schema.Update, current)
			if err != nil {
				return nil, err
			}
			if err := s.checkCustomReferences(ctx, q, a.Workspace, r, modelID, refs); err != nil {
				return nil, err
			}
			fs, err := s.Fields(ctx, a.Workspace, r, modelID)
			if err != nil {
				return nil, err
			}
			ids := changedIDs(fs, b.Custom)
			if err := s.syncCustom(ctx, q, a.Workspace, cur["id"].(string), fs, custom, ids); err != nil {
				return nil, fmt.Errorf("custom values of %s: %w", r.Name, err)
			}
			e.values["custom_fields"] = jsonText(custom)
			e.changes["custom_fields"] = b.Custom
			e.custom, e.customIDs = custom, ids
		}
		return e, nil
	})
}

// Archive soft-deletes one record, keeping reason.
func (s *Service) Archive(ctx context.Context, a Actor, r *model.Resource, modelID, id string, reason *string) (Record, error) {
	return s.change(ctx, a, r, modelID, id, func(ctx context.Context, q store.Querier, cur Record) (*edit, error) {
		if cur["archived"] == true {
			return nil, &ConflictError{Message: "the record is already archived"}
		}
		changes := map[string]any{}
		if reason != nil {
			changes["archive_reason"] = *reason
		}
		if _, err := s.beforeHooks(ctx, q, a, r, "archive", cur, changes); err != nil {
			return nil, err
		}
		now := s.timestamp()
		e := &edit{action: "archive", values: map[string]any{"archived": true, "archived_at": now, "updated_at": now, "archive_reason": nil}, changes: map[string]any{}}
		if reason != nil {
			e.values["archive_reason"] = *reason
			e.changes["archive_reason"] = *reason
		}
		return e, nil
	})
}

// Restore brings an archived record back.
func (s *Service) Restore(ctx context.Context, a Actor, r *model.Resource, modelID, id string) (Record, error) {
	return s.change(ctx, a, r, modelID, id, func(ctx context.Context, q store.Querier, cur Record) (*edit, error) {
		if cur["archived"] != true {
			return nil, &ConflictError{Message: "the record is not archived"}
		}
		if _, err := s.beforeHooks(ctx, q, a, r, "restore", cur, map[string]any{}); err != nil {
			return nil, err
		}
		return &edit{action: "restore", values: map[string]any{"archived": false, "archived_at": nil, "archive_reason": nil}, changes: map[string]any{}}, nil
	})
}

// edit is what a change writes: columns to set, and the audit entry.
type edit struct {
	action  string
	values  map[string]any // by column; updated_at is added
	changes map[string]any // by field key, for the audit trail and the hooks
	// custom is the record's stored custom values after the change (definition id -> value), and
	// customIDs the definitions the change wrote; nil when it wrote none.
	custom    map[string]any
	customIDs []string
}

// change runs one locked read-modify-write of a record inside the actor's record rule: decide sees the
// current record and returns the edit (nil: write nothing and return the record as it is). decide must
// use the ctx it is given, in which the custom fields are pinned: reading them from the pool instead,
// while holding the row lock, can wait for a connection that every other writer of the record holds
// while it waits for that lock, until the request deadline.
func (s *Service) change(ctx context.Context, a Actor, r *model.Resource, modelID, id string, decide func(ctx context.Context, q store.Querier, cur Record) (*edit, error)) (Record, error) {
	ctx = store.WithWorkspace(ctx, a.Workspace)
	if !model.IsUUID(id) {
		return nil, ErrNotFound
	}
	ctx, err := s.pinFields(ctx, a.Workspace, r, modelID)
	if err != nil {
		return nil, err
	}
	pol := a.Policy(r)
	key := sqlgen.Key{Workspace: a.Workspace, ModelID: modelID, ID: strings.ToLower(id), Policy: pol}
	var rec, full Record
	var written *edit
	err = s.st.Tx(ctx, func(q store.Querier) error {
		cur, err := s.get(ctx, q, r, key, true)
		if err != nil {
			return err
		}
		e, err := decide(ctx, q, cur)
		if err != nil {
			return err
		}
		if e == nil {
			if rec, err = s.view(ctx, a.Workspace, r, pol, cur); err != nil {
				return err
			}
			if a.OnWrite != nil {
				return a.OnWrite(ctx, q, rec)
			}
			return nil
		}
		key.Policy = nil // the locked read above already applied the record rule
		now, ok := e.values["updated_at"].(time.Time)
		if !ok {
			now = s.timestamp()
			e.values["updated_at"] = now
		}
		if _, err := q.Exec(ctx, s.d.Update(r, key, e.values)); err != nil {
			return fmt.Errorf("%s %s: %w", e.action, r.Name, err)
		}
		changes, previous, err := s.editValues(ctx, a.Workspace, r, modelID, cur, e)
		if err != nil {
			return err
		}
		if err := s.audit(ctx, q, a, r, key.ID, e.action, changes, previous, now); err != nil {
			return err
		}
		written = e
		return s.finish(ctx, q, a, r, key, pol, &rec, &full)
	})
	if err != nil {
		return nil, err
	}
	if written != nil {
		s.afterHooks(a, r, written.action, written.changes, full)
	}
	return rec, nil
}

// checkReferences verifies that every reference in rows names a record of the same workspace. Error
// paths are the field key, prefixed with the row index when there is more than one row.
func (s *Service) checkReferences(ctx context.Context, q store.Querier, r *model.Resource, workspace string, rows ...map[string]any) error {
	byTarget := map[string][]string{}
	keysOf := map[string][]field.Path{}
	for i, values := range rows {
		for k, v := range values {
			f, _ := r.Field(k)
			if f.Type != model.Reference || v == nil {
				continue
			}
			path := field.NewPath(k)
			if len(rows) > 1 {
				path = field.NewPath("").Index(i).Child(k)
			}
			byTarget[f.Target] = append(byTarget[f.Target], v.(string))
			keysOf[f.Target] = append(keysOf[f.Target], path)
		}
	}
	var errs field.ErrorList
	targets := make([]string, 0, len(byTarget))
	for t := range byTarget {
		targets = append(targets, t)
	}
	sort.Strings(targets)
	for _, t := range targets {
		tr, _ := s.cat.Resource(t)
		found := map[string]bool{}
		ids := unique(byTarget[t])
		for len(ids) > 0 {
			chunk := ids[:min(len(ids), 500)]
			ids = ids[len(chunk):]
			err := q.Query(ctx, s.d.ExistingIDs(tr, workspace, chunk), func(row []any) error {
				found[store.UUIDText(row[0])] = true
				return nil
			})
			if err != nil {
				return fmt.Errorf("check references to %s: %w", t, err)
			}
		}
		for i, id := range byTarget[t] {
			if !found[id] {
				errs = append(errs, field.New(field.CodeNotFound, keysOf[t][i], fmt.Sprintf("no %s record %s in this workspace", t, id)))
			}
		}
	}
	return errs.Err()
}

// audit writes the audit entry of one write of record id of r, inside its transaction q (see
// auditlog.go): changes and previous are JSON-shaped, by field key.
func (s *Service) audit(ctx context.Context, q store.Querier, a Actor, r *model.Resource, id, action string, changes, previous map[string]any, at time.Time) error {
	return s.writeAudit(ctx, q, a, at, []auditEntry{{resource: r.Name, recordID: id, action: action, changes: changes, previous: previous}})
}

func nullable(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// NewID returns a new record id: a time-ordered UUID (version 7), which keeps primary key inserts local.
func NewID() string { return uuid.Must(uuid.NewV7()).String() }

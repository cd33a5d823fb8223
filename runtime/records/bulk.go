package records

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"time"

	"github.com/workspace-records/records/engine/field"
	"github.com/workspace-records/records/engine/model"
	"github.com/workspace-records/records/engine/schema"
	"github.com/workspace-records/records/engine/sqlgen"
	"github.com/workspace-records/records/runtime/audit"
	"github.com/workspace-records/records/runtime/events"
	"github.com/workspace-records/records/runtime/store"
)

// Import validates bodies with the import schema (read-only declared fields allowed, as for an admin)
// and inserts them in one transaction, with the bulk path's writes (store.Copy: COPY on PostgreSQL). It
// is the bulk path of `recordsctl records import` and `recordsctl seed`, and works for read-only
// resources too. Nothing is written unless every body is valid; errors are prefixed with the body's
// index. It is PrepareLoad then WriteLoad.
func (s *Service) Import(ctx context.Context, a Actor, r *model.Resource, modelID string, bodies []map[string]any) (int, error) {
	c, err := s.Collection(ctx, a, r, modelID)
	if err != nil {
		return 0, err
	}
	l, err := s.PrepareLoad(a, c, bodies)
	if err != nil {
		return 0, err
	}
	return s.WriteLoad(ctx, l)
}

// A Load is import bodies validated and turned into the rows a create of each would write: the first
// half of Import, computation only, which a bulk loader (recordsctl seed) runs for the next bodies while
// the previous Load is written.
type Load struct {
	a       Actor
	c       *Collection
	values  []map[string]any // declared values by key, for the reference check
	inputs  []*customInput
	ids     []string
	customs []map[string]any // stored custom values by definition id
	records sqlgen.Rows
	custom  sqlgen.Rows
	trail   []audit.Entry
	events  []events.Event
	now     time.Time
}

// Len is how many records l writes.
func (l *Load) Len() int { return len(l.ids) }

// PrepareLoad validates bodies for an import into c by a and builds their rows (see Import). It reads
// nothing from the database: c is the collection the rows are written to.
func (s *Service) PrepareLoad(a Actor, c *Collection, bodies []map[string]any) (*Load, error) {
	return s.prepareLoad(a, c, bodies, false)
}

// prepareLoad is PrepareLoad; with api, each body is checked as an API create by a is (Create's
// checkBody: the create schema, a's field rules and reach) and the first refused one ends it, and the
// audit entries are creates.
func (s *Service) prepareLoad(a Actor, c *Collection, bodies []map[string]any, api bool) (*Load, error) {
	r := c.Resource
	sch := s.schemas.Resource(r.Name)
	l := &Load{a: a, c: c, now: s.timestamp(), values: make([]map[string]any, len(bodies)), inputs: make([]*customInput, len(bodies)),
		ids: make([]string, len(bodies)), customs: make([]map[string]any, len(bodies))}
	rows := make([]map[string]any, len(bodies))
	var errs field.ErrorList
	for i, body := range bodies {
		var b *schema.Body
		var ci *customInput
		if api {
			var err error
			if b, ci, err = s.checkBody(a, c, body, schema.Create); err != nil {
				return nil, err
			}
			l.inputs[i] = ci
		} else {
			// Declared and custom fields and the resource's rules in one pass, as for a create.
			var verrs field.ErrorList
			b, verrs = sch.ValidateAll(body, schema.Import)
			if b != nil {
				verrs = append(verrs, r.CheckRules(model.RuleCheck{Self: b.Values, Refused: refusedFields(verrs)})...)
			}
			given, form := schema.CustomOf(body)
			var cerrs field.ErrorList
			ci, cerrs = c.checkCustom(given, form, schema.Create)
			verrs = append(verrs, cerrs...)
			l.inputs[i] = ci
			for _, e := range verrs {
				errs = append(errs, &field.Error{Code: e.Code, Field: fmt.Sprintf("[%d].%s", i, e.Field), Message: e.Message})
			}
			if len(verrs) > 0 {
				continue
			}
		}
		// The columns of a create (Service.insert).
		custom := c.stored(ci, nil)
		row := make(map[string]any, len(b.Values)+4)
		row["owner_id"], row["created_at"], row["updated_at"], row["custom_fields"] = store.Nullable(a.Member), l.now, l.now, jsonText(custom)
		for k, v := range b.Values {
			f, _ := r.Field(k)
			row[f.Column] = v
		}
		if err := setComputed(r, nil, b.Values, row); err != nil {
			return nil, err
		}
		rows[i], l.values[i], l.ids[i], l.customs[i] = row, b.Values, store.NewID(), custom
	}
	if len(errs) > 0 {
		return nil, errs
	}
	l.records = s.d.RecordRows(r, c.Workspace, c.ModelID, rows, l.ids)
	// New records have no side-table rows yet: their custom values are inserted, nothing deleted.
	var cvs []sqlgen.CustomRow
	for i, custom := range l.customs {
		var err error
		if cvs, err = s.customRows(cvs, l.ids[i], c.Fields, custom, keysOf(custom)); err != nil {
			return nil, fmt.Errorf("import %s custom values: %w", r.Name, err)
		}
	}
	l.custom = s.d.CustomValueRows(c.Workspace, cvs)
	// One audit entry per record, as for a create; none for synthetic data.
	if !a.Synthetic {
		action := audit.ActionImport
		if api {
			action = audit.ActionCreate
		}
		l.trail = make([]audit.Entry, len(l.ids))
		for i := range l.trail {
			l.trail[i] = audit.Entry{Resource: r.Name, RecordID: l.ids[i], Action: action, Changes: createdValues(c, l.values[i], l.customs[i])}
		}
		if s.events != nil {
			// The feed's data of an imported record is what was imported (the rows are not read back).
			l.events = make([]events.Event, len(l.ids))
			for i, e := range l.trail {
				data := maps.Clone(e.Changes)
				data["id"] = l.ids[i]
				l.events[i] = recordEvent(c, l.ids[i], action, data, nil)
			}
		}
	}
	return l, nil
}

// WriteLoad writes l in one transaction after checking its references, and returns how many records
// it wrote.
func (s *Service) WriteLoad(ctx context.Context, l *Load) (int, error) {
	return s.writeLoad(ctx, l, nil)
}

// writeLoad is WriteLoad; then (nil: nothing) runs last in its transaction, with the new records' ids.
func (s *Service) writeLoad(ctx context.Context, l *Load, then func(ctx context.Context, q store.Querier, ids []string) error) (int, error) {
	a, c, r := l.a, l.c, l.c.Resource
	_, _, err := s.commit(ctx, a, c, nil, func(ctx context.Context, q store.Querier) (*outcome, error) {
		if err := s.checkReferences(ctx, q, a, r, c.Workspace, l.values...); err != nil {
			return nil, err
		}
		for i, ci := range l.inputs {
			if err := s.checkCustomReferences(ctx, q, a, c, ci); err != nil {
				return nil, fmt.Errorf("[%d]: %w", i, err)
			}
		}
		if _, err := store.Copy(ctx, q, s.d, l.records); err != nil {
			return nil, keyConflict(r, fmt.Errorf("import %s: %w", r.Name, err))
		}
		if _, err := store.Copy(ctx, q, s.d, l.custom); err != nil {
			return nil, fmt.Errorf("import %s custom values: %w", r.Name, err)
		}
		for i, custom := range l.customs {
			if err := s.checkCustomKeys(ctx, q, c, l.ids[i], custom, keysOf(custom)); err != nil {
				return nil, fmt.Errorf("[%d]: %w", i, err)
			}
		}
		if len(l.trail) > 0 {
			if err := audit.Copy(ctx, q, s.d, a.author(), l.now, l.trail); err != nil {
				return nil, err
			}
		}
		if len(l.events) > 0 {
			if err := events.Copy(ctx, q, s.d, a.eventActor(), l.now, l.events); err != nil {
				return nil, err
			}
		}
		if then != nil {
			if err := then(ctx, q, l.ids); err != nil {
				return nil, thenError{err}
			}
		}
		return &outcome{}, nil
	})
	if err != nil {
		return 0, err
	}
	return l.Len(), nil
}

// ErrNotBulk is PrepareCreates' and WriteCreates' answer when bodies cannot be written in bulk: the resource has plugin
// hooks, a body is refused, or the write meets a held unique value. Nothing was written; the caller
// writes them one by one (Batch), which gives each its own result.
var ErrNotBulk = errors.New("not writable in bulk")

// thenError is the error of a caller's then, passed on as it is.
type thenError struct{ err error }

func (e thenError) Error() string { return e.err.Error() }
func (e thenError) Unwrap() error { return e.err }

// PrepareCreates checks bodies as API creates by a into c are checked (Create's checks: the create
// schema, the resource's rules, a's field rules and reach) and builds their rows, reading nothing from
// the database: the first half of a bulk create, which a loader runs for the next bodies while the
// previous Load is written (WriteCreates). ErrNotBulk when the resource has plugin hooks or a body is
// refused.
func (s *Service) PrepareCreates(a Actor, c *Collection, bodies []map[string]any) (*Load, error) {
	if len(c.Resource.Hooks) > 0 {
		return nil, ErrNotBulk
	}
	l, err := s.prepareLoad(a, c, bodies, true)
	if err != nil {
		return nil, ErrNotBulk
	}
	return l, nil
}

// WriteCreates writes l (PrepareCreates) in one transaction with the bulk path's statements (store.Copy:
// COPY on PostgreSQL) after checking references and unique keys, with an audit entry (create) and an
// event per record; then (nil: nothing) runs last in the transaction with the new records' ids, its
// error returned as it is. ErrNotBulk when the write meets a refusal (a held unique value, a reference
// the actor may not reach): nothing was written.
func (s *Service) WriteCreates(ctx context.Context, l *Load, then func(ctx context.Context, q store.Querier, ids []string) error) error {
	_, err := s.writeLoad(ctx, l, then)
	var te thenError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &te):
		return te.err
	case fatal(err):
		return err
	}
	return ErrNotBulk
}

func unique(ids []string) []string {
	seen := make(map[string]bool, len(ids))
	out := make([]string, 0, len(ids))
	for _, id := range ids {
		if !seen[id] {
			seen[id] = true
			out = append(out, id)
		}
	}
	return out
}

// IDs returns up to n ids of r in workspace (newest first), for tools that need reference targets.
func (s *Service) IDs(ctx context.Context, workspace string, r *model.Resource, modelID string, n int) ([]string, error) {
	if err := s.live(); err != nil {
		return nil, err
	}
	ctx = store.WithWorkspace(ctx, workspace)
	sql := "SELECT id FROM " + sqlgen.Quote(r.Table) + " WHERE workspace_id = ?"
	args := []any{workspace}
	if r.ModelScoped {
		sql += " AND model_id = ?"
		args = append(args, modelID)
	}
	sql += fmt.Sprintf(" ORDER BY created_at DESC, id DESC LIMIT %d", n)
	var ids []string
	err := s.st.Query(ctx, s.d.Bind(sql, args...), func(row []any) error {
		ids = append(ids, store.UUIDText(row[0]))
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("ids of %s: %w", r.Name, err)
	}
	return ids, nil
}

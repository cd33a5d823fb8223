package records

// The write pipeline. Every write — create, update, archive, restore, link, unlink and the bulk import —
// runs the same way:
//
//  1. Outside any transaction, on the resolved Collection: the body is validated against the resource's
//     schema and the collection's custom fields, once, and a create's against the resource's rules
//     (model.Rule) too. Nothing is locked yet, so a bad body costs no lock.
//  2. commit opens one transaction and runs the write's step in it: read and lock the current state (none
//     for a create), check an update's rules on it (self: the stored record with the body over it;
//     oldSelf: the stored record), run the Before hooks, check references, compute formulas, write the row and its
//     custom values (the INSERT or UPDATE returns the row: no read-back), and settle — the audit entry,
//     then the record as the caller sees it. On PostgreSQL, statements whose result is not needed at
//     once go with the next one or the COMMIT (store.Later), and a new Idempotency-Key's claim with the
//     first (idempotency.Keys.Start).
//  3. In the same transaction, the Receipt (an Idempotency-Key's stored response) is written, so the
//     write and its answer commit or roll back together.
//  4. Once committed, the After hooks are told, in the background.

import (
	"context"
	"fmt"
	"maps"
	"sort"
	"time"

	"github.com/workspace-records/records/engine/field"
	"github.com/workspace-records/records/engine/model"
	"github.com/workspace-records/records/engine/sqlgen"
	"github.com/workspace-records/records/plugins/sdk"
	"github.com/workspace-records/records/runtime/audit"
	"github.com/workspace-records/records/runtime/idempotency"
	"github.com/workspace-records/records/runtime/store"
)

// Receipt is what a write stores with itself, in its own transaction: the response of a request sent
// with an Idempotency-Key, made from the written record as the caller sees it.
type Receipt struct {
	Claim *idempotency.Claim
	// Respond makes the response of the write of rec, which had the effect e.
	Respond func(rec Record, e Effect) idempotency.Response
}

// Effect is what a write did to its record.
type Effect uint8

const (
	Changed   Effect = iota // the write changed the record (a new version)
	Created                 // the write made the record
	Unchanged               // every value equalled the stored one: nothing was written, the version stays
)

// outcome is what one step wrote: the record as the caller sees it, what the step did to it, and the
// After hooks' call.
type outcome struct {
	rec    Record
	effect Effect
	after  *afterCall // nil: nothing to tell the plugins
}

// afterCall is a committed write as the After hooks are told of it.
type afterCall struct {
	r       *model.Resource
	op      sdk.Operation
	changes map[string]any // canonical, by field key
	full    Record         // the record as stored, unrestricted by the caller's role
}

// step is one write inside the pipeline's transaction.
type step func(ctx context.Context, q store.Querier) (*outcome, error)

// commit runs st in one transaction of c's workspace with the receipt rc (nil: none), then tells the
// After hooks. It returns the record as the caller sees it and what the write did to it.
func (s *Service) commit(ctx context.Context, a Actor, c *Collection, rc *Receipt, st step) (Record, Effect, error) {
	ctx = store.WithWorkspace(ctx, c.Workspace)
	var out *outcome
	err := s.st.Tx(ctx, func(q store.Querier) error {
		if rc != nil {
			if err := s.startClaim(ctx, q, c, rc.Claim); err != nil {
				return err
			}
		}
		var err error
		if out, err = st(ctx, q); err != nil {
			return err
		}
		if rc == nil {
			return nil
		}
		return s.idem.Complete(ctx, q, rc.Claim, rc.Respond(out.rec, out.effect))
	})
	if err != nil {
		return nil, 0, err
	}
	s.numberEvents(c.Workspace)
	if out.after != nil {
		s.afterHooks(a, out.after)
	}
	return out.rec, out.effect, nil
}

// startClaim claims a fresh Idempotency-Key with the write's first statement, first thing in its
// transaction q. Before hooks must not run for a request that turns out to be a replay: on a resource
// with hooks, the claim is settled (sent) before they run.
func (s *Service) startClaim(ctx context.Context, q store.Querier, c *Collection, claim *idempotency.Claim) error {
	if err := s.idem.Start(ctx, q, claim); err != nil {
		return err
	}
	if s.hooks != nil && len(c.Resource.Hooks) > 0 {
		return store.Flush(ctx, q)
	}
	return nil
}

// insert is the step of a create of c with the validated declared values (canonical, by key) and
// custom values.
func (s *Service) insert(a Actor, c *Collection, values map[string]any, ci *customInput) step {
	return func(ctx context.Context, q store.Querier) (*outcome, error) {
		r := c.Resource
		values := maps.Clone(values) // a step may run again (an upsert retried): the caller's map stays
		set, err := s.beforeHooks(ctx, q, a, r, sdk.OpCreate, nil, values)
		if err != nil {
			return nil, err
		}
		maps.Copy(values, set)
		id, now := store.NewID(), s.timestamp()
		custom := c.stored(ci, nil)
		cols := map[string]any{"owner_id": store.Nullable(a.Member), "created_at": now, "updated_at": now, "custom_fields": jsonText(custom)}
		for k, v := range values {
			f, _ := r.Field(k)
			cols[f.Column] = v
		}
		if err := setComputed(r, nil, values, cols); err != nil {
			return nil, err
		}
		if err := s.checkAllReferences(ctx, q, a, c, values, ci); err != nil {
			return nil, err
		}
		key := c.key(id, nil)
		rec, err := s.written(ctx, q, r, key, s.d.Insert(r, key, cols))
		if err != nil {
			return nil, keyConflict(r, fmt.Errorf("insert %s: %w", r.Name, err))
		}
		// A new record has no side-table rows yet: insert, with nothing to delete first.
		rows, err := s.customRows(nil, id, c.Fields, custom, keysOf(custom))
		if err != nil {
			return nil, err
		}
		if len(rows) > 0 {
			if err := store.Later(ctx, q, s.d.InsertCustomValues(c.Workspace, rows), false, func(err error) error {
				return fmt.Errorf("custom values of %s: %w", r.Name, err)
			}); err != nil {
				return nil, err
			}
		}
		if err := s.checkCustomKeys(ctx, q, c, id, custom, keysOf(custom)); err != nil {
			return nil, err
		}
		out, err := s.settle(ctx, q, a, c, id, audit.ActionCreate, createdValues(c, values, custom), nil, now, values, rec)
		if out != nil {
			out.effect = Created
		}
		return out, err
	}
}

// written runs w, the INSERT or UPDATE of the record of r at key, and returns the row it wrote as
// stored (the columns of a read of it), from the same statement.
func (s *Service) written(ctx context.Context, q store.Querier, r *model.Resource, key sqlgen.Key, w sqlgen.Stmt) (Record, error) {
	var rec Record
	found, err := store.QueryOne(ctx, q, s.d.Returning(r, w), func(row []any) error {
		var err error
		rec, err = s.toRecord(r, row, key.Workspace, key.ModelID)
		return err
	})
	if err != nil {
		return nil, err
	}
	if !found {
		return nil, ErrNotFound
	}
	return rec, nil
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

// change is the step of a locked read-modify-write of record id of c inside the caller's record rule,
// under the precondition m (nil: none), checked on the locked row: decide sees the current record and returns the edit (nil: write nothing and answer the record as it
// is).
func (s *Service) change(a Actor, c *Collection, id string, m *IfMatch, decide func(ctx context.Context, q store.Querier, cur Record) (*edit, error)) step {
	return func(ctx context.Context, q store.Querier) (*outcome, error) {
		r := c.Resource
		cur, err := s.get(ctx, q, r, c.key(id, c.Policy), true)
		if err != nil {
			return nil, err
		}
		// The precondition is checked on the locked row, after the record rule (a record the caller
		// cannot see is not found, whatever the precondition) and before anything else runs.
		if v, _ := VersionOf(cur); !m.holds(v) {
			return nil, ErrPreconditionFailed
		}
		e, err := decide(ctx, q, cur)
		if err != nil {
			return nil, err
		}
		if e == nil {
			return &outcome{rec: c.view(cur), effect: Unchanged}, nil
		}
		changes, previous := editValues(c, cur, e)
		if e.action == audit.ActionUpdate && len(changes) == 0 {
			// Every value given equals the stored one (after the Before hooks): a no-op, as an empty
			// PATCH is. The version and ETag stay, and no audit entry, event or delivery is written.
			return &outcome{rec: c.view(cur), effect: Unchanged}, nil
		}
		key := c.key(id, nil) // the locked read above already applied the record rule
		now, ok := e.values["updated_at"].(time.Time)
		if !ok {
			now = s.timestamp()
		}
		now = nextVersion(cur, now) // the version strictly grows with every write
		e.values["updated_at"] = now
		setSearchText(r, cur, e.values)
		rec, err := s.written(ctx, q, r, key, s.d.Update(r, key, e.values))
		if err != nil {
			return nil, keyConflict(r, fmt.Errorf("%s %s: %w", e.action, r.Name, err))
		}
		return s.settle(ctx, q, a, c, key.ID, e.action, changes, previous, now, e.changes, rec)
	}
}

// settle is the shared tail of every record write, inside its transaction: the audit entry, then the
// record as the caller sees it and, for the After hooks, as stored. rec is the record as the write's own
// statement returned it; nil reads it back. The audit entry and the event are queued (store.Later):
// they go to the database with the transaction's next statement or its COMMIT.
func (s *Service) settle(ctx context.Context, q store.Querier, a Actor, c *Collection, id, action string, changes, previous map[string]any, at time.Time, hookChanges map[string]any, rec Record) (*outcome, error) {
	r := c.Resource
	if rec == nil {
		var err error
		if rec, err = s.get(ctx, q, r, c.key(id, nil), false); err != nil {
			return nil, err
		}
	}
	if err := s.audit(ctx, q, a, r, id, action, changes, previous, at); err != nil {
		return nil, err
	}
	var full Record
	if s.events != nil || (s.hooks != nil && len(r.Hooks) > 0) {
		full = stored(c, rec)
	}
	if err := s.writeEvents(ctx, q, a, at, recordEvent(c, id, action, full, previous)); err != nil {
		return nil, err
	}
	out := &outcome{}
	if s.hooks != nil && len(r.Hooks) > 0 {
		// A record write's audit action (create, update, archive, restore) is its hook operation.
		out.after = &afterCall{r: r, op: sdk.Operation(action), changes: hookChanges, full: full}
	}
	out.rec = c.view(rec)
	return out, nil
}

// checkReferences verifies that every reference in rows names a record of the same workspace that a may
// see: a record outside a's record rule on its resource is answered exactly as one that does not exist,
// as a link to it would be. Error paths are the field key, prefixed with the row index when there is
// more than one row.
func (s *Service) checkReferences(ctx context.Context, q store.Querier, a Actor, r *model.Resource, workspace string, rows ...map[string]any) error {
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
			err := q.Query(ctx, s.d.ExistingIDs(tr, workspace, a.Policy(tr), chunk), func(row []any) error {
				found[store.UUIDText(row[0])] = true
				return nil
			})
			if err != nil {
				return fmt.Errorf("check references to %s: %w", t, err)
			}
		}
		for i, id := range byTarget[t] {
			if !found[id] {
				errs = append(errs, field.New(field.CodeNotFound, keysOf[t][i], fmt.Sprintf("no %s record %s that you can see in this workspace", t, id)))
			}
		}
	}
	return errs.Err()
}

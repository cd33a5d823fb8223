package records

// Batch writes (POST /v1/{resource}/batch): up to MaxBatchItems creates, updates, upserts, archives and
// restores of one collection, answered with one result per item, in order.
//
// Every item is validated first, outside any transaction, exactly as its own request would be. Then
// one transaction runs the items in order, each inside a savepoint: an item that fails is rolled back to
// its savepoint alone. A run of consecutive creates is written in multi-row statements (one insert, one
// statement of custom values, one of audit entries) under one savepoint; when that run fails, it is
// rolled back and its items run one by one, so that each gets its own result. The Idempotency-Key's
// stored response is written in the same transaction.
//
//   - per_item: the transaction commits what succeeded; each failed item has its error.
//   - atomic: any failure rolls the whole transaction back; the batch fails with every item's result
//     (the failed ones with their errors, the others batch_aborted).
//
// An item whose failure is the service's own (a database or a plugin that cannot answer: 5xx) fails the
// whole batch in either mode, with nothing written: its retry is the whole batch's.

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"

	"github.com/workspace-records/records/engine/apierr"
	"github.com/workspace-records/records/engine/field"
	"github.com/workspace-records/records/engine/model"
	"github.com/workspace-records/records/engine/route"
	"github.com/workspace-records/records/engine/schema"
	"github.com/workspace-records/records/engine/sqlgen"
	"github.com/workspace-records/records/plugins/sdk"
	"github.com/workspace-records/records/runtime/audit"
	"github.com/workspace-records/records/runtime/events"
	"github.com/workspace-records/records/runtime/idempotency"
	"github.com/workspace-records/records/runtime/store"
)

// MaxBatchItems is the most items one batch takes (route.MaxBatchItems, which the document states).
const MaxBatchItems = route.MaxBatchItems

// The batch modes.
const (
	BatchAtomic  = "atomic"
	BatchPerItem = "per_item"
)

// The operations of batch items.
const (
	ItemCreate  = "create"
	ItemUpdate  = "update"
	ItemUpsert  = "upsert"
	ItemArchive = "archive"
	ItemRestore = "restore"
)

// BatchItem is one item of a batch as the request gave it.
type BatchItem struct {
	Op   string
	ID   string         // update, archive, restore
	Key  string         // upsert: the unique key
	Val  string         // upsert: its value, as a path segment would carry it
	Body map[string]any // create, update, upsert: the record body; archive: {"reason": …} or nil
	// IfMatch is the item's precondition (update, archive, restore, upsert); IfNoneMatch makes an
	// upsert create only.
	IfMatch     *IfMatch
	IfNoneMatch bool
	// Problem is what makes the item malformed as the request gave it (nil: none): it is the item's
	// result, and the item does not run.
	Problem error
}

// BatchResult is the outcome of one item: a record (Status 200, or 201 when the item made it), or an
// error.
type BatchResult struct {
	Status int
	Record Record
	Effect Effect // what a written item did to its record
	Err    *apierr.Error
}

// BatchFailedError is an atomic batch that wrote nothing: Results has every item's outcome.
type BatchFailedError struct {
	Results []BatchResult
}

func (e *BatchFailedError) Error() string {
	n := 0
	for _, r := range e.Results {
		if r.Err != nil && r.Err.Code != apierr.BatchAborted {
			n++
		}
	}
	return fmt.Sprintf("atomic batch failed: %d item(s) refused", n)
}

// BatchReceipt is what a batch writes with itself, in its own transaction: the Idempotency-Key's stored
// response (Claim and Respond; nil Claim: none), and Then (nil: nothing), which a bulk job uses to
// record its progress and its rows' results in the transaction that writes them. An error of Then rolls
// the batch back and is the batch's.
type BatchReceipt struct {
	Claim   *idempotency.Claim
	Respond func(results []BatchResult) idempotency.Response
	Then    func(ctx context.Context, q store.Querier, results []BatchResult) error
}

// item is one validated item, ready to run.
type item struct {
	create *creation // a create, which may run with its neighbours in multi-row statements
	st     step      // any other item
	up     *upsert   // an upsert, which may run once more (upsert.retry)
	err    error     // the item's validation problems: it does not run
}

// creation is a validated create.
type creation struct {
	values map[string]any
	ci     *customInput
}

// Batch validates items and runs them on c in mode (BatchAtomic or BatchPerItem), with the receipt rc
// (nil: none). It returns one result per item; an atomic batch with a refused item returns a
// *BatchFailedError and writes nothing.
func (s *Service) Batch(ctx context.Context, a Actor, c *Collection, mode string, items []BatchItem, rc *BatchReceipt) ([]BatchResult, error) {
	prepared := make([]item, len(items))
	checked := make([]BatchResult, len(items)) // the validation's refusals
	invalid := false
	for i, it := range items {
		prepared[i] = s.prepare(ctx, a, c, it)
		if prepared[i].err != nil {
			checked[i] = failed(prepared[i].err)
			invalid = true
		}
	}
	if invalid && mode == BatchAtomic {
		return nil, &BatchFailedError{Results: aborted(checked)}
	}
	ctx = store.WithWorkspace(ctx, c.Workspace)
	var afters []*afterCall
	var results []BatchResult
	err := s.st.Tx(ctx, func(q store.Querier) error {
		afters, results = afters[:0], slices.Clone(checked)
		if rc != nil && rc.Claim != nil {
			if err := s.startClaim(ctx, q, c, rc.Claim); err != nil {
				return err
			}
		}
		refused := invalid
		for i := 0; i < len(prepared); {
			// A run of creates goes in multi-row statements; on any refusal its items run alone.
			j := i
			for j < len(prepared) && prepared[j].create != nil && prepared[j].err == nil {
				j++
			}
			if j-i > 1 {
				outs, err := s.savepoint(ctx, q, func() ([]*outcome, error) { return s.insertMany(ctx, q, a, c, prepared[i:j]) })
				if err == nil {
					for k, out := range outs {
						results[i+k] = BatchResult{Status: http.StatusCreated, Record: out.rec, Effect: Created}
						afters = appendAfter(afters, out)
					}
					i = j
					continue
				}
				if fatal(err) {
					return err
				}
			} else {
				j = i + 1
			}
			for ; i < j; i++ {
				if prepared[i].err != nil {
					continue
				}
				out, err := s.runItem(ctx, q, a, c, &prepared[i])
				switch {
				case err == nil:
					results[i] = BatchResult{Status: http.StatusOK, Record: out.rec, Effect: out.effect}
					if out.effect == Created {
						results[i].Status = http.StatusCreated
					}
					afters = appendAfter(afters, out)
				case fatal(err):
					return err
				default:
					results[i] = failed(err)
					refused = true
				}
			}
		}
		if refused && mode == BatchAtomic {
			return &BatchFailedError{Results: aborted(results)}
		}
		if rc == nil {
			return nil
		}
		if rc.Then != nil {
			if err := rc.Then(ctx, q, results); err != nil {
				return err
			}
		}
		if rc.Claim == nil {
			return nil
		}
		return s.idem.Complete(ctx, q, rc.Claim, rc.Respond(results))
	})
	if err != nil {
		return nil, err
	}
	s.numberEvents(c.Workspace)
	for _, w := range afters {
		s.afterHooks(a, w)
	}
	return results, nil
}

// prepare validates one item, as its own request would be validated.
func (s *Service) prepare(ctx context.Context, a Actor, c *Collection, it BatchItem) item {
	if it.Problem != nil {
		return item{err: it.Problem}
	}
	r := c.Resource
	allowed := map[string]bool{
		ItemCreate: r.Ops.Has(model.OpCreate), ItemUpdate: r.Ops.Has(model.OpUpdate),
		ItemUpsert:  r.Ops.Has(model.OpCreate) && r.Ops.Has(model.OpUpdate) && !r.ModelScoped,
		ItemArchive: r.Ops.Has(model.OpArchive), ItemRestore: r.Ops.Has(model.OpRestore),
	}
	if !allowed[it.Op] {
		return item{err: apierr.InvalidField(field.CodeInvalid, "op", fmt.Sprintf("%s does not take %q items", r.Name, it.Op))}
	}
	switch it.Op {
	case ItemCreate:
		b, ci, err := s.checkBody(a, c, it.Body, schema.Create)
		if err != nil {
			return item{err: err}
		}
		return item{create: &creation{values: b.Values, ci: ci}}
	case ItemUpsert:
		u, err := s.planUpsert(a, c, it.Key, it.Val, it.Body, UpsertConditions{IfMatch: it.IfMatch, IfNoneMatch: it.IfNoneMatch})
		if err != nil {
			return item{err: err}
		}
		return item{st: s.upsertStep(a, c, u), up: u}
	}
	if !model.IsUUID(it.ID) {
		return item{err: apierr.InvalidField(field.CodeFormat, "id", "must be a UUID")}
	}
	var decide func(ctx context.Context, q store.Querier, cur Record) (*edit, error)
	switch it.Op {
	case ItemUpdate:
		b, ci, err := s.checkBody(a, c, it.Body, schema.Update)
		if err != nil {
			return item{err: s.withRules(ctx, c, it.ID, it.Body, err)}
		}
		decide = s.updateEdit(a, c, b, ci)
	case ItemArchive:
		reason, err := archiveReason(it.Body)
		if err != nil {
			return item{err: err}
		}
		decide = s.archiveEdit(a, c, reason)
	case ItemRestore:
		if len(it.Body) > 0 {
			return item{err: apierr.Invalid("restore takes no body.", nil)}
		}
		decide = s.restoreEdit(a, c)
	}
	return item{st: s.change(a, c, it.ID, it.IfMatch, decide)}
}

// runItem runs one item inside its savepoint (an upsert that met a concurrent create runs once more).
func (s *Service) runItem(ctx context.Context, q store.Querier, a Actor, c *Collection, it *item) (*outcome, error) {
	st := it.st
	if it.create != nil {
		st = s.insert(a, c, it.create.values, it.create.ci)
	}
	outs, err := s.savepoint(ctx, q, func() ([]*outcome, error) {
		out, err := st(ctx, q)
		return []*outcome{out}, err
	})
	if it.up != nil && it.up.retry(err) {
		outs, err = s.savepoint(ctx, q, func() ([]*outcome, error) {
			out, err := st(ctx, q)
			return []*outcome{out}, err
		})
	}
	if err != nil {
		return nil, err
	}
	return outs[0], nil
}

// savepoint runs fn inside a savepoint of q's transaction: what fn wrote is rolled back when it fails.
// The savepoint goes with fn's first statement, and its release with the statements fn queued
// (store.Later), which are sent before fn counts as done, so that a failure of one of them is fn's; when
// fn fails, what it queued is dropped with the rest of its writes.
func (s *Service) savepoint(ctx context.Context, q store.Querier, fn func() ([]*outcome, error)) ([]*outcome, error) {
	if err := store.Later(ctx, q, sqlgen.Stmt{SQL: "SAVEPOINT batch_item"}, false, nil); err != nil {
		return nil, brokenTx{fmt.Errorf("savepoint: %w", err)}
	}
	mark := store.MarkOf(q)
	outs, err := fn()
	if err == nil {
		if err = store.Later(ctx, q, sqlgen.Stmt{SQL: "RELEASE SAVEPOINT batch_item"}, false, nil); err == nil {
			err = store.Flush(ctx, q)
		}
		if err == nil {
			return outs, nil
		}
	}
	store.DiscardSince(q, mark)
	if _, rerr := q.Exec(ctx, sqlgen.Stmt{SQL: "ROLLBACK TO SAVEPOINT batch_item"}); rerr != nil {
		return nil, brokenTx{fmt.Errorf("roll back to savepoint after %v: %w", err, rerr)}
	}
	if _, rerr := q.Exec(ctx, sqlgen.Stmt{SQL: "RELEASE SAVEPOINT batch_item"}); rerr != nil {
		return nil, brokenTx{fmt.Errorf("release savepoint: %w", rerr)}
	}
	return nil, err
}

// insertMany is the step of a run of creates of c in multi-row statements: the Before hooks of each,
// every reference checked in one query per target, the rows in one insert that returns them, their
// custom values and audit entries in one statement each.
func (s *Service) insertMany(ctx context.Context, q store.Querier, a Actor, c *Collection, run []item) ([]*outcome, error) {
	r := c.Resource
	n := len(run)
	now := s.timestamp()
	rows := make([]map[string]any, n)
	values := make([]map[string]any, n)
	customs := make([]map[string]any, n)
	ids := make([]string, n)
	trail := make([]audit.Entry, n)
	var cvs []sqlgen.CustomRow
	for i, it := range run {
		v := maps.Clone(it.create.values)
		set, err := s.beforeHooks(ctx, q, a, r, sdk.OpCreate, nil, v)
		if err != nil {
			return nil, err
		}
		maps.Copy(v, set)
		custom := c.stored(it.create.ci, nil)
		row := map[string]any{"owner_id": store.Nullable(a.Member), "created_at": now, "updated_at": now, "custom_fields": jsonText(custom)}
		for k, x := range v {
			f, _ := r.Field(k)
			row[f.Column] = x
		}
		if err := setComputed(r, nil, v, row); err != nil {
			return nil, err
		}
		if err := s.checkCustomReferences(ctx, q, a, c, it.create.ci); err != nil {
			return nil, err
		}
		ids[i], rows[i], values[i], customs[i] = store.NewID(), row, v, custom
		if cvs, err = s.customRows(cvs, ids[i], c.Fields, custom, keysOf(custom)); err != nil {
			return nil, err
		}
		trail[i] = audit.Entry{Resource: r.Name, RecordID: ids[i], Action: audit.ActionCreate, Changes: createdValues(c, v, custom)}
	}
	if err := s.checkReferences(ctx, q, a, r, c.Workspace, values...); err != nil {
		return nil, err
	}
	written := make(map[string]Record, n)
	err := q.Query(ctx, s.d.Returning(r, s.d.InsertMany(r, c.Workspace, c.ModelID, rows, ids)), func(row []any) error {
		rec, err := s.toRecord(r, row, c.Workspace, c.ModelID)
		if err == nil {
			written[rec["id"].(string)] = rec
		}
		return err
	})
	if err != nil {
		return nil, keyConflict(r, fmt.Errorf("insert %s: %w", r.Name, err))
	}
	if len(cvs) > 0 {
		// Sent with the next statement, or with the audit entries when the savepoint is released.
		if err := store.Later(ctx, q, s.d.InsertCustomValues(c.Workspace, cvs), false, func(err error) error {
			return fmt.Errorf("custom values of %s: %w", r.Name, err)
		}); err != nil {
			return nil, err
		}
	}
	for i, custom := range customs {
		if err := s.checkCustomKeys(ctx, q, c, ids[i], custom, keysOf(custom)); err != nil {
			return nil, err
		}
	}
	if err := audit.Write(ctx, q, s.d, a.author(), now, trail); err != nil {
		return nil, err
	}
	outs := make([]*outcome, n)
	var evs []events.Event
	for i, id := range ids {
		rec, ok := written[id]
		if !ok {
			return nil, fmt.Errorf("insert %s: record %s not returned", r.Name, id)
		}
		out := &outcome{effect: Created}
		var full Record
		if s.events != nil || (s.hooks != nil && len(r.Hooks) > 0) {
			full = stored(c, rec)
		}
		if s.events != nil {
			evs = append(evs, recordEvent(c, id, audit.ActionCreate, full, nil))
		}
		if s.hooks != nil && len(r.Hooks) > 0 {
			out.after = &afterCall{r: r, op: sdk.OpCreate, changes: values[i], full: full}
		}
		out.rec = c.view(rec)
		outs[i] = out
	}
	if err := s.writeEvents(ctx, q, a, now, evs...); err != nil {
		return nil, err
	}
	return outs, nil
}

func appendAfter(afters []*afterCall, out *outcome) []*afterCall {
	if out.after != nil {
		afters = append(afters, out.after)
	}
	return afters
}

// brokenTx is a savepoint that could not be rolled back or released: the transaction cannot go on.
type brokenTx struct{ error }

func (b brokenTx) Unwrap() error { return b.error }

// fatal reports whether err is the service's own failure (5xx, or a transaction that cannot go on),
// which fails the whole batch.
func fatal(err error) bool {
	var bf *BatchFailedError
	var bt brokenTx
	if errors.As(err, &bf) || errors.As(err, &bt) {
		return true
	}
	return Explain(err).Status() >= 500
}

func failed(err error) BatchResult {
	e := Explain(err)
	return BatchResult{Status: e.Status(), Err: e}
}

// aborted marks the items of a failed atomic batch that were not refused themselves.
func aborted(results []BatchResult) []BatchResult {
	for i := range results {
		if results[i].Err == nil {
			results[i] = failed(apierr.New(apierr.BatchAborted, "Not written: another item of this atomic batch was refused."))
		}
	}
	return results
}

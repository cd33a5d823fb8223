package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/uptrace/bunrouter"

	"github.com/workspace-records/records/engine/access"
	"github.com/workspace-records/records/engine/apierr"
	"github.com/workspace-records/records/engine/model"
	"github.com/workspace-records/records/runtime/idempotency"
	"github.com/workspace-records/records/runtime/jsonenc"
	"github.com/workspace-records/records/runtime/records"
)

// encode renders a response body exactly as writeJSON does.
func encode(v any) []byte {
	data, err := jsonenc.Marshal(v)
	if err != nil {
		return []byte(`{"error":{"type":"api_error","code":"internal_error","message":"response encoding failed"}}` + "\n")
	}
	return append(data, '\n')
}

func writeRaw(w http.ResponseWriter, status int, body []byte) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// releaseGrace is how long past the request's deadline the release of a failed write's
// Idempotency-Key may hold its answer.
const releaseGrace = 250 * time.Millisecond

// write is one write as the handler runs it: the status of its answer (201 instead when the write made
// the record), the Location of a made record, and the service call, given the receipt to store with the
// write (nil without an Idempotency-Key), which says what the write did to the record.
type write struct {
	status   int
	location func(records.Record) string // nil: no Location header
	run      func(rc *records.Receipt) (rec records.Record, e records.Effect, err error)
}

// changed is the run of a write that changes a record and never makes one or leaves it as it was.
func changed(run func(rc *records.Receipt) (records.Record, error)) func(rc *records.Receipt) (records.Record, records.Effect, error) {
	return func(rc *records.Receipt) (records.Record, records.Effect, error) {
		rec, err := run(rc)
		return rec, records.Changed, err
	}
}

// UnchangedHeader marks the answer of an update or upsert that changed nothing: every value sent equalled
// the stored one, so nothing was written (the version, ETag, audit trail, events and webhooks are as they
// were).
const UnchangedHeader = "Record-Unchanged"

// write runs a record write under the Idempotency-Key rules (idempotent): its response, stored in the
// write's own transaction when a key was sent, is the record with its ETag (and Location when the write
// made it).
func (h *Handler) write(w http.ResponseWriter, req bunrouter.Request, a records.Actor, c *records.Collection, body map[string]any, wr write) error {
	respond := func(rec records.Record, e records.Effect) idempotency.Response {
		r := idempotency.Response{Status: wr.status, Header: http.Header{}, Body: encode(map[string]any{"data": rec})}
		if v, ok := records.VersionOf(rec); ok {
			r.Header.Set("ETag", records.ETag(v, r.Body))
		}
		if e == records.Unchanged {
			r.Header.Set(UnchangedHeader, "true")
		}
		if e == records.Created {
			r.Status = http.StatusCreated
			if wr.location != nil {
				r.Header.Set("Location", wr.location(rec))
			}
		}
		return r
	}
	return h.idempotent(w, req, a, h.recordReplay(w, req, a, c), body, true, func(claim *idempotency.Claim) (idempotency.Response, error) {
		var rc *records.Receipt
		var stored idempotency.Response
		if claim != nil {
			rc = &records.Receipt{Claim: claim, Respond: func(rec records.Record, e records.Effect) idempotency.Response {
				stored = respond(rec, e)
				return stored
			}}
		}
		rec, e, err := wr.run(rc)
		if err != nil || claim != nil {
			return stored, err
		}
		return respond(rec, e), nil
	})
}

// idempotent runs a write. Without an Idempotency-Key it simply runs (run(nil)). With one, the key is
// claimed first; a repeat of a completed request replays its response; run is given the claim, and
// stores the response of a new request in the same transaction as its write; a failed request releases
// the key. With fresh, a key presumed new is claimed inside the write's own transaction (PostgreSQL:
// idempotency.Keys.Fresh; the write must call Keys.Start first thing and Keys.Complete last); a key
// that is there already or held by a write under way is examined the usual way (Keys.Claim).
func (h *Handler) idempotent(w http.ResponseWriter, req bunrouter.Request, a records.Actor, rp replayer, body map[string]any, fresh bool, run func(claim *idempotency.Claim) (idempotency.Response, error)) error {
	ctx := req.Context()
	vals, present := req.Header["Idempotency-Key"]
	if !present {
		resp, err := run(nil)
		if err != nil {
			return err
		}
		writeResponse(w, resp)
		return nil
	}
	if len(vals) != 1 || !idempotency.ValidKey(vals[0]) {
		return apierr.New(apierr.InvalidRequest, idempotency.ErrInvalidKey.Error()+", sent once.")
	}
	p := principal(ctx)
	fp := idempotency.Fingerprint(req.Method, req.URL.Path, req.URL.RawQuery, body)
	// claimed runs the write under claim and answers; a failed write frees the key.
	claimed := func(claim *idempotency.Claim) error {
		resp, err := run(claim)
		if err == nil {
			writeResponse(w, resp)
			return nil
		}
		if errors.Is(err, idempotency.ErrTaken) || !claim.Held() {
			// The key was there already, or the write failed before its claim was sent: nothing ran
			// under it, nothing to free; the key is examined (Claim) before anything else.
			return errNotClaimed{err}
		}
		if !claim.Stored() {
			return err // a fresh claim ended with its transaction: nothing to free
		}
		// Nothing was written: free the key so that a corrected retry runs. The release must not be
		// skipped because the request's context ended, nor hold the answer more than releaseGrace past
		// the request's deadline when the database does not answer; a claim left behind then ends with
		// its lease.
		until := time.Now().Add(releaseGrace)
		if d, ok := ctx.Deadline(); ok && d.After(until) {
			until = d
		}
		rctx, cancel := context.WithDeadline(context.WithoutCancel(ctx), until)
		rerr := h.idem.Release(rctx, claim)
		cancel()
		if rerr != nil {
			h.log.Warn("release idempotency key", "err", rerr)
		}
		if errors.Is(err, idempotency.ErrLost) {
			return apierr.New(apierr.IdempotencyKeyInUse, "Another request took over this Idempotency-Key; retry to get its result.")
		}
		return err
	}
	var nc errNotClaimed
	if fresh {
		if fc := h.idem.Fresh(a.Workspace, p.Key.ID, vals[0], fp); fc != nil {
			if err := claimed(fc); !errors.As(err, &nc) {
				return err
			}
		}
	}
	claim, replay, err := h.idem.Claim(ctx, a.Workspace, p.Key.ID, vals[0], fp)
	switch {
	case errors.Is(err, idempotency.ErrReused):
		return apierr.New(apierr.IdempotencyKeyReused, "This Idempotency-Key was already used for a different request; use a new key.")
	case errors.Is(err, idempotency.ErrInUse):
		return apierr.New(apierr.IdempotencyKeyInUse, "A request with this Idempotency-Key is still running; retry when it has finished.")
	case err != nil:
		return err
	case replay != nil:
		h.metrics.Replay(rp.label)
		return rp.answer(replay)
	}
	err = claimed(claim)
	if errors.As(err, &nc) {
		return nc.err // a claim made by Claim is held: not reached
	}
	return err
}

// replayer answers a request whose Idempotency-Key holds a completed response: label names it in the
// metrics, and answer shows the stored response as the caller may see it now.
type replayer struct {
	label  string
	answer func(r *idempotency.Response) error
}

// recordReplay is the replayer of a record write of c: the stored answer under the caller's record and
// field rules as they are now (replay).
func (h *Handler) recordReplay(w http.ResponseWriter, req bunrouter.Request, a records.Actor, c *records.Collection) replayer {
	return replayer{label: c.Resource.Name, answer: func(r *idempotency.Response) error { return h.replay(w, req, a, c.Policy, r) }}
}

// errNotClaimed is the failure of a write whose Fresh claim was not stored.
type errNotClaimed struct{ err error }

func (e errNotClaimed) Error() string { return e.err.Error() }
func (e errNotClaimed) Unwrap() error { return e.err }

func writeResponse(w http.ResponseWriter, r idempotency.Response) {
	for k, v := range r.Header {
		w.Header()[k] = v
	}
	writeRaw(w, r.Status, r.Body)
}

// replay answers with a stored first response, byte for byte, marked Idempotent-Replayed. The caller's
// record rule and field rules are applied again first, which leaves the bytes unchanged unless they
// became stricter since (a new role, a reassigned owner): a replay never shows a record the caller can no
// longer reach — a record answer becomes 404 as a read would, a batch item the not_found result — nor a
// value the caller may no longer read.
func (h *Handler) replay(w http.ResponseWriter, req bunrouter.Request, a records.Actor, pol *access.Policy, r *idempotency.Response) error {
	ctx := req.Context()
	body := r.Body
	dec := json.NewDecoder(bytes.NewReader(r.Body))
	dec.UseNumber()
	var doc map[string]any
	if err := dec.Decode(&doc); err == nil {
		switch data := doc["data"].(type) {
		case map[string]any: // one record
			id, _ := data["id"].(string)
			if pid := req.Param("id"); pid != "" {
				id = pid
			}
			if model.IsUUID(id) {
				ok, err := h.svc.Visible(ctx, a, pol, id)
				if err != nil {
					return err
				}
				if !ok {
					return records.ErrNotFound
				}
			}
			doc["data"] = pol.Apply(data)
		case []any: // a batch's results
			for i, x := range data {
				res, _ := x.(map[string]any)
				rec, _ := res["data"].(map[string]any)
				if rec == nil {
					continue
				}
				id, _ := rec["id"].(string)
				ok, err := h.svc.Visible(ctx, a, pol, id)
				if err != nil {
					return err
				}
				if !ok {
					data[i] = itemError(records.Explain(records.ErrNotFound), requestID(ctx))
					continue
				}
				res["data"] = pol.Apply(rec)
			}
		}
		body = encode(doc)
	}
	for k, v := range r.Header {
		w.Header()[k] = v
	}
	w.Header().Set("Idempotent-Replayed", "true")
	writeRaw(w, r.Status, body)
	return nil
}

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
	"github.com/workspace-records/records/runtime/records"
)

// encode renders a response body exactly as writeJSON does.
func encode(v any) []byte {
	data, err := json.Marshal(v)
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

// write is one write as the handler runs it: the status of its answer, the Location of a create, and
// the service call, given the receipt to store with the write (nil without an Idempotency-Key).
type write struct {
	status   int
	location func(records.Record) string // nil: no Location header
	run      func(rc *records.Receipt) (records.Record, error)
}

// write runs a record write. Without an Idempotency-Key it simply runs. With one, the key is claimed
// first (on PostgreSQL a new key in the write's first round trip, committed ahead of the write's
// transaction); a repeat of a completed request replays its response; the response of a new request is
// stored in the same transaction as its write (records.Receipt); a failed request releases the key.
func (h *Handler) write(w http.ResponseWriter, req bunrouter.Request, a records.Actor, c *records.Collection, body map[string]any, wr write) error {
	ctx := req.Context()
	respond := func(rec records.Record) idempotency.Response {
		r := idempotency.Response{Status: wr.status, Header: http.Header{}, Body: encode(map[string]any{"data": rec})}
		if v, ok := records.VersionOf(rec); ok {
			r.Header.Set("ETag", records.ETag(v, r.Body))
		}
		if wr.location != nil {
			r.Header.Set("Location", wr.location(rec))
		}
		return r
	}
	vals, present := req.Header["Idempotency-Key"]
	if !present {
		rec, err := wr.run(nil)
		if err != nil {
			return err
		}
		writeResponse(w, respond(rec))
		return nil
	}
	if len(vals) != 1 || !idempotency.ValidKey(vals[0]) {
		return apierr.New(apierr.InvalidRequest, idempotency.ErrInvalidKey.Error()+", sent once.")
	}
	p := principal(ctx)
	fp := idempotency.Fingerprint(req.Method, req.URL.Path, req.URL.RawQuery, body)
	// claimed runs the write under claim, stores its response with it, and answers; a failed write
	// frees the key.
	claimed := func(claim *idempotency.Claim) error {
		var stored idempotency.Response
		rc := &records.Receipt{Claim: claim, Respond: func(rec records.Record) idempotency.Response {
			stored = respond(rec)
			return stored
		}}
		if _, err := wr.run(rc); err != nil {
			if errors.Is(err, idempotency.ErrTaken) || !claim.Held() {
				// The key was there already, or the write failed before its claim was sent: nothing
				// ran under it, nothing to free; the key is examined (Claim) before anything else.
				return errNotClaimed{err}
			}
			// Nothing was written: free the key so that a corrected retry runs. The release must not
			// be skipped because the request's context ended, nor hold the answer more than
			// releaseGrace past the request's deadline when the database does not answer; a claim
			// left behind then ends with its lease.
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
		writeResponse(w, stored)
		return nil
	}
	// The usual case, a new key, is claimed in the write's own first round trip (PostgreSQL); a key
	// that is there already is examined below.
	if fresh := h.idem.Fresh(a.Workspace, p.Key.ID, vals[0], fp); fresh != nil {
		var nc errNotClaimed
		if err := claimed(fresh); !errors.As(err, &nc) {
			return err
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
		h.metrics.Replay(c.Resource.Name)
		// The caller's record rule may have narrowed since (a new role, a reassigned owner): a replay
		// never shows a record the caller can no longer reach; it answers as a read of it would.
		if id := replayedRecord(req, replay); id != "" {
			ok, err := h.svc.Visible(ctx, a, c.Policy, id)
			if err != nil {
				return err
			}
			if !ok {
				return records.ErrNotFound
			}
		}
		return h.replay(w, c.Policy, replay)
	}
	err = claimed(claim)
	var nc errNotClaimed
	if errors.As(err, &nc) {
		return nc.err // a claim made by Claim is held: not reached
	}
	return err
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

// replayedRecord is the record a replayed write acted on: the path's record, or for a create the one
// it made.
func replayedRecord(req bunrouter.Request, r *idempotency.Response) string {
	if id := req.Param("id"); id != "" {
		return id
	}
	var doc struct {
		Data struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	if json.Unmarshal(r.Body, &doc) == nil && model.IsUUID(doc.Data.ID) {
		return doc.Data.ID
	}
	return ""
}

// replay answers with a stored first response, byte for byte, marked Idempotent-Replayed. The caller's
// current field rules are applied again first, which leaves the bytes unchanged unless the rules became
// stricter since: a replay never shows a value the caller may no longer read.
func (h *Handler) replay(w http.ResponseWriter, pol *access.Policy, r *idempotency.Response) error {
	body := r.Body
	dec := json.NewDecoder(bytes.NewReader(r.Body))
	dec.UseNumber()
	var doc map[string]any
	if err := dec.Decode(&doc); err == nil {
		if rec, ok := doc["data"].(map[string]any); ok {
			doc["data"] = pol.Apply(rec)
			body = encode(doc)
		}
	}
	for k, v := range r.Header {
		w.Header()[k] = v
	}
	w.Header().Set("Idempotent-Replayed", "true")
	writeRaw(w, r.Status, body)
	return nil
}

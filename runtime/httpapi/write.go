package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"time"

	"github.com/uptrace/bunrouter"

	"github.com/workspace-records/records/engine/model"
	"github.com/workspace-records/records/runtime/idempotency"
	"github.com/workspace-records/records/runtime/records"
	"github.com/workspace-records/records/runtime/store"
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
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// releaseGrace is how long past the request's deadline the release of a failed write's
// Idempotency-Key may hold its answer.
const releaseGrace = 250 * time.Millisecond

// write runs a record write. Without an Idempotency-Key it simply runs. With one, the key is claimed
// first; a repeat of a completed request replays its response; the response of a new request is stored
// in the same transaction as its write; a failed request releases the key.
func (h *Handler) write(w http.ResponseWriter, req bunrouter.Request, res *model.Resource, a records.Actor, body map[string]any,
	status int, location func(records.Record) string, run func(records.Actor) (records.Record, error)) error {
	ctx := req.Context()
	vals, present := req.Header["Idempotency-Key"]
	if !present {
		rec, err := run(a)
		if err != nil {
			return err
		}
		if loc := location(rec); loc != "" {
			w.Header().Set("Location", loc)
		}
		writeRaw(w, status, encode(map[string]any{"data": rec}))
		return nil
	}
	if len(vals) != 1 || !idempotency.ValidKey(vals[0]) {
		return apiError(400, "invalid_request", idempotency.ErrInvalidKey.Error()+", sent once.")
	}
	p := principal(ctx)
	fp := idempotency.Fingerprint(req.Method, req.URL.Path, req.URL.RawQuery, body)
	claim, replay, err := h.idem.Claim(ctx, a.Workspace, p.Key.ID, vals[0], fp)
	switch {
	case errors.Is(err, idempotency.ErrReused):
		return apiError(422, "idempotency_key_reused", "This Idempotency-Key was already used for a different request; use a new key.")
	case errors.Is(err, idempotency.ErrInUse):
		return apiError(409, "idempotency_key_in_use", "A request with this Idempotency-Key is still running; retry when it has finished.")
	case err != nil:
		return err
	case replay != nil:
		h.metrics.Replay(res.Name)
		pol := p.Policy(res)
		// The caller's record rule may have narrowed since (a new role, a reassigned owner): a replay
		// never shows a record the caller can no longer reach; it answers as a read of it would.
		if id := replayedRecord(req, replay); id != "" {
			ok, err := h.svc.Visible(ctx, a, pol, id)
			if err != nil {
				return err
			}
			if !ok {
				return records.ErrNotFound
			}
		}
		return h.replay(w, res, pol, replay)
	}
	var stored idempotency.Response
	a.OnWrite = func(ctx context.Context, q store.Querier, rec records.Record) error {
		stored = idempotency.Response{Status: status, Header: http.Header{}, Body: encode(map[string]any{"data": rec})}
		if loc := location(rec); loc != "" {
			stored.Header.Set("Location", loc)
		}
		return h.idem.Complete(ctx, q, claim, stored)
	}
	if _, err := run(a); err != nil {
		// Nothing was written: free the key so that a corrected retry runs. The release must not be
		// skipped because the request's context ended, nor hold the answer more than releaseGrace past
		// the request's deadline when the database does not answer; a claim left behind then ends
		// with its lease.
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
			return apiError(409, "idempotency_key_in_use", "Another request took over this Idempotency-Key; retry to get its result.")
		}
		return err
	}
	for k, v := range stored.Header {
		w.Header()[k] = v
	}
	writeRaw(w, stored.Status, stored.Body)
	return nil
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
func (h *Handler) replay(w http.ResponseWriter, res *model.Resource, pol interface {
	Apply(map[string]any) map[string]any
}, r *idempotency.Response) error {
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

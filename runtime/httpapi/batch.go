package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/uptrace/bunrouter"

	"github.com/workspace-records/records/engine/apierr"
	"github.com/workspace-records/records/engine/field"
	"github.com/workspace-records/records/engine/model"
	"github.com/workspace-records/records/runtime/idempotency"
	"github.com/workspace-records/records/runtime/jsonenc"
	"github.com/workspace-records/records/runtime/records"
)

// batch serves POST /v1/{resource}/batch: {"mode": "atomic"|"per_item", "items": [...]}, each item
// {"op": create|update|upsert|archive|restore, "id", "key", "value", "body", "if_match", "if_none_match"}.
// The answer is 200 with one result per item, in order ({"status", "data", "etag"} or {"status",
// "error"}), except an atomic batch with a refused item: 422 batch_failed, with the results in
// details.results and nothing written. The batch counts one request per item against the rate limits
// and the quota; a key that may not write the resource gets its refusal as every item's result.
func (h *Handler) batch(res *model.Resource) bunrouter.HandlerFunc {
	return func(w http.ResponseWriter, req bunrouter.Request) error {
		ctx := req.Context()
		p := principal(ctx)
		a := actorOf(ctx)
		query, err := queryOf(req.Request)
		if err != nil {
			return err
		}
		modelID, err := modelParam(query, model.OpUpdate)
		if err != nil {
			return err
		}
		body, err := requiredObject(req.Request)
		if err != nil {
			return err
		}
		mode, items, err := batchRequest(body, modelID)
		if err != nil {
			return err
		}
		if err := h.admitMore(ctx, w, p, int64(len(items)-1)); err != nil {
			return err
		}
		c, err := h.svc.Collection(ctx, a, res, modelID)
		if err != nil {
			return err
		}
		id := requestID(ctx)
		if denied := p.Authorize(res, true); denied != nil {
			// Refused item by item, as the issue of each alone would be; nothing runs.
			e := records.Explain(denied)
			results := make([]records.BatchResult, len(items))
			for i := range results {
				results[i] = records.BatchResult{Status: e.Status(), Err: e}
			}
			if mode == records.BatchAtomic {
				return batchFailed(results, id)
			}
			writeResponse(w, batchResponse(mode, results, id))
			return nil
		}
		return h.idempotent(w, req, a, h.recordReplay(w, req, a, c), body, true, func(claim *idempotency.Claim) (idempotency.Response, error) {
			var rc *records.BatchReceipt
			if claim != nil {
				rc = &records.BatchReceipt{Claim: claim, Respond: func(results []records.BatchResult) idempotency.Response {
					return batchResponse(mode, results, id)
				}}
			}
			results, err := h.svc.Batch(ctx, a, c, mode, items, rc)
			var bf *records.BatchFailedError
			if errors.As(err, &bf) {
				return idempotency.Response{}, batchFailed(bf.Results, id)
			}
			if err != nil {
				return idempotency.Response{}, err
			}
			return batchResponse(mode, results, id), nil
		})
	}
}

// batchResponse is the 200 answer of a batch: {"data": [results], "meta": {...}}, written from the
// results' own bytes (each record is encoded once, in batchResults).
func batchResponse(mode string, results []records.BatchResult, requestID string) idempotency.Response {
	items, ok := batchResults(results, requestID)
	unchanged := 0
	for _, r := range results {
		if r.Err == nil && r.Effect == records.Unchanged {
			unchanged++
		}
	}
	meta := encode(map[string]any{"mode": mode, "succeeded": ok, "failed": len(results) - ok, "unchanged": unchanged})
	body := append(make([]byte, 0, 64+len(meta)+sizeOf(items)), `{"data":[`...)
	for i, it := range items {
		if i > 0 {
			body = append(body, ',')
		}
		body = append(body, it...)
	}
	body = append(append(append(body, `],"meta":`...), bytes.TrimSuffix(meta, []byte("\n"))...), "}\n"...)
	return idempotency.Response{Status: http.StatusOK, Header: http.Header{}, Body: body}
}

func sizeOf(items []json.RawMessage) int {
	n := 0
	for _, it := range items {
		n += len(it) + 1
	}
	return n
}

// batchFailed is the 422 of an atomic batch that wrote nothing.
func batchFailed(results []records.BatchResult, requestID string) *apierr.Error {
	data, _ := batchResults(results, requestID)
	var refused []string
	for i, r := range results {
		if r.Err != nil && r.Err.Code != apierr.BatchAborted {
			refused = append(refused, fmt.Sprint(i))
		}
	}
	msg := "Nothing was written: item " + strings.Join(refused, ", ") + " was refused and the batch is atomic; details.results has every item's result."
	if len(refused) > 1 {
		msg = "Nothing was written: items " + strings.Join(refused, ", ") + " were refused and the batch is atomic; details.results has every item's result."
	}
	return &apierr.Error{Code: apierr.BatchFailed, Message: msg, Details: map[string]any{"results": data}}
}

// batchResults encodes results as the answer lists them, and counts those that succeeded. A written
// item is {"data": record, "etag": …, "status": …}: the record is encoded once, and its bytes, wrapped
// as a get's body ({"data": …} and a newline, what encode makes of it), are what its ETag hashes.
func batchResults(results []records.BatchResult, requestID string) ([]json.RawMessage, int) {
	out := make([]json.RawMessage, len(results))
	ok := 0
	for i, r := range results {
		if r.Err == nil {
			if item, err := writtenItem(r); err == nil {
				out[i] = item
				ok++
				continue
			} else {
				r.Err = records.Explain(err)
			}
		}
		item, _ := jsonenc.Marshal(itemError(r.Err, requestID))
		out[i] = item
	}
	return out, ok
}

// writtenItem encodes the result of a written item.
func writtenItem(r records.BatchResult) (json.RawMessage, error) {
	data, err := jsonenc.Marshal(r.Record)
	if err != nil {
		return nil, fmt.Errorf("encode batch result: %w", err)
	}
	item := append(append(make([]byte, 0, len(data)+80), `{"data":`...), data...)
	if v, has := records.VersionOf(r.Record); has {
		tag, _ := json.Marshal(records.ETag(v, slices.Concat([]byte(`{"data":`), data, []byte("}\n"))))
		item = append(append(item, `,"etag":`...), tag...)
	}
	if r.Effect == records.Unchanged {
		item = append(item, `,"unchanged":true`...)
	}
	return append(item, fmt.Sprintf(`,"status":%d}`, r.Status)...), nil
}

// itemError is the result of a refused item: its status and the error envelope's error member.
func itemError(e *apierr.Error, requestID string) map[string]any {
	return map[string]any{"status": e.Status(), "error": envelope(e, requestID)["error"]}
}

// batchRequest reads a batch body: its mode (default atomic) and items. The shape of the whole and of
// every item is checked here (400, naming items[i].<member>); what the items' bodies hold is each
// item's own result.
func batchRequest(body map[string]any, modelID string) (string, []records.BatchItem, error) {
	var errs field.ErrorList
	for k := range body {
		if k != "mode" && k != "items" {
			errs = append(errs, field.New(field.CodeUnknown, field.NewPath(k), "a batch takes only mode and items"))
		}
	}
	mode := records.BatchAtomic
	if v, ok := body["mode"]; ok {
		s, _ := v.(string)
		if s != records.BatchAtomic && s != records.BatchPerItem {
			errs = append(errs, field.New(field.CodeInvalid, field.NewPath("mode"), `must be "atomic" or "per_item"`))
		}
		mode = s
	}
	list, ok := body["items"].([]any)
	switch {
	case !ok:
		errs = append(errs, field.New(field.CodeRequired, field.NewPath("items"), "must be an array of 1 to 100 items"))
	case len(list) == 0 || len(list) > records.MaxBatchItems:
		errs = append(errs, field.New(field.CodeInvalid, field.NewPath("items"), fmt.Sprintf("must hold 1 to %d items, not %d", records.MaxBatchItems, len(list))))
	}
	if len(errs) > 0 {
		return "", nil, apierr.Invalid("", errs)
	}
	items := make([]records.BatchItem, len(list))
	for i, x := range list {
		it, problems := batchItem(x, modelID)
		for _, e := range problems {
			e.Field = fmt.Sprintf("items[%d].%s", i, e.Field)
		}
		errs = append(errs, problems...)
		items[i] = it
	}
	if len(errs) > 0 {
		return "", nil, apierr.Invalid("", errs)
	}
	return mode, items, nil
}

// batchItem reads one item: its members' problems (the item's shape, which the document describes) are
// the whole batch's 400; a body naming another data model is the item's own refusal (Problem).
func batchItem(x any, modelID string) (records.BatchItem, field.ErrorList) {
	obj, ok := x.(map[string]any)
	if !ok {
		return records.BatchItem{}, field.ErrorList{field.New(field.CodeType, field.NewPath("op"), "an item must be an object")}
	}
	it := records.BatchItem{}
	var errs field.ErrorList
	str := func(k string) string {
		v, has := obj[k]
		if !has {
			return ""
		}
		s, isStr := v.(string)
		if !isStr {
			errs = append(errs, field.New(field.CodeType, field.NewPath(k), "must be a string"))
		}
		return s
	}
	allowed := map[string]bool{"op": true, "id": true, "key": true, "value": true, "body": true, "if_match": true, "if_none_match": true}
	for k := range obj {
		if !allowed[k] {
			errs = append(errs, field.New(field.CodeUnknown, field.NewPath(k), "is not a member of a batch item"))
		}
	}
	it.Op = str("op")
	it.ID = strings.ToLower(str("id"))
	it.Key, it.Val = str("key"), str("value")
	if v, has := obj["body"]; has && v != nil {
		b, isObj := v.(map[string]any)
		if !isObj {
			errs = append(errs, field.New(field.CodeType, field.NewPath("body"), "must be an object"))
		}
		it.Body = b
	}
	need := func(k string, present bool) {
		if !present {
			errs = append(errs, field.New(field.CodeRequired, field.NewPath(k), "is required for a "+it.Op+" item"))
		}
	}
	switch it.Op {
	case records.ItemCreate:
		need("body", it.Body != nil)
		if it.Body != nil {
			m, err := records.ModelInBody(it.Body, modelID)
			if err == nil && m != modelID {
				err = apierr.InvalidField(field.CodeInvalid, "body.model_id", "a batch's data model is the model_id query parameter")
			}
			if err != nil {
				it.Problem = err
			}
		}
	case records.ItemUpdate:
		need("id", it.ID != "")
		need("body", it.Body != nil)
	case records.ItemArchive, records.ItemRestore:
		need("id", it.ID != "")
	case records.ItemUpsert:
		need("key", it.Key != "")
		need("value", it.Val != "")
		need("body", it.Body != nil)
	case "":
		errs = append(errs, field.New(field.CodeRequired, field.NewPath("op"), "must be create, update, upsert, archive or restore"))
	default:
		errs = append(errs, field.New(field.CodeInvalid, field.NewPath("op"), "must be create, update, upsert, archive or restore"))
	}
	if it.ID != "" && !model.IsUUID(it.ID) {
		errs = append(errs, field.New(field.CodeFormat, field.NewPath("id"), "must be a UUID"))
	}
	if v := str("if_match"); v != "" {
		m, err := records.ParseIfMatch([]string{v})
		if err != nil {
			errs = append(errs, field.New(field.CodeFormat, field.NewPath("if_match"), `must be "*" or entity tags, as the etag of a result or the ETag header gives them`))
		}
		it.IfMatch = m
	}
	if v, has := obj["if_none_match"]; has {
		if s, _ := v.(string); s != "*" || it.Op != records.ItemUpsert {
			errs = append(errs, field.New(field.CodeInvalid, field.NewPath("if_none_match"), `may only be "*", on an upsert item`))
		}
		it.IfNoneMatch = true
	}
	if it.IfMatch != nil && it.Op == records.ItemCreate {
		errs = append(errs, field.New(field.CodeInvalid, field.NewPath("if_match"), "a create has no record to match"))
	}
	return it, errs
}

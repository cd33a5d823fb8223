package httpapi

import (
	"net/http"
	"strings"

	"github.com/uptrace/bunrouter"

	"github.com/workspace-records/records/engine/apierr"
	"github.com/workspace-records/records/engine/field"
	"github.com/workspace-records/records/engine/model"
	"github.com/workspace-records/records/engine/route"
	"github.com/workspace-records/records/runtime/records"
)

// operation returns the handler of one record route: it reads the request into the service's typed
// inputs, resolves the collection, calls the service, and writes its answer.
func (h *Handler) operation(rt route.Route) bunrouter.HandlerFunc {
	res := rt.Resource
	return func(w http.ResponseWriter, req bunrouter.Request) error {
		ctx := req.Context()
		if err := principal(ctx).Authorize(res, rt.Op.Write()); err != nil {
			return err
		}
		a := actorOf(ctx)
		query, err := queryOf(req.Request)
		if err != nil {
			return err
		}
		switch rt.Op {
		case model.OpList:
			return h.list(w, req, a, res, records.ListRequest{Query: query})
		case model.OpQuery:
			body, err := optionalObject(req.Request)
			if err != nil {
				return err
			}
			return h.list(w, req, a, res, records.ListRequest{Query: query, Body: body})
		}

		modelID, err := modelParam(query, rt.Op)
		if err != nil {
			return err
		}
		// The collection is resolved before anything else is read, except for a create of a
		// model-scoped resource, whose body may name the data model.
		var c *records.Collection
		if rt.Op != model.OpCreate || !res.ModelScoped {
			if c, err = h.svc.Collection(ctx, a, res, modelID); err != nil {
				return err
			}
		}
		id := req.Param("id")
		if (rt.Shape == route.Item || rt.Shape == route.Restore) && !model.IsUUID(id) {
			return apierr.InvalidField(field.CodeFormat, "id", "must be a UUID")
		}
		if rt.Op == model.OpGet {
			rec, version, unknown, err := h.svc.GetSelected(ctx, a, c, id, query)
			if err != nil {
				return err
			}
			reportUnknown(w, unknown)
			body := encode(map[string]any{"data": rec})
			etag := records.ETag(version, body)
			w.Header().Set("ETag", etag)
			if inm, ok := req.Header["If-None-Match"]; ok && records.NoneMatch(inm, etag) {
				w.Header().Set("Cache-Control", "no-store")
				w.WriteHeader(http.StatusNotModified)
				return nil
			}
			writeRaw(w, 200, body)
			return nil
		}
		m, err := records.ParseIfMatch(req.Header["If-Match"]) // for update, archive and restore
		if err != nil {
			return err
		}

		// Writes: read the body, resolve the collection, then run the operation under the
		// Idempotency-Key rules.
		var body map[string]any
		if rt.Op == model.OpCreate || rt.Op == model.OpUpdate {
			body, err = requiredObject(req.Request)
		} else {
			body, err = optionalObject(req.Request)
		}
		if err != nil {
			return err
		}
		if c == nil {
			if modelID, err = records.ModelInBody(body, modelID); err != nil {
				return err
			}
			if c, err = h.svc.Collection(ctx, a, res, modelID); err != nil {
				return err
			}
		}
		wr := write{status: 200}
		switch rt.Op {
		case model.OpCreate:
			wr.location = func(rec records.Record) string {
				loc := "/v1/" + res.Name + "/" + rec["id"].(string)
				if c.ModelID != "" {
					loc += "?model_id=" + c.ModelID
				}
				return loc
			}
			wr.run = func(rc *records.Receipt) (records.Record, records.Effect, error) {
				rec, err := h.svc.Create(ctx, a, c, body, rc)
				return rec, records.Created, err
			}
		case model.OpUpdate:
			wr.run = func(rc *records.Receipt) (records.Record, records.Effect, error) {
				return h.svc.Update(ctx, a, c, id, body, m, rc)
			}
		case model.OpArchive:
			wr.run = changed(func(rc *records.Receipt) (records.Record, error) { return h.svc.Archive(ctx, a, c, id, body, m, rc) })
		case model.OpRestore:
			wr.run = changed(func(rc *records.Receipt) (records.Record, error) { return h.svc.Restore(ctx, a, c, id, body, m, rc) })
		}
		return h.write(w, req, a, c, body, wr)
	}
}

// modelParam reads model_id from the query (given at most once) and refuses any other parameter but a
// get's fields and expand; what model_id must be is the service's rule (records.Service.Collection).
func modelParam(q map[string][]string, op model.Operation) (string, error) {
	for k := range q {
		if k == "model_id" || ((k == "fields" || k == "expand") && op == model.OpGet) {
			continue
		}
		return "", apierr.InvalidField(field.CodeUnknown, k, "is not a parameter of this endpoint")
	}
	vals := q["model_id"]
	if len(vals) > 1 {
		return "", apierr.Invalid("model_id must be given once.", nil)
	}
	if len(vals) == 1 {
		return strings.ToLower(vals[0]), nil
	}
	return "", nil
}

func (h *Handler) list(w http.ResponseWriter, req bunrouter.Request, a records.Actor, res *model.Resource, lr records.ListRequest) error {
	q, err := records.ReadList(lr)
	if err != nil {
		return err
	}
	c, err := h.svc.Collection(req.Context(), a, res, q.ModelID())
	if err != nil {
		return err
	}
	page, err := h.svc.List(req.Context(), a, c, q)
	if err != nil {
		return err
	}
	writePage(w, page)
	return nil
}

// writePage answers a page of a list: its records and the meta of SPEC.md.
func writePage(w http.ResponseWriter, page *records.Page) {
	reportUnknown(w, page.UnknownFields)
	data := make([]any, len(page.Records))
	for i, rec := range page.Records {
		data[i] = rec
	}
	meta := map[string]any{"next_cursor": page.NextCursor, "has_more": page.HasMore, "page_size": page.PageSize}
	if page.TotalCount != nil {
		meta["total_count"] = *page.TotalCount
		if page.TotalEstimated {
			meta["total_count_estimated"] = true
		}
	}
	if page.Page > 0 {
		meta["page"] = page.Page
	}
	writeJSON(w, 200, map[string]any{"data": data, "meta": meta})
}

func requiredObject(r *http.Request) (map[string]any, error) {
	data, err := readBody(r)
	if err != nil {
		return nil, err
	}
	obj, err := DecodeObject(data)
	if err != nil {
		return nil, malformedBody(err)
	}
	return obj, nil
}

func optionalObject(r *http.Request) (map[string]any, error) {
	data, err := readBody(r)
	if err != nil {
		return nil, err
	}
	if len(strings.TrimSpace(string(data))) == 0 {
		return map[string]any{}, nil
	}
	obj, err := DecodeObject(data)
	if err != nil {
		return nil, malformedBody(err)
	}
	return obj, nil
}

// nullable makes an optional text of an answer: "" is JSON null. (store.Nullable does the same for a
// statement's arguments; httpapi does not import runtime/store: tests/layers.)
func nullable(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// unknownFieldsHeader reports the names of a fields selection that the answer's records do not carry.
const unknownFieldsHeader = "Records-Unknown-Fields"

// reportUnknown sets Records-Unknown-Fields to names (none: no header): comma-separated, each cut at
// apierr.MaxEchoed characters and percent-encoded outside the unreserved characters of RFC 3986, so that
// any name a client sent fits a header and commas separate names only.
func reportUnknown(w http.ResponseWriter, names []string) {
	if len(names) == 0 {
		return
	}
	parts := make([]string, len(names))
	for i, n := range names {
		parts[i] = percentEncode(apierr.Clip(n))
	}
	w.Header().Set(unknownFieldsHeader, strings.Join(parts, ","))
}

// percentEncode escapes every byte of s outside A-Z a-z 0-9 - . _ ~ as %XX.
func percentEncode(s string) string {
	const hex = "0123456789ABCDEF"
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '.' || c == '_' || c == '~' {
			b.WriteByte(c)
			continue
		}
		b.WriteByte('%')
		b.WriteByte(hex[c>>4])
		b.WriteByte(hex[c&15])
	}
	return b.String()
}

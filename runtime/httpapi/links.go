package httpapi

import (
	"errors"
	"net/http"
	"strconv"

	"github.com/uptrace/bunrouter"

	"github.com/workspace-records/records/engine/field"
	"github.com/workspace-records/records/engine/listplan"
	"github.com/workspace-records/records/engine/model"
	"github.com/workspace-records/records/engine/route"
	"github.com/workspace-records/records/runtime/records"
)

// association resolves the association named in the path and checks the caller may use both sides.
func (h *Handler) association(req bunrouter.Request, res *model.Resource, write bool) (*model.Association, error) {
	name := req.Param("association")
	assoc, ok := res.Association(name)
	if !ok {
		return nil, apiError(404, "not_found", res.Name+" has no association "+name+"; GET /v1/resources/"+res.Name+" lists them.")
	}
	if !model.IsUUID(req.Param("id")) {
		return nil, invalidRequest("", fieldErr("invalid_format", "id", "must be a UUID"))
	}
	p := principal(req.Context())
	if err := p.Authorize(res, write); err != nil {
		return nil, err
	}
	target, _ := h.cat.Resource(assoc.Target)
	if err := p.Authorize(target, false); err != nil {
		return nil, err
	}
	return assoc, nil
}

func (h *Handler) listLinks(res *model.Resource) bunrouter.HandlerFunc {
	return func(w http.ResponseWriter, req bunrouter.Request) error {
		assoc, err := h.association(req, res, false)
		if err != nil {
			return err
		}
		params, err := linkParams(req)
		if err != nil {
			return err
		}
		page, err := h.svc.ListLinks(req.Context(), actorOf(req.Context()), res, assoc, req.Param("id"), params)
		var bad field.ErrorList
		if errors.As(err, &bad) {
			// A cursor this list did not issue (another record, workspace or member): a malformed
			// parameter, 400 like a record list's, not the 422 of refused values.
			return invalidRequest("", bad)
		}
		if err != nil {
			return err
		}
		data := make([]any, len(page.Records))
		for i, rec := range page.Records {
			data[i] = rec
		}
		meta := map[string]any{"next_cursor": page.NextCursor, "has_more": page.HasMore, "page_size": params.PageSize}
		if params.Cursor == "" {
			meta["page"] = params.Page
		}
		writeJSON(w, 200, map[string]any{"data": data, "meta": meta})
		return nil
	}
}

// linkParams reads page, page_size and cursor with the bounds of record lists.
func linkParams(req bunrouter.Request) (records.LinkParams, error) {
	p := records.LinkParams{Page: 1, PageSize: listplan.DefaultSize}
	var errs field.ErrorList
	q, err := queryOf(req.Request)
	if err != nil {
		return p, err
	}
	for k, vals := range q {
		if len(vals) != 1 {
			errs = append(errs, field.New(field.CodeInvalid, field.NewPath(k), "must be given once"))
			continue
		}
		switch k {
		case "page", "page_size":
			n, err := strconv.Atoi(vals[0])
			switch {
			case err != nil:
				errs = append(errs, field.New(field.CodeType, field.NewPath(k), "must be an integer"))
			case k == "page" && (n < 1 || n > listplan.MaxPage):
				errs = append(errs, field.New(field.CodeRange, field.NewPath(k), "must be between 1 and 10000"))
			case k == "page_size" && (n < 1 || n > listplan.MaxPageSize):
				errs = append(errs, field.New(field.CodeRange, field.NewPath(k), "must be between 1 and 100"))
			case k == "page":
				p.Page = n
			default:
				p.PageSize = n
			}
		case "cursor":
			p.Cursor = vals[0]
		default:
			errs = append(errs, field.New(field.CodeUnknown, field.NewPath(k), "is not a parameter of association lists (page, page_size, cursor)"))
		}
	}
	if q.Has("page") && q.Has("cursor") {
		errs = append(errs, field.New(field.CodeConflicting, field.NewPath("page"), "cannot be combined with cursor"))
	}
	if p.Cursor == "" && (p.Page-1)*p.PageSize >= listplan.PageWindow+p.PageSize {
		errs = append(errs, field.New(field.CodeRange, field.NewPath("page"), "is beyond the first 10,000 links; use cursor"))
	}
	if len(errs) > 0 {
		return p, invalidRequest("", errs)
	}
	return p, nil
}

// changeLink puts (put true) or deletes one link, under the Idempotency-Key rules of every write.
func (h *Handler) changeLink(res *model.Resource, put bool) bunrouter.HandlerFunc {
	return func(w http.ResponseWriter, req bunrouter.Request) error {
		if !res.Ops.Has(model.OpUpdate) {
			return methodNotAllowed(res, route.Link, req.Method)
		}
		assoc, err := h.association(req, res, true)
		if err != nil {
			return err
		}
		targetID := req.Param("target_id")
		if !model.IsUUID(targetID) {
			return invalidRequest("", fieldErr("invalid_format", "target_id", "must be a UUID"))
		}
		if req.URL.RawQuery != "" {
			return invalidRequest("Association writes take no query parameters.", nil)
		}
		body, err := optionalObject(req.Request)
		if err != nil {
			return err
		}
		ctx := req.Context()
		id := req.Param("id")
		run := func(a records.Actor) (records.Record, error) {
			rec, _, err := h.svc.PutLink(ctx, a, res, assoc, id, targetID, body)
			return rec, err
		}
		if !put {
			if len(body) > 0 {
				return invalidRequest("Deleting an association takes no body.", nil)
			}
			run = func(a records.Actor) (records.Record, error) {
				return h.svc.DeleteLink(ctx, a, res, assoc, id, targetID)
			}
		}
		return h.write(w, req, res, actorOf(ctx), body, 200, func(records.Record) string { return "" }, run)
	}
}

package httpapi

import (
	"net/http"

	"github.com/uptrace/bunrouter"

	"github.com/workspace-records/records/engine/apierr"
	"github.com/workspace-records/records/engine/field"
	"github.com/workspace-records/records/engine/model"
	"github.com/workspace-records/records/runtime/records"
)

// association resolves the association named in the path and checks the caller may use both sides.
func (h *Handler) association(req bunrouter.Request, res *model.Resource, write bool) (*model.Association, error) {
	name := req.Param("association")
	assoc, ok := res.Association(name)
	if !ok {
		return nil, apierr.New(apierr.NotFound, res.Name+" has no association "+name+"; GET /v1/resources/"+res.Name+" lists them.")
	}
	if !model.IsUUID(req.Param("id")) {
		return nil, apierr.InvalidField(field.CodeFormat, "id", "must be a UUID")
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
		query, err := queryOf(req.Request)
		if err != nil {
			return err
		}
		ctx := req.Context()
		a := actorOf(ctx)
		c, err := h.svc.Collection(ctx, a, res, "")
		if err != nil {
			return err
		}
		page, err := h.svc.ListLinks(ctx, a, c, assoc, req.Param("id"), query)
		if err != nil {
			return err
		}
		writePage(w, page)
		return nil
	}
}

// changeLink puts (put true) or deletes one link, under the Idempotency-Key rules of every write.
func (h *Handler) changeLink(res *model.Resource, put bool) bunrouter.HandlerFunc {
	return func(w http.ResponseWriter, req bunrouter.Request) error {
		assoc, err := h.association(req, res, true)
		if err != nil {
			return err
		}
		targetID := req.Param("target_id")
		if !model.IsUUID(targetID) {
			return apierr.InvalidField(field.CodeFormat, "target_id", "must be a UUID")
		}
		if req.URL.RawQuery != "" {
			return apierr.Invalid("Association writes take no query parameters.", nil)
		}
		body, err := optionalObject(req.Request)
		if err != nil {
			return err
		}
		ctx := req.Context()
		a := actorOf(ctx)
		c, err := h.svc.Collection(ctx, a, res, "")
		if err != nil {
			return err
		}
		id := req.Param("id")
		wr := write{status: 200, run: changed(func(rc *records.Receipt) (records.Record, error) {
			return h.svc.PutLink(ctx, a, c, assoc, id, targetID, body, rc)
		})}
		if !put {
			wr.run = changed(func(rc *records.Receipt) (records.Record, error) {
				return h.svc.DeleteLink(ctx, a, c, assoc, id, targetID, body, rc)
			})
		}
		return h.write(w, req, a, c, body, wr)
	}
}

package httpapi

import (
	"net/http"
	"strings"

	"github.com/uptrace/bunrouter"

	"github.com/workspace-records/records/engine/apierr"
	"github.com/workspace-records/records/engine/field"
	"github.com/workspace-records/records/engine/model"
)

// history serves GET /v1/{resource}/{id}/history (records.Service.History): the caller is authorized and
// the collection resolved as for a get of the record, whose history it reads.
func (h *Handler) history(res *model.Resource) bunrouter.HandlerFunc {
	return func(w http.ResponseWriter, req bunrouter.Request) error {
		ctx := req.Context()
		if err := principal(ctx).Authorize(res, false); err != nil {
			return err
		}
		a := actorOf(ctx)
		query, err := queryOf(req.Request)
		if err != nil {
			return err
		}
		var modelID string
		if vals, ok := query["model_id"]; ok {
			if len(vals) > 1 {
				return apierr.Invalid("model_id must be given once.", nil)
			}
			modelID = strings.ToLower(vals[0])
			delete(query, "model_id")
		}
		c, err := h.svc.Collection(ctx, a, res, modelID)
		if err != nil {
			return err
		}
		id := req.Param("id")
		if !model.IsUUID(id) {
			return apierr.InvalidField(field.CodeFormat, "id", "must be a UUID")
		}
		page, err := h.svc.History(ctx, a, c, id, query)
		if err != nil {
			return err
		}
		writeJSON(w, http.StatusOK, map[string]any{"data": page.Entries,
			"meta": map[string]any{"next_cursor": page.NextCursor, "has_more": page.NextCursor != nil, "page_size": page.PageSize}})
		return nil
	}
}

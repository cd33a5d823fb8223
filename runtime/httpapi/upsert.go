package httpapi

import (
	"net/http"
	"net/url"
	"strings"

	"github.com/uptrace/bunrouter"

	"github.com/workspace-records/records/engine/apierr"
	"github.com/workspace-records/records/engine/model"
	"github.com/workspace-records/records/runtime/records"
)

// upsert serves PUT /v1/{resource}/by/{key}/{value}: the create or update of the one active record whose
// unique key holds the value, under the Idempotency-Key rules of every write. It answers 201 with
// Location when it made the record, 200 when it changed (or left unchanged) the one there was.
func (h *Handler) upsert(res *model.Resource) bunrouter.HandlerFunc {
	return func(w http.ResponseWriter, req bunrouter.Request) error {
		ctx := req.Context()
		if err := principal(ctx).Authorize(res, true); err != nil {
			return err
		}
		a := actorOf(ctx)
		query, err := queryOf(req.Request)
		if err != nil {
			return err
		}
		modelID, err := modelParam(query, model.OpUpdate)
		if err != nil {
			return err
		}
		c, err := h.svc.Collection(ctx, a, res, modelID)
		if err != nil {
			return err
		}
		cond, err := upsertConditions(req.Header)
		if err != nil {
			return err
		}
		body, err := requiredObject(req.Request)
		if err != nil {
			return err
		}
		// The router hands path segments over as sent: the key and value are percent-decoded here.
		key, kerr := url.PathUnescape(req.Param("key"))
		value, verr := url.PathUnescape(req.Param("value"))
		if kerr != nil || verr != nil {
			return apierr.New(apierr.InvalidRequest, "The key and value in the path must be valid percent-encoded text.")
		}
		return h.write(w, req, a, c, body, write{
			status:   http.StatusOK,
			location: func(rec records.Record) string { return "/v1/" + res.Name + "/" + rec["id"].(string) },
			run: func(rc *records.Receipt) (records.Record, records.Effect, error) {
				return h.svc.Upsert(ctx, a, c, key, value, body, cond, rc)
			},
		})
	}
}

// upsertConditions reads an upsert's If-Match (as for an update) and If-None-Match, which may only be
// "*" (create, never change); not both.
func upsertConditions(hd http.Header) (records.UpsertConditions, error) {
	var cond records.UpsertConditions
	m, err := records.ParseIfMatch(hd["If-Match"])
	if err != nil {
		return cond, err
	}
	cond.IfMatch = m
	if vals, ok := hd["If-None-Match"]; ok {
		if len(vals) != 1 || strings.TrimSpace(vals[0]) != "*" {
			return cond, apierr.New(apierr.InvalidRequest, `If-None-Match on an upsert may only be "*": create the record, never change one.`)
		}
		if m != nil {
			return cond, apierr.New(apierr.InvalidRequest, "If-Match and If-None-Match exclude each other.")
		}
		cond.IfNoneMatch = true
	}
	return cond, nil
}

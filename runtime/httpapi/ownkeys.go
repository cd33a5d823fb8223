package httpapi

import (
	"net/http"

	"github.com/uptrace/bunrouter"

	"github.com/workspace-records/records/engine/apierr"
	"github.com/workspace-records/records/engine/field"
	"github.com/workspace-records/records/runtime/admin"
	"github.com/workspace-records/records/runtime/auth"
)

// One's own keys, /v1/me/keys… (docs/issue-24.md).
func init() {
	handle("own_keys_list", func(h *Handler) bunrouter.HandlerFunc { return h.ownKeys })
	handle("own_keys_create", func(h *Handler) bunrouter.HandlerFunc { return h.createOwnKey })
	handle("own_keys_roll", func(h *Handler) bunrouter.HandlerFunc { return h.rollOwnKey })
	handle("own_keys_revoke", func(h *Handler) bunrouter.HandlerFunc { return h.revokeOwnKey })
}

// noQuery refuses any query parameter on a route that takes none.
func noQuery(req bunrouter.Request) error {
	for k := range req.URL.Query() {
		return apierr.InvalidField(field.CodeUnknown, k, "is not a parameter of this endpoint")
	}
	return nil
}

func (h *Handler) ownKeys(w http.ResponseWriter, req bunrouter.Request) error {
	if err := noQuery(req); err != nil {
		return err
	}
	keys, err := h.admin.OwnKeys(req.Context(), adminActor(req))
	if err != nil {
		return err
	}
	writeJSON(w, 200, map[string]any{"data": keys, "meta": map[string]any{"next_cursor": nil}})
	return nil
}

func (h *Handler) createOwnKey(w http.ResponseWriter, req bunrouter.Request) error {
	if err := noQuery(req); err != nil {
		return err
	}
	var in admin.KeyInput
	errs, err := decodeFields(req, &in, false)
	if err != nil {
		return err
	}
	if errs = append(errs, h.admin.CheckKeyInput(in)...); errs != nil {
		return apierr.Refused(errs)
	}
	k, secret, err := h.admin.CreateOwnKey(req.Context(), adminActor(req), in)
	if err != nil {
		return err
	}
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, 201, map[string]any{"data": map[string]any{"key": k, "secret": secret}})
	return nil
}

func (h *Handler) rollOwnKey(w http.ResponseWriter, req bunrouter.Request) error {
	if err := noQuery(req); err != nil {
		return err
	}
	var in struct {
		Overlap *string `json:"overlap"`
	}
	if err := decodeInput(req, &in, true); err != nil {
		return err
	}
	overlap := auth.DefaultRollOverlap
	if in.Overlap != nil {
		d, ok := admin.ParseLifetime(*in.Overlap)
		if !ok || d < 0 || d > auth.MaxRollOverlap {
			return apierr.Refused(field.ErrorList{field.New(field.CodeRange, field.NewPath("overlap"), "must be a duration from 0 to 7d (168h), such as 24h")})
		}
		overlap = d
	}
	old, k, secret, err := h.admin.RollOwnKey(req.Context(), adminActor(req), req.Param("id"), overlap)
	if err != nil {
		return err
	}
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, 201, map[string]any{"data": map[string]any{"key": k, "secret": secret, "rolled": old}})
	return nil
}

func (h *Handler) revokeOwnKey(w http.ResponseWriter, req bunrouter.Request) error {
	if err := noQuery(req); err != nil {
		return err
	}
	if err := decodeInput(req, &struct{}{}, true); err != nil {
		return err
	}
	k, err := h.admin.RevokeOwnKey(req.Context(), adminActor(req), req.Param("id"))
	if err != nil {
		return err
	}
	writeJSON(w, 200, map[string]any{"data": k})
	return nil
}

package httpapi

import (
	"net/http"

	"github.com/uptrace/bunrouter"

	"github.com/workspace-records/records/engine/field"
	"github.com/workspace-records/records/runtime/admin"
	"github.com/workspace-records/records/runtime/auth"
)

// The handlers of one's own keys, /v1/me/keys… (docs/issue-24.md); Handler.adminHandlers binds them to
// their routes.

func (h *Handler) ownKeys(w http.ResponseWriter, req bunrouter.Request) error {
	if _, err := adminQuery(req); err != nil {
		return err
	}
	keys, err := h.admin.OwnKeys(req.Context(), adminActor(req))
	if err != nil {
		return err
	}
	answerWhole(w, keys)
	return nil
}

func (h *Handler) createOwnKey(w http.ResponseWriter, req bunrouter.Request) error {
	if _, err := adminQuery(req); err != nil {
		return err
	}
	m, err := readStrictBody(req)
	if err != nil {
		return err
	}
	text := func(name string) string {
		if s := m.str(name, false); s != nil {
			return *s
		}
		return ""
	}
	in := admin.KeyInput{Access: text("access"), ExpiresIn: text("expires_in"), Name: text("name"),
		Resources: m.strings("resources"), AllowIPs: m.strings("allow_ips")}
	// The body's shape and its values' problems in one answer; the values alone are checked by the
	// service (admin.Service.CreateOwnKey).
	if err := m.doneWith(func() field.ErrorList { return h.admin.CheckKeyInput(in) }); err != nil {
		return err
	}
	k, secret, err := h.admin.CreateOwnKey(req.Context(), adminActor(req), in)
	w.Header().Set("Cache-Control", "no-store")
	return answer(w, 201, map[string]any{"key": k, "secret": secret}, err)
}

func (h *Handler) rollOwnKey(w http.ResponseWriter, req bunrouter.Request) error {
	if _, err := adminQuery(req); err != nil {
		return err
	}
	m, err := readStrictBody(req)
	if err != nil {
		return err
	}
	overlap := auth.DefaultRollOverlap
	if s := m.str("overlap", false); s != nil {
		d, ok := admin.ParseLifetime(*s)
		if !ok || d < 0 || d > auth.MaxRollOverlap {
			m.fail(field.CodeRange, "overlap", "must be a duration from 0 to 7d (168h), such as 24h")
		}
		overlap = d
	}
	if err := m.done(); err != nil {
		return err
	}
	old, k, secret, err := h.admin.RollOwnKey(req.Context(), adminActor(req), req.Param("id"), overlap)
	w.Header().Set("Cache-Control", "no-store")
	return answer(w, 201, map[string]any{"key": k, "secret": secret, "rolled": old}, err)
}

func (h *Handler) revokeOwnKey(w http.ResponseWriter, req bunrouter.Request) error {
	if _, err := adminQuery(req); err != nil {
		return err
	}
	if err := noBody(req); err != nil {
		return err
	}
	k, err := h.admin.RevokeOwnKey(req.Context(), adminActor(req), req.Param("id"))
	return answer(w, 200, k, err)
}

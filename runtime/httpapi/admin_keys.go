package httpapi

import (
	"net/http"
	"strconv"

	"github.com/uptrace/bunrouter"

	"github.com/workspace-records/records/engine/apierr"
	"github.com/workspace-records/records/engine/field"
	"github.com/workspace-records/records/runtime/admin"
)

// The handlers of the keys area of the admin API: every member's keys, usage, webhooks and their
// deliveries (docs/issue-24.md). The operations are runtime/admin's; these read the parameters and the
// body and write the envelope. Handler.adminHandlers binds them to their routes.

func (h *Handler) listKeys(w http.ResponseWriter, req bunrouter.Request) error {
	q, err := adminQuery(req, "member", "state")
	if err != nil {
		return err
	}
	keys, err := h.admin.Keys(req.Context(), adminActor(req), admin.KeyFilter{Member: q.Get("member"), State: q.Get("state")})
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, listAnswer(keys, nil))
	return nil
}

func (h *Handler) getKey(w http.ResponseWriter, req bunrouter.Request) error {
	if _, err := adminQuery(req); err != nil {
		return err
	}
	k, err := h.admin.Key(req.Context(), adminActor(req), req.Param("id"))
	return answer(w, http.StatusOK, k, err)
}

func (h *Handler) revokeKey(w http.ResponseWriter, req bunrouter.Request) error {
	if err := noBody(req); err != nil {
		return err
	}
	k, err := h.admin.RevokeKey(req.Context(), adminActor(req), req.Param("id"))
	return answer(w, http.StatusOK, k, err)
}

func (h *Handler) adminUsage(w http.ResponseWriter, req bunrouter.Request) error {
	q, err := adminQuery(req, "from", "to", "key")
	if err != nil {
		return err
	}
	uq := admin.UsageQuery{From: q.Get("from"), To: q.Get("to"), Key: q.Get("key")}
	if u, ok := req.Context().Value(keyUsage).(*usage); ok {
		uq.UsedHere = u.quotaUsed
	}
	rep, err := h.admin.Usage(req.Context(), adminActor(req), uq)
	return answer(w, http.StatusOK, rep, err)
}

func (h *Handler) listWebhooks(w http.ResponseWriter, req bunrouter.Request) error {
	if _, err := adminQuery(req); err != nil {
		return err
	}
	list, err := h.admin.Webhooks(req.Context(), adminActor(req))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, listAnswer(list, nil))
	return nil
}

func (h *Handler) createWebhook(w http.ResponseWriter, req bunrouter.Request) error {
	body, err := readObject(req, true)
	if err != nil {
		return err
	}
	ep, err := h.admin.CreateWebhook(req.Context(), adminActor(req), body)
	return answer(w, http.StatusCreated, ep, err)
}

func (h *Handler) getWebhook(w http.ResponseWriter, req bunrouter.Request) error {
	if _, err := adminQuery(req); err != nil {
		return err
	}
	ep, err := h.admin.Webhook(req.Context(), adminActor(req), req.Param("id"))
	return answer(w, http.StatusOK, ep, err)
}

func (h *Handler) updateWebhook(w http.ResponseWriter, req bunrouter.Request) error {
	body, err := readObject(req, true)
	if err != nil {
		return err
	}
	ep, err := h.admin.UpdateWebhook(req.Context(), adminActor(req), req.Param("id"), body)
	return answer(w, http.StatusOK, ep, err)
}

func (h *Handler) deleteWebhook(w http.ResponseWriter, req bunrouter.Request) error {
	if err := noBody(req); err != nil {
		return err
	}
	id, err := h.admin.DeleteWebhook(req.Context(), adminActor(req), req.Param("id"))
	return answer(w, http.StatusOK, map[string]any{"id": id, "deleted": true}, err)
}

func (h *Handler) rotateWebhookSecret(w http.ResponseWriter, req bunrouter.Request) error {
	body, err := readObject(req, false)
	if err != nil {
		return err
	}
	ep, err := h.admin.RotateWebhookSecret(req.Context(), adminActor(req), req.Param("id"), body)
	return answer(w, http.StatusOK, ep, err)
}

func (h *Handler) webhookDeliveries(w http.ResponseWriter, req bunrouter.Request) error {
	q, err := adminQuery(req, "state", "limit", "cursor")
	if err != nil {
		return err
	}
	dq := admin.DeliveryQuery{State: q.Get("state"), Cursor: q.Get("cursor")}
	if text := q.Get("limit"); text != "" {
		n, err := strconv.Atoi(text)
		if err != nil || n < 1 || n > admin.MaxDeliveries {
			return apierr.InvalidField(field.CodeRange, "limit", "must be an integer from 1 to "+strconv.Itoa(admin.MaxDeliveries))
		}
		dq.Limit = n
	}
	list, next, err := h.admin.Deliveries(req.Context(), adminActor(req), req.Param("id"), dq)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, listAnswer(list, next))
	return nil
}

func (h *Handler) replayWebhook(w http.ResponseWriter, req bunrouter.Request) error {
	body, err := readObject(req, true)
	if err != nil {
		return err
	}
	n, err := h.admin.ReplayWebhook(req.Context(), adminActor(req), req.Param("id"), body)
	return answer(w, http.StatusOK, n, err)
}

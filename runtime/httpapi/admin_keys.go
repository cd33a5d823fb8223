package httpapi

import (
	"bytes"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/uptrace/bunrouter"

	"github.com/workspace-records/records/engine/apierr"
	"github.com/workspace-records/records/engine/field"
	"github.com/workspace-records/records/runtime/admin"
)

// The handlers of the keys area of the admin API: every member's keys, usage, webhooks and their
// deliveries (docs/issue-24.md). The operations are runtime/admin's; these read the parameters and the
// body and write the envelope.
func init() {
	handle("admin.keys.list", func(h *Handler) bunrouter.HandlerFunc {
		return func(w http.ResponseWriter, req bunrouter.Request) error {
			q, err := adminKeysQuery(req, "member", "state")
			if err != nil {
				return err
			}
			keys, err := h.admin.Keys(req.Context(), adminActor(req), admin.KeyFilter{Member: q.Get("member"), State: q.Get("state")})
			if err != nil {
				return err
			}
			writeJSON(w, http.StatusOK, adminKeysList(keys, nil))
			return nil
		}
	})
	handle("admin.keys.get", func(h *Handler) bunrouter.HandlerFunc {
		return func(w http.ResponseWriter, req bunrouter.Request) error {
			if _, err := adminKeysQuery(req); err != nil {
				return err
			}
			k, err := h.admin.Key(req.Context(), adminActor(req), req.Param("id"))
			return adminKeysAnswer(w, http.StatusOK, k, err)
		}
	})
	handle("admin.keys.revoke", func(h *Handler) bunrouter.HandlerFunc {
		return func(w http.ResponseWriter, req bunrouter.Request) error {
			if err := adminKeysNoBody(req); err != nil {
				return err
			}
			k, err := h.admin.RevokeKey(req.Context(), adminActor(req), req.Param("id"))
			return adminKeysAnswer(w, http.StatusOK, k, err)
		}
	})
	handle("admin.usage", func(h *Handler) bunrouter.HandlerFunc {
		return func(w http.ResponseWriter, req bunrouter.Request) error {
			q, err := adminKeysQuery(req, "from", "to", "key")
			if err != nil {
				return err
			}
			uq := admin.UsageQuery{From: q.Get("from"), To: q.Get("to"), Key: q.Get("key")}
			if u, ok := req.Context().Value(keyUsage).(*usage); ok {
				uq.UsedHere = u.quotaUsed
			}
			rep, err := h.admin.Usage(req.Context(), adminActor(req), uq)
			return adminKeysAnswer(w, http.StatusOK, rep, err)
		}
	})
	handle("admin.webhooks.list", func(h *Handler) bunrouter.HandlerFunc {
		return func(w http.ResponseWriter, req bunrouter.Request) error {
			if _, err := adminKeysQuery(req); err != nil {
				return err
			}
			list, err := h.admin.Webhooks(req.Context(), adminActor(req))
			if err != nil {
				return err
			}
			writeJSON(w, http.StatusOK, adminKeysList(list, nil))
			return nil
		}
	})
	handle("admin.webhooks.create", func(h *Handler) bunrouter.HandlerFunc {
		return func(w http.ResponseWriter, req bunrouter.Request) error {
			body, err := adminKeysBody(req, true)
			if err != nil {
				return err
			}
			ep, err := h.admin.CreateWebhook(req.Context(), adminActor(req), body)
			return adminKeysAnswer(w, http.StatusCreated, ep, err)
		}
	})
	handle("admin.webhooks.get", func(h *Handler) bunrouter.HandlerFunc {
		return func(w http.ResponseWriter, req bunrouter.Request) error {
			if _, err := adminKeysQuery(req); err != nil {
				return err
			}
			ep, err := h.admin.Webhook(req.Context(), adminActor(req), req.Param("id"))
			return adminKeysAnswer(w, http.StatusOK, ep, err)
		}
	})
	handle("admin.webhooks.update", func(h *Handler) bunrouter.HandlerFunc {
		return func(w http.ResponseWriter, req bunrouter.Request) error {
			body, err := adminKeysBody(req, true)
			if err != nil {
				return err
			}
			ep, err := h.admin.UpdateWebhook(req.Context(), adminActor(req), req.Param("id"), body)
			return adminKeysAnswer(w, http.StatusOK, ep, err)
		}
	})
	handle("admin.webhooks.delete", func(h *Handler) bunrouter.HandlerFunc {
		return func(w http.ResponseWriter, req bunrouter.Request) error {
			if err := adminKeysNoBody(req); err != nil {
				return err
			}
			id, err := h.admin.DeleteWebhook(req.Context(), adminActor(req), req.Param("id"))
			return adminKeysAnswer(w, http.StatusOK, map[string]any{"id": id, "deleted": true}, err)
		}
	})
	handle("admin.webhooks.rotate_secret", func(h *Handler) bunrouter.HandlerFunc {
		return func(w http.ResponseWriter, req bunrouter.Request) error {
			body, err := adminKeysBody(req, false)
			if err != nil {
				return err
			}
			ep, err := h.admin.RotateWebhookSecret(req.Context(), adminActor(req), req.Param("id"), body)
			return adminKeysAnswer(w, http.StatusOK, ep, err)
		}
	})
	handle("admin.webhooks.deliveries", func(h *Handler) bunrouter.HandlerFunc {
		return func(w http.ResponseWriter, req bunrouter.Request) error {
			q, err := adminKeysQuery(req, "state", "limit", "cursor")
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
			writeJSON(w, http.StatusOK, adminKeysList(list, next))
			return nil
		}
	})
	handle("admin.webhooks.replay", func(h *Handler) bunrouter.HandlerFunc {
		return func(w http.ResponseWriter, req bunrouter.Request) error {
			body, err := adminKeysBody(req, true)
			if err != nil {
				return err
			}
			n, err := h.admin.ReplayWebhook(req.Context(), adminActor(req), req.Param("id"), body)
			return adminKeysAnswer(w, http.StatusOK, n, err)
		}
	})
}

// adminKeysAnswer writes {"data": v} with status, or returns err.
func adminKeysAnswer(w http.ResponseWriter, status int, v any, err error) error {
	if err != nil {
		return err
	}
	writeJSON(w, status, map[string]any{"data": v})
	return nil
}

// adminKeysList is a list's answer: the whole list, or a page continued by next.
func adminKeysList[T any](items []T, next *string) map[string]any {
	if items == nil {
		items = []T{}
	}
	return map[string]any{"data": items, "meta": map[string]any{"next_cursor": next}}
}

// adminKeysQuery reads the query string: each of the allowed parameters at most once, no other.
func adminKeysQuery(req bunrouter.Request, allowed ...string) (url.Values, error) {
	q, err := queryOf(req.Request)
	if err != nil {
		return nil, err
	}
	var errs field.ErrorList
	names := make([]string, 0, len(q))
	for name := range q {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		switch {
		case !slices.Contains(allowed, name):
			msg := "is not a parameter of this route"
			if len(allowed) > 0 {
				msg += "; it takes " + strings.Join(allowed, ", ")
			}
			errs = append(errs, field.New(field.CodeUnknown, field.NewPath(name), msg))
		case len(q[name]) > 1:
			errs = append(errs, field.New(field.CodeDuplicate, field.NewPath(name), "must be given once"))
		}
	}
	if errs != nil {
		return nil, apierr.Invalid("", errs)
	}
	return q, nil
}

// adminKeysNoBody checks the body of a route that takes none: empty, or an object without members (a
// member is 422 unknown_field).
func adminKeysNoBody(req bunrouter.Request) error {
	body, err := adminKeysBody(req, false)
	if err != nil {
		return err
	}
	var errs field.ErrorList
	for name := range body {
		errs = append(errs, field.New(field.CodeUnknown, field.NewPath(name), "this route takes no body members"))
	}
	if errs != nil {
		return apierr.Refused(errs)
	}
	return nil
}

// adminKeysBody reads a JSON object body strictly (DecodeObject). Without required, an empty body is the
// empty object.
func adminKeysBody(req bunrouter.Request, required bool) (map[string]any, error) {
	data, err := readBody(req.Request)
	if err != nil {
		return nil, err
	}
	if len(bytes.TrimSpace(data)) == 0 {
		if required {
			return nil, apierr.New(apierr.InvalidRequest, "The request needs a JSON object body.")
		}
		return map[string]any{}, nil
	}
	obj, err := DecodeObject(data)
	if err != nil {
		return nil, malformedBody(err)
	}
	return obj, nil
}

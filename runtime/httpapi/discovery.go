package httpapi

import (
	"net/http"

	"github.com/uptrace/bunrouter"
	"github.com/workspace-records/records/engine/access"
	"github.com/workspace-records/records/engine/apierr"
	"github.com/workspace-records/records/engine/catalog"
	"github.com/workspace-records/records/engine/field"
	"github.com/workspace-records/records/runtime/auth"
)

func (h *Handler) root(w http.ResponseWriter, req bunrouter.Request) error {
	writeJSON(w, 200, map[string]any{"name": "Workspace Records API", "version": "v1", "openapi_url": h.base(req.Request) + "/v1/openapi.json"})
	return nil
}

// baseURL is the scheme and host the caller used.
func baseURL(r *http.Request) string {
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return scheme + "://" + r.Host
}

func (h *Handler) me(w http.ResponseWriter, req bunrouter.Request) error {
	p := principal(req.Context())
	u, _ := req.Context().Value(keyUsage).(*usage)
	key := map[string]any{
		"id": p.Key.ID, "prefix": auth.KeyPrefix, "hint": p.Key.Hint, "access": p.Key.Access, "resources": p.Key.Resources,
		"allow_ips": p.Key.AllowIPs, "created_at": p.Key.CreatedAt, "expires_at": p.Key.ExpiresAt,
	}
	if p.Key.Resources == nil {
		key["resources"] = "all"
	}
	key["last_used_at"], key["last_used_ip"] = h.dir.LastUse(&p.Key)
	notes, err := h.notices.Deliver(req.Context(), p.Workspace.ID, p.Member.ID)
	if err != nil {
		return err
	}
	notifications := make([]any, len(notes))
	for i, n := range notes {
		notifications[i] = map[string]any{"id": n.ID, "kind": n.Kind, "key_id": n.KeyID, "key_hint": n.KeyHint, "expires_at": n.ExpiresAt,
			"days_before": n.DaysBefore, "created_at": n.CreatedAt, "delivered_at": n.DeliveredAt}
	}
	writeJSON(w, 200, map[string]any{"data": map[string]any{
		"notifications": notifications,
		"key":           key,
		"member":        map[string]any{"id": p.Member.ID, "email": p.Member.Email, "role": p.Member.Role, "department_id": nullable(p.Member.Department), "permissions": p.Role.Permissions},
		"workspace":     map[string]any{"id": p.Workspace.ID, "name": p.Workspace.Name, "plan": p.Workspace.Plan, "features": p.Plan.Features},
		"rate_limit":    rateUsage(p, u),
		"quota":         quotaUsage(u),
	}})
	return nil
}

func (h *Handler) resources(w http.ResponseWriter, req bunrouter.Request) error {
	p := principal(req.Context())
	out := []any{}
	for _, r := range h.cat.Resources {
		if level := p.ResourceAccess(r); level != access.None {
			sum := catalog.Summary(r)
			sum["access"] = level.String()
			out = append(out, sum)
		}
	}
	writeJSON(w, 200, map[string]any{"data": out})
	return nil
}

func (h *Handler) resourceCatalog(w http.ResponseWriter, req bunrouter.Request) error {
	name := req.Param("resource")
	r, ok := h.cat.Resource(name)
	if !ok {
		return apierr.New(apierr.UnknownResource, "There is no resource named "+name+"; GET /v1/resources lists them.")
	}
	p := principal(req.Context())
	if err := p.Authorize(r, false); err != nil {
		return err
	}
	q, err := queryOf(req.Request)
	if err != nil {
		return err
	}
	for k := range q {
		if k != "model_id" {
			return apierr.InvalidField(field.CodeUnknown, k, "is not a parameter of this endpoint")
		}
	}
	c, err := h.svc.Collection(req.Context(), actorOf(req.Context()), r, q.Get("model_id"))
	if err != nil {
		return err
	}
	doc := h.svc.Describe(actorOf(req.Context()), c)
	doc["access"] = p.ResourceAccess(r).String()
	writeJSON(w, 200, map[string]any{"data": doc})
	return nil
}

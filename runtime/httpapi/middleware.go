package httpapi

import (
	"context"
	"net/http"
	"net/netip"
	"strings"
	"time"

	"github.com/uptrace/bunrouter"
	"github.com/workspace-records/records/engine/apierr"
	"github.com/workspace-records/records/engine/model"
	"github.com/workspace-records/records/engine/route"
	"github.com/workspace-records/records/runtime/auth"
	"github.com/workspace-records/records/runtime/records"
)

// authed checks the bearer key and puts the principal in the request context. scope says which keys the
// route serves: an admin key on a data route, or a data key on an admin route, is 403 insufficient_scope.
func (h *Handler) authed(scope route.Scope, next bunrouter.HandlerFunc) bunrouter.HandlerFunc {
	return func(w http.ResponseWriter, req bunrouter.Request) error {
		if len(req.Header.Values("Authorization")) > 1 {
			return apierr.New(apierr.InvalidAPIKey, "Send exactly one Authorization header.")
		}
		authz := req.Header.Get("Authorization")
		if authz == "" && scope != route.ScopeData {
			if c, err := req.Cookie(SessionCookie); err == nil && c.Value != "" {
				return h.sessionAuthed(scope, next, w, req, c.Value)
			}
		}
		if authz == "" {
			return apierr.New(apierr.InvalidAPIKey, "The Authorization header is missing; send Authorization: Bearer <API_KEY>.")
		}
		scheme, secret, ok := strings.Cut(authz, " ")
		if !ok || !strings.EqualFold(scheme, "Bearer") {
			return apierr.New(apierr.InvalidAPIKey, "The Authorization header must use the Bearer scheme.")
		}
		secret = strings.TrimSpace(secret)
		var src netip.Prefix
		var now time.Time
		if h.authFails != nil {
			src, now = source(req.Request, h.proxies), h.now()
			if err := h.authFails.refused(src, secret, now); err != nil {
				return err
			}
		}
		p, err := h.dir.Authenticate(req.Context(), secret)
		if err != nil {
			if isKeyFailure(err) {
				h.authFails.failed(req.Context(), src, now)
			}
			return err
		}
		h.authFails.succeeded(secret, now)
		if in, ok := req.Context().Value(keyInfo).(*info); ok {
			in.principal = p
		}
		if err := inScope(p, scope); err != nil {
			return err
		}
		addr, known := clientIP(req.Request, h.proxies)
		if len(p.Key.AllowIPs) > 0 {
			if !known {
				return apierr.New(apierr.IPNotAllowed, "This key has an IP allowlist and the client address cannot be told: X-Forwarded-For holds an entry that is not an IP address.")
			}
			if !p.Key.AllowsIP(addr) {
				return apierr.New(apierr.IPNotAllowed, "This key may not be used from "+addr.String()+".")
			}
		}
		// The key was used (whatever admission says next); the server writes its last use in batches.
		from := ""
		if known {
			from = addr.String()
		}
		h.dir.Touch(&p.Key, from, time.Now())
		ctx, err := h.admit(context.WithValue(req.Context(), keyPrincipal, p), w, p)
		if err != nil {
			return err
		}
		return next(w, req.WithContext(ctx))
	}
}

// inScope checks that p's key may use a route of scope.
func inScope(p *auth.Principal, scope route.Scope) error {
	switch scope {
	case route.ScopeData:
		if p.Key.Access == auth.AccessAdmin {
			return apierr.New(apierr.InsufficientScope, "This is an admin key: it administers the workspace (/v1/admin/…) and reads or writes no records; use a read or write key.")
		}
	case route.ScopeAdmin:
		return p.Administer()
	}
	return nil
}

func actorOf(ctx context.Context) records.Actor {
	return ActorOf(principal(ctx), requestID(ctx))
}

// ActorOf is the record service's actor for the principal p in the request requestID: its workspace,
// member, role and key, the key's access and its reach (allowlist, plan features, role).
func ActorOf(p *auth.Principal, requestID string) records.Actor {
	return records.Actor{Workspace: p.Workspace.ID, Member: p.Member.ID, Department: p.Member.Department, Key: p.Key.ID, RequestID: requestID, Role: p.Role,
		ReadOnly: p.Key.Access != "write", Reach: func(r *model.Resource) bool { return p.Authorize(r, false) == nil }}
}

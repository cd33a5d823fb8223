package httpapi

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/uptrace/bunrouter"

	"github.com/workspace-records/records/engine/apierr"
	"github.com/workspace-records/records/engine/route"
	"github.com/workspace-records/records/runtime/auth"
)

// The console's session (docs/issue-24.md): a cookie holding the session's secret, and on every request
// that the cookie authenticates, the header CSRFHeader with auth.CSRFToken of that secret.
const (
	SessionCookie = "records_session"
	CSRFHeader    = "X-CSRF-Token"
)

// sameOrigin refuses a request a browser sent from another site: an Origin header that is not this
// server's, or Sec-Fetch-Site other than same-origin or none (a typed address or a bookmark).
func (h *Handler) sameOrigin(r *http.Request) error {
	if site := r.Header.Get("Sec-Fetch-Site"); site != "" && site != "same-origin" && site != "none" {
		return apierr.New(apierr.Forbidden, "The console answers only its own pages: this request came from another site ("+site+").")
	}
	origin := r.Header.Get("Origin")
	if origin == "" {
		return nil
	}
	u, err := url.Parse(origin)
	if err == nil && u.Host != "" && strings.EqualFold(u.Host, r.Host) {
		return nil
	}
	if h.publicURL != "" {
		if pu, err := url.Parse(h.publicURL); err == nil && u != nil && strings.EqualFold(pu.Host, u.Host) && pu.Scheme == u.Scheme {
			return nil
		}
	}
	return apierr.New(apierr.Forbidden, "The console answers only its own pages: Origin "+origin+" is another site.")
}

// sessionAuthed authenticates a request by its console session cookie (secret): the request must come
// from this server's own pages and carry the session's CSRF token, whatever its method; then the
// session's principal is checked against the route's scope and admitted as a key is.
func (h *Handler) sessionAuthed(scope route.Scope, next bunrouter.HandlerFunc, w http.ResponseWriter, req bunrouter.Request, secret string) error {
	if err := h.sameOrigin(req.Request); err != nil {
		return err
	}
	if !auth.CheckCSRF(secret, req.Header.Get(CSRFHeader)) {
		return apierr.New(apierr.Forbidden, "A console request must carry the session's CSRF token in "+CSRFHeader+" (GET /console/session gives it).")
	}
	p, err := h.dir.SessionPrincipal(req.Context(), secret)
	if err != nil {
		return err
	}
	if in, ok := req.Context().Value(keyInfo).(*info); ok {
		in.principal = p
	}
	if err := inScope(p, scope); err != nil {
		return err
	}
	if err := h.admitSession(req.Context(), w, p); err != nil {
		return err
	}
	return next(w, req.WithContext(context.WithValue(req.Context(), keyPrincipal, p)))
}

// admitSession applies the rate limits to a console request as to a key's (per session and per
// workspace), but not the monthly quota: the console is the product's own UI, not API usage.
func (h *Handler) admitSession(ctx context.Context, w http.ResponseWriter, p *auth.Principal) error {
	d, err := h.limiter.Allow(ctx, h.now(), windows(p))
	if err != nil {
		return err
	}
	if d.Limit > 0 {
		w.Header().Set("X-RateLimit-Limit", strconv.FormatInt(d.Limit, 10))
		w.Header().Set("X-RateLimit-Remaining", strconv.FormatInt(d.Remaining, 10))
		w.Header().Set("X-RateLimit-Reset", seconds(d.Reset))
	}
	if !d.Allowed {
		e := apierr.New(apierr.RateLimited, "Too many requests; retry after "+seconds(d.RetryAfter)+" s.")
		e.Header = http.Header{"Retry-After": {seconds(d.RetryAfter)}}
		return e
	}
	return nil
}

// sessionCookie is the Set-Cookie of a session secret (maxAge < 0 clears it): HttpOnly, SameSite=Strict,
// Path=/, Secure when the server is reached over TLS.
func (h *Handler) sessionCookie(r *http.Request, secret string, maxAge int) *http.Cookie {
	return &http.Cookie{Name: SessionCookie, Value: secret, Path: "/", MaxAge: maxAge, HttpOnly: true, SameSite: http.SameSiteStrictMode,
		Secure: r.TLS != nil || strings.HasPrefix(h.publicURL, "https://")}
}

// signIn answers POST /console/session: it redeems a one-time sign-in token ({"token": "…"}) and starts
// a session with a new secret, set as the cookie; a cookie the browser brought is never taken over.
func (h *Handler) signIn(w http.ResponseWriter, req bunrouter.Request) error {
	if err := h.sameOrigin(req.Request); err != nil {
		return err
	}
	if mt := req.Header.Get("Content-Type"); !strings.HasPrefix(strings.ToLower(mt), "application/json") {
		// A form a page of another site could post has no JSON content type: refused before reading.
		return apierr.New(apierr.InvalidRequest, "Send the sign-in token as application/json: {\"token\": \"…\"}.")
	}
	m, err := readStrictBody(req)
	if err != nil {
		return err
	}
	token := m.str("token", true)
	if err := m.done(); err != nil {
		return err
	}
	var src = source(req.Request, h.proxies)
	now := h.now()
	if h.authFails != nil {
		if err := h.authFails.refused(src, *token, now); err != nil {
			return err
		}
	}
	secret, s, err := h.dir.SignIn(req.Context(), *token)
	if err != nil {
		if isKeyFailure(err) {
			h.authFails.failed(req.Context(), src, now)
		}
		return err
	}
	p, err := h.dir.SessionPrincipal(req.Context(), secret)
	if err != nil {
		return err
	}
	h.log.InfoContext(req.Context(), "console sign-in", "workspace", s.Workspace, "member", s.Member, "session", s.ID)
	http.SetCookie(w, h.sessionCookie(req.Request, secret, int(auth.SessionLifetime/time.Second)))
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, 200, map[string]any{"data": sessionView(p, secret)})
	return nil
}

// session answers GET /console/session: the signed-in member, the session's times and its CSRF token.
func (h *Handler) session(w http.ResponseWriter, req bunrouter.Request) error {
	if err := h.sameOrigin(req.Request); err != nil {
		return err
	}
	c, err := req.Cookie(SessionCookie)
	if err != nil || c.Value == "" {
		return apierr.New(apierr.InvalidAPIKey, "No console session: sign in with a link from recordsctl console-link.")
	}
	p, err := h.dir.SessionPrincipal(req.Context(), c.Value)
	if err != nil {
		return err
	}
	if in, ok := req.Context().Value(keyInfo).(*info); ok {
		in.principal = p
	}
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, 200, map[string]any{"data": sessionView(p, c.Value)})
	return nil
}

// signOut answers DELETE /console/session: it ends the session and clears the cookie. It needs the CSRF
// token as any console request; without a session it only clears the cookie.
func (h *Handler) signOut(w http.ResponseWriter, req bunrouter.Request) error {
	if err := h.sameOrigin(req.Request); err != nil {
		return err
	}
	if c, err := req.Cookie(SessionCookie); err == nil && c.Value != "" {
		if !auth.CheckCSRF(c.Value, req.Header.Get(CSRFHeader)) {
			return apierr.New(apierr.Forbidden, "Signing out needs the session's CSRF token in "+CSRFHeader+".")
		}
		if err := h.dir.SignOut(req.Context(), c.Value); err != nil {
			return err
		}
	}
	http.SetCookie(w, h.sessionCookie(req.Request, "", -1))
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// sessionView is the answer of the session endpoints.
func sessionView(p *auth.Principal, secret string) map[string]any {
	s := p.Session
	return map[string]any{
		"session": map[string]any{"id": s.ID, "signed_in_at": s.SignedInAt, "expires_at": s.ExpiresAt, "idle_expires_at": s.IdleUntil(),
			"recent_sign_in_until": s.SignedInAt.Add(auth.RecentSignIn)},
		"member":      map[string]any{"id": p.Member.ID, "email": p.Member.Email, "role": p.Member.Role, "department_id": nullable(p.Member.Department)},
		"workspace":   map[string]any{"id": p.Workspace.ID, "name": p.Workspace.Name, "plan": p.Workspace.Plan},
		"permissions": p.Role.Permissions,
		"csrf_token":  auth.CSRFToken(secret),
	}
}

// Package httpapi serves the Workspace Records API v1 over HTTP with bunrouter. Routes are generated from
// the route table of the definitions; one generic handler per operation serves every resource. Handlers
// return errors, and one place turns them into the error envelope.
package httpapi

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/netip"
	"path"
	"runtime/debug"
	"strings"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/uptrace/bunrouter"

	"github.com/workspace-records/records/engine/apierr"
	"github.com/workspace-records/records/engine/model"
	"github.com/workspace-records/records/engine/route"
	"github.com/workspace-records/records/runtime/admin"
	"github.com/workspace-records/records/runtime/auth"
	"github.com/workspace-records/records/runtime/feed"
	"github.com/workspace-records/records/runtime/idempotency"
	"github.com/workspace-records/records/runtime/jobs"
	"github.com/workspace-records/records/runtime/limits"
	"github.com/workspace-records/records/runtime/metrics"
	"github.com/workspace-records/records/runtime/notices"
	"github.com/workspace-records/records/runtime/records"
)

// Config configures a Handler.
type Config struct {
	Records   *records.Service
	Directory *auth.Directory
	// Admin runs the admin API and one's own keys (docs/issue-24.md).
	Admin  *admin.Service
	Logger *slog.Logger
	// OpenAPI is the served contract document (GET /v1/openapi.json).
	OpenAPI *Document
	// PublicURL is the server's address for clients; empty: the address each caller used.
	PublicURL string
	// TrustedProxies are the peers whose X-Forwarded-For is believed for IP allowlists.
	TrustedProxies []netip.Prefix
	// Limiter enforces rate limits; Quota counts monthly usage.
	Limiter limits.Limiter
	Quota   *limits.Quota
	// Idempotency stores Idempotency-Key claims and responses.
	Idempotency *idempotency.Keys
	// RequestTimeout bounds a request's work (default 10 s); past it the request answers 503.
	RequestTimeout time.Duration
	// Metrics records requests, refusals and replays; nil records nothing.
	Metrics *metrics.Metrics
	// Ready checks the parts a request needs (GET /readyz); nil: always ready.
	Ready func(ctx context.Context) []Check
	// ReadyDetails adds members to GET /readyz's answer (the definitions version served); nil adds none.
	ReadyDetails func() map[string]any
	// FailedAuthPerMinute is how many failing keys one client address may present a minute before its
	// keys are refused with 429 without a lookup (except keys that authenticated here lately); 0: no bound.
	FailedAuthPerMinute int64
	// Notices shows members their notifications (GET /v1/me).
	Notices *notices.Service
	// Jobs keeps bulk import and export jobs (/v1/{resource}/imports, /v1/{resource}/exports,
	// /v1/jobs/…); nil serves them as 503.
	Jobs *jobs.Service
	// Generations, when set, gives each request the generation it runs on (a Handler built by New or
	// Generation) and holds it until release is called, at the request's end: a server that switches
	// definitions (runtime/server) retires a generation once its last request has ended. Unset, the
	// handler New returns serves every request.
	Generations func() (h *Handler, release func())
}

// Handler is the API's http.Handler for one definitions generation: the record service, the admin
// operations, the catalog, the OpenAPI document and the router built from them. What outlives a
// generation — keys, limits, idempotency, metrics, draining — is in the core every generation shares.
// Whichever generation's ServeHTTP the listener calls, a request is served by the current one, loaded
// once when it starts: a request in flight finishes on the generation it started with (Swap).
type Handler struct {
	*core
	dir     *auth.Directory // core's directory resolving in cat (auth.Directory.For)
	svc     *records.Service
	admin   *admin.Service
	cat     *model.Catalog
	openapi *Document
	wsDocs  workspaceDocs // the documents served for keys (workspaceOpenAPI)
	router  *bunrouter.Router
}

// core is the state every generation of a Handler shares.
type core struct {
	dir       *auth.Directory
	notices   *notices.Service
	jobs      *jobs.Service
	log       *slog.Logger
	publicURL string
	proxies   []netip.Prefix
	limiter   limits.Limiter
	authFails *authFailures
	quota     *limits.Quota
	idem      *idempotency.Keys
	timeout   time.Duration
	metrics   *metrics.Metrics
	ready     func(ctx context.Context) []Check
	details   func() map[string]any
	draining  atomic.Bool
	clock     atomic.Pointer[func() time.Time] // admission's clock (SetClock); nil: time.Now
	gens      func() (*Handler, func())        // Config.Generations
}

// Generation is what changes with the definitions: the services built over one catalog and the
// document describing it.
type Generation struct {
	Records *records.Service
	Admin   *admin.Service
	OpenAPI *Document
}

// New builds the handler and its routes.
func New(cfg Config) *Handler {
	c := &core{dir: cfg.Directory, notices: cfg.Notices, jobs: cfg.Jobs, log: cfg.Logger, publicURL: cfg.PublicURL, proxies: cfg.TrustedProxies, limiter: cfg.Limiter, quota: cfg.Quota, idem: cfg.Idempotency, timeout: cfg.RequestTimeout,
		metrics: cfg.Metrics, ready: cfg.Ready, details: cfg.ReadyDetails, gens: cfg.Generations}
	c.authFails = newAuthFailures(cfg.Limiter, cfg.FailedAuthPerMinute)
	if c.timeout <= 0 {
		c.timeout = 10 * time.Second
	}
	if c.log == nil {
		c.log = slog.Default()
	}
	return c.generation(Generation{Records: cfg.Records, Admin: cfg.Admin, OpenAPI: cfg.OpenAPI})
}

// Generation builds the handler of g, sharing h's keys, limits, idempotency, metrics and draining. It
// serves the requests Config.Generations gives it.
func (h *Handler) Generation(g Generation) *Handler { return h.core.generation(g) }

func (c *core) generation(g Generation) *Handler {
	cat := g.Records.Catalog()
	h := &Handler{core: c, dir: c.dir.For(cat), svc: g.Records, admin: g.Admin, cat: cat, openapi: g.OpenAPI}
	h.router = h.routes()
	return h
}

// acquire returns the generation a request runs on, held until release is called.
func (h *Handler) acquire() (*Handler, func()) {
	if h.gens == nil {
		return h, func() {}
	}
	return h.gens()
}

// routes builds the router of h's catalog.
func (h *Handler) routes() *bunrouter.Router {
	r := bunrouter.New(
		bunrouter.WithNotFoundHandler(h.unmatched),
		bunrouter.WithMethodNotAllowedHandler(h.unmatched),
	)
	adminHandlers := h.adminHandlers()
	for _, rt := range route.Table(h.cat) {
		resource := "-"
		if rt.Resource != nil {
			resource = rt.Resource.Name
		}
		next := h.endpoint(rt, adminHandlers)
		if rt.Key {
			next = h.authed(rt.Scope, next)
		}
		handler := tagged(resource, rt.Label, next)
		r.Handle(rt.Method, rt.Path, handler)
		if rt.Method == http.MethodGet {
			// HEAD wherever GET (RFC 9110 9.3.2): the same handler, so the same key check, limits, status
			// and headers (Content-Length included); net/http sends no body for a HEAD request.
			r.Handle(http.MethodHead, rt.Path, handler)
		}
	}
	// The static paths beside /v1/{resource}/:id (query, batch) would hand the item route's methods to
	// it with the id "query" or "batch": those methods are refused here as on any path that exists
	// without them (405 with Allow).
	for _, rt := range route.Table(h.cat) {
		if rt.Shape != route.Query && rt.Shape != route.Batch {
			continue
		}
		for _, m := range []string{http.MethodGet, http.MethodHead, http.MethodPatch, http.MethodDelete} {
			r.Handle(m, rt.Path, h.unmatched)
		}
	}
	return r
}

// endpoint returns the handler of rt; handlers holds the admin routes' (adminHandlers).
func (h *Handler) endpoint(rt route.Route, handlers map[route.AdminOp]bunrouter.HandlerFunc) bunrouter.HandlerFunc {
	switch rt.Endpoint {
	case route.Healthz:
		return h.healthz
	case route.Readyz:
		return h.readyz
	case route.APIInfo:
		return h.root
	case route.OpenAPI:
		return h.openAPI
	case route.DocsPage:
		return serveAsset(docsPage)
	case route.DocsScript:
		return serveAsset(docsScript)
	case route.ConsolePage:
		return serveConsole(true)
	case route.ConsoleAsset:
		return serveConsole(false)
	case route.Me:
		return h.me
	case route.Events:
		return h.events
	case route.Resources:
		return h.resources
	case route.ResourceCatalog:
		return h.resourceCatalog
	case route.Record:
		return h.operation(rt)
	case route.ListLinks:
		return h.listLinks(rt.Resource)
	case route.PutLink:
		return h.changeLink(rt.Resource, true)
	case route.DeleteLink:
		return h.changeLink(rt.Resource, false)
	case route.UpsertRecord:
		return h.upsert(rt.Resource)
	case route.BatchWrite:
		return h.batch(rt.Resource)
	case route.RecordHistory:
		return h.history(rt.Resource)
	case route.JobList:
		return h.listJobs
	case route.JobCreate:
		return h.createJob
	case route.JobGet:
		return h.getJob
	case route.JobPart:
		return h.putJobPart
	case route.JobClose:
		return h.changeJob(false)
	case route.JobCancel:
		return h.changeJob(true)
	case route.JobFailures:
		return h.jobRows(true)
	case route.JobSuccesses:
		return h.jobRows(false)
	case route.JobDownload:
		return h.downloadJob
	case route.ConsoleSignIn:
		return h.signIn
	case route.ConsoleSession:
		return h.session
	case route.ConsoleSignOut:
		return h.signOut
	case route.Admin:
		if f, ok := handlers[rt.AdminOp]; ok {
			return f
		}
	}
	panic(fmt.Sprintf("httpapi: no handler for endpoint %d of %s %s", rt.Endpoint, rt.Method, rt.Path))
}

type ctxKey int

const (
	keyRequestID ctxKey = iota
	keyPrincipal
	keyInfo
)

// info is what the access log line and the metrics say about a request; routing and authentication
// fill it in as the request goes.
type info struct {
	route     string // the route template, such as /v1/companies/:id
	resource  string // "-" outside a resource
	operation string
	principal *auth.Principal
	// statements counts the database statements the request runs (records.CountStatements), for
	// the access line.
	statements records.StatementCounter
}

// tagged names the resource and operation of a route for the access log and the metrics.
func tagged(resource, operation string, next bunrouter.HandlerFunc) bunrouter.HandlerFunc {
	return func(w http.ResponseWriter, req bunrouter.Request) error {
		if in, ok := req.Context().Value(keyInfo).(*info); ok {
			in.route, in.resource, in.operation = req.Route(), resource, operation
		}
		return next(w, req)
	}
}

// statusWriter remembers whether a response was started, its status and its size.
type statusWriter struct {
	http.ResponseWriter
	status int
	bytes  int64
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = 200
	}
	n, err := w.ResponseWriter.Write(b)
	w.bytes += int64(n)
	return n, err
}

// Flush sends what was written so far (see compressor.Flush).
func (w *statusWriter) Flush() { _ = http.NewResponseController(w.ResponseWriter).Flush() }

// Unwrap lets http.ResponseController reach the connection's writer.
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// StatusClientClosed is the status logged and counted for a request whose client went away before its
// answer (nginx's 499); nobody receives it.
const StatusClientClosed = 499

// ServeHTTP gives every request an id, refuses paths no route may serve (with control characters,
// paths.go; or not clean) before routing, recovers panics, writes the envelope for any error, and logs
// and counts the request.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h, release := h.acquire() // the generation this request runs on, held to its end
	defer release()
	start := time.Now()
	defer h.metrics.RequestStarted()()
	id := uuid.NewString()
	w.Header().Set("X-Request-Id", id)
	addVary(w.Header(), "Accept-Encoding")
	out, zip := compressed(w, r)
	sw := &statusWriter{ResponseWriter: out}
	in := &info{resource: "-", operation: "unmatched"}
	conn := r.Context() // ends when the client goes away (or the server cuts the request off at shutdown)
	timeout := h.timeout
	if r.URL.Path == eventsPath {
		timeout += feed.MaxWait // a long poll waits up to that long before its work
	}
	ctx, cancel := context.WithTimeout(context.WithValue(context.WithValue(conn, keyRequestID, id), keyInfo, in), timeout)
	ctx = records.CountStatements(ctx, &in.statements)
	defer cancel()
	r = r.WithContext(ctx)
	var err error
	if _, smuggled := r.Header[smuggledHeader]; smuggled {
		// Both Content-Length and Transfer-Encoding (see framing.go): nothing after it on this
		// connection can be trusted to start where a proxy in front thinks it does.
		w.Header().Set("Connection", "close")
		err = apierr.New(apierr.InvalidRequest, "The request has both Content-Length and Transfer-Encoding; send exactly one of them.")
	} else if pathRefused(r.URL) {
		// A control character or bytes that are not UTF-8 (paths.go): no route's parameter may hold them,
		// and a NUL panics the router's lookup. Refused before routing and before any key is checked.
		err = errRefusedPath()
	} else if p := r.URL.Path; p != "/" && p != "/console/" && (strings.HasSuffix(p, "/") || path.Clean(p) != p) {
		// The router would redirect; an API answers exactly the paths it documents. /console/ is the
		// console's page as well as /console: sign-in links name it (docs/issue-24.md).
		err = apierr.New(apierr.RouteNotFound, "No route matches "+r.Method+" "+p+".")
	} else {
		func() {
			defer func() {
				if p := recover(); p != nil {
					err = fmt.Errorf("panic: %v\n%s", p, debug.Stack())
				}
			}()
			err = h.router.ServeHTTPError(sw, r)
		}()
	}
	var code string
	switch {
	case err != nil && errors.Is(err, context.Canceled) && conn.Err() != nil && sw.status == 0:
		// The client closed the connection before the answer, and the work stopped with it: no one
		// reads an answer. It is logged and counted as 499, nginx's "client closed request", not as a
		// failure of the server (a 500).
		code = "client_closed_request"
		sw.WriteHeader(StatusClientClosed)
	case err != nil:
		ae := translate(err)
		code = string(ae.Code)
		switch ae.Code {
		case apierr.RateLimited:
			h.metrics.RateLimited()
		case apierr.QuotaExceeded:
			h.metrics.QuotaExceeded()
		}
		if sw.status == 0 {
			writeError(sw, id, ae)
		}
	}
	if zip != nil {
		_ = zip.finish() // as for any write of an answer, an error means the client is gone
	}
	if p := in.principal; p != nil && p.Session == nil {
		// Per key and day, in memory (auth.Directory.Count): written with the key's last use. A console
		// session is the product's own UI, not API usage: not counted.
		h.dir.Count(&p.Key, sw.status == http.StatusForbidden || sw.status == http.StatusTooManyRequests, h.now())
	}
	elapsed := time.Since(start)
	h.metrics.Request(in.resource, in.operation, sw.status, elapsed, sw.bytes)
	h.accessLog(r, id, in, sw, code, elapsed, err)
}

// accessLog writes the request's one line: who asked (workspace, key id, member; never the secret),
// which route (its template, never the query string, which may carry filter values), and how it went.
// A failure of the server logs at error level with its cause.
func (h *Handler) accessLog(r *http.Request, id string, in *info, sw *statusWriter, code string, elapsed time.Duration, err error) {
	level := slog.LevelInfo
	if sw.status >= 500 {
		level = slog.LevelError
	}
	if !h.log.Enabled(r.Context(), level) {
		return
	}
	attrs := make([]slog.Attr, 0, 14)
	attrs = append(attrs, slog.String("request_id", id), slog.String("method", r.Method), slog.String("route", in.route),
		slog.Int("status", sw.status), slog.Float64("duration_ms", float64(elapsed.Microseconds())/1000), slog.Int64("bytes", sw.bytes))
	if p := in.principal; p != nil {
		attrs = append(attrs, slog.String("workspace", p.Workspace.ID), slog.String("key_id", p.Key.ID), slog.String("member", p.Member.ID))
	}
	if in.resource != "-" {
		attrs = append(attrs, slog.String("resource", in.resource))
	}
	attrs = append(attrs, slog.String("operation", in.operation), slog.Int64("statements", in.statements.Count()))
	if code != "" {
		attrs = append(attrs, slog.String("code", code))
	}
	if sw.status >= 500 && err != nil {
		attrs = append(attrs, slog.String("err", err.Error()))
	}
	h.log.LogAttrs(context.WithoutCancel(r.Context()), level, "request", attrs...)
}

func requestID(ctx context.Context) string {
	id, _ := ctx.Value(keyRequestID).(string)
	return id
}

func principal(ctx context.Context) *auth.Principal {
	p, _ := ctx.Value(keyPrincipal).(*auth.Principal)
	return p
}

func writeError(w http.ResponseWriter, id string, e *apierr.Error) {
	for k, v := range e.Header {
		w.Header()[k] = v
	}
	if e.Status() == 401 {
		desc := strings.ReplaceAll(e.Message, `"`, "'")
		if e.Code == apierr.InvalidAPIKey && strings.Contains(e.Message, "missing") {
			w.Header().Set("WWW-Authenticate", `Bearer realm="records"`)
		} else {
			w.Header().Set("WWW-Authenticate", fmt.Sprintf(`Bearer realm="records", error="invalid_token", error_description="%s"`, desc))
		}
	}
	writeJSON(w, e.Status(), envelope(e, id))
}

func writeJSON(w http.ResponseWriter, status int, v any) { writeRaw(w, status, encode(v)) }

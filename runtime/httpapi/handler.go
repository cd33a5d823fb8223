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

	"github.com/workspace-records/records/engine/access"
	"github.com/workspace-records/records/engine/catalog"
	"github.com/workspace-records/records/engine/listplan"
	"github.com/workspace-records/records/engine/model"
	"github.com/workspace-records/records/engine/route"
	"github.com/workspace-records/records/runtime/auth"
	"github.com/workspace-records/records/runtime/idempotency"
	"github.com/workspace-records/records/runtime/limits"
	"github.com/workspace-records/records/runtime/metrics"
	"github.com/workspace-records/records/runtime/records"
)

// Config configures a Handler.
type Config struct {
	Records   *records.Service
	Directory *auth.Directory
	Logger    *slog.Logger
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
	// FailedAuthPerMinute is how many failing keys one client address may present a minute before its
	// keys are refused with 429 without a lookup (except keys that authenticated here lately); 0: no bound.
	FailedAuthPerMinute int64
}

// Handler is the API's http.Handler.
type Handler struct {
	svc       *records.Service
	dir       *auth.Directory
	cat       *model.Catalog
	log       *slog.Logger
	openapi   *Document
	publicURL string
	proxies   []netip.Prefix
	limiter   limits.Limiter
	authFails *authFailures
	quota     *limits.Quota
	idem      *idempotency.Keys
	timeout   time.Duration
	metrics   *metrics.Metrics
	ready     func(ctx context.Context) []Check
	draining  atomic.Bool
	clock     atomic.Pointer[func() time.Time] // admission's clock (SetClock); nil: time.Now
	router    *bunrouter.Router
}

// New builds the handler and its routes.
func New(cfg Config) *Handler {
	h := &Handler{svc: cfg.Records, dir: cfg.Directory, cat: cfg.Records.Catalog(), log: cfg.Logger, openapi: cfg.OpenAPI, publicURL: cfg.PublicURL, proxies: cfg.TrustedProxies, limiter: cfg.Limiter, quota: cfg.Quota, idem: cfg.Idempotency, timeout: cfg.RequestTimeout,
		metrics: cfg.Metrics, ready: cfg.Ready}
	h.authFails = newAuthFailures(cfg.Limiter, cfg.FailedAuthPerMinute)
	if h.timeout <= 0 {
		h.timeout = 10 * time.Second
	}
	if h.log == nil {
		h.log = slog.Default()
	}
	r := bunrouter.New(
		bunrouter.WithNotFoundHandler(h.unmatched),
		bunrouter.WithMethodNotAllowedHandler(h.unmatched),
	)
	r.GET("/healthz", tagged("-", "healthz", h.healthz))
	r.GET("/readyz", tagged("-", "readyz", h.readyz))
	r.GET("/v1", tagged("-", "root", h.root))
	r.GET("/v1/openapi.json", tagged("-", "openapi", h.openAPI))
	r.GET("/docs", tagged("-", "docs", serveAsset(docsPage)))
	r.GET("/docs/redoc.standalone.js", tagged("-", "docs", serveAsset(docsScript)))
	r.GET("/v1/me", tagged("-", "me", h.authed(h.me)))
	r.GET("/v1/resources", tagged("-", "catalog", h.authed(h.resources)))
	r.GET("/v1/resources/:resource", tagged("-", "catalog", h.authed(h.resourceCatalog)))
	for _, rt := range route.Table(h.cat) {
		r.Handle(rt.Method, rt.Path, tagged(rt.Resource.Name, rt.Op.String(), h.authed(h.operation(rt))))
	}
	for _, res := range h.cat.Resources {
		if len(res.Associations) == 0 {
			continue
		}
		base := "/v1/" + res.Name + "/:id/:association"
		r.GET(base, tagged(res.Name, "list_links", h.authed(h.listLinks(res))))
		r.PUT(base+"/:target_id", tagged(res.Name, "link", h.authed(h.changeLink(res, true))))
		r.DELETE(base+"/:target_id", tagged(res.Name, "unlink", h.authed(h.changeLink(res, false))))
	}
	h.router = r
	return h
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

// StatusClientClosed is the status logged and counted for a request whose client went away before its
// answer (nginx's 499); nobody receives it.
const StatusClientClosed = 499

// ServeHTTP gives every request an id, recovers panics, writes the envelope for any error, and logs
// and counts the request.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	defer h.metrics.RequestStarted()()
	id := uuid.NewString()
	w.Header().Set("X-Request-Id", id)
	sw := &statusWriter{ResponseWriter: w}
	in := &info{resource: "-", operation: "unmatched"}
	conn := r.Context() // ends when the client goes away (or the server cuts the request off at shutdown)
	ctx, cancel := context.WithTimeout(context.WithValue(context.WithValue(conn, keyRequestID, id), keyInfo, in), h.timeout)
	defer cancel()
	r = r.WithContext(ctx)
	var err error
	if p := r.URL.Path; p != "/" && (strings.HasSuffix(p, "/") || path.Clean(p) != p) {
		// The router would redirect; an API answers exactly the paths it documents.
		err = apiError(404, "route_not_found", "No route matches "+r.Method+" "+p+".")
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
		code = ae.Code
		switch ae.Code {
		case "rate_limited":
			h.metrics.RateLimited()
		case "quota_exceeded":
			h.metrics.QuotaExceeded()
		}
		if sw.status == 0 {
			writeError(sw, id, ae)
		}
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
	attrs = append(attrs, slog.String("operation", in.operation))
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

func writeError(w http.ResponseWriter, id string, e *Error) {
	for k, v := range e.Header {
		w.Header()[k] = v
	}
	if e.Status == 401 {
		desc := strings.ReplaceAll(e.Message, `"`, "'")
		if e.Code == "invalid_api_key" && strings.Contains(e.Message, "missing") {
			w.Header().Set("WWW-Authenticate", `Bearer realm="records"`)
		} else {
			w.Header().Set("WWW-Authenticate", fmt.Sprintf(`Bearer realm="records", error="invalid_token", error_description="%s"`, desc))
		}
	}
	body := map[string]any{"type": e.Type, "code": e.Code, "message": e.Message, "request_id": id}
	if e.Details != nil {
		body["details"] = e.Details
	}
	writeJSON(w, e.Status, map[string]any{"error": body})
}

func writeJSON(w http.ResponseWriter, status int, v any) { writeRaw(w, status, encode(v)) }

// unmatched answers requests no route served: 405 with Allow for a known path shape, else 404.
func (h *Handler) unmatched(w http.ResponseWriter, req bunrouter.Request) error {
	path := req.URL.Path
	res, shape, unknown := route.Match(h.cat, path)
	switch {
	case unknown:
		return apiError(404, "unknown_resource", "There is no resource named "+strings.SplitN(strings.TrimPrefix(path, "/v1/"), "/", 2)[0]+"; GET /v1/resources lists them.")
	case res != nil:
		return methodNotAllowed(res, shape, req.Method)
	}
	if allow := fixedAllow(path); allow != "" {
		e := apiError(405, "method_not_allowed", req.Method+" is not allowed on "+path+".")
		e.Header = http.Header{"Allow": []string{allow}}
		return e
	}
	return apiError(404, "route_not_found", "No route matches "+req.Method+" "+path+".")
}

func fixedAllow(path string) string {
	switch {
	case path == "/v1", path == "/v1/openapi.json", path == "/v1/me", path == "/v1/resources", path == "/healthz", path == "/readyz":
		return "GET"
	case strings.HasPrefix(path, "/v1/resources/") && !strings.Contains(strings.TrimPrefix(path, "/v1/resources/"), "/"):
		return "GET"
	}
	return ""
}

func methodNotAllowed(res *model.Resource, shape route.Shape, method string) *Error {
	allow := route.Allow(res, shape)
	msg := method + " is not allowed here"
	if res.ReadOnly() {
		msg = res.Name + " is read-only: only list, query and get exist"
	}
	e := apiError(405, "method_not_allowed", msg+".")
	e.Header = http.Header{"Allow": []string{strings.Join(allow, ", ")}}
	return e
}

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

// authed checks the bearer key and puts the principal in the request context.
func (h *Handler) authed(next bunrouter.HandlerFunc) bunrouter.HandlerFunc {
	return func(w http.ResponseWriter, req bunrouter.Request) error {
		if len(req.Header.Values("Authorization")) > 1 {
			return apiError(401, "invalid_api_key", "Send exactly one Authorization header.")
		}
		authz := req.Header.Get("Authorization")
		if authz == "" {
			return apiError(401, "invalid_api_key", "The Authorization header is missing; send Authorization: Bearer <API_KEY>.")
		}
		scheme, secret, ok := strings.Cut(authz, " ")
		if !ok || !strings.EqualFold(scheme, "Bearer") {
			return apiError(401, "invalid_api_key", "The Authorization header must use the Bearer scheme.")
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
		if len(p.Key.AllowIPs) > 0 {
			addr, ok := clientIP(req.Request, h.proxies)
			if !ok {
				return apiError(403, "ip_not_allowed", "This key has an IP allowlist and the client address cannot be told: X-Forwarded-For holds an entry that is not an IP address.")
			}
			if !p.Key.AllowsIP(addr) {
				return apiError(403, "ip_not_allowed", "This key may not be used from "+addr.String()+".")
			}
		}
		ctx, err := h.admit(context.WithValue(req.Context(), keyPrincipal, p), w, p)
		if err != nil {
			return err
		}
		return next(w, req.WithContext(ctx))
	}
}

func actorOf(ctx context.Context) records.Actor {
	p := principal(ctx)
	return records.Actor{Workspace: p.Workspace.ID, Member: p.Member.ID, Department: p.Member.Department, Key: p.Key.ID, RequestID: requestID(ctx), Role: p.Role}
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
	writeJSON(w, 200, map[string]any{"data": map[string]any{
		"key":        key,
		"member":     map[string]any{"id": p.Member.ID, "email": p.Member.Email, "role": p.Member.Role, "department_id": nullable(p.Member.Department), "permissions": p.Role.Permissions},
		"workspace":  map[string]any{"id": p.Workspace.ID, "name": p.Workspace.Name, "plan": p.Workspace.Plan, "features": p.Plan.Features},
		"rate_limit": rateUsage(p, u),
		"quota":      quotaUsage(u),
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
		return apiError(404, "unknown_resource", "There is no resource named "+name+"; GET /v1/resources lists them.")
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
			return invalidRequest("", fieldErr("unknown_field", k, "is not a parameter of this endpoint"))
		}
	}
	if r.ModelScoped || q.Has("model_id") {
		if !r.ModelScoped {
			return invalidRequest("model_id applies to data_model_records only.", nil)
		}
		if err := h.svc.CheckModel(req.Context(), r, p.Workspace.ID, q.Get("model_id")); err != nil {
			return asInvalid(err)
		}
	}
	doc := catalog.Document(r, h.svc.Schemas().Resource(r.Name), p.Policy(r))
	doc["access"] = p.ResourceAccess(r).String()
	fs, err := h.svc.Fields(req.Context(), p.Workspace.ID, r, strings.ToLower(q.Get("model_id")))
	if err != nil {
		return err
	}
	custom := make([]any, 0, len(fs.Defs))
	sortKeys, _ := doc["sort_keys"].([]string)
	filterKeys, _ := doc["filter_keys"].([]any)
	for _, d := range fs.Defs {
		f := fs.Field(d)
		entry := catalog.Field(f)
		entry["id"], entry["write_key"], entry["filter_key"], entry["custom_type"] = d.ID, "cf__"+d.Key, d.FilterKey(), d.Type
		entry["writable"] = p.Policy(r).Level == access.Write
		if f.Sortable {
			entry["sort_key"] = d.FilterKey()
			sortKeys = append(sortKeys, d.FilterKey())
		}
		filterKeys = append(filterKeys, map[string]any{"key": d.FilterKey(), "field": "cf__" + d.Key, "type": f.Type.String(), "ops": f.Ops()})
		custom = append(custom, entry)
	}
	doc["sort_keys"], doc["filter_keys"] = sortKeys, filterKeys
	doc["custom_fields"] = custom
	writeJSON(w, 200, map[string]any{"data": doc})
	return nil
}

// operation returns the handler of one route.
func (h *Handler) operation(rt route.Route) bunrouter.HandlerFunc {
	res := rt.Resource
	return func(w http.ResponseWriter, req bunrouter.Request) error {
		ctx := req.Context()
		p := principal(ctx)
		if err := p.Authorize(res, rt.Op.Write()); err != nil {
			return err
		}
		a := actorOf(ctx)
		query, err := queryOf(req.Request)
		if err != nil {
			return err
		}
		switch rt.Op {
		case model.OpList:
			params, errs := listplan.FromQuery(query)
			if len(errs) > 0 {
				return invalidRequest("", errs)
			}
			return h.list(w, req, res, params)
		case model.OpQuery:
			if err := onlyParams(query); err != nil {
				return err
			}
			body, err := optionalObject(req.Request)
			if err != nil {
				return err
			}
			params, errs := listplan.FromBody(body)
			if len(errs) > 0 {
				return invalidRequest("", errs)
			}
			return h.list(w, req, res, params)
		}

		modelID, err := h.modelParam(req, res, query, rt.Op)
		if err != nil {
			return err
		}
		id := req.Param("id")
		if (rt.Shape == route.Item || rt.Shape == route.Restore) && !model.IsUUID(id) {
			return invalidRequest("", fieldErr("invalid_format", "id", "must be a UUID"))
		}
		if rt.Op == model.OpGet {
			sel, err := fieldsParam(query, res)
			if err != nil {
				return err
			}
			rec, err := h.svc.Get(ctx, a, res, modelID, id)
			if err != nil {
				return err
			}
			writeJSON(w, 200, map[string]any{"data": selectFields(rec, sel)})
			return nil
		}

		// Writes: read and check the body, then run the operation under the Idempotency-Key rules.
		var body map[string]any
		if rt.Op == model.OpCreate || rt.Op == model.OpUpdate {
			body, err = requiredObject(req.Request)
		} else {
			body, err = optionalObject(req.Request)
		}
		if err != nil {
			return err
		}
		status := 200
		var run func(a records.Actor) (records.Record, error)
		switch rt.Op {
		case model.OpCreate:
			status = 201
			if res.ModelScoped {
				if modelID, err = bodyModel(body, modelID); err != nil {
					return err
				}
				if err := h.svc.CheckModel(ctx, res, a.Workspace, modelID); err != nil {
					return asInvalid(err)
				}
			}
			run = func(a records.Actor) (records.Record, error) { return h.svc.Create(ctx, a, res, modelID, body) }
		case model.OpUpdate:
			run = func(a records.Actor) (records.Record, error) { return h.svc.Update(ctx, a, res, modelID, id, body) }
		case model.OpArchive:
			reason, err := archiveReason(body)
			if err != nil {
				return err
			}
			run = func(a records.Actor) (records.Record, error) { return h.svc.Archive(ctx, a, res, modelID, id, reason) }
		case model.OpRestore:
			if len(body) > 0 {
				return invalidRequest("restore takes no body.", nil)
			}
			run = func(a records.Actor) (records.Record, error) { return h.svc.Restore(ctx, a, res, modelID, id) }
		}
		location := func(rec records.Record) string {
			if rt.Op != model.OpCreate {
				return ""
			}
			loc := "/v1/" + res.Name + "/" + rec["id"].(string)
			if res.ModelScoped {
				loc += "?model_id=" + modelID
			}
			return loc
		}
		return h.write(w, req, res, a, body, status, location, run)
	}
}

// modelParam reads model_id from the query for model-scoped resources and refuses it elsewhere.
func (h *Handler) modelParam(req bunrouter.Request, res *model.Resource, q map[string][]string, op model.Operation) (string, error) {
	for k := range q {
		if k == "model_id" || (k == "fields" && op == model.OpGet) {
			continue
		}
		return "", invalidRequest("", fieldErr("unknown_field", k, "is not a parameter of this endpoint"))
	}
	vals := q["model_id"]
	if len(vals) > 1 {
		return "", invalidRequest("model_id must be given once.", nil)
	}
	if !res.ModelScoped {
		if len(vals) > 0 {
			return "", invalidRequest("model_id applies to data_model_records only.", nil)
		}
		return "", nil
	}
	modelID := ""
	if len(vals) == 1 {
		modelID = strings.ToLower(vals[0])
	}
	if op == model.OpCreate {
		return modelID, nil // may come in the body; checked after it is read
	}
	return modelID, asInvalid(h.svc.CheckModel(req.Context(), res, principal(req.Context()).Workspace.ID, modelID))
}

func bodyModel(body map[string]any, fromQuery string) (string, error) {
	v, ok := body["model_id"]
	if !ok {
		return fromQuery, nil
	}
	delete(body, "model_id")
	s, isStr := v.(string)
	if !isStr {
		return "", invalidRequest("", fieldErr("invalid_type", "model_id", "must be a UUID string"))
	}
	s = strings.ToLower(s)
	if fromQuery != "" && fromQuery != s {
		return "", invalidRequest("model_id in the query and in the body differ.", nil)
	}
	return s, nil
}

// asInvalid turns a malformed model_id into a 400; other errors pass through.
func asInvalid(err error) error {
	if err == nil {
		return nil
	}
	var ae *Error
	if errors.As(err, &ae) {
		return err
	}
	if fl := fieldList(err); fl != nil {
		return invalidRequest("", fl)
	}
	return err
}

func onlyParams(q map[string][]string) error {
	for k := range q {
		return invalidRequest("", fieldErr("unknown_field", k, "query takes its parameters in the JSON body"))
	}
	return nil
}

func requiredObject(r *http.Request) (map[string]any, error) {
	data, err := readBody(r)
	if err != nil {
		return nil, err
	}
	obj, err := DecodeObject(data)
	if err != nil {
		return nil, malformedBody(err)
	}
	return obj, nil
}

func optionalObject(r *http.Request) (map[string]any, error) {
	data, err := readBody(r)
	if err != nil {
		return nil, err
	}
	if len(strings.TrimSpace(string(data))) == 0 {
		return map[string]any{}, nil
	}
	obj, err := DecodeObject(data)
	if err != nil {
		return nil, malformedBody(err)
	}
	return obj, nil
}

// MaxReason is the longest archive reason.
const MaxReason = 1000

func archiveReason(body map[string]any) (*string, error) {
	for k := range body {
		if k != "reason" {
			return nil, validation(k, "unknown_field", "archive takes only reason")
		}
	}
	v, ok := body["reason"]
	if !ok || v == nil {
		return nil, nil
	}
	s, ok := v.(string)
	if !ok {
		return nil, validation("reason", "invalid_type", "must be a string")
	}
	if n := len([]rune(s)); n > MaxReason {
		return nil, validation("reason", "too_long", "must be at most 1000 characters")
	}
	if strings.ContainsRune(s, 0) {
		return nil, validation("reason", "invalid_format", "must not contain NUL characters")
	}
	return &s, nil
}

func (h *Handler) list(w http.ResponseWriter, req bunrouter.Request, res *model.Resource, params listplan.Params) error {
	ctx := req.Context()
	a := actorOf(ctx)
	if res.ModelScoped {
		params.ModelID = strings.ToLower(params.ModelID)
		if err := h.svc.CheckModel(ctx, res, a.Workspace, params.ModelID); err != nil {
			return asInvalid(err)
		}
	} else if params.ModelID != "" {
		return invalidRequest("model_id applies to data_model_records only.", nil)
	}
	fs, err := h.svc.Fields(ctx, a.Workspace, res, params.ModelID)
	if err != nil {
		return err
	}
	plan, errs := listplan.Build(res, params, listplan.Scope{Workspace: a.Workspace, Secret: h.svc.CursorSecret(), Policy: a.Policy(res), Custom: fs.FilterFields()})
	if len(errs) > 0 {
		return invalidRequest("", errs)
	}
	page, err := h.svc.List(ctx, a, plan)
	if err != nil {
		return err
	}
	data := make([]any, len(page.Records))
	for i, rec := range page.Records {
		data[i] = selectFields(rec, plan.Fields)
	}
	meta := map[string]any{"next_cursor": page.NextCursor, "has_more": page.HasMore, "page_size": plan.PageSize}
	if !plan.CursorMode() {
		meta["page"] = plan.Page
	}
	writeJSON(w, 200, map[string]any{"data": data, "meta": meta})
	return nil
}

func fieldsParam(q map[string][]string, res *model.Resource) ([]string, error) {
	vals, ok := q["fields"]
	if !ok {
		return nil, nil
	}
	if len(vals) != 1 {
		return nil, invalidRequest("fields must be given once.", nil)
	}
	out := []string{}
	for _, f := range strings.Split(vals[0], ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	if len(out) > listplan.MaxFields {
		return nil, invalidRequest(fmt.Sprintf("fields may name at most %d properties.", listplan.MaxFields), nil)
	}
	return out, nil
}

// selectFields keeps the named top-level properties (and id); nil keeps everything.
func selectFields(rec records.Record, names []string) records.Record {
	if names == nil {
		return rec
	}
	out := records.Record{"id": rec["id"]}
	for _, n := range names {
		if v, ok := rec[n]; ok {
			out[n] = v
		}
	}
	return out
}

func nullable(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// Package route describes the record API's routes as data: which method and path serve which operation
// of which resource. The same operation sets drive routing, 405 Allow headers, catalogs and the OpenAPI
// document, so they cannot disagree.
package route

import (
	"sort"
	"strings"

	"github.com/workspace-records/records/engine/model"
)

// Shape is the form of a record path.
type Shape uint8

// Record path shapes.
const (
	Collection Shape = iota + 1 // /v1/{resource}
	Query                       // /v1/{resource}/query
	Item                        // /v1/{resource}/{id}
	Restore                     // /v1/{resource}/{id}/restore
	Links                       // /v1/{resource}/{id}/{association}
	Link                        // /v1/{resource}/{id}/{association}/{target_id}
	Upsert                      // /v1/{resource}/by/{key}/{value}
	Batch                       // /v1/{resource}/batch
	History                     // /v1/{resource}/{id}/history
)

// Endpoint is what a route serves: the handler the router mounts on it and the operation the OpenAPI
// document describes for it.
type Endpoint uint8

// The endpoints.
const (
	Healthz         Endpoint = iota + 1 // GET /healthz, liveness
	Readyz                              // GET /readyz, readiness
	APIInfo                             // GET /v1
	OpenAPI                             // GET /v1/openapi.json
	DocsPage                            // GET /docs, the reference page
	DocsScript                          // GET /docs/redoc.standalone.js
	Me                                  // GET /v1/me
	Resources                           // GET /v1/resources
	ResourceCatalog                     // GET /v1/resources/:resource
	Record                              // a record operation (Op) of Resource
	ListLinks                           // GET /v1/{resource}/:id/:association
	PutLink                             // PUT /v1/{resource}/:id/:association/:target_id
	DeleteLink                          // DELETE /v1/{resource}/:id/:association/:target_id
	UpsertRecord                        // PUT /v1/{resource}/by/:key/:value
	BatchWrite                          // POST /v1/{resource}/batch
	Events                              // GET /v1/events, the change feed
	RecordHistory                       // GET /v1/{resource}/:id/history, a record's audit entries
	ConsolePage                         // GET /console, the web console's page
	ConsoleAsset                        // GET /console/{file}, its stylesheet and scripts (ConsoleFiles)
	ConsoleSignIn                       // POST /console/session: redeem a sign-in link, start a session
	ConsoleSession                      // GET /console/session: the signed-in member and the CSRF token
	ConsoleSignOut                      // DELETE /console/session
	// Bulk jobs (/v1/jobs…): imports and exports of one resource, run in the background.
	JobList      // GET /v1/jobs
	JobCreate    // POST /v1/jobs
	JobGet       // GET /v1/jobs/:id
	JobPart      // PUT /v1/jobs/:id/parts/:part
	JobClose     // POST /v1/jobs/:id/close
	JobCancel    // POST /v1/jobs/:id/cancel
	JobFailures  // GET /v1/jobs/:id/failures
	JobSuccesses // GET /v1/jobs/:id/successes
	JobDownload  // GET /v1/jobs/:id/download
	// Admin is a route of the admin API (/v1/admin/…) or of one's own keys (/v1/me/keys…): its AdminOp
	// names the operation, which picks both its handler (httpapi) and its OpenAPI operation (catalog).
	Admin
)

// Route is one method on one path pattern (bunrouter syntax). The route table (Table) is the one list
// of the API's routes: the router mounts it, 405 answers take their Allow header from it, and the
// OpenAPI document describes its documented routes. Every GET route also serves HEAD (RFC 9110 9.3.2):
// the router mounts the same handler, whose body the server leaves out, and Allow lists HEAD beside GET
// (WithHead).
type Route struct {
	Method   string
	Path     string
	Endpoint Endpoint
	// Label names the operation in the access log and the metrics.
	Label string
	// AdminOp is the operation of an admin route (Endpoint Admin; zero otherwise): admin.go.
	AdminOp AdminOp
	// Key is true for routes that need an API key.
	Key bool
	// Documented routes are part of the contract and described in the OpenAPI document (the /v1 routes
	// and the probes); the reference page and its script are not.
	Documented bool
	// Scope says which principals a keyed route serves (Key routes only).
	Scope    Scope
	Resource *model.Resource // nil outside a resource
	Op       model.Operation // for Record
	Shape    Shape           // for Record, ListLinks, PutLink, DeleteLink, RecordHistory
}

// Scope says which principals a keyed route serves (docs/issue-24.md, "Who may do what").
type Scope uint8

// The scopes.
const (
	// ScopeData routes serve data keys (read, write): records, the feed, the catalog. An admin key is
	// refused (403 insufficient_scope); a console session is not accepted.
	ScopeData Scope = iota
	// ScopeAny routes serve any key and a console session: /v1/me, one's own keys.
	ScopeAny
	// ScopeAdmin routes serve admin keys and console sessions whose member's role holds api.manage:
	// /v1/admin/…. A data key is refused (403 insufficient_scope).
	ScopeAdmin
)

// fixed are the routes outside any resource: the discovery routes below, the console's page and assets
// (console.go), then the admin API and one's own keys (admin.go).
var fixed = concatRoutes(discoveryRoutes, consoleRoutes, adminRoutes)

var discoveryRoutes = []Route{
	{Method: "GET", Path: "/healthz", Endpoint: Healthz, Label: "healthz", Documented: true},
	{Method: "GET", Path: "/readyz", Endpoint: Readyz, Label: "readyz", Documented: true},
	{Method: "GET", Path: "/v1", Endpoint: APIInfo, Label: "root", Documented: true},
	{Method: "GET", Path: "/v1/openapi.json", Endpoint: OpenAPI, Label: "openapi", Documented: true},
	{Method: "GET", Path: "/docs", Endpoint: DocsPage, Label: "docs"},
	{Method: "GET", Path: "/docs/redoc.standalone.js", Endpoint: DocsScript, Label: "docs"},
	{Method: "GET", Path: "/v1/me", Endpoint: Me, Label: "me", Key: true, Scope: ScopeAny, Documented: true},
	{Method: "GET", Path: "/v1/resources", Endpoint: Resources, Label: "catalog", Key: true, Documented: true},
	{Method: "GET", Path: "/v1/resources/:resource", Endpoint: ResourceCatalog, Label: "catalog", Key: true, Documented: true},
	{Method: "GET", Path: "/v1/events", Endpoint: Events, Label: "events", Key: true, Documented: true},
	{Method: "GET", Path: "/v1/jobs", Endpoint: JobList, Label: "job_list", Key: true, Documented: true},
	{Method: "POST", Path: "/v1/jobs", Endpoint: JobCreate, Label: "job_create", Key: true, Documented: true},
	{Method: "GET", Path: "/v1/jobs/:id", Endpoint: JobGet, Label: "job_get", Key: true, Documented: true},
	{Method: "PUT", Path: "/v1/jobs/:id/parts/:part", Endpoint: JobPart, Label: "job_part", Key: true, Documented: true},
	{Method: "POST", Path: "/v1/jobs/:id/close", Endpoint: JobClose, Label: "job_close", Key: true, Documented: true},
	{Method: "POST", Path: "/v1/jobs/:id/cancel", Endpoint: JobCancel, Label: "job_cancel", Key: true, Documented: true},
	{Method: "GET", Path: "/v1/jobs/:id/failures", Endpoint: JobFailures, Label: "job_failures", Key: true, Documented: true},
	{Method: "GET", Path: "/v1/jobs/:id/successes", Endpoint: JobSuccesses, Label: "job_successes", Key: true, Documented: true},
	{Method: "GET", Path: "/v1/jobs/:id/download", Endpoint: JobDownload, Label: "job_download", Key: true, Documented: true},
	// The console's session (docs/issue-24.md): outside /v1, authenticated by its own cookie.
	{Method: "POST", Path: "/console/session", Endpoint: ConsoleSignIn, Label: "console_sign_in", Documented: true},
	{Method: "GET", Path: "/console/session", Endpoint: ConsoleSession, Label: "console_session", Documented: true},
	{Method: "DELETE", Path: "/console/session", Endpoint: ConsoleSignOut, Label: "console_sign_out", Documented: true},
}

// Fixed returns the routes outside any resource.
func Fixed() []Route { return append([]Route(nil), fixed...) }

// FixedAllow returns the methods the fixed routes serve on path (a request path, not a pattern), comma
// separated; "" when no fixed route has that path.
func FixedAllow(path string) string {
	var methods []string
	for _, rt := range fixed {
		if matches(rt.Path, path) && !contains(methods, rt.Method) {
			methods = append(methods, rt.Method)
		}
	}
	return strings.Join(WithHead(methods), ", ")
}

// WithHead returns methods sorted, with HEAD added where GET is: every GET route serves HEAD too.
func WithHead(methods []string) []string {
	out := append([]string(nil), methods...)
	if contains(out, "GET") && !contains(out, "HEAD") {
		out = append(out, "HEAD")
	}
	sort.Strings(out)
	return out
}

// matches reports whether path fits pattern, whose :name segments match one non-empty segment.
func matches(pattern, path string) bool {
	ps, xs := strings.Split(pattern, "/"), strings.Split(path, "/")
	if len(ps) != len(xs) {
		return false
	}
	for i, p := range ps {
		if strings.HasPrefix(p, ":") {
			if xs[i] == "" {
				return false
			}
			continue
		}
		if p != xs[i] {
			return false
		}
	}
	return true
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// OpenAPIPath writes a route pattern in OpenAPI's template syntax: /v1/deals/:id becomes /v1/deals/{id}.
func OpenAPIPath(pattern string) string {
	segs := strings.Split(pattern, "/")
	for i, s := range segs {
		if name, ok := strings.CutPrefix(s, ":"); ok {
			segs[i] = "{" + name + "}"
		}
	}
	return strings.Join(segs, "/")
}

// opRoute says where each operation lives.
var opRoute = map[model.Operation]struct {
	method string
	shape  Shape
}{
	model.OpList:    {"GET", Collection},
	model.OpCreate:  {"POST", Collection},
	model.OpQuery:   {"POST", Query},
	model.OpGet:     {"GET", Item},
	model.OpUpdate:  {"PATCH", Item},
	model.OpArchive: {"DELETE", Item},
	model.OpRestore: {"POST", Restore},
}

// Where returns the method and path shape that serve op.
func Where(op model.Operation) (method string, shape Shape) {
	w := opRoute[op]
	return w.method, w.shape
}

// Pattern returns the path pattern of shape for resource name.
func Pattern(name string, s Shape) string {
	switch s {
	case Query:
		return "/v1/" + name + "/query"
	case Item:
		return "/v1/" + name + "/:id"
	case Restore:
		return "/v1/" + name + "/:id/restore"
	case Upsert:
		return "/v1/" + name + "/by/:key/:value"
	case Batch:
		return "/v1/" + name + "/batch"
	case History:
		return "/v1/" + name + "/:id/history"
	}
	return "/v1/" + name
}

// Histories reports whether r serves the history of its records (GET /v1/{resource}/{id}/history): every
// resource whose records can be read one by one, since a caller may read a record's history exactly when
// it may read the record.
func Histories(r *model.Resource) bool { return r.Ops.Has(model.OpGet) }

// Upserts reports whether r serves upserts: it takes creates and updates and is not model-scoped (a
// data model's fields cannot be unique keys). Which keys it has is the workspace's (custom unique
// fields), so the route exists whether or not r declares one.
func Upserts(r *model.Resource) bool {
	return r.Ops.Has(model.OpCreate) && r.Ops.Has(model.OpUpdate) && !r.ModelScoped
}

// MaxBatchItems is the most items one batch write takes. A batch counts one request per item against the
// rate limits and the quota, and the smallest paid plan allows 120 requests a minute per key: a larger
// batch could never be admitted there.
const MaxBatchItems = 100

// Batches reports whether r serves batch writes: it takes creates, updates or archives.
func Batches(r *model.Resource) bool {
	return r.Ops.Has(model.OpCreate) || r.Ops.Has(model.OpUpdate) || r.Ops.Has(model.OpArchive)
}

// Table returns every route of the API: the fixed routes, then each resource's record routes and, for a
// resource with associations, its link routes (put and delete only where the resource takes updates).
func Table(cat *model.Catalog) []Route {
	out := Fixed()
	out = append(out, Records(cat)...)
	for _, r := range cat.Resources {
		if len(r.Associations) == 0 {
			continue
		}
		base := "/v1/" + r.Name + "/:id/:association"
		out = append(out, Route{Method: "GET", Path: base, Endpoint: ListLinks, Label: "list_links", Key: true, Documented: true, Resource: r, Shape: Links})
		if r.Ops.Has(model.OpUpdate) {
			out = append(out,
				Route{Method: "PUT", Path: base + "/:target_id", Endpoint: PutLink, Label: "link", Key: true, Documented: true, Resource: r, Shape: Link},
				Route{Method: "DELETE", Path: base + "/:target_id", Endpoint: DeleteLink, Label: "unlink", Key: true, Documented: true, Resource: r, Shape: Link})
		}
	}
	return out
}

// Records returns the record routes the catalog's resources allow.
func Records(cat *model.Catalog) []Route {
	var out []Route
	for _, r := range cat.Resources {
		for _, op := range r.Ops.List() {
			w := opRoute[op]
			out = append(out, Route{Method: w.method, Path: Pattern(r.Name, w.shape), Endpoint: Record, Label: op.String(), Key: true, Documented: true, Resource: r, Op: op, Shape: w.shape})
		}
		if Upserts(r) {
			out = append(out, Route{Method: "PUT", Path: Pattern(r.Name, Upsert), Endpoint: UpsertRecord, Label: "upsert", Key: true, Documented: true, Resource: r, Shape: Upsert})
		}
		if Batches(r) {
			out = append(out, Route{Method: "POST", Path: Pattern(r.Name, Batch), Endpoint: BatchWrite, Label: "batch", Key: true, Documented: true, Resource: r, Shape: Batch})
		}
		if Histories(r) {
			out = append(out, Route{Method: "GET", Path: Pattern(r.Name, History), Endpoint: RecordHistory, Label: "history", Key: true, Documented: true, Resource: r, Shape: History})
		}
	}
	return out
}

// Allow returns the methods r allows on shape, sorted, HEAD beside GET. Links are listed with GET; a link
// is put and deleted on resources that take updates.
func Allow(r *model.Resource, s Shape) []string {
	switch s {
	case Links:
		return []string{"GET", "HEAD"}
	case Link:
		if r.Ops.Has(model.OpUpdate) {
			return []string{"DELETE", "PUT"}
		}
		return nil
	case Upsert:
		if Upserts(r) {
			return []string{"PUT"}
		}
		return nil
	case Batch:
		if Batches(r) {
			return []string{"POST"}
		}
		return nil
	case History:
		if Histories(r) {
			return []string{"GET", "HEAD"}
		}
		return nil
	}
	var out []string
	for _, op := range r.Ops.List() {
		if w := opRoute[op]; w.shape == s {
			out = append(out, w.method)
		}
	}
	return WithHead(out)
}

// Match classifies a request path under /v1 that no route served. It returns the resource and shape when
// the path has the form of a record path of a known resource; unknownResource is true when the first
// segment after /v1 is not a resource name.
func Match(cat *model.Catalog, path string) (r *model.Resource, s Shape, unknownResource bool) {
	rest, ok := strings.CutPrefix(path, "/v1/")
	if !ok || rest == "" {
		return nil, 0, false
	}
	segs := strings.Split(strings.TrimSuffix(rest, "/"), "/")
	name := segs[0]
	switch name {
	case "resources", "me", "openapi.json", "jobs":
		return nil, 0, false
	}
	r, ok = cat.Resource(name)
	if !ok {
		return nil, 0, true
	}
	switch {
	case len(segs) == 1:
		return r, Collection, false
	case len(segs) == 2 && segs[1] == "query":
		return r, Query, false
	case len(segs) == 2 && segs[1] == "batch" && Batches(r):
		return r, Batch, false
	case len(segs) == 4 && segs[1] == "by" && Upserts(r):
		return r, Upsert, false
	case len(segs) == 2:
		return r, Item, false
	case len(segs) == 3 && segs[2] == "restore":
		return r, Restore, false
	case len(segs) == 3 && segs[2] == "history" && Histories(r):
		return r, History, false
	case len(segs) == 3 && isAssociation(r, segs[2]):
		return r, Links, false
	case len(segs) == 4 && isAssociation(r, segs[2]):
		return r, Link, false
	}
	return nil, 0, false
}

func isAssociation(r *model.Resource, name string) bool {
	_, ok := r.Association(name)
	return ok
}

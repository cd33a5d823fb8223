package catalog

import (
	"fmt"
	"strings"

	"github.com/workspace-records/records/engine/apierr"
	"github.com/workspace-records/records/engine/listplan"
	"github.com/workspace-records/records/engine/model"
	"github.com/workspace-records/records/engine/route"
	"github.com/workspace-records/records/engine/schema"
)

// ErrorCodes are the error codes of SPEC.md (engine/apierr's table).
var ErrorCodes = apierr.Codes()

// ErrorTypes are the error types of SPEC.md.
var ErrorTypes = apierr.Types()

// ServerURL stands in the document for the server's base address (scheme and host, ending before /v1).
// The server replaces it when it serves the document, with its configured public URL or the address the
// caller used, so the rest of the document is built once per definitions load.
const ServerURL = "{{server_url}}"

// groupNames are the display names of the resource groups, in the order the reference shows them.
var groupNames = []struct{ group, name string }{
	{"crm", "CRM"}, {"sales_vocabulary", "Pipeline and sales vocabulary"}, {"activity_vocabulary", "Activity vocabulary"},
	{"workspace", "Workspace"}, {"custom", "Custom data models"}, {"delivery", "Delivery"}, {"delivery_vocabulary", "Delivery vocabulary"},
}

const apiDescription = `A JSON REST API over a workspace's customer-relationship records (companies, contacts, deals, leads,
products, activities and others) and delivery records (projects, tasks, deliverables, signals, approvals and
their vocabularies).

Every request acts as the member who owns the API key, inside that key's workspace, under the same
permissions, field masks and record rules as the interactive app; a request carries no workspace selector.
All bodies are ` + "`application/json`" + `. The service sends no CORS headers: keys are for server-side use only.
Answers of 1 KiB or more are gzip-encoded (` + "`Content-Encoding: gzip`" + `) when the request's ` + "`Accept-Encoding`" + `
names gzip (not with q=0), except for HEAD, 204 and 304; every answer says ` + "`Vary: Accept-Encoding`" + `. A request
with both ` + "`Content-Length`" + ` and ` + "`Transfer-Encoding`" + ` is refused with 400 and the connection is closed. A
path that, percent-decoded, holds a control character (U+0000–U+001F, U+007F–U+009F) or bytes that are not
UTF-8 is refused with 400 ` + "`invalid_request`" + ` before routing and before the key is checked, on any path.

**Records.** Each record has ` + "`id`" + ` (a UUID), engine-managed ` + "`created_at`" + `, ` + "`updated_at`" + `, ` + "`archived`" + `,
` + "`archived_at`" + `, ` + "`archive_reason`" + ` and ` + "`owner_id`" + `, and the fields of its resource. A single record comes back as
` + "`{data: record}`" + `, a list as ` + "`{data: [record...], meta}`" + `. Archiving is a soft delete that can be undone with
restore; archived records are left out of lists unless ` + "`include_archived=true`" + `. Fields a role masks come
back redacted (text keeps its shape, other values are null) and hidden fields are absent.

**Custom fields** defined by the workspace are written as top-level ` + "`cf__<key>`" + ` members or as one
` + "`custom_fields`" + ` object keyed by field key (not both), come back in the record's ` + "`custom_fields`" + ` object, and
are filtered and sorted by their ` + "`filter_key`" + ` / ` + "`sort_key`" + ` (` + "`cfv:<id>`" + `). The live field catalog of a resource in a
workspace, custom fields included, is ` + "`GET /v1/resources/{resource}`" + `; this document is the static contract.

**Pagination.** Lists page with ` + "`page`" + ` (1..10000, within the first 10,000 records) or walk any depth with
` + "`cursor`" + `: send ` + "`start`" + `, then each response's ` + "`meta.next_cursor`" + ` verbatim until it is null, keeping sort,
order, search and filters identical.

**Limits.** Requests are rate limited per key (per minute and per hour) and per workspace (per minute), and
counted against the plan's monthly quota. Data responses report the tightest window in ` + "`X-RateLimit-*`" + `
and the quota in ` + "`X-Quota-*`" + `; a refused request is 429 with ` + "`Retry-After`" + `. Bodies are at most 1 MiB.

**Idempotency.** Writes accept an ` + "`Idempotency-Key`" + ` header (1..255 printable ASCII characters; a UUID is
advised). Repeating the same request with the same key within 24 hours returns the first successful response
with ` + "`Idempotent-Replayed: true`" + ` and writes nothing more; the same key on a different request is 422
` + "`idempotency_key_reused`" + `, and 409 ` + "`idempotency_key_in_use`" + ` while the first is still running. A failed request
releases its key.

**Conditional requests.** Answers carrying one record have an ` + "`ETag`" + ` (the record's version, its ` + "`updated_at`" + ` in
microseconds, and a hash of the body this caller receives). A get with ` + "`If-None-Match`" + ` naming it is 304 without a
body; update, archive and restore with ` + "`If-Match`" + ` are 412 ` + "`precondition_failed`" + `, writing nothing, when the record's
version has moved on (checked on the locked row). A record the key may not see stays 404.

**Errors** are ` + "`{error: {type, code, message, details?, request_id}}`" + ` with the request id also in
` + "`X-Request-Id`" + `.`

// OpenAPI returns the generic OpenAPI 3.1 document of the API for cat, with ServerURL as its server
// address: custom fields are open objects of any field value. It is deterministic: the same definitions
// give the same document.
func OpenAPI(cat *model.Catalog, schemas *schema.Set) map[string]any {
	return OpenAPIFor(cat, schemas, nil)
}

// OpenAPIFor returns the document for one workspace as one caller sees it (ws; nil: the generic
// document): the custom fields and data model fields ws lists are typed properties of the records and
// write bodies of their resources. It is deterministic too.
func OpenAPIFor(cat *model.Catalog, schemas *schema.Set, ws *Workspace) map[string]any {
	d := &doc{cat: cat, schemas: schemas, ws: ws, paths: map[string]any{}, comps: components(cat), table: route.Table(cat)}
	d.discovery()
	refused := map[string][]any{}
	notes := map[string]string{}
	for _, r := range cat.Resources {
		d.resource(r)
		refused[r.Name], notes[r.Name] = d.refusals(r)
	}
	var tags, groups []any
	for _, g := range groupNames {
		var names []string
		for _, r := range cat.Resources {
			if r.Group == g.group {
				names = append(names, r.Name)
			}
		}
		if len(names) > 0 {
			groups = append(groups, map[string]any{"name": g.name, "tags": names})
		}
	}
	tags = append(tags, map[string]any{"name": "discovery", "x-displayName": "Discovery", "description": "The API's entry point, this contract, the calling key and the catalog of resources and fields."},
		map[string]any{"name": "probes", "x-displayName": "Probes", "description": "Liveness and readiness for load balancers and orchestrators, outside the versioned API. No key needed."},
		map[string]any{"name": "events", "x-displayName": "Change feed", "description": "Every committed write as an event, in a per-workspace sequence to resume from; the same events are delivered to webhook endpoints (Standard Webhooks signatures)."},
		jobsTag)
	for _, r := range cat.Resources {
		tag := map[string]any{"name": r.Name, "x-displayName": r.LabelPlural, "description": r.Description}
		if refused[r.Name] != nil {
			tag["description"] = strings.TrimSpace(r.Description + "\n\n" + notes[r.Name])
			tag["x-refused-operations"] = refused[r.Name]
		}
		tags = append(tags, tag)
	}
	tags = append(tags, adminTags...)
	groups = append([]any{map[string]any{"name": "Discovery", "tags": []string{"discovery", "probes", "events", "jobs"}}}, groups...)
	groups = append(groups, map[string]any{"name": "Administration", "tags": adminTagNames()})
	description := apiDescription
	if ws != nil {
		description += "\n\n" + ws.description()
	}
	return map[string]any{
		"openapi": "3.1.0",
		"info": map[string]any{
			"title": "Workspace Records API", "version": "v1", "description": description,
			"license": map[string]any{"name": "Proprietary", "identifier": "LicenseRef-Proprietary"},
			"contact": map[string]any{"name": "The operators of this server (the reference page is /docs)"},
		},
		"servers":     []any{map[string]any{"url": ServerURL, "description": "This server. Paths include the /v1 version prefix."}},
		"security":    []any{map[string]any{"bearerAuth": []any{}}},
		"tags":        tags,
		"x-tagGroups": groups,
		"paths":       d.paths,
		"components":  d.comps,
	}
}

type doc struct {
	cat     *model.Catalog
	schemas *schema.Set
	ws      *Workspace // nil: the generic document
	paths   map[string]any
	comps   map[string]any
	table   []route.Route     // the API's routes: every documented one is described
	levels  []map[string]bool // expandLevels, once made
}

func ref(kind, name string) map[string]any {
	return map[string]any{"$ref": "#/components/" + kind + "/" + name}
}

func schemaRef(name string) map[string]any { return ref("schemas", name) }

func jsonContent(s any) map[string]any {
	return map[string]any{"application/json": map[string]any{"schema": s}}
}

func str(desc string) map[string]any { return map[string]any{"type": "string", "description": desc} }

func intHeader(desc string) map[string]any {
	return map[string]any{"description": desc, "schema": map[string]any{"type": "integer", "minimum": 0}}
}

func (d *doc) add(path, method string, op map[string]any) {
	item, _ := d.paths[path].(map[string]any)
	if item == nil {
		item = map[string]any{}
		d.paths[path] = item
	}
	item[method] = op
}

// transportRefusal is the 400 of an operation that checks nothing of the request: the answer to a request
// the HTTP layer cannot parse (a malformed header or request line), which reaches no handler.
var transportRefusal = map[string]any{"$ref": "#/components/responses/BadRequest"}

// discovery describes the documented fixed routes of the table.
func (d *doc) discovery() {
	open := []any{}
	ops := map[route.Endpoint]map[string]any{}
	ops[route.APIInfo] = map[string]any{"operationId": "getApiInfo", "tags": []string{"discovery"}, "security": open,
		"summary": "API information", "description": "The API's name, version and the address of this document. No key needed.",
		"responses": map[string]any{"200": map[string]any{"description": "API information.", "headers": headerRefs("X-Request-Id"), "content": jsonContent(map[string]any{
			"type": "object", "required": []string{"name", "version", "openapi_url"}, "additionalProperties": false,
			"properties": map[string]any{"name": str("The API's name."), "version": str("The API version (`v1`)."), "openapi_url": map[string]any{"type": "string", "format": "uri", "description": "Where this document is served."}},
		})}, "400": transportRefusal}}
	openapi := withResponses(map[string]any{"operationId": "getOpenAPI", "tags": []string{"discovery"},
		"security": []any{map[string]any{}, map[string]any{"bearerAuth": []any{}}},
		"summary":  "This contract", "description": "This OpenAPI 3.1 document, built from the server's definitions. Served with an `ETag`; `If-None-Match` gives 304.\n\n" +
			"Without a key it is the generic document: custom fields are open objects of any field value. With a key " +
			"(`Authorization: Bearer`, checked, rate limited and counted like any keyed request) it is the key's workspace's document: " +
			"the custom fields and data model fields of the resources the key may read are typed properties, so a client generated " +
			"from it writes `custom_fields.<key>` typed. Resources the key may not read, and their custom fields, stay generic."},
		"200", map[string]any{"description": "The OpenAPI document.", "headers": map[string]any{"X-Request-Id": ref("headers", "X-Request-Id"), "ETag": map[string]any{"description": "The document's version.", "schema": map[string]any{"type": "string"}}},
			"content": jsonContent(map[string]any{"type": "object", "additionalProperties": true, "required": []string{"openapi", "info", "paths"}, "description": "An OpenAPI 3.1 document.",
				"properties": map[string]any{"openapi": str("The OpenAPI version, 3.1.0."), "info": map[string]any{"type": "object", "additionalProperties": true, "description": "The API's title, version and description."},
					"paths": map[string]any{"type": "object", "additionalProperties": true, "description": "The operations by path."}}})},
		"400", "401", "403", "429", "500", "503")
	openapi["responses"].(map[string]any)["304"] = map[string]any{"description": "Unchanged since the `ETag` sent in `If-None-Match`.", "headers": headerRefs("X-Request-Id")}
	ops[route.OpenAPI] = openapi
	ops[route.Healthz] = map[string]any{"operationId": "getHealthz", "tags": []string{"probes"}, "security": open,
		"summary": "Liveness", "description": "200 while the process serves HTTP; checks nothing else. No key needed, not rate limited.",
		"responses": map[string]any{"200": map[string]any{"description": "The process is alive.", "headers": headerRefs("X-Request-Id"), "content": jsonContent(map[string]any{
			"type": "object", "required": []string{"status"}, "additionalProperties": false,
			"properties": map[string]any{"status": map[string]any{"type": "string", "enum": []string{"ok"}, "description": "Always `ok`."}}})},
			"400": transportRefusal}}
	ops[route.Readyz] = withResponses(map[string]any{"operationId": "getReadyz", "tags": []string{"probes"}, "security": open,
		"summary": "Readiness", "description": "200 when every part a request needs answers (the database, Redis when configured, the rules plugins), " +
			"503 naming each failing part in `details.checks`, or while the server shuts down. No key needed, not rate limited.",
		"parameters": []any{map[string]any{"name": "optional", "in": "query", "description": "Comma-separated check names (such as `redis`) that are still checked and reported but do not fail the probe: the answer is then 200 with status `degraded`.",
			"schema": map[string]any{"type": "string"}}}},
		"200", map[string]any{"description": "Ready (or degraded: only optional parts fail).", "headers": headerRefs("X-Request-Id"), "content": jsonContent(map[string]any{
			"type": "object", "required": []string{"status", "checks", "definitions"}, "additionalProperties": false,
			"properties": map[string]any{"status": map[string]any{"type": "string", "enum": []string{"ok", "degraded"}, "description": "`degraded` when an optional part fails."},
				"checks":      map[string]any{"type": "object", "additionalProperties": map[string]any{"type": "string"}, "description": "Each part checked: `ok` or the reason it fails."},
				"definitions": readyDefinitions}})},
		"400", "500", "503")
	ops[route.Me] = withResponses(map[string]any{"operationId": "getMe", "tags": []string{"discovery"}, "summary": "The calling key", "security": keyOrSession,
		"description": "The calling key, its owner, its workspace and its current rate-limit and quota usage. Use it to verify a key after rotation."},
		"200", ok("The key report.", schemaRef("Me")), "401", "403", "429", "500", "503")
	ops[route.Resources] = withResponses(map[string]any{"operationId": "listResources", "tags": []string{"discovery"}, "summary": "Resources",
		"description": "The resources this key can use, with their operations. A resource listed here is not a grant to read every record."},
		"200", ok("The resources.", map[string]any{"type": "array", "items": schemaRef("ResourceSummary")}), "401", "403", "429", "500", "503")
	ops[route.ResourceCatalog] = withResponses(map[string]any{"operationId": "getResourceCatalog", "tags": []string{"discovery"}, "summary": "Field catalog",
		"description": "The live field catalog of a resource in this workspace: fields, required keys, options, sort and filter keys, custom fields and associations, with the caller's masks applied.",
		"parameters": []any{
			map[string]any{"name": "resource", "in": "path", "required": true, "description": "The resource.", "schema": schemaRef("ResourceName")},
			map[string]any{"name": "model_id", "in": "query", "description": "The data model, for `data_model_records`.", "schema": map[string]any{"type": "string", "format": "uuid"}},
		}},
		"200", ok("The field catalog.", schemaRef("FieldCatalog")), "400", "401", "403", "404", "429", "500", "503")
	ops[route.Events] = withResponses(map[string]any{"operationId": "listEvents", "tags": []string{"events"}, "summary": "Change feed",
		"description": "Every committed write of the workspace as an event, in sequence order: each create, update (with the previous values of the changed fields), " +
			"archive, restore, link, unlink, upsert, batch item and import, written in the write's own transaction (a write that rolled back has none). " +
			"Resume exactly with `cursor` = the last `sequence` seen. The key's resource allowlist, its owner's role, record rules (as the record is now) " +
			"and field masks apply to every event as to a read of its record; a link or unlink names the other record only when the caller sees it " +
			"(as the association list would list it: the other resource usable, the record inside the caller's record rule), and otherwise withholds the association. With `wait`, a caught-up reader's request is held until events arrive " +
			"(within about a second of their commit) or the wait ends. Events are kept for the server's `event_retention` (30 days by default). " +
			"Answers 404 `route_not_found` when the server runs with `events = false`.",
		"parameters": []any{
			map[string]any{"name": "cursor", "in": "query", "description": "`start` (the default: the oldest event kept), `latest` (only events after the newest one now), or the `sequence` of the last event seen.", "schema": map[string]any{"type": "string", "maxLength": 20}},
			map[string]any{"name": "resource", "in": "query", "description": "Only events of these resources (comma-separated).", "schema": map[string]any{"type": "string"}},
			map[string]any{"name": "type", "in": "query", "description": "Only events of these types (comma-separated `<resource>.<action>`).", "schema": map[string]any{"type": "string"}},
			map[string]any{"name": "limit", "in": "query", "description": fmt.Sprintf("Events per page, 1 to %d (default %d).", listplan.MaxEventPage, listplan.DefaultEventPage), "schema": map[string]any{"type": "integer", "minimum": 1, "maximum": listplan.MaxEventPage}},
			map[string]any{"name": "wait", "in": "query", "description": "When no event follows the cursor, wait up to this long for one (`30s`, `500ms`, or seconds; at most 30 s).", "schema": map[string]any{"type": "string"}},
		}},
		"200", map[string]any{"description": "A page of events.", "headers": headerRefs(append([]string{"X-Request-Id"}, usageHeaders...)...),
			"content": jsonContent(map[string]any{"type": "object", "required": []string{"data", "meta"}, "additionalProperties": false,
				"properties": map[string]any{"data": map[string]any{"type": "array", "items": schemaRef("Event")}, "meta": schemaRef("EventsMeta")}})},
		"400", "401", "403", "404", "422", "429", "500", "503")
	d.consoleSessionOperations(ops)
	jobOperations(ops)
	admin := d.adminOperations()
	for _, rt := range d.table {
		if rt.Resource != nil || !rt.Documented {
			continue
		}
		op, ok := ops[rt.Endpoint]
		if rt.Endpoint == route.Admin {
			op, ok = admin[rt.AdminOp]
		}
		if !ok {
			panic("catalog: the route table documents " + rt.Method + " " + rt.Path + ", which has no operation here")
		}
		d.add(route.OpenAPIPath(rt.Path), strings.ToLower(rt.Method), op)
	}
}

// resource adds the paths and schemas of r. A create body is a component of requestBodies, not of
// schemas: it carries the defaults the server applies, and generators such as openapi-typescript make a
// defaulted member of a schema component required (a response always has it) but leave it optional in a
// request body.
func (d *doc) resource(r *model.Resource) {
	name := SchemaName(r)
	levels := d.expandLevels()
	for level, suffix := range recordLevels {
		if level == 0 || levels[level][r.Name] {
			d.comps["schemas"].(map[string]any)[name+suffix] = d.recordSchema(r, level)
		}
	}
	if s := d.schemas.Resource(r.Name); s != nil && !r.ReadOnly() {
		d.comps["requestBodies"].(map[string]any)[name+"Create"] = map[string]any{"required": true,
			"description": "The " + lowerFirst(r.Label) + " to create: the fields to set; omitted fields take their defaults.",
			"content":     jsonContent(d.writeSchema(r, s.Doc(schema.Create), schema.Create))}
		d.comps["schemas"].(map[string]any)[name+"Update"] = d.writeSchema(r, s.Doc(schema.Update), schema.Update)
	}
	for _, rt := range d.table {
		if rt.Resource != r {
			continue
		}
		switch rt.Endpoint {
		case route.Record:
			d.add(openAPIPath(r, rt.Shape), strings.ToLower(rt.Method), d.operation(rt))
		case route.ListLinks, route.PutLink, route.DeleteLink:
			d.link(rt)
		case route.UpsertRecord:
			d.add(route.OpenAPIPath(rt.Path), "put", d.upsertOperation(r))
		case route.BatchWrite:
			d.add(route.OpenAPIPath(rt.Path), "post", d.batchOperation(r))
		case route.RecordHistory:
			d.add(route.OpenAPIPath(rt.Path), "get", historyOperation(r))
		}
	}
}

// historyOperation describes GET /v1/{resource}/{id}/history: a record's audit entries, newest first.
func historyOperation(r *model.Resource) map[string]any {
	params := []any{ref("parameters", "Id"), ref("parameters", "PageSize"),
		map[string]any{"name": "cursor", "in": "query", "description": "Keyset pagination: omit it (or send `start`) for the newest entries, then send each response's `meta.next_cursor` verbatim until it is null. A cursor of another record's history, or an edited one, is 400.",
			"schema": map[string]any{"type": "string", "maxLength": listplan.MaxCursorLen}}}
	if r.ModelScoped {
		params = append(params, map[string]any{"name": "model_id", "in": "query", "required": true, "description": "The data model the record belongs to.", "schema": map[string]any{"type": "string", "format": "uuid"}})
	}
	return withResponses(map[string]any{"operationId": "listHistory" + SchemaName(r), "tags": []string{r.Name}, "summary": "History of a " + lowerFirst(r.Label),
		"description": "The audit entries of one " + lowerFirst(r.Label) + ", newest first: every create, update (with the values it replaced), archive, restore, " +
			"import, and link and unlink written from this side. Readable exactly when the record is (archived or not): the key's allowlist, the plan and the role " +
			"as for a get (403), the record rule as the record is now (404). The caller's field masks apply to the values: masked fields are masked, hidden ones " +
			"left out and named in `withheld`; a link names the other record only when the caller sees it (as the association list would list it), and otherwise withholds the association: " +
			"when the caller may not use the other resource or the record is outside the caller's record rule.",
		"parameters": params},
		"200", map[string]any{"description": "One page of the record's history.", "headers": headerRefs(append([]string{"X-Request-Id"}, usageHeaders...)...),
			"content": jsonContent(map[string]any{"type": "object", "required": []string{"data", "meta"}, "additionalProperties": false,
				"properties": map[string]any{"data": map[string]any{"type": "array", "items": schemaRef("HistoryEntry")}, "meta": schemaRef("ListMeta")}})},
		"400", "401", "403", "404", "429", "500", "503")
}
func lowerFirst(s string) string {
	if s == "" {
		return s
	}
	return strings.ToLower(s[:1]) + s[1:]
}

// SchemaName is the component-name stem of r: deal_sources → DealSources (DealSourcesRecord, …).
func SchemaName(r *model.Resource) string {
	var b strings.Builder
	for _, part := range strings.Split(r.Name, "_") {
		if part != "" {
			b.WriteString(strings.ToUpper(part[:1]) + part[1:])
		}
	}
	return b.String()
}

func openAPIPath(r *model.Resource, s route.Shape) string {
	switch s {
	case route.Item:
		return "/v1/" + r.Name + "/{id}"
	case route.Restore:
		return "/v1/" + r.Name + "/{id}/restore"
	}
	return route.Pattern(r.Name, s)
}

// readyDefinitions is the definitions member of GET /readyz (docs/issue-25.md): the version served and
// the last version the server refused.
var readyDefinitions = map[string]any{"type": "object", "required": []string{"version", "served_since"}, "additionalProperties": false,
	"description": "The definitions version this server serves, and the last one it refused to serve (it then serves the previous one on).",
	"properties": map[string]any{
		"version":      map[string]any{"type": "string", "pattern": "^[0-9a-f]{12}$", "description": "The definitions version served: the first 12 hex digits of the SHA-256 of its files, as `recordsctl definitions versions` prints it."},
		"served_since": map[string]any{"type": "string", "format": "date-time", "description": "When this server began serving it."},
		"refused": map[string]any{"type": "object", "required": []string{"version", "by", "at", "error"}, "additionalProperties": false,
			"description": "The last version refused since the version served was taken up.",
			"properties": map[string]any{
				"version": map[string]any{"type": "string", "description": "Its version (12 hex digits); empty when its files did not even load (SIGHUP of an invalid directory)."},
				"by":      map[string]any{"type": "string", "description": "Who applied it (`recordsctl (user)`, `recordsd SIGHUP`)."},
				"at":      map[string]any{"type": "string", "format": "date-time", "description": "When it was refused."},
				"error":   map[string]any{"type": "string", "description": "Why, with each definitions problem as `file:line:col: path: message`."}}}}}

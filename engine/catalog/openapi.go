package catalog

import (
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

**Errors** are ` + "`{error: {type, code, message, details?, request_id}}`" + ` with the request id also in
` + "`X-Request-Id`" + `.`

// OpenAPI returns the OpenAPI 3.1 document of the API for cat, with ServerURL as its server address. It
// is deterministic: the same definitions give the same document.
func OpenAPI(cat *model.Catalog, schemas *schema.Set) map[string]any {
	d := &doc{cat: cat, schemas: schemas, paths: map[string]any{}, comps: components(cat), table: route.Table(cat)}
	d.discovery()
	for _, r := range cat.Resources {
		d.resource(r)
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
	tags = append(tags, map[string]any{"name": "discovery", "x-displayName": "Discovery", "description": "The API's entry point, this contract, the calling key and the catalog of resources and fields."})
	for _, r := range cat.Resources {
		tags = append(tags, map[string]any{"name": r.Name, "x-displayName": r.LabelPlural, "description": r.Description})
	}
	groups = append([]any{map[string]any{"name": "Discovery", "tags": []string{"discovery"}}}, groups...)
	return map[string]any{
		"openapi": "3.1.0",
		"info": map[string]any{
			"title": "Workspace Records API", "version": "v1", "description": apiDescription,
			"license": map[string]any{"name": "Proprietary", "identifier": "LicenseRef-Proprietary"},
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
	paths   map[string]any
	comps   map[string]any
	table   []route.Route // the API's routes: every documented one is described
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

// errorStatus describes each error status: its component name, description and headers.
var errorStatus = []struct {
	status, name, desc string
	headers            []string
}{
	{"400", "BadRequest", "Malformed parameters or body (`invalid_request`); `details.errors` names the parameter or field.", nil},
	{"401", "Unauthorized", "Missing, unknown, revoked or expired key (`invalid_api_key`, `expired_api_key`), or a key whose sign-in assurance is stale (`key_assurance_stale`).", []string{"WWW-Authenticate"}},
	{"403", "Forbidden", "The key or its owner may not make this request (`permission_denied`, `insufficient_scope`, `ip_not_allowed`, `plan_upgrade_required`, `feature_unavailable`, `forbidden`).", nil},
	{"404", "NotFound", "No such route (`route_not_found`), resource (`unknown_resource`) or record (`not_found`), including records the key may not see.", nil},
	{"405", "MethodNotAllowed", "Method not allowed here (`method_not_allowed`), for example a write on a read-only resource. `Allow` lists the methods that are.", []string{"Allow"}},
	{"409", "Conflict", "The write conflicts with the record's state or an existing record (`conflict`), or a request with the same `Idempotency-Key` is still running (`idempotency_key_in_use`).", nil},
	{"413", "PayloadTooLarge", "Body larger than 1 MiB (`payload_too_large`).", nil},
	{"422", "UnprocessableEntity", "The workspace refused the values (`validation_failed`: unknown field, required field, type, bound or rule; `details.errors` lists each field), or the `Idempotency-Key` was used for a different request (`idempotency_key_reused`).", nil},
	{"429", "TooManyRequests", "Rate limited (`rate_limited`) or monthly quota used up (`quota_exceeded`). Wait `Retry-After` seconds.", []string{"Retry-After"}},
	{"500", "InternalError", "Unexpected failure (`internal_error`).", nil},
	{"503", "ServiceUnavailable", "Temporarily unable to check the key, reach the data or run a rule (`service_unavailable`). Retry after `Retry-After` seconds.", []string{"Retry-After"}},
}

// usageHeaders are the rate-limit and quota headers of data responses.
var usageHeaders = []string{"X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Reset", "X-Quota-Limit", "X-Quota-Remaining", "X-Quota-Reset"}

func headerRefs(names ...string) map[string]any {
	out := map[string]any{}
	for _, n := range names {
		out[n] = ref("headers", n)
	}
	return out
}

// components returns the shared components: headers, parameters, error responses and common schemas.
func components(cat *model.Catalog) map[string]any {
	headers := map[string]any{
		"X-Request-Id":          map[string]any{"description": "Identifies the request in logs; equals `error.request_id` on errors.", "required": true, "schema": map[string]any{"type": "string", "format": "uuid"}},
		"X-RateLimit-Limit":     intHeader("Requests allowed in the tightest rate-limit window that applies (absent when none applies)."),
		"X-RateLimit-Remaining": intHeader("Requests left in that window."),
		"X-RateLimit-Reset":     intHeader("Seconds until that window resets."),
		"X-Quota-Limit":         intHeader("The monthly request quota (absent when uncapped)."),
		"X-Quota-Remaining":     intHeader("Requests left in this month's quota (absent when uncapped)."),
		"X-Quota-Reset":         intHeader("Seconds until the monthly quota resets."),
		"Location":              map[string]any{"description": "URL of the created record.", "required": true, "schema": map[string]any{"type": "string"}},
		"Idempotent-Replayed":   map[string]any{"description": "`true` when this is the stored response of an earlier request with the same `Idempotency-Key`.", "schema": map[string]any{"type": "string", "enum": []string{"true"}}},
		"Retry-After":           map[string]any{"description": "Seconds to wait before retrying.", "schema": map[string]any{"type": "integer", "minimum": 0}},
		"Allow":                 map[string]any{"description": "The methods this path allows, comma-separated (empty when none).", "required": true, "schema": map[string]any{"type": "string"}},
		"WWW-Authenticate":      map[string]any{"description": "The Bearer challenge, with the reason in `error` and `error_description`.", "required": true, "schema": map[string]any{"type": "string"}},
	}
	responses := map[string]any{}
	for _, e := range errorStatus {
		h := headerRefs(append([]string{"X-Request-Id"}, e.headers...)...)
		if e.status == "429" {
			h["X-RateLimit-Reset"] = ref("headers", "X-RateLimit-Reset")
		}
		responses[e.name] = map[string]any{"description": e.desc, "headers": h, "content": jsonContent(schemaRef("Error"))}
	}
	names := make([]string, len(cat.Resources))
	for i, r := range cat.Resources {
		names[i] = r.Name
	}
	params := map[string]any{
		"Id":             map[string]any{"name": "id", "in": "path", "required": true, "description": "The record's id.", "schema": map[string]any{"type": "string", "format": "uuid"}},
		"TargetId":       map[string]any{"name": "target_id", "in": "path", "required": true, "description": "The linked record's id.", "schema": map[string]any{"type": "string", "format": "uuid"}},
		"IdempotencyKey": map[string]any{"name": "Idempotency-Key", "in": "header", "description": "Makes the write safe to retry: a repeat within 24 hours returns the first response with `Idempotent-Replayed: true` and writes nothing more.", "schema": map[string]any{"type": "string", "minLength": 1, "maxLength": 255, "pattern": "^[\\x20-\\x7E]+$"}},
		"Fields":         map[string]any{"name": "fields", "in": "query", "description": "Comma-separated top-level properties to return; `id` is always kept and names the record lacks are skipped. Omit for every property.", "schema": map[string]any{"type": "string"}},
		"Page":           map[string]any{"name": "page", "in": "query", "description": "1-based page within the first 10,000 records; the last page is floor(10000 / page_size) + 1. Not with `cursor`.", "schema": map[string]any{"type": "integer", "minimum": 1, "maximum": listplan.MaxPage, "default": 1}},
		"PageSize":       map[string]any{"name": "page_size", "in": "query", "description": "Records per page.", "schema": map[string]any{"type": "integer", "minimum": 1, "maximum": listplan.MaxPageSize, "default": listplan.DefaultSize}},
		"Cursor":         map[string]any{"name": "cursor", "in": "query", "description": "Keyset pagination: `start` begins a walk; then send each response's `meta.next_cursor` verbatim until it is null. Reaches any depth. Not with `page`.", "schema": map[string]any{"type": "string", "maxLength": listplan.MaxCursorLen}},
		"Order":          map[string]any{"name": "order", "in": "query", "description": "Sort direction.", "schema": map[string]any{"type": "string", "enum": []string{"asc", "desc"}, "default": "desc"}},
		"IncludeArchived": map[string]any{"name": "include_archived", "in": "query", "description": "Include archived records.",
			"schema": map[string]any{"type": "boolean", "default": false}},
		"FilterQuery": map[string]any{"name": "filter", "in": "query", "description": "URL-encoded JSON array of filter items (`[{\"field\":\"name\",\"op\":\"eq\",\"value\":\"Acme\"}]`); fields are the `filter_keys` of the field catalog.", "schema": map[string]any{"type": "string"}},
		"Join":        map[string]any{"name": "join", "in": "query", "description": "How the filters combine.", "schema": map[string]any{"type": "string", "enum": []string{"and", "or"}, "default": "and"}},
		"Search":      map[string]any{"name": "search", "in": "query", "description": "Free-text search over the resource's full-text fields.", "schema": map[string]any{"type": "string", "maxLength": 200}},
	}
	schemas := map[string]any{
		"Error": map[string]any{
			"type": "object", "required": []string{"error"}, "additionalProperties": false,
			"description": "The error envelope of every error response.",
			"properties": map[string]any{"error": map[string]any{
				"type": "object", "required": []string{"type", "code", "message", "request_id"}, "additionalProperties": false,
				"properties": map[string]any{
					"type":       map[string]any{"type": "string", "enum": ErrorTypes, "description": "The error's category."},
					"code":       map[string]any{"type": "string", "enum": ErrorCodes, "description": "The specific error."},
					"message":    str("Human-readable text."),
					"details":    map[string]any{"type": "object", "description": "More about the error; open members (for example `errors`: one item per refused field)."},
					"request_id": map[string]any{"type": "string", "format": "uuid", "description": "Also sent in the `X-Request-Id` header."},
				},
			}},
		},
		"ListMeta": map[string]any{
			"type": "object", "required": []string{"next_cursor"}, "description": "About the page.",
			"properties": map[string]any{
				"next_cursor": map[string]any{"type": []string{"string", "null"}, "description": "Send verbatim as `cursor` to get the next page; null when the walk is finished."},
				"has_more":    map[string]any{"type": "boolean", "description": "Whether more records follow this page."},
				"page":        map[string]any{"type": "integer", "minimum": 1, "description": "The page number, in page mode."},
				"page_size":   map[string]any{"type": "integer", "minimum": 1, "maximum": listplan.MaxPageSize, "description": "The page size used."},
			},
		},
		"FilterItem": map[string]any{
			"type": "object", "required": []string{"field", "op"}, "additionalProperties": false, "description": "One filter item.",
			"properties": map[string]any{
				"field": str("A filter key from the field catalog (`filter_keys`), or a custom field's `cfv:<id>`."),
				"op":    map[string]any{"type": "string", "enum": []string{"eq", "ne", "lt", "lte", "gt", "gte", "in", "not_in", "contains", "not_contains", "starts_with", "is_empty", "is_not_empty"}, "description": "The comparison; the field catalog lists the operators each key takes."},
				"value": map[string]any{"description": "The operand: a value of the field's type, an array for `in` and `not_in`, absent for `is_empty` and `is_not_empty`."},
			},
		},
		"ArchiveRequest": map[string]any{"type": "object", "additionalProperties": false, "description": "Why the record is archived.",
			"properties": map[string]any{"reason": map[string]any{"type": "string", "maxLength": 1000, "description": "Kept as `archive_reason`."}}},
		"Link": map[string]any{
			"type": "object", "required": []string{"id", "resource", "association", "attributes"}, "description": "One association of a record.",
			"properties": map[string]any{
				"id":          map[string]any{"type": "string", "format": "uuid", "description": "The linked record."},
				"resource":    str("The linked record's resource."),
				"association": str("The association's name."),
				"attributes":  map[string]any{"type": "object", "description": "The association's attributes (the field catalog lists them)."},
				"created_at":  map[string]any{"type": "string", "format": "date-time"},
				"updated_at":  map[string]any{"type": "string", "format": "date-time"},
			},
		},
		"ResourceName": map[string]any{"type": "string", "enum": names, "description": "A resource name."},
		"ResourceSummary": map[string]any{
			"type": "object", "required": []string{"name", "path", "operations"}, "description": "A resource the key can use.",
			"properties": map[string]any{
				"name":         schemaRef("ResourceName"),
				"label":        str("Singular display name."),
				"label_plural": str("Plural display name."),
				"group":        str("The resource's group (crm, delivery, …)."),
				"description":  str("What the resource holds."),
				"path":         str("The collection path."),
				"operations":   map[string]any{"type": "array", "items": map[string]any{"type": "string", "enum": []string{"list", "query", "get", "create", "update", "archive", "restore"}}, "description": "The operations the resource has."},
				"read_only":    map[string]any{"type": "boolean", "description": "Only list, query and get exist."},
				"searchable":   map[string]any{"type": "boolean", "description": "Lists take `search`."},
				"model_scoped": map[string]any{"type": "boolean", "description": "Records live inside a custom data model (`model_id`)."},
				"access":       map[string]any{"type": "string", "enum": []string{"read", "write"}, "description": "What this key may do with it."},
			},
		},
		"FieldCatalog": map[string]any{
			"type": "object", "required": []string{"name", "fields", "sort_keys", "filter_keys", "associations", "custom_fields"},
			"description": "The live field catalog of a resource in the key's workspace: fields with their types and rules (masks applied), the write schema, sort and filter keys, custom fields and associations. Members may be added.",
			"properties": map[string]any{
				"name": schemaRef("ResourceName"),
				"fields": map[string]any{"type": "array", "items": map[string]any{"type": "object", "required": []string{"key", "type"},
					"properties": map[string]any{"key": str("The field key."), "type": str("The field type.")}}, "description": "Declared fields: key, label, type, required, writable, sortable, filterable, filter_key, options, bounds, visibility."},
				"required":      map[string]any{"type": "array", "items": map[string]any{"type": "string"}, "description": "Keys a create must set."},
				"sort_keys":     map[string]any{"type": "array", "items": map[string]any{"type": "string"}, "description": "Values `sort` takes, custom fields' `cfv:<id>` included."},
				"filter_keys":   map[string]any{"type": "array", "items": map[string]any{"type": "object"}, "description": "Keys filters take, with their type and operators."},
				"custom_fields": map[string]any{"type": "array", "items": map[string]any{"type": "object"}, "description": "The workspace's custom fields of this resource, with `key`, `filter_key` and `sort_key`."},
				"associations":  map[string]any{"type": "array", "items": map[string]any{"type": "object"}, "description": "Associations: name, target, path and attributes."},
				"schema":        map[string]any{"type": "object", "description": "The JSON Schemas of create and update bodies."},
			},
		},
		"Me": map[string]any{
			"type": "object", "required": []string{"key", "member", "workspace", "rate_limit", "quota"},
			"description": "The calling key, its owner and workspace, and its current rate-limit and quota usage.",
			"properties": map[string]any{
				"key": map[string]any{"type": "object", "description": "The key (never its secret): id, prefix, hint, access, resources, allowed addresses, creation and expiry.",
					"properties": map[string]any{"id": map[string]any{"type": "string", "format": "uuid"}, "access": map[string]any{"type": "string", "enum": []string{"read", "write"}},
						"expires_at": map[string]any{"type": "string", "format": "date-time"}}},
				"member":     map[string]any{"type": "object", "description": "The member who owns the key: id, email, role, department and permissions."},
				"workspace":  map[string]any{"type": "object", "description": "The key's workspace: id, name, plan and features."},
				"rate_limit": map[string]any{"type": "object", "description": "Configured limits and the tightest window's `limit`, `remaining` and `reset` (null when none applies)."},
				"quota":      map[string]any{"type": "object", "description": "Monthly quota: `limit` (null when uncapped), `used`, `remaining`, `reset` (seconds)."},
			},
		},
	}
	return map[string]any{
		"schemas":    schemas,
		"headers":    headers,
		"parameters": params,
		"responses":  responses,
		"securitySchemes": map[string]any{"bearerAuth": map[string]any{"type": "http", "scheme": "bearer", "bearerFormat": "wsk_<64 hex>",
			"description": "`Authorization: Bearer <API_KEY>`, a key of the form `wsk_` followed by 64 lowercase hexadecimal characters. It acts as its owner inside its workspace."}},
	}
}

// errs returns the responses of the given error statuses.
func errs(statuses ...string) map[string]any {
	out := map[string]any{}
	for _, s := range statuses {
		for _, e := range errorStatus {
			if e.status == s {
				out[s] = ref("responses", e.name)
			}
		}
	}
	return out
}

// ok returns a success response with data shaped by s and the usage headers.
func ok(desc string, s any, extra ...string) map[string]any {
	return map[string]any{"description": desc, "headers": headerRefs(append(append([]string{"X-Request-Id"}, usageHeaders...), extra...)...),
		"content": jsonContent(map[string]any{"type": "object", "required": []string{"data"}, "additionalProperties": false, "properties": map[string]any{"data": s}})}
}

func list(desc string, item any) map[string]any {
	return map[string]any{"description": desc, "headers": headerRefs(append([]string{"X-Request-Id"}, usageHeaders...)...),
		"content": jsonContent(map[string]any{"type": "object", "required": []string{"data", "meta"}, "additionalProperties": false,
			"properties": map[string]any{"data": map[string]any{"type": "array", "items": item}, "meta": schemaRef("ListMeta")}})}
}

func withResponses(op map[string]any, success string, resp map[string]any, statuses ...string) map[string]any {
	r := errs(statuses...)
	r[success] = resp
	op["responses"] = r
	return op
}

func (d *doc) add(path, method string, op map[string]any) {
	item, _ := d.paths[path].(map[string]any)
	if item == nil {
		item = map[string]any{}
		d.paths[path] = item
	}
	item[method] = op
}

// discovery describes the documented fixed routes of the table.
func (d *doc) discovery() {
	open := []any{}
	ops := map[route.Endpoint]map[string]any{}
	ops[route.APIInfo] = map[string]any{"operationId": "getApiInfo", "tags": []string{"discovery"}, "security": open,
		"summary": "API information", "description": "The API's name, version and the address of this document. No key needed.",
		"responses": map[string]any{"200": map[string]any{"description": "API information.", "headers": headerRefs("X-Request-Id"), "content": jsonContent(map[string]any{
			"type": "object", "required": []string{"name", "version", "openapi_url"}, "additionalProperties": false,
			"properties": map[string]any{"name": str("The API's name."), "version": str("The API version (`v1`)."), "openapi_url": map[string]any{"type": "string", "format": "uri", "description": "Where this document is served."}},
		})}}}
	ops[route.OpenAPI] = map[string]any{"operationId": "getOpenAPI", "tags": []string{"discovery"}, "security": open,
		"summary": "This contract", "description": "This OpenAPI 3.1 document, built from the server's definitions. Served with an `ETag`; `If-None-Match` gives 304. No key needed.",
		"responses": map[string]any{
			"200": map[string]any{"description": "The OpenAPI document.", "headers": map[string]any{"X-Request-Id": ref("headers", "X-Request-Id"), "ETag": map[string]any{"description": "The document's version.", "schema": map[string]any{"type": "string"}}},
				"content": jsonContent(map[string]any{"type": "object"})},
			"304": map[string]any{"description": "Unchanged since the `ETag` sent in `If-None-Match`.", "headers": headerRefs("X-Request-Id")},
		}}
	ops[route.Me] = withResponses(map[string]any{"operationId": "getMe", "tags": []string{"discovery"}, "summary": "The calling key",
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
	for _, rt := range d.table {
		if rt.Resource != nil || !rt.Documented {
			continue
		}
		op, ok := ops[rt.Endpoint]
		if !ok {
			panic("catalog: the route table documents " + rt.Method + " " + rt.Path + ", which has no operation here")
		}
		d.add(route.OpenAPIPath(rt.Path), strings.ToLower(rt.Method), op)
	}
}

// resource adds the paths and schemas of r.
func (d *doc) resource(r *model.Resource) {
	name := SchemaName(r)
	d.comps["schemas"].(map[string]any)[name+"Record"] = recordSchema(r)
	if s := d.schemas.Resource(r.Name); s != nil && !r.ReadOnly() {
		d.comps["schemas"].(map[string]any)[name+"Create"] = writeSchema(r, s.Doc(schema.Create))
		d.comps["schemas"].(map[string]any)[name+"Update"] = writeSchema(r, s.Doc(schema.Update))
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
		}
	}
	d.refused(r)
	d.refusedLinks(r)
}

// writeSchema adapts a write body's JSON Schema document to a component: its $schema goes (components
// use the document's dialect). A data model record's body also holds the model's own fields, checked
// against the model's definition (the field catalog with model_id shows them), and may name its model.
func writeSchema(r *model.Resource, s map[string]any) map[string]any {
	out := make(map[string]any, len(s))
	for k, v := range s {
		if k != "$schema" {
			out[k] = v
		}
	}
	props := map[string]any{}
	for k, v := range out["properties"].(map[string]any) {
		props[k] = withNumberFormat(v.(map[string]any))
	}
	out["properties"] = props
	if r.ModelScoped {
		props := map[string]any{"model_id": map[string]any{"type": "string", "format": "uuid", "description": "The data model; required here or as the model_id query parameter."}}
		for k, v := range out["properties"].(map[string]any) {
			props[k] = v
		}
		out["properties"] = props
		out["additionalProperties"] = true
		out["description"] = "Declared fields, custom fields and the data model's own fields (the field catalog of the model lists them)."
	}
	return out
}

// refused documents the 405 of each standard operation r does not have.
func (d *doc) refused(r *model.Resource) {
	for _, op := range []model.Operation{model.OpCreate, model.OpQuery, model.OpGet, model.OpUpdate, model.OpArchive, model.OpRestore, model.OpList} {
		if r.Ops.Has(op) {
			continue
		}
		method, shape := route.Where(op)
		allow := strings.Join(route.Allow(r, shape), ", ")
		desc := r.LabelPlural + " have no " + op.String() + " operation"
		if r.ReadOnly() {
			desc = r.Name + " is read-only: only list, query and get exist"
		}
		var params []any
		if shape == route.Item || shape == route.Restore {
			params = append(params, ref("parameters", "Id"))
		}
		op := map[string]any{"operationId": op.String() + SchemaName(r) + "NotAllowed", "tags": []string{r.Name}, "security": []any{},
			"summary": strings.ToUpper(method[:1]) + strings.ToLower(method[1:]) + " is refused", "description": desc + "; the request is answered 405 with `Allow: " + allow + "` before the key is checked.",
			"responses": errs("405")}
		if len(params) > 0 {
			op["parameters"] = params
		}
		d.add(openAPIPath(r, shape), strings.ToLower(method), op)
	}
}

// linkParams returns the association path parameter of r (its associations as an enum) and the tags
// of its link operations.
func linkParams(r *model.Resource) (assoc map[string]any, tags []string) {
	names := make([]string, len(r.Associations))
	var desc strings.Builder
	for i, a := range r.Associations {
		names[i] = a.Name
		desc.WriteString("`" + a.Name + "` (" + a.Target + ")")
		if i < len(r.Associations)-1 {
			desc.WriteString(", ")
		}
	}
	assoc = map[string]any{"name": "association", "in": "path", "required": true, "description": "The association: " + desc.String() + ".", "schema": map[string]any{"type": "string", "enum": names}}
	return assoc, []string{r.Name}
}

// link adds the operation of a link route of the table.
func (d *doc) link(rt route.Route) {
	r := rt.Resource
	assoc, tags := linkParams(r)
	id := ref("parameters", "Id")
	path := route.OpenAPIPath(rt.Path)
	params := []any{id, assoc, ref("parameters", "TargetId")}
	switch rt.Endpoint {
	case route.ListLinks:
		d.add(path, "get", withResponses(map[string]any{
			"operationId": "listLinks" + SchemaName(r), "tags": tags, "summary": "List associations",
			"description": "The records linked to a " + lowerFirst(r.Label) + " through an association, with the association's attributes. The key must be allowed both resources.",
			"parameters":  []any{id, assoc, ref("parameters", "Page"), ref("parameters", "PageSize"), ref("parameters", "Cursor")}},
			"200", list("One page of associations.", schemaRef("Link")), "400", "401", "403", "404", "422", "429", "500", "503"))
	case route.PutLink:
		d.add(path, "put", withResponses(map[string]any{"operationId": "putLink" + SchemaName(r), "tags": tags, "summary": "Link records",
			"description": "Creates the association, or updates its attributes when it exists. The body holds the attributes (the field catalog lists them); an empty body or none sets none.",
			"parameters":  append(params, ref("parameters", "IdempotencyKey")),
			"requestBody": map[string]any{"required": false, "content": jsonContent(map[string]any{"type": "object", "description": "The association's attributes."})}},
			"200", ok("The association.", schemaRef("Link"), "Idempotent-Replayed"), "400", "401", "403", "404", "409", "413", "422", "429", "500", "503"))
	case route.DeleteLink:
		d.add(path, "delete", withResponses(map[string]any{"operationId": "deleteLink" + SchemaName(r), "tags": tags, "summary": "Unlink records",
			"description": "Removes the association.", "parameters": append(params, ref("parameters", "IdempotencyKey"))},
			"200", ok("The removed association.", schemaRef("Link"), "Idempotent-Replayed"), "400", "401", "403", "404", "409", "422", "429", "500", "503"))
	}
}

// refusedLinks describes the 405 of link writes on a resource with associations that takes no updates:
// its associations are changed from the other side.
func (d *doc) refusedLinks(r *model.Resource) {
	if len(r.Associations) == 0 || r.Ops.Has(model.OpUpdate) {
		return
	}
	assoc, tags := linkParams(r)
	params := []any{ref("parameters", "Id"), assoc, ref("parameters", "TargetId")}
	path := "/v1/" + r.Name + "/{id}/{association}/{target_id}"
	for _, m := range []string{"put", "delete"} {
		d.add(path, m, map[string]any{"operationId": m + "Link" + SchemaName(r) + "NotAllowed", "tags": tags, "parameters": params,
			"summary": "Refused", "description": r.Name + " takes no writes, so its associations are changed from the other side.", "responses": errs("401", "405")})
	}
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

// recordSchema is the schema of r's records as responses show them. Values may be null where a role
// masks them, and masked text keeps its shape but not its format, so text formats, patterns and options
// are described rather than asserted; hidden fields and fields left out by `fields` are absent, so only id
// is required.
func recordSchema(r *model.Resource) map[string]any {
	props := map[string]any{}
	for _, f := range r.Fields {
		props[f.Key] = responseProperty(f)
	}
	if r.ModelScoped {
		props["model_id"] = map[string]any{"type": "string", "format": "uuid", "description": "The data model the record belongs to."}
	}
	props["custom_fields"] = map[string]any{"type": "object", "description": "The workspace's custom field values, keyed by field key (masks applied)."}
	out := map[string]any{"type": "object", "required": []string{"id"}, "properties": props,
		"description": "A " + lowerFirst(r.Label) + " record. " + r.Description}
	if r.ModelScoped {
		out["additionalProperties"] = true // the data model's own fields
	} else {
		out["additionalProperties"] = false
	}
	return out
}

// withNumberFormat returns p with format double on a decimal ("number") property, so that client
// generators choose a 64-bit float rather than their narrow default; p itself is not changed.
func withNumberFormat(p map[string]any) map[string]any {
	isNumber := p["type"] == "number"
	if types, ok := p["type"].([]any); ok && len(types) > 0 && types[0] == "number" {
		isNumber = true
	}
	if !isNumber {
		return p
	}
	out := make(map[string]any, len(p)+1)
	for k, v := range p {
		out[k] = v
	}
	out["format"] = "double"
	return out
}

func responseProperty(f *model.Field) map[string]any {
	p := withNumberFormat(schema.Property(f))
	if f.Type.Textual() {
		for _, k := range []string{"format", "pattern", "maxLength", "minLength"} {
			delete(p, k)
		}
		if e, ok := p["enum"]; ok {
			delete(p, "enum")
			p["x-options"] = e
		}
	}
	if f.Type == model.MultiSelect {
		p["items"] = map[string]any{"type": "string"}
	}
	delete(p, "default")
	if t, ok := p["type"].(string); ok {
		p["type"] = []any{t, "null"}
	}
	if f.Key == "id" {
		p["type"] = "string"
	}
	if f.Formula != nil {
		p["readOnly"] = true
		p["description"] = strings.TrimSpace(desc(p) + " Computed: `" + f.Formula.Expr + "`.")
	} else if !f.Writable() {
		p["readOnly"] = true
	}
	return p
}

func desc(p map[string]any) string { s, _ := p["description"].(string); return s }

func (d *doc) operation(rt route.Route) map[string]any {
	r := rt.Resource
	name := SchemaName(r)
	rec := schemaRef(name + "Record")
	tags := []string{r.Name}
	op := map[string]any{"operationId": rt.Op.String() + name, "tags": tags}
	var params []any
	var modelParam map[string]any
	if r.ModelScoped {
		modelParam = map[string]any{"name": "model_id", "in": "query", "required": rt.Op != model.OpCreate && rt.Op != model.OpQuery, "description": "The data model the records belong to.", "schema": map[string]any{"type": "string", "format": "uuid"}}
		if rt.Op == model.OpCreate || rt.Op == model.OpQuery {
			modelParam["description"] = "The data model the records belong to; required, here or in the body."
		}
	}
	writes := []string{"400", "401", "403", "404", "405", "409", "413", "422", "429", "500", "503"}
	switch rt.Op {
	case model.OpList:
		op["summary"] = "List " + lowerFirst(r.LabelPlural)
		op["description"] = "A page of " + lowerFirst(r.LabelPlural) + " the key may see, newest first unless sorted. No total count is computed."
		params = append(params, ref("parameters", "Page"), ref("parameters", "Cursor"), ref("parameters", "PageSize"),
			map[string]any{"name": "sort", "in": "query", "description": sortDesc(r), "schema": sortSchema(r)},
			ref("parameters", "Order"), ref("parameters", "IncludeArchived"), ref("parameters", "FilterQuery"), ref("parameters", "Join"), ref("parameters", "Fields"))
		if len(r.Search) > 0 {
			params = append(params, ref("parameters", "Search"))
		}
		withResponses(op, "200", list("One page of records.", rec), "400", "401", "403", "404", "422", "429", "500", "503")
	case model.OpQuery:
		op["summary"] = "Query " + lowerFirst(r.LabelPlural)
		op["description"] = "The same result as list, with the parameters in the body: filters as a real array. Counts as a read."
		props := map[string]any{
			"page":             map[string]any{"type": "integer", "minimum": 1, "maximum": listplan.MaxPage, "description": "As in list; not with cursor."},
			"cursor":           map[string]any{"type": "string", "description": "As in list; not with page."},
			"page_size":        map[string]any{"type": "integer", "minimum": 1, "maximum": listplan.MaxPageSize},
			"sort":             sortSchema(r),
			"order":            map[string]any{"type": "string", "enum": []string{"asc", "desc"}},
			"include_archived": map[string]any{"type": "boolean"},
			"filters":          map[string]any{"type": "array", "items": schemaRef("FilterItem")},
			"join":             map[string]any{"type": "string", "enum": []string{"and", "or"}},
			"fields":           map[string]any{"type": "array", "maxItems": listplan.MaxFields, "items": map[string]any{"type": "string"}, "description": "Properties to return; id always kept."},
		}
		if len(r.Search) > 0 {
			props["search"] = map[string]any{"type": "string", "maxLength": 200}
		}
		if r.ModelScoped {
			props["model_id"] = map[string]any{"type": "string", "format": "uuid"}
		}
		op["requestBody"] = map[string]any{"required": false, "content": jsonContent(map[string]any{"type": "object", "additionalProperties": false, "properties": props})}
		withResponses(op, "200", list("One page of records.", rec), "400", "401", "403", "404", "413", "422", "429", "500", "503")
	case model.OpGet:
		op["summary"] = "Get a " + lowerFirst(r.Label)
		op["description"] = "One " + lowerFirst(r.Label) + ", archived or not. A record the key may not see is 404."
		params = append(params, ref("parameters", "Id"), ref("parameters", "Fields"))
		withResponses(op, "200", ok("The record.", rec), "400", "401", "403", "404", "429", "500", "503")
	case model.OpCreate:
		op["summary"] = "Create a " + lowerFirst(r.Label)
		op["description"] = "The body holds only the fields to set, plus custom fields as `cf__<key>` members or one `custom_fields` object (not both). Unknown and read-only fields are refused with 422."
		params = append(params, ref("parameters", "IdempotencyKey"))
		op["requestBody"] = map[string]any{"required": true, "content": jsonContent(schemaRef(name + "Create"))}
		withResponses(op, "201", ok("Created.", rec, "Location", "Idempotent-Replayed"), writes...)
	case model.OpUpdate:
		op["summary"] = "Update a " + lowerFirst(r.Label)
		op["description"] = "Sets the fields in the body (null clears an optional one), with the same rules as create. An archived record cannot be updated (409)."
		params = append(params, ref("parameters", "Id"), ref("parameters", "IdempotencyKey"))
		op["requestBody"] = map[string]any{"required": true, "content": jsonContent(schemaRef(name + "Update"))}
		withResponses(op, "200", ok("The updated record.", rec, "Idempotent-Replayed"), writes...)
	case model.OpArchive:
		op["summary"] = "Archive a " + lowerFirst(r.Label)
		op["description"] = "Soft delete, with an optional reason; the record can be restored. Archiving an archived record is 409."
		params = append(params, ref("parameters", "Id"), ref("parameters", "IdempotencyKey"))
		op["requestBody"] = map[string]any{"required": false, "content": jsonContent(schemaRef("ArchiveRequest"))}
		withResponses(op, "200", ok("The archived record.", rec, "Idempotent-Replayed"), writes...)
	case model.OpRestore:
		op["summary"] = "Restore a " + lowerFirst(r.Label)
		op["description"] = "Makes an archived record active again. Restoring an active record is 409. No body."
		params = append(params, ref("parameters", "Id"), ref("parameters", "IdempotencyKey"))
		withResponses(op, "200", ok("The restored record.", rec, "Idempotent-Replayed"), writes...)
	}
	if modelParam != nil {
		params = append(params, modelParam)
	}
	if len(params) > 0 {
		op["parameters"] = params
	}
	return op
}

func sortDesc(r *model.Resource) string {
	if r.ReadOnly() {
		return "A sort key of the resource (the field catalog's `sort_keys`). Default: newest first."
	}
	return "A sort key of the resource, or a custom field's `sort_key` (`cfv:<id>`) from the field catalog. Default: newest first."
}

// sortSchema is the schema of the sort parameter: a declared sort key, or (on resources that take custom
// fields) a custom field's sort key.
func sortSchema(r *model.Resource) map[string]any {
	declared := map[string]any{"type": "string", "enum": r.SortKeys()}
	if r.ReadOnly() {
		return declared
	}
	return map[string]any{"anyOf": []any{declared, map[string]any{"type": "string", "pattern": "^cfv:[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$"}}}
}

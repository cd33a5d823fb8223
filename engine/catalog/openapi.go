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
Answers of 1 KiB or more are gzip-encoded (` + "`Content-Encoding: gzip`" + `) when the request's ` + "`Accept-Encoding`" + `
names gzip (not with q=0), except for HEAD, 204 and 304; every answer says ` + "`Vary: Accept-Encoding`" + `. A request
with both ` + "`Content-Length`" + ` and ` + "`Transfer-Encoding`" + ` is refused with 400 and the connection is closed.

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
			"fields":           map[string]any{"type": "array", "maxItems": listplan.MaxFields, "items": map[string]any{"type": "string"}, "description": "Properties to return; id always kept; names the records lack are skipped and reported in `Records-Unknown-Fields`."},
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
		withResponses(op, "200", ok("The record.", rec, "Records-Unknown-Fields"), "400", "401", "403", "404", "429", "500", "503")
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

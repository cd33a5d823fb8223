package catalog

import (
	"github.com/workspace-records/records/engine/listplan"
	"github.com/workspace-records/records/engine/model"
	"github.com/workspace-records/records/engine/route"
	"github.com/workspace-records/records/engine/schema"
)

// ErrorCodes are the error codes of SPEC.md.
var ErrorCodes = []string{"invalid_request", "invalid_api_key", "expired_api_key", "key_assurance_stale", "ip_not_allowed",
	"permission_denied", "plan_upgrade_required", "insufficient_scope", "feature_unavailable", "forbidden", "not_found",
	"unknown_resource", "route_not_found", "method_not_allowed", "conflict", "idempotency_key_in_use", "payload_too_large",
	"validation_failed", "idempotency_key_reused", "rate_limited", "quota_exceeded", "internal_error", "service_unavailable"}

// ErrorTypes are the error types of SPEC.md.
var ErrorTypes = []string{"invalid_request_error", "authentication_error", "permission_error", "not_found_error",
	"conflict_error", "validation_error", "rate_limit_error", "api_error"}

func ref(name string) map[string]any { return map[string]any{"$ref": "#/components/schemas/" + name} }

func jsonContent(s any) map[string]any {
	return map[string]any{"application/json": map[string]any{"schema": s}}
}

func errResp(desc string) map[string]any {
	return map[string]any{"description": desc, "content": jsonContent(ref("Error")),
		"headers": map[string]any{"X-Request-Id": map[string]any{"$ref": "#/components/headers/X-Request-Id"}}}
}

var errorDescriptions = map[string]string{
	"400": "Malformed parameters or body (invalid_request).",
	"401": "Missing, unknown, revoked or expired key; also key_assurance_stale. Carries WWW-Authenticate.",
	"403": "The key or its owner may not make this request.",
	"404": "No such route, resource or record.",
	"405": "Method not allowed here. Carries Allow.",
	"409": "Write conflicts with the record's state or an existing record.",
	"413": "Body larger than 1 MiB.",
	"422": "The workspace refused the values (validation_failed).",
	"429": "Rate limited or monthly quota used up. Carries Retry-After.",
	"500": "Unexpected failure.",
	"503": "Temporarily unable to check the key or reach the data.",
}

func responses(ok string, okResp map[string]any, codes ...string) map[string]any {
	out := map[string]any{ok: okResp}
	for _, c := range codes {
		out[c] = errResp(errorDescriptions[c])
	}
	return out
}

// OpenAPI returns the OpenAPI 3.1 document of the API for cat. It is deterministic: the same
// definitions give the same document.
func OpenAPI(cat *model.Catalog, schemas *schema.Set) map[string]any {
	names := make([]any, len(cat.Resources))
	for i, r := range cat.Resources {
		names[i] = r.Name
	}
	comps := map[string]any{
		"Error": map[string]any{
			"type": "object", "required": []string{"error"},
			"properties": map[string]any{"error": map[string]any{
				"type": "object", "required": []string{"type", "code", "message", "request_id"},
				"properties": map[string]any{
					"type":       map[string]any{"type": "string", "enum": ErrorTypes},
					"code":       map[string]any{"type": "string", "enum": ErrorCodes},
					"message":    map[string]any{"type": "string"},
					"details":    map[string]any{"type": "object"},
					"request_id": map[string]any{"type": "string", "format": "uuid"},
				},
			}},
		},
		"ListMeta": map[string]any{
			"type": "object", "required": []string{"next_cursor"},
			"properties": map[string]any{
				"next_cursor": map[string]any{"type": []string{"string", "null"}, "description": "Send verbatim as cursor to get the next page; null when the walk is finished."},
				"has_more":    map[string]any{"type": "boolean"},
				"page":        map[string]any{"type": "integer"},
				"page_size":   map[string]any{"type": "integer"},
			},
		},
		"Filter": map[string]any{
			"type": "object", "required": []string{"field", "op"}, "additionalProperties": false,
			"properties": map[string]any{
				"field": map[string]any{"type": "string", "description": "A filter key from the field catalog."},
				"op":    map[string]any{"type": "string", "enum": []string{"eq", "ne", "lt", "lte", "gt", "gte", "in", "not_in", "contains", "not_contains", "starts_with", "is_empty", "is_not_empty"}},
				"value": map[string]any{},
			},
		},
	}
	paths := map[string]any{
		"/v1": map[string]any{"get": map[string]any{"operationId": "getApiInfo", "summary": "Name, version and OpenAPI address of the API.", "security": []any{},
			"responses": map[string]any{"200": map[string]any{"description": "API information.", "content": jsonContent(map[string]any{
				"type": "object", "required": []string{"name", "version", "openapi_url"},
				"properties": map[string]any{"name": map[string]any{"type": "string"}, "version": map[string]any{"type": "string"}, "openapi_url": map[string]any{"type": "string", "format": "uri"}},
			})}}}},
		"/v1/openapi.json": map[string]any{"get": map[string]any{"operationId": "getOpenAPI", "summary": "This OpenAPI 3.1 document.", "security": []any{},
			"responses": map[string]any{"200": map[string]any{"description": "The contract.", "content": jsonContent(map[string]any{"type": "object"})}}}},
		"/v1/me": map[string]any{"get": map[string]any{"operationId": "getMe", "summary": "The calling key, its workspace and its usage.",
			"responses": responses("200", okData(map[string]any{"type": "object"}), "401", "403", "429", "500", "503")}},
		"/v1/resources": map[string]any{"get": map[string]any{"operationId": "listResources", "summary": "The resources this key can use.",
			"responses": responses("200", okData(map[string]any{"type": "array", "items": map[string]any{"type": "object"}}), "401", "403", "429", "500", "503")}},
		"/v1/resources/{resource}": map[string]any{"get": map[string]any{"operationId": "getResourceCatalog", "summary": "The field catalog of a resource in this workspace.",
			"parameters": []any{
				map[string]any{"name": "resource", "in": "path", "required": true, "schema": map[string]any{"type": "string", "enum": names}},
				map[string]any{"name": "model_id", "in": "query", "schema": map[string]any{"type": "string", "format": "uuid"}, "description": "The data model, for data_model_records."},
			},
			"responses": responses("200", okData(map[string]any{"type": "object"}), "400", "401", "403", "404", "429", "500", "503")}},
	}
	for _, r := range cat.Resources {
		rec := recordSchema(r)
		comps[schemaName(r, "Record")] = rec
		if s := schemas.Resource(r.Name); s != nil && !r.ReadOnly() {
			comps[schemaName(r, "Create")] = s.Doc(schema.Create)
			comps[schemaName(r, "Update")] = s.Doc(schema.Update)
		}
	}
	comps["Link"] = map[string]any{
		"type": "object", "required": []string{"id", "resource", "association", "attributes"},
		"properties": map[string]any{
			"id":          map[string]any{"type": "string", "format": "uuid", "description": "The linked record."},
			"resource":    map[string]any{"type": "string"},
			"association": map[string]any{"type": "string"},
			"attributes":  map[string]any{"type": "object"},
			"created_at":  map[string]any{"type": "string", "format": "date-time"},
			"updated_at":  map[string]any{"type": "string", "format": "date-time"},
		},
	}
	for _, r := range cat.Resources {
		if len(r.Associations) == 0 {
			continue
		}
		names := make([]string, len(r.Associations))
		for i, a := range r.Associations {
			names[i] = a.Name
		}
		idParam := map[string]any{"name": "id", "in": "path", "required": true, "schema": map[string]any{"type": "string", "format": "uuid"}}
		assocParam := map[string]any{"name": "association", "in": "path", "required": true, "schema": map[string]any{"type": "string", "enum": names}}
		targetParam := map[string]any{"name": "target_id", "in": "path", "required": true, "schema": map[string]any{"type": "string", "format": "uuid"}}
		paths["/v1/"+r.Name+"/{id}/{association}"] = map[string]any{"get": map[string]any{
			"operationId": "listLinks" + schemaName(r, ""), "tags": []string{r.Name}, "summary": "List the records linked to a " + r.Label + " through an association.",
			"parameters": []any{idParam, assocParam,
				map[string]any{"name": "page", "in": "query", "schema": map[string]any{"type": "integer", "minimum": 1, "maximum": listplan.MaxPage}},
				map[string]any{"name": "page_size", "in": "query", "schema": map[string]any{"type": "integer", "minimum": 1, "maximum": listplan.MaxPageSize}},
				map[string]any{"name": "cursor", "in": "query", "schema": map[string]any{"type": "string"}}},
			"responses": responses("200", listResp(ref("Link")), "400", "401", "403", "404", "429", "500", "503"),
		}}
		if r.Ops.Has(model.OpUpdate) {
			single := okData(ref("Link"))
			paths["/v1/"+r.Name+"/{id}/{association}/{target_id}"] = map[string]any{
				"put": map[string]any{"operationId": "putLink" + schemaName(r, ""), "tags": []string{r.Name}, "summary": "Create or update one association; the body holds its attributes.",
					"parameters": []any{idParam, assocParam, targetParam}, "requestBody": map[string]any{"required": false, "content": jsonContent(map[string]any{"type": "object"})},
					"responses": responses("200", single, "400", "401", "403", "404", "405", "409", "413", "422", "429", "500", "503")},
				"delete": map[string]any{"operationId": "deleteLink" + schemaName(r, ""), "tags": []string{r.Name}, "summary": "Remove one association.",
					"parameters": []any{idParam, assocParam, targetParam},
					"responses":  responses("200", single, "400", "401", "403", "404", "405", "409", "429", "500", "503")},
			}
		}
	}
	for _, rt := range route.Table(cat) {
		p := openAPIPath(rt)
		item, _ := paths[p].(map[string]any)
		if item == nil {
			item = map[string]any{}
			paths[p] = item
		}
		item[lower(rt.Method)] = operation(rt)
	}
	return map[string]any{
		"openapi": "3.1.0",
		"info": map[string]any{"title": "Workspace Records API", "version": "v1",
			"description": "A JSON REST API over a workspace's CRM and delivery records. Every request acts as the member who owns the API key, inside that key's workspace."},
		"servers":    []any{map[string]any{"url": "/", "description": "The server's base address; paths include /v1."}},
		"security":   []any{map[string]any{"bearerAuth": []any{}}},
		"paths":      paths,
		"components": map[string]any{"schemas": comps, "securitySchemes": map[string]any{"bearerAuth": map[string]any{"type": "http", "scheme": "bearer", "description": "wsk_ followed by 64 hexadecimal characters."}}, "headers": map[string]any{"X-Request-Id": map[string]any{"schema": map[string]any{"type": "string", "format": "uuid"}, "description": "Identifies the request in logs and error bodies."}}},
	}
}

func okData(s any) map[string]any {
	return map[string]any{"description": "Success.", "content": jsonContent(map[string]any{"type": "object", "required": []string{"data"}, "properties": map[string]any{"data": s}})}
}

func lower(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + 32
		}
	}
	return string(b)
}

func schemaName(r *model.Resource, suffix string) string {
	out := []byte{}
	up := true
	for _, c := range []byte(r.Name) {
		if c == '_' {
			up = true
			continue
		}
		if up && 'a' <= c && c <= 'z' {
			c -= 32
		}
		up = false
		out = append(out, c)
	}
	return string(out) + suffix
}

func openAPIPath(rt route.Route) string {
	switch rt.Shape {
	case route.Item:
		return "/v1/" + rt.Resource.Name + "/{id}"
	case route.Restore:
		return "/v1/" + rt.Resource.Name + "/{id}/restore"
	}
	return route.Pattern(rt.Resource.Name, rt.Shape)
}

func recordSchema(r *model.Resource) map[string]any {
	props := map[string]any{}
	for _, f := range r.Fields {
		p := schema.Property(f)
		if f.Type == model.Object {
			p = map[string]any{"type": "object"}
		}
		if f.Key == "id" {
			p["type"] = "string"
		}
		props[f.Key] = p
	}
	if r.ModelScoped {
		props["model_id"] = map[string]any{"type": "string", "format": "uuid"}
	}
	return map[string]any{"type": "object", "required": []string{"id"}, "properties": props,
		"patternProperties": map[string]any{"^cf__": map[string]any{}}}
}

func operation(rt route.Route) map[string]any {
	r := rt.Resource
	recRef := ref(schemaName(r, "Record"))
	idParam := map[string]any{"name": "id", "in": "path", "required": true, "schema": map[string]any{"type": "string", "format": "uuid"}}
	modelParam := map[string]any{"name": "model_id", "in": "query", "required": r.ModelScoped && rt.Op != model.OpCreate, "schema": map[string]any{"type": "string", "format": "uuid"}}
	fieldsParam := map[string]any{"name": "fields", "in": "query", "schema": map[string]any{"type": "string"}, "description": "Comma-separated top-level properties to return; id is always kept."}
	var params []any
	op := map[string]any{"operationId": rt.Op.String() + schemaName(r, ""), "tags": []string{r.Name}}
	single := okData(recRef)
	writeCodes := []string{"400", "401", "403", "404", "405", "409", "413", "422", "429", "500", "503"}
	switch rt.Op {
	case model.OpList:
		op["summary"] = "List " + r.LabelPlural + "."
		params = append(params,
			map[string]any{"name": "page", "in": "query", "schema": map[string]any{"type": "integer", "minimum": 1, "maximum": listplan.MaxPage, "default": 1}},
			map[string]any{"name": "cursor", "in": "query", "schema": map[string]any{"type": "string"}, "description": "start, or a previous meta.next_cursor. Not with page."},
			map[string]any{"name": "page_size", "in": "query", "schema": map[string]any{"type": "integer", "minimum": 1, "maximum": listplan.MaxPageSize, "default": listplan.DefaultSize}},
			map[string]any{"name": "sort", "in": "query", "schema": sortSchema(r), "description": "A sort key of the resource, or a custom field's sort_key (cfv:<id>) from the catalog."},
			map[string]any{"name": "order", "in": "query", "schema": map[string]any{"type": "string", "enum": []string{"asc", "desc"}, "default": "desc"}},
			map[string]any{"name": "include_archived", "in": "query", "schema": map[string]any{"type": "boolean", "default": false}},
			map[string]any{"name": "filter", "in": "query", "schema": map[string]any{"type": "string"}, "description": "URL-encoded JSON array of filter items."},
			map[string]any{"name": "join", "in": "query", "schema": map[string]any{"type": "string", "enum": []string{"and", "or"}, "default": "and"}},
			fieldsParam)
		if len(r.Search) > 0 {
			params = append(params, map[string]any{"name": "search", "in": "query", "schema": map[string]any{"type": "string"}})
		}
		op["responses"] = responses("200", listResp(recRef), "400", "401", "403", "404", "422", "429", "500", "503")
	case model.OpQuery:
		op["summary"] = "Query " + r.LabelPlural + " with parameters in the body."
		body := map[string]any{"type": "object", "additionalProperties": false, "properties": map[string]any{
			"page":             map[string]any{"type": "integer", "minimum": 1, "maximum": listplan.MaxPage},
			"cursor":           map[string]any{"type": "string"},
			"page_size":        map[string]any{"type": "integer", "minimum": 1, "maximum": listplan.MaxPageSize},
			"sort":             sortSchema(r),
			"order":            map[string]any{"type": "string", "enum": []string{"asc", "desc"}},
			"search":           map[string]any{"type": "string"},
			"include_archived": map[string]any{"type": "boolean"},
			"filters":          map[string]any{"type": "array", "items": ref("Filter")},
			"join":             map[string]any{"type": "string", "enum": []string{"and", "or"}},
			"model_id":         map[string]any{"type": "string", "format": "uuid"},
			"fields":           map[string]any{"type": "array", "maxItems": listplan.MaxFields, "items": map[string]any{"type": "string"}},
		}}
		op["requestBody"] = map[string]any{"required": false, "content": jsonContent(body)}
		op["responses"] = responses("200", listResp(recRef), "400", "401", "403", "404", "413", "422", "429", "500", "503")
	case model.OpGet:
		op["summary"] = "Get one " + r.Label + "."
		params = append(params, idParam, fieldsParam)
		op["responses"] = responses("200", single, "400", "401", "403", "404", "429", "500", "503")
	case model.OpCreate:
		op["summary"] = "Create a " + r.Label + "."
		op["requestBody"] = map[string]any{"required": true, "content": jsonContent(ref(schemaName(r, "Create")))}
		created := okData(recRef)
		created["description"] = "Created."
		created["headers"] = map[string]any{"Location": map[string]any{"schema": map[string]any{"type": "string"}, "description": "URL of the created record."}}
		op["responses"] = responses("201", created, writeCodes...)
	case model.OpUpdate:
		op["summary"] = "Update a " + r.Label + "."
		params = append(params, idParam)
		op["requestBody"] = map[string]any{"required": true, "content": jsonContent(ref(schemaName(r, "Update")))}
		op["responses"] = responses("200", single, writeCodes...)
	case model.OpArchive:
		op["summary"] = "Archive a " + r.Label + " (soft delete)."
		params = append(params, idParam)
		op["requestBody"] = map[string]any{"required": false, "content": jsonContent(map[string]any{"type": "object", "additionalProperties": false,
			"properties": map[string]any{"reason": map[string]any{"type": "string", "maxLength": 1000}}})}
		op["responses"] = responses("200", single, writeCodes...)
	case model.OpRestore:
		op["summary"] = "Restore an archived " + r.Label + "."
		params = append(params, idParam)
		op["responses"] = responses("200", single, writeCodes...)
	}
	if r.ModelScoped {
		params = append(params, modelParam)
	}
	if len(params) > 0 {
		op["parameters"] = params
	}
	return op
}

func listResp(rec map[string]any) map[string]any {
	return map[string]any{"description": "One page of records.", "content": jsonContent(map[string]any{
		"type": "object", "required": []string{"data", "meta"},
		"properties": map[string]any{"data": map[string]any{"type": "array", "items": rec}, "meta": ref("ListMeta")},
	})}
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

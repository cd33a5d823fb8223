package catalog

import (
	"strings"

	"github.com/workspace-records/records/engine/model"
	"github.com/workspace-records/records/engine/route"
)

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

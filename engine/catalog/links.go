package catalog

import (
	"maps"
	"reflect"
	"strings"

	"github.com/workspace-records/records/engine/model"
	"github.com/workspace-records/records/engine/route"
	"github.com/workspace-records/records/engine/schema"
)

// refusals describes the writes r refuses without declaring them as operations: an operation whose only
// answer is 405 would become a callable method of every generated client (and a linter warning). Each
// refusal is listed in the tag's x-refused-operations (method, path, status, the Allow header answered,
// why) and told in the tag's description, and a path that has operations of its own says which methods
// it refuses. The server answers them 405 with Allow before the key is checked.
func (d *doc) refusals(r *model.Resource) (items []any, text string) {
	refusedOn := map[string][]string{} // OpenAPI path → refused methods
	var paths []string
	note := func(method, path, allow, why string) {
		items = append(items, map[string]any{"method": method, "path": path, "status": 405, "allow": allow, "reason": why})
		if refusedOn[path] == nil {
			paths = append(paths, path)
		}
		refusedOn[path] = append(refusedOn[path], method)
	}
	for _, op := range []model.Operation{model.OpList, model.OpCreate, model.OpQuery, model.OpGet, model.OpUpdate, model.OpArchive, model.OpRestore} {
		if r.Ops.Has(op) {
			continue
		}
		method, shape := route.Where(op)
		why := r.LabelPlural + " have no " + op.String() + " operation."
		if r.ReadOnly() {
			why = r.Name + " is read-only: only list, query and get exist."
		}
		note(method, openAPIPath(r, shape), strings.Join(route.Allow(r, shape), ", "), why)
	}
	if len(r.Associations) > 0 && !r.Ops.Has(model.OpUpdate) {
		path := "/v1/" + r.Name + "/{id}/{association}/{target_id}"
		for _, m := range []string{"PUT", "DELETE"} {
			note(m, path, strings.Join(route.Allow(r, route.Link), ", "), r.Name+" takes no writes, so its associations are changed from the other side.")
		}
	}
	if len(items) == 0 {
		return nil, ""
	}
	var b strings.Builder
	b.WriteString("Refused with 405 and `Allow` before the key is checked: ")
	for i, path := range paths {
		if i > 0 {
			b.WriteString("; ")
		}
		methods := strings.Join(refusedOn[path], ", ")
		b.WriteString(methods + " " + path)
		if item, ok := d.paths[path].(map[string]any); ok {
			item["description"] = methods + " on this path is refused: 405, with `Allow` naming the methods described here (HEAD beside GET)."
		}
	}
	b.WriteString(".")
	return items, b.String()
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
			"requestBody": map[string]any{"required": false, "content": jsonContent(d.linkBody(r))}},
			"200", ok("The association.", schemaRef("Link"), "Idempotent-Replayed"), "400", "401", "403", "404", "409", "413", "422", "429", "500", "503"))
	case route.DeleteLink:
		d.add(path, "delete", withResponses(map[string]any{"operationId": "deleteLink" + SchemaName(r), "tags": tags, "summary": "Unlink records",
			"description": "Removes the association.", "parameters": append(params, ref("parameters", "IdempotencyKey"))},
			"200", ok("The removed association.", schemaRef("Link"), "Idempotent-Replayed"), "400", "401", "403", "404", "409", "422", "429", "500", "503"))
	}
}

// linkBody is the body of r's PUT link: the attributes of its associations, typed. Each association
// takes its own attributes (the field catalog lists them), and a member another association declares is
// refused with 422; a member two associations declare differently takes either form.
func (d *doc) linkBody(r *model.Resource) map[string]any {
	props := map[string]any{}
	owners := map[string][]string{}
	var keys []string
	for _, a := range r.Associations {
		s := d.schemas.Resource(a.Attrs.Name)
		if s == nil {
			continue
		}
		attrs, _ := s.Doc(schema.Create)["properties"].(map[string]any)
		for _, f := range a.Attributes {
			v, ok := attrs[f.Key].(map[string]any)
			if !ok {
				continue
			}
			p := maps.Clone(withNumberFormat(v))
			if prev, seen := props[f.Key]; seen && !reflect.DeepEqual(prev, p) {
				if alts, ok := prev.(map[string]any)["anyOf"].([]any); ok {
					p = map[string]any{"anyOf": append(alts, p)}
				} else {
					p = map[string]any{"anyOf": []any{prev, p}}
				}
			} else if !seen {
				keys = append(keys, f.Key)
			}
			props[f.Key] = p
			owners[f.Key] = append(owners[f.Key], a.Name)
		}
	}
	for _, k := range keys {
		p := props[k].(map[string]any)
		p["description"] = strings.TrimSpace(desc(p) + " Of the association" + plural(len(owners[k])) + " " + strings.Join(owners[k], ", ") + ".")
	}
	out := map[string]any{"type": "object", "additionalProperties": false, "properties": props,
		"description": "The association's attributes; an association without attributes takes an empty object."}
	return out
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

package catalog

import (
	"fmt"
	"strings"

	"github.com/workspace-records/records/engine/listplan"
	"github.com/workspace-records/records/engine/model"
	"github.com/workspace-records/records/engine/route"
	"github.com/workspace-records/records/engine/schema"
)

// recordSchema is the schema of r's records as responses show them. Values may be null where a role
// masks them, and masked text keeps its shape but not its format, so text formats, patterns and options
// are described rather than asserted; hidden fields and fields left out by `fields` are absent, so only id
// is required. custom_fields holds any field values, or in a workspace's document its custom fields typed
// (and still any value for a field added since). level says where the record is: a record of the answer
// (0, <Name>Record), expanded from one (1, <Name>Expanded), or without expansions (2, <Name>Plain: a
// record expanded at the second level, and what writes answer): three schemas, so that none refers to
// itself, and writes' answers do not carry the expansion members they never hold.
func (d *doc) recordSchema(r *model.Resource, level int) map[string]any {
	props := map[string]any{}
	for _, f := range r.Fields {
		props[f.Key] = responseProperty(f)
	}
	if r.ModelScoped {
		props["model_id"] = map[string]any{"type": "string", "format": "uuid", "description": "The data model the record belongs to."}
	}
	props["custom_fields"] = schemaRef("CustomFields")
	if custom, typed := d.customProps(r, true); typed {
		props["custom_fields"] = map[string]any{"type": "object", "properties": custom, "additionalProperties": schemaRef("FieldValue"),
			"description": "The custom field values, keyed by field key (masks applied)."}
	}
	desc := "A " + lowerFirst(r.Label) + " record. " + r.Description
	if level < listplan.MaxExpandDepth {
		d.expansionProps(r, props, recordLevels[level+1])
	}
	switch level {
	case 1:
		desc = fmt.Sprintf("A %s record expanded from another (level 1 of %d). %s", lowerFirst(r.Label), listplan.MaxExpandDepth, r.Description)
	case 2:
		desc = fmt.Sprintf("A %s record without expansions: what a write answers, and a record expanded at level %d. %s", lowerFirst(r.Label), listplan.MaxExpandDepth, r.Description)
	}
	out := map[string]any{"type": "object", "required": []string{"id"}, "properties": props, "description": desc}
	if r.ModelScoped {
		out["additionalProperties"] = true // the data model's own fields
	} else {
		out["additionalProperties"] = false
	}
	return out
}

// writeSchema adapts a write body's JSON Schema document to the document: its $schema goes (components
// use the document's dialect), decimals get format double, custom field values refer to FieldValue, or in
// a workspace's document are typed, as custom_fields members and as cf__<key> members alike. A data model
// record's body also holds the model's own fields, checked against the model's definition (the field
// catalog with model_id shows them), and may name its model.
func (d *doc) writeSchema(r *model.Resource, s map[string]any, m schema.Mode) map[string]any {
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
	props["custom_fields"] = schemaRef("CustomFields")
	// cf__<key> members hold a FieldValue, but the schema does not say so with a type: generators turn
	// patternProperties into an index signature over every member (openapi-typescript: [key: string]: T),
	// which the custom_fields object would then have to satisfy too. Untyped, it is [key: string]: unknown;
	// the workspace's document (customProps) declares each cf__<key> member typed instead.
	out["patternProperties"] = map[string]any{schema.CustomMemberPattern: map[string]any{
		"description": "A custom field value, keyed cf__<key>: a FieldValue of the field's type (the field catalog lists the fields). Not together with custom_fields."}}
	if custom, typed := d.customProps(r, false); typed {
		note := "Custom field values keyed by field key. Not together with cf__<key> members."
		if required := d.requiredCustom(r); m == schema.Create && len(required) > 0 {
			note += " Required on create, here or as cf__<key>: " + strings.Join(required, ", ") + "."
		}
		props["custom_fields"] = map[string]any{"type": "object", "properties": custom, "additionalProperties": false, "description": note}
		for k, v := range custom {
			props["cf__"+k] = v
		}
		delete(out, "patternProperties")
	}
	out["properties"] = props
	addRules(out, r, m)
	if r.ModelScoped {
		props["model_id"] = map[string]any{"type": "string", "format": "uuid", "description": "The data model; required here or as the model_id query parameter."}
		out["additionalProperties"] = true
		out["description"] = "Declared fields, custom fields and the data model's own fields (the field catalog of the model lists them)."
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
	written := schemaRef(name + "Plain") // a write answers the record without expansions
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
	conditional := []string{"400", "401", "403", "404", "405", "409", "412", "413", "422", "429", "500", "503"}
	switch rt.Op {
	case model.OpList:
		op["summary"] = "List " + lowerFirst(r.LabelPlural)
		op["description"] = "A page of " + lowerFirst(r.LabelPlural) + " the key may see, newest first unless sorted. No total count is computed."
		params = append(params, ref("parameters", "Page"), ref("parameters", "Cursor"), ref("parameters", "PageSize"),
			map[string]any{"name": "sort", "in": "query", "description": sortDesc(r), "schema": sortSchema(r)},
			ref("parameters", "Order"), ref("parameters", "IncludeArchived"), ref("parameters", "FilterQuery"), ref("parameters", "Join"), ref("parameters", "Fields"), ref("parameters", "Count"), d.expandParam(r))
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
			"count":            map[string]any{"type": "string", "enum": []string{"exact", "estimated", "none"}, "description": "As in list."},
			"filters":          map[string]any{"type": "array", "items": schemaRef("FilterItem")},
			"join":             map[string]any{"type": "string", "enum": []string{"and", "or"}},
			"fields":           map[string]any{"type": "array", "maxItems": listplan.MaxFields, "items": map[string]any{"type": "string"}, "description": "Properties to return; id always kept; names the records lack are skipped and reported in `Records-Unknown-Fields`; `relation.field` selects inside an expansion."},
			"expand":           d.expandMember(r),
		}
		if len(r.Search) > 0 {
			props["search"] = map[string]any{"type": "string", "maxLength": 200}
		}
		if r.ModelScoped {
			props["model_id"] = map[string]any{"type": "string", "format": "uuid"}
		}
		// The server refuses page and cursor together (400): the schema says so.
		op["requestBody"] = map[string]any{"required": false, "content": jsonContent(map[string]any{"type": "object", "additionalProperties": false, "properties": props,
			"not": map[string]any{"required": []string{"page", "cursor"}, "properties": map[string]any{"page": map[string]any{}, "cursor": map[string]any{}}}, "description": "The list parameters; `page` and `cursor` exclude each other."})}
		withResponses(op, "200", list("One page of records.", rec), "400", "401", "403", "404", "413", "422", "429", "500", "503")
	case model.OpGet:
		op["summary"] = "Get a " + lowerFirst(r.Label)
		op["description"] = "One " + lowerFirst(r.Label) + ", archived or not. A record the key may not see is 404."
		params = append(params, ref("parameters", "Id"), ref("parameters", "Fields"), d.expandParam(r), ref("parameters", "IfNoneMatch"))
		withResponses(op, "200", ok("The record.", rec, "Records-Unknown-Fields", "ETag"), "400", "401", "403", "404", "429", "500", "503")
		op["responses"].(map[string]any)["304"] = map[string]any{"description": "Unchanged since the `ETag` sent in `If-None-Match`; no body.", "headers": headerRefs("X-Request-Id", "ETag")}
	case model.OpCreate:
		op["summary"] = "Create a " + lowerFirst(r.Label)
		op["description"] = "The body holds only the fields to set, plus custom fields as `cf__<key>` members or one `custom_fields` object (not both). Unknown and read-only fields are refused with 422."
		params = append(params, ref("parameters", "IdempotencyKey"))
		op["requestBody"] = ref("requestBodies", name+"Create")
		withResponses(op, "201", ok("Created.", written, "Location", "Idempotent-Replayed", "ETag"), writes...)
	case model.OpUpdate:
		op["summary"] = "Update a " + lowerFirst(r.Label)
		op["description"] = "Sets the fields in the body (null clears an optional one), with the same rules as create. An archived record cannot be updated (409)."
		params = append(params, ref("parameters", "Id"), ref("parameters", "IdempotencyKey"), ref("parameters", "IfMatch"))
		op["requestBody"] = map[string]any{"required": true, "content": jsonContent(schemaRef(name + "Update"))}
		withResponses(op, "200", ok("The updated record, or the record as it was when every value sent equals the stored one (then marked `Record-Unchanged: true`, nothing written).", written, "Idempotent-Replayed", "ETag", "Record-Unchanged"), conditional...)
	case model.OpArchive:
		op["summary"] = "Archive a " + lowerFirst(r.Label)
		op["description"] = "Soft delete, with an optional reason; the record can be restored. Archiving an archived record is 409."
		params = append(params, ref("parameters", "Id"), ref("parameters", "IdempotencyKey"), ref("parameters", "IfMatch"))
		op["requestBody"] = map[string]any{"required": false, "content": jsonContent(schemaRef("ArchiveRequest"))}
		withResponses(op, "200", ok("The archived record.", written, "Idempotent-Replayed", "ETag"), conditional...)
	case model.OpRestore:
		op["summary"] = "Restore a " + lowerFirst(r.Label)
		op["description"] = "Makes an archived record active again. Restoring an active record is 409. No body."
		params = append(params, ref("parameters", "Id"), ref("parameters", "IdempotencyKey"), ref("parameters", "IfMatch"))
		withResponses(op, "200", ok("The restored record.", written, "Idempotent-Replayed", "ETag"), conditional...)
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

// addRules documents the resource's declarative rules (model.Rule) on its write schema s for mode m:
// listed in the description, and as data in `x-rules` (each rule's CEL expression, message, field,
// reason, and whether it is a transition rule). A create's schema lists the rules a create is checked
// against (transition rules apply on update only).
func addRules(s map[string]any, r *model.Resource, m schema.Mode) {
	var items []any
	var lines []string
	for _, ru := range r.Rules {
		if ru.Transition && m != schema.Update {
			continue
		}
		item := map[string]any{"rule": ru.Expr, "message": ru.Message, "reason": string(ru.Reason), "transition": ru.Transition}
		at := r.Name + " (the record)"
		if ru.Field != "" {
			item["field"] = ru.Field
			at = "`" + ru.Field + "`"
		}
		items = append(items, item)
		lines = append(lines, "- "+at+": "+ru.Message+" (`"+ru.Expr+"`)")
	}
	if len(items) == 0 {
		return
	}
	s["x-rules"] = items
	note := "Rules the record must keep, checked with this schema (CEL over `self`, the record as the write would store it, and on update `oldSelf`, the record before it); each failure is listed in the 422 `validation_failed` answer's `details.errors` at the field named, with its message:\n" + strings.Join(lines, "\n")
	if d, ok := s["description"].(string); ok && d != "" {
		note = d + "\n\n" + note
	}
	s["description"] = note
}

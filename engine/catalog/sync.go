package catalog

import (
	"fmt"

	"github.com/workspace-records/records/engine/model"
	"github.com/workspace-records/records/engine/route"
	"github.com/workspace-records/records/engine/schema"
)

// The sync operations of a resource: upsert by a unique key and batch writes.

// uniqueKeySchema is the schema of an upsert's key: a declared unique field, or a unique custom field
// as cf__<key> (the workspace's field catalog lists them in `unique_keys`).
func uniqueKeySchema(r *model.Resource) map[string]any {
	custom := map[string]any{"type": "string", "pattern": "^" + schema.CustomPrefix + "[a-z][a-z0-9_]{0,62}$", "description": "A unique custom field, as cf__<key>."}
	var declared []string
	for _, f := range r.Fields {
		if f.Unique && !f.Custom {
			declared = append(declared, f.Key)
		}
	}
	if len(declared) == 0 {
		return custom
	}
	return map[string]any{"anyOf": []any{map[string]any{"type": "string", "enum": declared}, custom}}
}

func (d *doc) upsertOperation(r *model.Resource) map[string]any {
	name := SchemaName(r)
	rec := schemaRef(name + "Plain")
	op := map[string]any{
		"operationId": "upsert" + name, "tags": []string{r.Name},
		"summary": "Create or update a " + lowerFirst(r.Label) + " by a unique key",
		"description": "Creates the record whose unique key `key` holds `value` (201, with `Location`), or changes the one active record that holds it (200). " +
			"The body is a create's body when no record holds the value (required fields then; the key's member may be left out, or must hold the path's value), an update's otherwise: the same validation, field rules, record rules, plugin hooks and audit entry as create and update. " +
			"Archived records hold no key: an upsert never matches one. A value held by a record outside the key's record rule is 409 `conflict`, as a create of it would be. " +
			"A key the caller's field rules mask or hide is 422 `validation_failed` (`not_permitted`, naming the key), whether or not a record holds the value: no record is found by a value the caller may not see. " +
			"Concurrent upserts of one value make exactly one record. `If-Match` needs an existing record at that version (412 otherwise, also when no record holds the value); `If-None-Match: *` creates only (412 when a record holds the value).",
		"parameters": []any{
			map[string]any{"name": "key", "in": "path", "required": true, "description": "A unique key of the resource: a field the catalog lists in `unique_keys`. An unknown key is 404.", "schema": uniqueKeySchema(r)},
			map[string]any{"name": "value", "in": "path", "required": true, "description": "The key's value, percent-encoded; a number for a numeric key.", "schema": map[string]any{"type": "string", "minLength": 1}},
			ref("parameters", "IdempotencyKey"), ref("parameters", "IfMatch"),
			map[string]any{"name": "If-None-Match", "in": "header", "description": "Only `*`: create the record, never change one (412 when a record holds the value). Not with `If-Match`.", "schema": map[string]any{"type": "string", "enum": []string{"*"}}},
		},
		"requestBody": map[string]any{"required": true, "content": jsonContent(schemaRef(name + "Update"))},
	}
	withResponses(op, "200", ok("The updated record, or the record as it was when every value sent equals the stored one (then marked `Record-Unchanged: true`, nothing written).", rec, "Idempotent-Replayed", "ETag", "Record-Unchanged"),
		"400", "401", "403", "404", "405", "409", "412", "413", "422", "429", "500", "503")
	op["responses"].(map[string]any)["201"] = ok("Created.", rec, "Location", "Idempotent-Replayed", "ETag")
	return op
}

func (d *doc) batchOperation(r *model.Resource) map[string]any {
	name := SchemaName(r)
	var ops []string
	for _, o := range []struct {
		name string
		ok   bool
	}{
		{"create", r.Ops.Has(model.OpCreate)}, {"update", r.Ops.Has(model.OpUpdate)},
		{"upsert", route.Upserts(r)},
		{"archive", r.Ops.Has(model.OpArchive)}, {"restore", r.Ops.Has(model.OpRestore)},
	} {
		if o.ok {
			ops = append(ops, o.name)
		}
	}
	item := map[string]any{
		"type": "object", "required": []string{"op"}, "additionalProperties": false,
		"description": "One write: `create` (body), `update` (id, body), `upsert` (key, value, body), `archive` (id; body may give the reason) or `restore` (id).",
		"properties": map[string]any{
			"op":            map[string]any{"type": "string", "enum": ops},
			"id":            map[string]any{"type": "string", "format": "uuid", "description": "The record of an update, archive or restore."},
			"key":           map[string]any{"type": "string", "description": "An upsert's unique key, as in the upsert path."},
			"value":         map[string]any{"type": "string", "minLength": 1, "description": "An upsert's key value, as in the upsert path (not percent-encoded)."},
			"body":          map[string]any{"type": "object", "additionalProperties": true, "description": "The record body of a create, update or upsert, as its own request would send it (`" + name + "Update` for the members; a create needs the required ones); an archive's `{\"reason\": …}`."},
			"if_match":      map[string]any{"type": "string", "description": "As the `If-Match` header of the item's own request: an `etag` of a result or an `ETag` header, or `*`."},
			"if_none_match": map[string]any{"type": "string", "enum": []string{"*"}, "description": "Upsert only: create, never change."},
		},
	}
	if r.ModelScoped {
		item["description"] = item["description"].(string) + " The data model is the `model_id` query parameter."
	}
	req := map[string]any{
		"type": "object", "required": []string{"items"}, "additionalProperties": false,
		"properties": map[string]any{
			"mode":  map[string]any{"type": "string", "enum": []string{"atomic", "per_item"}, "default": "atomic", "description": "`atomic`: all or nothing, in one transaction; `per_item`: each item stands alone."},
			"items": map[string]any{"type": "array", "minItems": 1, "maxItems": route.MaxBatchItems, "items": item},
		},
	}
	result := map[string]any{
		"type": "object", "required": []string{"status"}, "additionalProperties": false,
		"description": "One item's result: `data` and `etag` when it was written, `error` when it was refused.",
		"properties": map[string]any{
			"status":    map[string]any{"type": "integer", "description": "200, 201 when the item made the record, or the status of the item's error."},
			"data":      schemaRef(name + "Plain"),
			"etag":      str("The record's entity tag."),
			"unchanged": unchangedMember,
			"error":     schemaRef("ItemError"),
		},
	}
	op := map[string]any{
		"operationId": "batch" + name, "tags": []string{r.Name},
		"summary": "Write up to " + fmt.Sprint(route.MaxBatchItems) + " " + lowerFirst(r.LabelPlural) + " in one request",
		"description": "Runs the items in order, each exactly as its own request would run (validation, field and record rules, plugin hooks, one audit entry per item), and answers one result per item, in order. " +
			"`atomic` (the default) writes all or nothing: when an item is refused, nothing is written and the answer is 422 `batch_failed` with every item's result in `details.results` (the refused ones with their errors, the others 424 `batch_aborted`). " +
			"`per_item` commits the items that succeed; the answer is 200 whatever the items' outcomes, `meta` counting them. " +
			"One `Idempotency-Key` covers the whole batch: a repeat returns the same results and writes nothing. The batch counts as one request against the rate limits (so that batching buys throughput) and as one request per item against the monthly quota (429 `quota_exceeded`, nothing written, when fewer are left). " +
			"A key that may not write the resource gets its refusal (403) as every item's result. A failure of the service itself (5xx) fails the whole batch with nothing written.",
		"parameters":  []any{ref("parameters", "IdempotencyKey")},
		"requestBody": map[string]any{"required": true, "content": jsonContent(req)},
	}
	if r.ModelScoped {
		op["parameters"] = append(op["parameters"].([]any), map[string]any{"name": "model_id", "in": "query", "required": true, "description": "The data model of every item.", "schema": map[string]any{"type": "string", "format": "uuid"}})
	}
	resp := map[string]any{"description": "The results, one per item, in order.", "headers": headerRefs(append([]string{"X-Request-Id", "Idempotent-Replayed"}, usageHeaders...)...),
		"content": jsonContent(map[string]any{"type": "object", "required": []string{"data", "meta"}, "additionalProperties": false, "properties": map[string]any{
			"data": map[string]any{"type": "array", "items": result},
			"meta": map[string]any{"type": "object", "required": []string{"mode", "succeeded", "failed"}, "additionalProperties": false, "properties": map[string]any{
				"mode":      map[string]any{"type": "string", "enum": []string{"atomic", "per_item"}},
				"succeeded": map[string]any{"type": "integer", "minimum": 0, "description": "Items written, or left as they were (`unchanged`)."},
				"failed":    map[string]any{"type": "integer", "minimum": 0},
				"unchanged": map[string]any{"type": "integer", "minimum": 0, "description": "Items of the succeeded whose values all equalled the stored ones: nothing was written for them."},
			}},
		}})}
	return withResponses(op, "200", resp, "400", "401", "403", "404", "405", "409", "413", "422", "429", "500", "503")
}

// unchangedMember is a batch item result's marker of an update that changed nothing.
var unchangedMember = map[string]any{"type": "boolean", "enum": []bool{true}, "description": "Present (true) when every value the item sent equals the stored one: nothing was written for it (its version and `etag` are as they were; no audit entry, event or webhook delivery)."}

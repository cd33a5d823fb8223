package catalog

import (
	"fmt"
	"strconv"

	"github.com/workspace-records/records/engine/apierr"
	"github.com/workspace-records/records/engine/listplan"
	"github.com/workspace-records/records/engine/model"
	"github.com/workspace-records/records/engine/schema"
)

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
	{"409", "Conflict", "The write conflicts with the record's state or an existing record (`conflict`; a unique key's value held by another active record names the key in `details.unique_key`), or a request with the same `Idempotency-Key` is still running (`idempotency_key_in_use`).", nil},
	{"412", "PreconditionFailed", "The `If-Match` precondition did not hold: the record changed since the tag was issued (`precondition_failed`). Nothing was written; read the record again and retry with its new `ETag`.", nil},
	{"413", "PayloadTooLarge", "Body larger than 1 MiB (`payload_too_large`).", nil},
	{"422", "UnprocessableEntity", "The workspace refused the values (`validation_failed`: unknown field, required field, type, bound or rule; `details.errors` lists each field), the `Idempotency-Key` was used for a different request (`idempotency_key_reused`), or an atomic batch wrote nothing because an item was refused (`batch_failed`; `details.results` has every item's result).", nil},
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
		"X-Request-Id":           map[string]any{"description": "Identifies the request in logs; equals `error.request_id` on errors.", "required": true, "schema": map[string]any{"type": "string", "format": "uuid"}},
		"X-RateLimit-Limit":      intHeader("Requests allowed in the tightest rate-limit window that applies (absent when none applies)."),
		"X-RateLimit-Remaining":  intHeader("Requests left in that window (a batch counts as one request)."),
		"X-RateLimit-Reset":      intHeader("Seconds until that window resets."),
		"X-Quota-Limit":          intHeader("The monthly request quota (absent when uncapped)."),
		"X-Quota-Remaining":      intHeader("Requests left in this month's quota (absent when uncapped); a batch of N items counts N."),
		"X-Quota-Reset":          intHeader("Seconds until the monthly quota resets."),
		"Location":               map[string]any{"description": "URL of the created record.", "required": true, "schema": map[string]any{"type": "string"}},
		"Record-Unchanged":       map[string]any{"description": "`true` when every value sent equals the stored one: nothing was written, so the version, `ETag`, audit trail, events and webhook deliveries are as they were. Absent when the write changed the record.", "schema": map[string]any{"type": "string", "enum": []string{"true"}}},
		"Idempotent-Replayed":    map[string]any{"description": "`true` when this is the stored response of an earlier request with the same `Idempotency-Key`.", "schema": map[string]any{"type": "string", "enum": []string{"true"}}},
		"Retry-After":            map[string]any{"description": "Seconds to wait before retrying.", "schema": map[string]any{"type": "integer", "minimum": 0}},
		"ETag":                   map[string]any{"description": "The record's entity tag, `\"<version>-<hash>\"`: the version (the record's `updated_at` in microseconds since the epoch, strictly greater after every write of it) and a hash of this response's body, so callers under different field rules, or asking for different `fields`, get different tags. Send it in `If-None-Match` on a get (304 when unchanged) or `If-Match` on update, archive and restore (412 when the version moved on); a gzip-encoded answer carries it with `-gzip` appended.", "schema": map[string]any{"type": "string"}},
		"Allow":                  map[string]any{"description": "The methods this path allows, comma-separated (empty when none).", "required": true, "schema": map[string]any{"type": "string"}},
		"Records-Unknown-Fields": map[string]any{"description": "The names in `fields` that no record of this answer carries — names the resource lacks and fields your role hides, alike — once each, in the order sent, comma-separated, each percent-encoded (every byte outside `A-Z a-z 0-9 - . _ ~`) and cut at " + strconv.Itoa(apierr.MaxEchoed) + " characters. Absent when every name was found. Such names are skipped, not refused.", "schema": map[string]any{"type": "string"}},
		"WWW-Authenticate":       map[string]any{"description": "The Bearer challenge, with the reason in `error` and `error_description`.", "required": true, "schema": map[string]any{"type": "string"}},
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
		"IfMatch":        map[string]any{"name": "If-Match", "in": "header", "description": "Write only if the record is still at the version of one of these `ETag`s (strong comparison; only the version part is compared, not the hash of the caller's view), or `*` for any existing record. Otherwise 412 `precondition_failed` and nothing is written. Checked on the locked row inside the write's transaction; a record the key may not see is 404 whatever the precondition. A value that is not `*` or a list of quoted entity tags is 400.", "schema": map[string]any{"type": "string"}},
		"IfNoneMatch":    map[string]any{"name": "If-None-Match", "in": "header", "description": "Answer 304 Not Modified, without a body, when the record's `ETag` for this request is one of these (weak comparison) or the value is `*`.", "schema": map[string]any{"type": "string"}},
		"Fields":         map[string]any{"name": "fields", "in": "query", "description": "Comma-separated top-level properties to return; `id` is always kept and names the record lacks are skipped (and reported in `Records-Unknown-Fields`). `relation.field` (`company.name`) selects inside an expansion; expansions are returned whatever the names. Omit for every property.", "schema": map[string]any{"type": "string"}},
		"Page":           map[string]any{"name": "page", "in": "query", "description": "1-based page within the first 10,000 records; the last page is floor(10000 / page_size) + 1. Not with `cursor`.", "schema": map[string]any{"type": "integer", "minimum": 1, "maximum": listplan.MaxPage, "default": 1}},
		"PageSize":       map[string]any{"name": "page_size", "in": "query", "description": "Records per page.", "schema": map[string]any{"type": "integer", "minimum": 1, "maximum": listplan.MaxPageSize, "default": listplan.DefaultSize}},
		"Cursor":         map[string]any{"name": "cursor", "in": "query", "description": "Keyset pagination: `start` begins a walk; then send each response's `meta.next_cursor` verbatim until it is null. Reaches any depth. Not with `page`.", "schema": map[string]any{"type": "string", "maxLength": listplan.MaxCursorLen}},
		"Order":          map[string]any{"name": "order", "in": "query", "description": "Sort direction.", "schema": map[string]any{"type": "string", "enum": []string{"asc", "desc"}, "default": "desc"}},
		"Count": map[string]any{"name": "count", "in": "query", "description": fmt.Sprintf("`exact`, `estimated` or `none` (default): add `meta.total_count`. Exact counts run the list's own predicate. `estimated` never answers from another workspace's rows: on PostgreSQL, for a list with no filter, search or record rule, it is the planner's figure for the workspace's own rows (archived ones included) when its statistics know the workspace; everywhere else it is an exact count stopped at %d (then `meta.total_count_estimated`).", listplan.EstimateExactCap),
			"schema": map[string]any{"type": "string", "enum": []string{"exact", "estimated", "none"}}},
		"IncludeArchived": map[string]any{"name": "include_archived", "in": "query", "description": "Include archived records.",
			"schema": map[string]any{"type": "boolean", "default": false}},
		"FilterQuery": map[string]any{"name": "filter", "in": "query", "description": "URL-encoded JSON array of filter items (`[{\"field\":\"name\",\"op\":\"eq\",\"value\":\"Acme\"}]`), each a condition or a group `{\"join\":\"or\",\"filters\":[…]}` (schema `FilterItem`); fields are the `filter_keys` of the field catalog.", "schema": map[string]any{"type": "string"}},
		"Join":        map[string]any{"name": "join", "in": "query", "description": "How the top-level filter items combine (a group has its own `join`).", "schema": map[string]any{"type": "string", "enum": []string{"and", "or"}, "default": "and"}},
		"Search":      map[string]any{"name": "search", "in": "query", "description": "Free-text search over the resource's full-text fields.", "schema": map[string]any{"type": "string", "maxLength": 200}},
	}
	schemas := map[string]any{
		"FieldValue": func() map[string]any {
			v := schema.Value()
			v["description"] = "A custom field or association attribute value: text (also dates, date-times, options, emails, URLs, phones and ids), a number, a boolean, a multi-select's list of options, or null. The field catalog gives each field's type."
			return v
		}(),
		"CustomFields": map[string]any{"type": "object", "additionalProperties": schemaRef("FieldValue"),
			"description": "Custom field values keyed by field key (the workspace's fields of the resource; `GET /v1/resources/{resource}` lists them, and the document served for a key types them). On writes, not together with `cf__<key>` members."},
		"Error": map[string]any{
			"type": "object", "required": []string{"error"}, "additionalProperties": false,
			"description": "The error envelope of every error response.",
			"properties":  map[string]any{"error": schemaRef("ErrorBody")},
		},
		"ErrorBody": errorBody(true),
		"ItemError": errorBody(false),
		"BatchItemResult": map[string]any{
			"type": "object", "required": []string{"status"}, "additionalProperties": false,
			"description": "One item's result: `data` (and `etag`) when it was written, `error` when it was refused.",
			"properties": map[string]any{
				"status":    map[string]any{"type": "integer", "description": "The status the item's own request would have had: 200, 201 when it made the record, or the error's (424 `batch_aborted` for an item of a failed atomic batch that was not refused itself)."},
				"data":      map[string]any{"type": "object", "additionalProperties": true, "description": "The record as the caller sees it (the resource's record schema)."},
				"etag":      str("The record's entity tag, for `if_match` in a later item or `If-Match` on a later request."),
				"unchanged": unchangedMember,
				"error":     schemaRef("ItemError"),
			},
		},
		"ListMeta": map[string]any{
			"type": "object", "required": []string{"next_cursor"}, "description": "About the page.",
			"properties": map[string]any{
				"next_cursor":           map[string]any{"type": []string{"string", "null"}, "description": "Send verbatim as `cursor` to get the next page; null when the walk is finished."},
				"has_more":              map[string]any{"type": "boolean", "description": "Whether more records follow this page."},
				"page":                  map[string]any{"type": "integer", "minimum": 1, "description": "The page number, in page mode."},
				"page_size":             map[string]any{"type": "integer", "minimum": 1, "maximum": listplan.MaxPageSize, "description": "The page size used."},
				"total_count":           map[string]any{"type": "integer", "minimum": 0, "description": "With `count=exact` or `estimated`: how many records the list selects, every page, under the same tenancy, record rules, search and filters as the records."},
				"total_count_estimated": map[string]any{"type": "boolean", "enum": []bool{true}, "description": fmt.Sprintf("Present (true) when `total_count` is an estimate: the PostgreSQL planner's figure for the workspace's own rows (a list with no filter, search or record rule), or an exact count stopped at %d.", listplan.EstimateExactCap)},
			},
		},
		"Event": map[string]any{
			"type": "object", "additionalProperties": false,
			"required":    []string{"id", "sequence", "type", "resource", "record_id", "model_id", "actor", "data", "previous", "withheld", "created_at"},
			"description": "One committed write, as the caller may see it: the record's field masks apply to `data` and `previous`, hidden fields are left out and named in `withheld`.",
			"properties": map[string]any{
				"id":         map[string]any{"type": "string", "format": "uuid", "description": "The event's id; a webhook delivery carries it as `webhook-id`."},
				"sequence":   map[string]any{"type": "integer", "minimum": 1, "description": "The event's place in the workspace's feed: strictly increasing, assigned once the write committed. Send it as `cursor` to resume after it."},
				"type":       str("`<resource>.<action>`: `created`, `updated`, `archived`, `restored`, `linked` or `unlinked` (an imported record is `created`)."),
				"resource":   str("The resource of the record."),
				"record_id":  map[string]any{"type": []string{"string", "null"}, "format": "uuid", "description": "The record written (for a link, the record the association starts from)."},
				"model_id":   map[string]any{"type": []string{"string", "null"}, "format": "uuid", "description": "The data model of a `data_model_records` record; null otherwise."},
				"actor":      actorSchema(),
				"data":       map[string]any{"type": "object", "additionalProperties": true, "description": "The record as stored after the write (custom fields by key under `custom_fields`); for `linked` and `unlinked`, the association's name → the other record's id, and the link's `attributes`."},
				"previous":   map[string]any{"type": []string{"object", "null"}, "additionalProperties": true, "description": "For `updated`, the values the changed fields had before (the changed fields are its keys); for a link that replaced attributes and for `unlinked`, the former `attributes`; otherwise null."},
				"withheld":   map[string]any{"type": "array", "items": map[string]any{"type": "string"}, "description": "Fields left out because the caller's role hides them; for `linked` and `unlinked`, the association, left out (with the other record's id) when the caller does not see the other record, as its association list would leave it out: the caller may not use the other resource, or the record is outside the caller's record rule."},
				"created_at": map[string]any{"type": "string", "format": "date-time", "description": "When the write happened."},
			},
		},
		"HistoryEntry": map[string]any{
			"type": "object", "additionalProperties": false,
			"required":    []string{"id", "resource", "record_id", "action", "actor", "changes", "previous", "withheld", "created_at"},
			"description": "One audit entry of a record, as the caller may see it: the record's field masks apply to `changes` and `previous`, hidden fields are left out and named in `withheld`.",
			"properties": map[string]any{
				"id":         map[string]any{"type": "string", "format": "uuid", "description": "The audit entry's id."},
				"resource":   str("The record's resource."),
				"record_id":  map[string]any{"type": "string", "format": "uuid", "description": "The record."},
				"action":     map[string]any{"type": "string", "enum": []string{"create", "update", "archive", "restore", "link", "unlink", "import"}, "description": "What the write did (`import`: `recordsctl records import`)."},
				"actor":      actorSchema(),
				"changes":    map[string]any{"type": "object", "additionalProperties": true, "description": "The values written, by field key (custom fields by key under `custom_fields`): for `create` and `import` the record's values, for `update` only the fields whose value changed, for `archive` its `archive_reason` when one was given (else empty), for `restore` nothing; for `link` and `unlink`, the association's name → the other record's id, and the link's `attributes`."},
				"previous":   map[string]any{"type": []string{"object", "null"}, "additionalProperties": true, "description": "For `update`, the values the changed fields had before (same keys as `changes`); for a link that replaced attributes and for `unlink`, the former `attributes`; otherwise null."},
				"withheld":   map[string]any{"type": "array", "items": map[string]any{"type": "string"}, "description": "Fields left out because the caller's role hides them; for `link` and `unlink`, the association, left out (with the other record's id) when the caller does not see the other record, as its association list would leave it out: the caller may not use the other resource, or the record is outside the caller's record rule."},
				"created_at": map[string]any{"type": "string", "format": "date-time", "description": "When the write happened."},
			},
		},
		"EventsMeta": map[string]any{
			"type": "object", "additionalProperties": false, "required": []string{"next_cursor", "has_more", "page_size"}, "description": "About the page.",
			"properties": map[string]any{
				"next_cursor": str("The sequence to send as `cursor` for the events after this page (the last event read, seen by the caller or not); the same cursor again when nothing new was read. Never null: a feed has no end."),
				"has_more":    map[string]any{"type": "boolean", "description": "Whether more events are ready after this page (ask again at once); false means the caller has caught up."},
				"page_size":   map[string]any{"type": "integer", "minimum": 0, "description": "How many events the page holds."},
			},
		},
		"FilterCondition": map[string]any{
			"type": "object", "required": []string{"field", "op"}, "additionalProperties": false, "description": "One condition.",
			"properties": map[string]any{
				"field": str("A filter key from the field catalog (`filter_keys`), a custom field's `cfv:<id>`, or a path `relation.key` across one reference or association of the resource (`filter_paths`: `company.billing_city`, `contacts.email`, `company.cfv:<id>`), where key is a filter key of the target: across a reference the referenced record must match, across an association at least one linked record; only active target records the caller can read match, and a field the caller cannot read there is refused."),
				"op":    map[string]any{"type": "string", "enum": []string{"eq", "ne", "lt", "lte", "gt", "gte", "in", "not_in", "contains", "not_contains", "starts_with", "is_empty", "is_not_empty"}, "description": "The comparison; the field catalog lists the operators each key takes (for a path, the target's catalog)."},
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
				"attributes":  map[string]any{"type": "object", "additionalProperties": schemaRef("FieldValue"), "description": "The association's attributes (the field catalog lists them)."},
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
				"history_path": str("The path of a record's history (`GET`, its audit entries newest first; `model_id` too for a model-scoped resource)."),
				"access":       map[string]any{"type": "string", "enum": []string{"read", "write"}, "description": "What this key may do with it."},
			},
		},
		"FieldCatalog": map[string]any{
			"type": "object", "required": []string{"name", "fields", "sort_keys", "filter_keys", "associations", "custom_fields"},
			"description": "The live field catalog of a resource in the key's workspace: fields with their types and rules (masks applied), the write schema, sort and filter keys, custom fields and associations. Members may be added.",
			"properties": map[string]any{
				"name": schemaRef("ResourceName"),
				"fields": map[string]any{"type": "array", "items": map[string]any{"type": "object", "required": []string{"key", "type"},
					"properties": map[string]any{"key": str("The field key."), "type": str("The field type.")}}, "description": "Declared fields: key, label, type, required, writable, sortable, filterable, unique, filter_key, options, bounds, visibility."},
				"unique_keys": map[string]any{"type": "array", "items": map[string]any{"type": "string"}, "description": "Fields that are unique keys: at most one active (non-archived) record of the workspace holds each value; a create, update or restore that would take a held value is refused with 409 `conflict` naming the key in `details.unique_key`. Archived records hold no value."},
				"required":    map[string]any{"type": "array", "items": map[string]any{"type": "string"}, "description": "Keys a create must set."},
				"sort_keys":   map[string]any{"type": "array", "items": map[string]any{"type": "string"}, "description": "Values `sort` takes, custom fields' `cfv:<id>` included."},
				"filter_keys": map[string]any{"type": "array", "items": map[string]any{"type": "object", "additionalProperties": true}, "description": "Keys filters take, with their type and operators."},
				"filter_paths": map[string]any{"type": "array", "description": "The relations a filter key may cross, one level: `relation.key` where key is one of the target's filter keys (its own catalog lists those the caller can read). Across a reference the referenced record must match; across an association at least one linked record. Only active target records the caller can read match.",
					"items": map[string]any{"type": "object", "required": []string{"relation", "target", "kind"}, "additionalProperties": true, "properties": map[string]any{
						"relation": str("The relation's name: a reference field without `_id`, or an association."),
						"target":   schemaRef("ResourceName"),
						"kind":     map[string]any{"type": "string", "enum": []string{"reference", "association"}},
						"field":    str("The reference field (references only)."),
						"keys":     str("The form of the path keys."),
						"matches":  str("What a record must have to match."),
					}}},
				"custom_fields": map[string]any{"type": "array", "items": map[string]any{"type": "object", "additionalProperties": true}, "description": "The workspace's custom fields of this resource, with `key`, `filter_key` and `sort_key`."},
				"associations":  map[string]any{"type": "array", "items": map[string]any{"type": "object", "additionalProperties": true}, "description": "Associations: name, target, path and attributes."},
				"schema":        map[string]any{"type": "object", "additionalProperties": true, "description": "The JSON Schemas of create and update bodies."},
				"expand": map[string]any{"type": "array", "items": map[string]any{"type": "object", "required": []string{"name", "kind", "target", "expandable"}, "additionalProperties": false,
					"properties": map[string]any{"name": str("The name `expand` takes."), "kind": map[string]any{"type": "string", "enum": []string{"reference", "association"}},
						"target": str("The resource it expands into."), "field": str("For a reference, the reference field (which stays in the record)."),
						"expandable": map[string]any{"type": "boolean", "description": "False when your role masks the reference field: expanding it would reveal the id, and is refused."}}},
					"description": "The relations `expand` takes, and the resource each expands into."},
			},
		},
		"Me": map[string]any{
			"type": "object", "required": []string{"key", "member", "workspace", "rate_limit", "quota", "notifications"},
			"description": "The calling key, its owner and workspace, its current rate-limit and quota usage, and the owner's unread notifications.",
			"properties": map[string]any{
				"key": map[string]any{"type": "object", "description": "The key (never its secret): id, prefix, hint, access, resources, allowed addresses, creation, expiry and last use.",
					"properties": map[string]any{"id": map[string]any{"type": "string", "format": "uuid"}, "access": map[string]any{"type": "string", "enum": []string{"read", "write", "admin", "session"}, "description": "read or write: a data key; admin: an admin key, for /v1/admin/… only; session: a console session, which stands for a key here (docs/issue-24.md)."},
						"expires_at": map[string]any{"type": "string", "format": "date-time"},
						"last_used_at": map[string]any{"type": []string{"string", "null"}, "format": "date-time",
							"description": "When the key was last used (this request included), to the key usage interval's precision across servers (10 s by default); null before its first use."},
						"last_used_ip": map[string]any{"type": []string{"string", "null"},
							"description": "The client address of that use (behind trusted proxies, the forwarded one); null when unknown."}}},
				"member":     map[string]any{"type": "object", "additionalProperties": true, "description": "The member who owns the key: id, email, role, department and permissions."},
				"workspace":  map[string]any{"type": "object", "additionalProperties": true, "description": "The key's workspace: id, name, plan and features."},
				"rate_limit": map[string]any{"type": "object", "additionalProperties": true, "description": "Configured limits and the tightest window's `limit`, `remaining` and `reset` (null when none applies)."},
				"quota":      map[string]any{"type": "object", "additionalProperties": true, "description": "Monthly quota: `limit` (null when uncapped), `used`, `remaining`, `reset` (seconds). Every request counts one, a batch of N items N."},
				"notifications": map[string]any{"type": "array", "maxItems": 20,
					"description": "The key owner's unread notifications, newest first (at most 20). A `key_expiring` notification is written when an expiry reminder of one of the owner's keys falls due (14 and 3 days before expiry, unless the owner turned key expiry reminders off); it stays here until an administrator marks it read. `delivered_at` is when it was first shown to the owner.",
					"items": map[string]any{"type": "object", "required": []string{"id", "kind", "created_at"},
						"properties": map[string]any{
							"id":           map[string]any{"type": "string", "format": "uuid"},
							"kind":         map[string]any{"type": "string", "enum": []string{"key_expiring"}},
							"key_id":       map[string]any{"type": "string", "format": "uuid", "description": "The key that expires."},
							"key_hint":     map[string]any{"type": "string", "description": "Its prefix and last four characters (`wsk_…1a2b`), never the secret."},
							"expires_at":   map[string]any{"type": "string", "format": "date-time"},
							"days_before":  map[string]any{"type": "integer", "description": "The reminder threshold: 14 or 3 days before expiry."},
							"created_at":   map[string]any{"type": "string", "format": "date-time"},
							"delivered_at": map[string]any{"type": []string{"string", "null"}, "format": "date-time"},
						}}},
			},
		},
	}
	for name, sc := range filterSchemas() {
		schemas[name] = sc
	}
	for name, sc := range jobSchemas() {
		schemas[name] = sc
	}
	return map[string]any{
		"schemas":       schemas,
		"requestBodies": map[string]any{},
		"headers":       headers,
		"parameters":    params,
		"responses":     responses,
		"securitySchemes": map[string]any{"bearerAuth": map[string]any{"type": "http", "scheme": "bearer", "bearerFormat": "wsk_<64 hex>",
			"description": "`Authorization: Bearer <API_KEY>`, a key of the form `wsk_` followed by 64 lowercase hexadecimal characters. It acts as its owner inside its workspace."},
			"consoleSession": map[string]any{"type": "apiKey", "in": "cookie", "name": "records_session",
				"description": "The web console's session cookie (HttpOnly, SameSite=Strict), set by `POST /console/session`. Accepted only on the admin routes, your keys and the session itself, always with `csrfToken`."},
			"csrfToken": map[string]any{"type": "apiKey", "in": "header", "name": "X-CSRF-Token",
				"description": "The console session's CSRF token (`GET /console/session`), required with the cookie on every request it authenticates; requests from another site (`Origin`, `Sec-Fetch-Site`) are refused whatever they carry."}},
	}
}

// actorSchema is who wrote, in an event and in a record's history entry.
func actorSchema() map[string]any {
	return map[string]any{"type": "object", "additionalProperties": false, "required": []string{"member_id", "key_id", "request_id"},
		"description": "Who wrote: null members on the administration path (recordsctl).",
		"properties": map[string]any{"member_id": map[string]any{"type": []string{"string", "null"}, "format": "uuid"},
			"key_id": map[string]any{"type": []string{"string", "null"}, "format": "uuid"}, "request_id": map[string]any{"type": []string{"string", "null"}, "description": "The write's `X-Request-Id`."}}}
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
	return map[string]any{"description": desc, "headers": headerRefs(append([]string{"X-Request-Id", "Records-Unknown-Fields"}, usageHeaders...)...),
		"content": jsonContent(map[string]any{"type": "object", "required": []string{"data", "meta"}, "additionalProperties": false,
			"properties": map[string]any{"data": map[string]any{"type": "array", "items": item}, "meta": schemaRef("ListMeta")}})}
}

func withResponses(op map[string]any, success string, resp map[string]any, statuses ...string) map[string]any {
	r := errs(statuses...)
	r[success] = resp
	op["responses"] = r
	return op
}

// errorBody is the schema of an error: the envelope's `error` member (ErrorBody, whose details may hold a
// failed batch's results) or a refused batch item's (ItemError, without results: the schemas would
// otherwise refer to themselves, which validators refuse).
func errorBody(envelope bool) map[string]any {
	out := map[string]any{
		"type": "object", "required": []string{"type", "code", "message", "request_id"}, "additionalProperties": false,
		"description": "The error: the `error` member of the envelope, and of a refused batch item's result.",
		"properties": map[string]any{
			"type":    map[string]any{"type": "string", "enum": ErrorTypes, "description": "The error's category."},
			"code":    map[string]any{"type": "string", "enum": ErrorCodes, "description": "The specific error."},
			"message": str("Human-readable text."),
			"details": map[string]any{
				"type": "object", "additionalProperties": true, "description": "More about the error; open members. `errors` lists the refused fields or parameters, one item per problem (declared fields, custom fields, unknown members and the resource's failed rules in one list, each at the path the client wrote: `cf__<key>` or `custom_fields.<key>`; a failed rule at its field, or at the resource's name when it is about the whole record); at most " + strconv.Itoa(apierr.MaxListed) + " are listed, and `errors_omitted` counts the rest.",
				"properties": map[string]any{
					"errors": map[string]any{"type": "array", "maxItems": apierr.MaxListed, "description": "The first problems, declared fields in the resource's order, then unknown members, then custom fields.",
						"items": map[string]any{"type": "object", "required": []string{"field", "code", "message"}, "properties": map[string]any{
							"field":   str("The path of the member or parameter, as sent (cut at " + strconv.Itoa(apierr.MaxEchoed) + " characters, ending in …, when longer)."),
							"code":    str("What is wrong: required, unknown_field, read_only, invalid_type, invalid_format, too_long, too_short, invalid_option, out_of_range, reference_not_found, duplicate, conflicting, invalid or not_permitted."),
							"message": str("Human-readable text."),
						}}},
					"errors_omitted": map[string]any{"type": "integer", "minimum": 1, "description": "How many problems were found beyond the listed ones; absent when all are listed."},
					"unique_key":     map[string]any{"type": "string", "description": "On 409 `conflict`: the unique key whose value another active record already holds (that record is never named)."},
				},
			},
			"request_id": map[string]any{"type": "string", "format": "uuid", "description": "Also sent in the `X-Request-Id` header."},
		},
	}
	if envelope {
		details := out["properties"].(map[string]any)["details"].(map[string]any)
		details["properties"].(map[string]any)["results"] = map[string]any{"type": "array", "items": schemaRef("BatchItemResult"),
			"description": "On 422 `batch_failed`: every item's result, in the order sent; nothing was written."}
	} else {
		out["description"] = "A refused batch item's error: as the envelope's `error` member; `request_id` is the batch's."
	}
	return out
}

// filterSchemas describes the filter grammar: FilterItem is a top-level item, a FilterCondition or a
// FilterGroup; a group's items are one level deeper (FilterItem2 … FilterItem4, FilterGroup2 …
// FilterGroup4), and the deepest group (listplan.MaxFilterDepth) holds conditions only. The levels are
// written out, not a recursive schema: the depth is the documented cap, and validators and client
// generators that cannot render a cycle read them.
func filterSchemas() map[string]any {
	level := func(base string, n int) string {
		if n == 1 {
			return base
		}
		return fmt.Sprintf("%s%d", base, n)
	}
	out := map[string]any{
		"FilterCondition": map[string]any{
			"type": "object", "required": []string{"field", "op"}, "additionalProperties": false, "description": "One condition.",
			"properties": map[string]any{
				"field": str("A filter key from the field catalog (`filter_keys`), a custom field's `cfv:<id>`, or a path `relation.key` across one reference or association of the resource (`filter_paths`: `company.billing_city`, `contacts.email`, `company.cfv:<id>`), where key is a filter key of the target: across a reference the referenced record must match, across an association at least one linked record; only active target records the caller can read match, and a field the caller cannot read there is refused."),
				"op":    map[string]any{"type": "string", "enum": []string{"eq", "ne", "lt", "lte", "gt", "gte", "in", "not_in", "contains", "not_contains", "starts_with", "is_empty", "is_not_empty"}, "description": "The comparison; the field catalog lists the operators each key takes (for a path, the target's catalog)."},
				"value": map[string]any{"description": "The operand: a value of the field's type, an array for `in` and `not_in`, absent for `is_empty` and `is_not_empty`."},
			},
		},
	}
	for n := 1; n <= listplan.MaxFilterDepth; n++ {
		item := map[string]any{"oneOf": []any{schemaRef("FilterCondition"), schemaRef(level("FilterGroup", n))}}
		if n == 1 {
			item["description"] = fmt.Sprintf("One filter item: a condition, or a group of items joined by the group's own `join`. Groups nest at most %d deep below the top level; the whole tree holds at most %d conditions and %d items (groups included).", listplan.MaxFilterDepth, listplan.MaxFilters, listplan.MaxFilterItems)
		} else {
			item["description"] = fmt.Sprintf("A filter item inside a group of depth %d: a condition or a group.", n-1)
		}
		out[level("FilterItem", n)] = item
		inner := schemaRef("FilterCondition")
		if n < listplan.MaxFilterDepth {
			inner = schemaRef(level("FilterItem", n+1))
		}
		desc := fmt.Sprintf("A group of filter items at depth %d, joined by `join`.", n)
		if n == listplan.MaxFilterDepth {
			desc = fmt.Sprintf("A group of filter items at depth %d, the deepest: it holds conditions only.", n)
		}
		out[level("FilterGroup", n)] = map[string]any{
			"type": "object", "required": []string{"filters"}, "additionalProperties": false, "description": desc,
			"properties": map[string]any{
				"join":    map[string]any{"type": "string", "enum": []string{"and", "or"}, "default": "and", "description": "How the group's items combine."},
				"filters": map[string]any{"type": "array", "minItems": 1, "items": inner, "description": "The group's items."},
			},
		}
	}
	return out
}

package catalog

import (
	"fmt"
	"maps"

	"github.com/workspace-records/records/engine/route"
)

// The bulk jobs (/v1/jobs…, runtime/jobs): one collection for the imports and exports of every
// resource, the resource named in the job (as Salesforce Bulk API 2.0's ingest jobs name their object),
// so that the document describes nine operations, not two per resource.

// jobsTag is the tag of the job operations.
var jobsTag = map[string]any{"name": "jobs", "x-displayName": "Bulk jobs", "description": "Imports and exports of a whole resource, run in the background: " +
	"an import takes a CSV or NDJSON upload in parts and writes every row as a batch item would be written (validation, field and record rules, plugin hooks, " +
	"unique keys, audit, events), in chunks that commit with their results, so that a job resumed on another server after a crash writes each row exactly once; " +
	"an export reads a list (the body of `POST /v1/{resource}/query`) under the caller's masks and record rules into a file, from one snapshot (a list sorted by a custom field: page by page). " +
	"A job is visible to the member who made it and to members whose role holds `api.manage`, through a key that may use its resource (an import: write it); " +
	"to anyone else it is 404. Jobs, their results and an export's file are kept 7 days after they end."}

// jobSchemas are the job components.
func jobSchemas() map[string]any {
	count := map[string]any{"type": "integer", "minimum": 0}
	ts := map[string]any{"type": []string{"string", "null"}, "format": "date-time"}
	return map[string]any{
		"Job": map[string]any{
			"type": "object", "additionalProperties": false,
			"required":    []string{"id", "type", "resource", "state", "format", "created_by", "created_at", "updated_at", "started_at", "finished_at", "expires_at", "counts", "progress", "error"},
			"description": "A bulk job: `open` (an import taking its upload), `queued`, `running`, then `completed`, `failed` or `cancelled`.",
			"properties": map[string]any{
				"id":          map[string]any{"type": "string", "format": "uuid"},
				"type":        map[string]any{"type": "string", "enum": []string{"import", "export"}},
				"resource":    str("The resource the job imports into or exports."),
				"state":       map[string]any{"type": "string", "enum": []string{"open", "queued", "running", "completed", "failed", "cancelled"}},
				"format":      map[string]any{"type": "string", "enum": []string{"csv", "ndjson"}},
				"operation":   map[string]any{"type": "string", "enum": []string{"create", "update", "upsert"}, "description": "An import's: each row creates a record, updates the record its `id` names, or upserts by `key`."},
				"key":         str("An upsert import's unique key."),
				"dry_run":     map[string]any{"type": "boolean", "description": "An import that validates every row (and runs it, rolled back) but writes nothing."},
				"upload":      map[string]any{"type": "object", "additionalProperties": false, "required": []string{"parts", "bytes"}, "properties": map[string]any{"parts": count, "bytes": count}, "description": "An import's upload so far."},
				"query":       map[string]any{"type": "object", "additionalProperties": true, "description": "An export's list parameters, as given."},
				"model_id":    map[string]any{"type": "string", "format": "uuid", "description": "The data model whose records the job imports or exports (`data_model_records` only)."},
				"created_by":  map[string]any{"type": "string", "format": "uuid", "description": "The member who made the job."},
				"created_at":  map[string]any{"type": "string", "format": "date-time"},
				"updated_at":  map[string]any{"type": "string", "format": "date-time"},
				"started_at":  ts,
				"finished_at": ts,
				"expires_at":  map[string]any{"type": []string{"string", "null"}, "format": "date-time", "description": "When the job, its results and its file are deleted (an open import: when it fails unclosed)."},
				"counts": map[string]any{"type": "object", "additionalProperties": false, "required": []string{"read", "written", "failed", "unchanged"},
					"description": "Rows read, written (created or changed), failed and unchanged (an update or upsert whose values equal the stored ones) so far: a running job's progress.",
					"properties":  map[string]any{"read": count, "written": count, "failed": count, "unchanged": count}},
				"rows_per_second": map[string]any{"type": "number", "minimum": 0, "description": "Rows read per second since the job started."},
				"progress": map[string]any{"type": "object", "additionalProperties": false, "required": []string{"fraction", "seconds_left"},
					"description": "How far the job is: a running import's share of its upload its committed rows took (0–1) and the time the rest should take at the rate so far; a completed job's 1 and 0. Null while unknown: before the first chunk commits, and for a running export (its total is not counted ahead).",
					"properties": map[string]any{
						"fraction":     map[string]any{"type": []string{"number", "null"}, "minimum": 0, "maximum": 1},
						"seconds_left": map[string]any{"type": []string{"number", "null"}, "minimum": 0},
					}},
				"error": map[string]any{"type": []string{"string", "null"}, "description": "Why a failed job failed."},
			},
		},
		"JobRow": map[string]any{
			"type": "object", "additionalProperties": false, "required": []string{"row", "status"},
			"description": "One input row's result: its number (the first data row is 1), the status its batch item had, and the record's id or the problems.",
			"properties": map[string]any{
				"row":       map[string]any{"type": "integer", "minimum": 1},
				"status":    map[string]any{"type": "integer"},
				"id":        map[string]any{"type": "string", "format": "uuid"},
				"unchanged": map[string]any{"type": "boolean", "enum": []bool{true}, "description": "Present when the row changed nothing of its record."},
				"errors": map[string]any{"type": "array", "items": map[string]any{"type": "object", "additionalProperties": false, "required": []string{"code", "message"},
					"properties": map[string]any{"field": str("The field (the column's key) at fault, when one is."), "code": str("The error code."), "message": str("What is wrong.")}}},
			},
		},
	}
}

// jobOperations adds the job operations to ops.
func jobOperations(ops map[route.Endpoint]map[string]any) {
	id := map[string]any{"name": "id", "in": "path", "required": true, "description": "The job's id.", "schema": map[string]any{"type": "string", "format": "uuid"}}
	job := ok("The job.", schemaRef("Job"))
	page := func(desc string, item any) map[string]any {
		return map[string]any{"description": desc, "headers": headerRefs(append([]string{"X-Request-Id"}, usageHeaders...)...),
			"content": jsonContent(map[string]any{"type": "object", "required": []string{"data", "meta"}, "additionalProperties": false, "properties": map[string]any{
				"data": map[string]any{"type": "array", "items": item},
				"meta": map[string]any{"type": "object", "required": []string{"next_cursor", "has_more"}, "additionalProperties": false, "properties": map[string]any{
					"next_cursor": map[string]any{"type": []string{"string", "null"}, "description": "Send as the cursor parameter for the next page; null at the end."},
					"has_more":    map[string]any{"type": "boolean"}}}}})}
	}
	limit := func(most, def int) map[string]any {
		return map[string]any{"name": "limit", "in": "query", "description": "Items per page.", "schema": map[string]any{"type": "integer", "minimum": 1, "maximum": most, "default": def}}
	}
	create := map[string]any{
		"type": "object", "required": []string{"type", "resource"}, "additionalProperties": false,
		"properties": map[string]any{
			"type":      map[string]any{"type": "string", "enum": []string{"import", "export"}},
			"resource":  str("The resource to import into or export."),
			"format":    map[string]any{"type": "string", "enum": []string{"csv", "ndjson"}, "default": "csv", "description": "CSV with a header row (values as text: numbers, `true`/`false`, a multi-select's options separated by `;`; an empty cell leaves the field unset), or one JSON object per line."},
			"operation": map[string]any{"type": "string", "enum": []string{"create", "update", "upsert"}, "default": "create", "description": "Import only: create a record per row, update the record the row's `id` names, or upsert by `key`."},
			"key":       str("Import only, with `upsert`: the unique key rows are matched by (its column must be in every row)."),
			"mapping": map[string]any{"type": "object", "additionalProperties": map[string]any{"type": "string"}, "description": "Import only, CSV: column name → field key (`cf__<key>` for a custom field, `id` for an update's record); `\"\"` skips a column. A column not named here is taken as a field key. " +
				"`<field>.<key>` (e.g. `company_id.domain`) sets the reference field `<field>` (declared, or a custom field of type reference) to the record of its target whose unique key `<key>` holds the cell's value: looked up as a list of the target by the job's key would find it (record rules apply; a masked or hidden key fails the job, as a filter on it is refused), and a value no record it may read holds fails the row with `reference_not_found`."},
			"dry_run":  map[string]any{"type": "boolean", "default": false, "description": "Import only: validate and run every row, then roll it back; the results say what a real run would do, and nothing is written."},
			"query":    map[string]any{"type": "object", "additionalProperties": true, "description": "Export only: the body of `POST /v1/{resource}/query` (filters, filter groups and paths, `sort`, `order`, `search`, `fields`, `include_archived`, `model_id`), without paging."},
			"model_id": map[string]any{"type": "string", "format": "uuid", "description": "The data model whose records the job imports or exports: required for `data_model_records` (an export may name it in `query` instead), refused for any other resource; a model that does not exist is 404."},
		},
	}
	ops[route.JobCreate] = withResponses(map[string]any{"operationId": "createJob", "tags": []string{"jobs"}, "summary": "Start an import or export",
		"description": "With an `Idempotency-Key`, a repeat within 24 hours answers the job as it was made (`Idempotent-Replayed: true`) and makes no second job. An import is made `open`: upload its data with `PUT /v1/jobs/{id}/parts/{part}`, then `POST /v1/jobs/{id}/close` queues it. An export is queued at once; " +
			"its list parameters are checked now (400 as a list of them would be). An import needs a write key that may write the resource; an export, a key that may read it. " +
			fmt.Sprintf("At most %d jobs of a workspace are open, queued or running at once (429 with `Retry-After` beyond).", 5),
		"parameters":  []any{ref("parameters", "IdempotencyKey")},
		"requestBody": map[string]any{"required": true, "content": jsonContent(create)}},
		"201", ok("The job.", schemaRef("Job"), "Location", "Idempotent-Replayed"), "400", "401", "403", "404", "409", "413", "422", "429", "500", "503")
	ops[route.JobList] = withResponses(map[string]any{"operationId": "listJobs", "tags": []string{"jobs"}, "summary": "Jobs",
		"description": "The caller's jobs (every member's, for a role with `api.manage`), newest first.",
		"parameters":  []any{limit(100, 20), map[string]any{"name": "cursor", "in": "query", "description": "`meta.next_cursor` of the previous page.", "schema": map[string]any{"type": "string"}}}},
		"200", page("A page of jobs.", schemaRef("Job")), "400", "401", "403", "404", "429", "500", "503")
	ops[route.JobGet] = withResponses(map[string]any{"operationId": "getJob", "tags": []string{"jobs"}, "summary": "A job and its progress",
		"description": "The job's state and counts; poll it while it runs (the counts move with every committed chunk, at least every 2 s).", "parameters": []any{id}},
		"200", job, "400", "401", "403", "404", "429", "500", "503")
	ops[route.JobPart] = withResponses(map[string]any{"operationId": "putJobPart", "tags": []string{"jobs"}, "summary": "Upload a part of an import",
		"description": fmt.Sprintf("The request body is part `part` of the import's data, as it is (CSV or NDJSON; the parts are read in order as one stream, so a row may span two parts). "+
			"At most %d MiB a part and %d MiB an import (413 beyond; nothing of the part is kept). Sending a part again replaces it. Only an open import takes parts (409).", 64, 1024),
		"parameters": []any{id, map[string]any{"name": "part", "in": "path", "required": true, "description": "The part's number, 1 to 10,000.", "schema": map[string]any{"type": "integer", "minimum": 1, "maximum": 10000}}},
		"requestBody": map[string]any{"required": true, "content": map[string]any{
			"text/csv":                 map[string]any{"schema": map[string]any{"type": "string"}},
			"application/x-ndjson":     map[string]any{"schema": map[string]any{"type": "string"}},
			"application/octet-stream": map[string]any{"schema": map[string]any{"type": "string", "format": "binary"}}}}},
		"200", job, "400", "401", "403", "404", "409", "413", "429", "500", "503")
	ops[route.JobClose] = withResponses(map[string]any{"operationId": "closeJob", "tags": []string{"jobs"}, "summary": "Close an import's upload and queue it",
		"description": "Takes no body. An import with no data, or not open, is 409.", "parameters": []any{id}},
		"200", job, "400", "401", "403", "404", "409", "429", "500", "503")
	ops[route.JobCancel] = withResponses(map[string]any{"operationId": "cancelJob", "tags": []string{"jobs"}, "summary": "Cancel a job",
		"description": "Takes no body. An open or queued job stops at once; a running one at its next chunk (what it committed stays). A job that has ended is answered as it is.", "parameters": []any{id}},
		"200", job, "400", "401", "403", "404", "429", "500", "503")
	rows := func(op, summary, desc string) map[string]any {
		return withResponses(map[string]any{"operationId": op, "tags": []string{"jobs"}, "summary": summary, "description": desc,
			"parameters": []any{id, limit(1000, 100), map[string]any{"name": "after", "in": "query", "description": "Rows after this row number (`meta.next_cursor` of the previous page).", "schema": map[string]any{"type": "string"}}}},
			"200", page("A page of rows, in row order.", schemaRef("JobRow")), "400", "401", "403", "404", "409", "429", "500", "503")
	}
	ops[route.JobFailures] = rows("listJobFailures", "An import's failed rows", "Each refused row: its number, status and problems (field, code, message). Grows as the import runs. An export is 409.")
	ops[route.JobSuccesses] = rows("listJobSuccesses", "An import's written rows", "Each row that succeeded: its number and the record's id (`unchanged` when it changed nothing). A dry run's say what a real run would do. An export is 409.")
	ops[route.JobDownload] = withResponses(map[string]any{"operationId": "downloadJob", "tags": []string{"jobs"}, "summary": "Download an export's file",
		"description": "A completed export's file, streamed (gzip-encoded when the client accepts it): CSV (a header row, then one row per record; masked values masked, hidden fields left out; custom fields as `cf__<key>` columns) or NDJSON (one record per line, as a list shows it). Any other job, or an export not completed, is 409.",
		"parameters":  []any{id}},
		"200", map[string]any{"description": "The file.", "headers": headerRefs(append([]string{"X-Request-Id"}, usageHeaders...)...), "content": map[string]any{
			"text/csv":             map[string]any{"schema": map[string]any{"type": "string"}},
			"application/x-ndjson": map[string]any{"schema": map[string]any{"type": "string"}}}},
		"400", "401", "403", "404", "409", "429", "500", "503")
}

// adminJobOperations adds the admin API's job operations to admin: the /v1/jobs operations they share a
// handler with, under their own ids and tag, for an admin key or console session whose role holds
// api.manage (every member's jobs).
func adminJobOperations(admin map[route.AdminOp]map[string]any) {
	ops := map[route.Endpoint]map[string]any{}
	jobOperations(ops)
	for _, o := range []struct {
		admin route.AdminOp
		data  route.Endpoint
		id    string
	}{
		{route.AdminJobsList, route.JobList, "adminListJobs"},
		{route.AdminJobsGet, route.JobGet, "adminGetJob"},
		{route.AdminJobsCancel, route.JobCancel, "adminCancelJob"},
		{route.AdminJobsDownload, route.JobDownload, "adminDownloadJob"},
	} {
		op := maps.Clone(ops[o.data])
		op["operationId"], op["tags"] = o.id, []string{"admin-jobs"}
		op["description"] = fmt.Sprint(op["description"]) + " Every member's jobs of the workspace." + adminNote
		admin[o.admin] = op
	}
}

package migrate

import (
	"strings"

	"github.com/workspace-records/records/engine/sqlgen"
)

type systemTable struct {
	name string
	ddl  []string
}

// systemTables returns the tables the server itself keeps: tenancy, access, data models and the audit
// trail. Every row carries workspace_id where it belongs to a workspace.
func systemTables(d sqlgen.Dialect) []systemTable {
	uuid, ts, js, boolean, integer, num, blob, strict := "uuid", "timestamptz", "jsonb", "boolean", "bigint", "numeric", "bytea", ""
	if d.Kind() == sqlgen.SQLite {
		uuid, ts, js, boolean, integer, num, blob, strict = "TEXT", "TEXT", "TEXT", "INTEGER", "INTEGER", "REAL", "BLOB", " STRICT"
	}
	r := func(s string) string {
		for _, kv := range [][2]string{{"{uuid}", uuid}, {"{ts}", ts}, {"{json}", js}, {"{bool}", boolean}, {"{int}", integer}, {"{num}", num}, {"{blob}", blob}, {"{strict}", strict}} {
			s = strings.ReplaceAll(s, kv[0], kv[1])
		}
		return s
	}
	tables := []systemTable{
		{"records_schema", []string{r(`CREATE TABLE records_schema (resource TEXT PRIMARY KEY, search TEXT NOT NULL){strict}`)}},
		{"formula_state", []string{r(`CREATE TABLE formula_state (resource TEXT NOT NULL, field TEXT NOT NULL, expr TEXT NOT NULL, PRIMARY KEY (resource, field)){strict}`)}},
		{"settings", []string{r(`CREATE TABLE settings (name TEXT PRIMARY KEY, value TEXT NOT NULL){strict}`)}},
		{"workspaces", []string{r(`CREATE TABLE workspaces (
  id {uuid} PRIMARY KEY,
  name TEXT NOT NULL,
  plan TEXT NOT NULL,
  limits {json},
  created_at {ts} NOT NULL,
  updated_at {ts} NOT NULL
){strict}`)}},
		{"members", []string{r(`CREATE TABLE members (
  workspace_id {uuid} NOT NULL,
  id {uuid} NOT NULL,
  email TEXT NOT NULL,
  role TEXT NOT NULL,
  department_id {uuid},
  active {bool} NOT NULL,
  mfa_verified_at {ts},
  created_at {ts} NOT NULL,
  updated_at {ts} NOT NULL,
  PRIMARY KEY (workspace_id, id)
){strict}`),
			`CREATE UNIQUE INDEX members_id_idx ON members (id)`,
			`CREATE UNIQUE INDEX members_email_idx ON members (workspace_id, email)`}},
		{"api_keys", []string{r(`CREATE TABLE api_keys (
  workspace_id {uuid} NOT NULL,
  id {uuid} NOT NULL,
  member_id {uuid} NOT NULL,
  secret_hash TEXT NOT NULL,
  hint TEXT NOT NULL,
  access TEXT NOT NULL,
  resources {json},
  allow_ips {json},
  created_at {ts} NOT NULL,
  expires_at {ts} NOT NULL,
  revoked_at {ts},
  last_used_at {ts},
  last_used_ip TEXT,
  assured_at {ts},
  name TEXT,
  rolled_from {uuid},
  rolled_to {uuid},
  PRIMARY KEY (workspace_id, id)
){strict}`),
			`CREATE UNIQUE INDEX api_keys_id_idx ON api_keys (id)`,
			`CREATE UNIQUE INDEX api_keys_secret_idx ON api_keys (secret_hash)`,
			`CREATE INDEX api_keys_member_idx ON api_keys (workspace_id, member_id)`}},
		{"data_models", []string{r(`CREATE TABLE data_models (
  workspace_id {uuid} NOT NULL,
  id {uuid} NOT NULL,
  name TEXT NOT NULL,
  fields {json} NOT NULL,
  created_at {ts} NOT NULL,
  updated_at {ts} NOT NULL,
  PRIMARY KEY (workspace_id, id)
){strict}`),
			`CREATE UNIQUE INDEX data_models_name_idx ON data_models (workspace_id, name)`}},
		{"workspace_roles", []string{r(`CREATE TABLE workspace_roles (
  workspace_id {uuid} NOT NULL,
  name TEXT NOT NULL,
  definition {json} NOT NULL,
  created_at {ts} NOT NULL,
  updated_at {ts} NOT NULL,
  PRIMARY KEY (workspace_id, name)
){strict}`)}},
		{"member_preferences", []string{r(`CREATE TABLE member_preferences (
  workspace_id {uuid} NOT NULL,
  member_id {uuid} NOT NULL,
  key_expiry_reminders {bool} NOT NULL,
  updated_at {ts} NOT NULL,
  PRIMARY KEY (workspace_id, member_id)
){strict}`)}},
		{"key_reminders", []string{r(`CREATE TABLE key_reminders (
  workspace_id {uuid} NOT NULL,
  id {uuid} NOT NULL,
  key_id {uuid} NOT NULL,
  member_id {uuid} NOT NULL,
  days_before INTEGER NOT NULL,
  due_at {ts} NOT NULL,
  status TEXT NOT NULL,
  detail TEXT,
  processed_at {ts},
  PRIMARY KEY (workspace_id, id)
){strict}`),
			`CREATE INDEX key_reminders_due_idx ON key_reminders (status, due_at)`,
			`CREATE INDEX key_reminders_key_idx ON key_reminders (workspace_id, key_id)`}},
		{"notifications", []string{r(`CREATE TABLE notifications (
  workspace_id {uuid} NOT NULL,
  id {uuid} NOT NULL,
  member_id {uuid} NOT NULL,
  kind TEXT NOT NULL,
  key_id {uuid},
  key_hint TEXT,
  expires_at {ts},
  days_before INTEGER,
  dedupe TEXT NOT NULL,
  created_at {ts} NOT NULL,
  delivered_at {ts},
  read_at {ts},
  PRIMARY KEY (workspace_id, id)
){strict}`),
			`CREATE INDEX notifications_id_idx ON notifications (id)`,
			`CREATE UNIQUE INDEX notifications_dedupe_idx ON notifications (workspace_id, dedupe)`,
			`CREATE INDEX notifications_member_idx ON notifications (workspace_id, member_id, created_at)`}},
		// The console's one-time sign-in links and its sessions (docs/issue-24.md): only SHA-256 hashes
		// of their secrets are stored.
		{"console_links", []string{r(`CREATE TABLE console_links (
  workspace_id {uuid} NOT NULL,
  id {uuid} NOT NULL,
  member_id {uuid} NOT NULL,
  token_hash TEXT NOT NULL,
  created_at {ts} NOT NULL,
  expires_at {ts} NOT NULL,
  used_at {ts},
  PRIMARY KEY (workspace_id, id)
){strict}`),
			`CREATE UNIQUE INDEX console_links_token_idx ON console_links (token_hash)`}},
		{"console_sessions", []string{r(`CREATE TABLE console_sessions (
  workspace_id {uuid} NOT NULL,
  id {uuid} NOT NULL,
  member_id {uuid} NOT NULL,
  token_hash TEXT NOT NULL,
  signed_in_at {ts} NOT NULL,
  last_seen_at {ts} NOT NULL,
  expires_at {ts} NOT NULL,
  ended_at {ts},
  PRIMARY KEY (workspace_id, id)
){strict}`),
			`CREATE UNIQUE INDEX console_sessions_token_idx ON console_sessions (token_hash)`,
			`CREATE INDEX console_sessions_member_idx ON console_sessions (workspace_id, member_id)`}},
		// Every definitions set applied (docs/issue-25.md): its files as one JSON object (path → text),
		// keyed by the SHA-256 of those files; settings.definitions_version names the one served.
		{"definitions_versions", []string{r(`CREATE TABLE definitions_versions (
  id TEXT PRIMARY KEY,
  files TEXT NOT NULL,
  applied_at {ts} NOT NULL,
  applied_by TEXT NOT NULL,
  changes TEXT NOT NULL
){strict}`)}},
		{"usage_counters", []string{r(`CREATE TABLE usage_counters (
  workspace_id {uuid} NOT NULL,
  period TEXT NOT NULL,
  count {int} NOT NULL,
  PRIMARY KEY (workspace_id, period)
){strict}`)}},
		// Requests and refusals (403, 429) per key and UTC day (YYYY-MM-DD): each server adds its counts
		// with one upsert per key and day every key_usage_interval (runtime/auth FlushUsage).
		{"key_usage_daily", []string{r(`CREATE TABLE key_usage_daily (
  workspace_id {uuid} NOT NULL,
  key_id {uuid} NOT NULL,
  day TEXT NOT NULL,
  requests {int} NOT NULL,
  refusals {int} NOT NULL,
  PRIMARY KEY (workspace_id, key_id, day)
){strict}`),
			`CREATE INDEX key_usage_daily_day_idx ON key_usage_daily (workspace_id, day)`}},
		{"server_instances", []string{r(`CREATE TABLE server_instances (
  id TEXT PRIMARY KEY,
  host TEXT NOT NULL,
  pid {int} NOT NULL,
  started_at {ts} NOT NULL,
  heartbeat_at {ts} NOT NULL
){strict}`)}},
		{"idempotency_keys", []string{r(`CREATE TABLE idempotency_keys (
  api_key_id {uuid} NOT NULL,
  idem_key TEXT NOT NULL,
  workspace_id {uuid} NOT NULL,
  fingerprint TEXT NOT NULL,
  status TEXT NOT NULL,
  token TEXT NOT NULL,
  locked_until {ts} NOT NULL,
  response_status {int},
  response_headers TEXT,
  response_body TEXT,
  created_at {ts} NOT NULL,
  completed_at {ts},
  owner TEXT,
  PRIMARY KEY (api_key_id, idem_key)
){strict}`),
			`CREATE INDEX idempotency_keys_created_idx ON idempotency_keys (created_at)`}},
		{"associations", []string{r(`CREATE TABLE associations (
  workspace_id {uuid} NOT NULL,
  owner_resource TEXT NOT NULL,
  name TEXT NOT NULL,
  owner_id {uuid} NOT NULL,
  target_resource TEXT NOT NULL,
  target_id {uuid} NOT NULL,
  attributes {json} NOT NULL,
  created_at {ts} NOT NULL,
  updated_at {ts} NOT NULL,
  PRIMARY KEY (workspace_id, owner_resource, name, owner_id, target_id)
){strict}`),
			`CREATE INDEX associations_owner_idx ON associations (workspace_id, owner_resource, name, owner_id, created_at, target_id)`,
			`CREATE INDEX associations_target_idx ON associations (workspace_id, owner_resource, name, target_id, created_at, owner_id)`}},
		{"custom_field_defs", []string{r(`CREATE TABLE custom_field_defs (
  workspace_id {uuid} NOT NULL,
  id {uuid} NOT NULL,
  resource TEXT NOT NULL,
  key TEXT NOT NULL,
  type TEXT NOT NULL,
  label TEXT NOT NULL,
  description TEXT NOT NULL,
  required {bool} NOT NULL,
  options {json},
  target TEXT,
  archived {bool} NOT NULL,
  created_at {ts} NOT NULL,
  updated_at {ts} NOT NULL,
  PRIMARY KEY (workspace_id, id)
){strict}`),
			`CREATE UNIQUE INDEX custom_field_defs_key_idx ON custom_field_defs (workspace_id, resource, key)`}},
		{"custom_values", []string{r(`CREATE TABLE custom_values (
  workspace_id {uuid} NOT NULL,
  field_id {uuid} NOT NULL,
  record_id {uuid} NOT NULL,
  t TEXT NOT NULL,
  n {num},
  PRIMARY KEY (workspace_id, field_id, record_id, t)
){strict}`),
			`CREATE INDEX custom_values_text_idx ON custom_values (workspace_id, field_id, t, record_id)`,
			`CREATE INDEX custom_values_num_idx ON custom_values (workspace_id, field_id, n, record_id)`}},
		{"audit_log", []string{r(`CREATE TABLE audit_log (
  workspace_id {uuid} NOT NULL,
  id {uuid} NOT NULL,
  resource TEXT NOT NULL,
  record_id {uuid} NOT NULL,
  action TEXT NOT NULL,
  member_id {uuid},
  key_id {uuid},
  request_id TEXT,
  changes {json},
  previous {json},
  created_at {ts} NOT NULL,
  PRIMARY KEY (workspace_id, id)
){strict}`),
			`CREATE INDEX audit_log_record_idx ON audit_log (workspace_id, resource, record_id, created_at)`,
			auditTimeIndex, auditResourceIndex}},
		// The change feed (runtime/events): events hold what happened (written once, by the write);
		// event_queue names the events not numbered yet (written by the write, deleted when numbered);
		// event_numbers gives each numbered event its place. Numbering writes two narrow rows and
		// never rewrites an event.
		{"events", []string{r(`CREATE TABLE events (
  workspace_id {uuid} NOT NULL,
  id {uuid} NOT NULL,
  type TEXT NOT NULL,
  resource TEXT NOT NULL,
  record_id {uuid},
  model_id {uuid},
  member_id {uuid},
  key_id {uuid},
  request_id TEXT,
  data {json} NOT NULL,
  previous {json},
  created_at {ts} NOT NULL,
  PRIMARY KEY (workspace_id, id)
){strict}`),
			`CREATE INDEX events_time_idx ON events (workspace_id, created_at)`}},
		{"event_queue", []string{r(`CREATE TABLE event_queue (
  workspace_id {uuid} NOT NULL,
  id {uuid} NOT NULL,
  PRIMARY KEY (workspace_id, id)
){strict}`)}},
		{"event_numbers", []string{r(`CREATE TABLE event_numbers (
  workspace_id {uuid} NOT NULL,
  seq {int} NOT NULL,
  event_id {uuid} NOT NULL,
  type TEXT NOT NULL,
  resource TEXT NOT NULL,
  PRIMARY KEY (workspace_id, seq)
){strict}`),
			`CREATE UNIQUE INDEX event_numbers_event_idx ON event_numbers (workspace_id, event_id)`}},
		{"event_sequences", []string{r(`CREATE TABLE event_sequences (
  workspace_id {uuid} PRIMARY KEY,
  last {int} NOT NULL
){strict}`)}},
		// Webhooks (runtime/dispatch): endpoints (due_at: when the first pending delivery is due; the
		// lease: the server delivering to it), one delivery per event and endpoint (created when the event
		// is numbered), and the log of every attempt.
		{"webhook_endpoints", []string{r(`CREATE TABLE webhook_endpoints (
  workspace_id {uuid} NOT NULL,
  id {uuid} NOT NULL,
  member_id {uuid} NOT NULL,
  url TEXT NOT NULL,
  description TEXT NOT NULL,
  event_types {json},
  resources {json},
  secret TEXT NOT NULL,
  previous_secret TEXT,
  previous_secret_until {ts},
  enabled {bool} NOT NULL,
  disabled_reason TEXT,
  due_at {ts},
  lease_owner TEXT,
  lease_until {ts},
  created_at {ts} NOT NULL,
  updated_at {ts} NOT NULL,
  PRIMARY KEY (workspace_id, id)
){strict}`),
			`CREATE UNIQUE INDEX webhook_endpoints_id_idx ON webhook_endpoints (id)`,
			`CREATE INDEX webhook_endpoints_due_idx ON webhook_endpoints (due_at) WHERE due_at IS NOT NULL`}},
		{"webhook_deliveries", []string{r(`CREATE TABLE webhook_deliveries (
  id {uuid} PRIMARY KEY,
  workspace_id {uuid} NOT NULL,
  endpoint_id {uuid} NOT NULL,
  event_id {uuid} NOT NULL,
  seq {int} NOT NULL,
  state TEXT NOT NULL,
  attempts {int} NOT NULL,
  next_at {ts} NOT NULL,
  last_status {int},
  last_outcome TEXT,
  last_error TEXT,
  created_at {ts} NOT NULL,
  done_at {ts}
){strict}`),
			`CREATE INDEX webhook_deliveries_endpoint_idx ON webhook_deliveries (endpoint_id, state, seq)`,
			`CREATE INDEX webhook_deliveries_event_idx ON webhook_deliveries (workspace_id, endpoint_id, event_id)`}},
		{"webhook_attempts", []string{r(`CREATE TABLE webhook_attempts (
  delivery_id {uuid} NOT NULL,
  n {int} NOT NULL,
  workspace_id {uuid} NOT NULL,
  endpoint_id {uuid} NOT NULL,
  at {ts} NOT NULL,
  status {int},
  outcome TEXT NOT NULL,
  latency_ms {int} NOT NULL,
  error TEXT,
  response TEXT,
  server TEXT,
  PRIMARY KEY (delivery_id, n)
){strict}`),
			`CREATE INDEX webhook_attempts_endpoint_idx ON webhook_attempts (endpoint_id, at)`}},
		// Bulk jobs (runtime/jobs): the job (its state, counts, and the lease of the server running it:
		// any server takes a due job over), its data in chunks (an import's upload, an export's output:
		// where every server reads them), and an import's per-row results.
		{"jobs", []string{r(`CREATE TABLE jobs (
  workspace_id {uuid} NOT NULL,
  id {uuid} NOT NULL,
  kind TEXT NOT NULL,
  resource TEXT NOT NULL,
  state TEXT NOT NULL,
  member_id {uuid} NOT NULL,
  key_id {uuid} NOT NULL,
  spec {json} NOT NULL,
  parts {int} NOT NULL,
  bytes {int} NOT NULL,
  rows_read {int} NOT NULL,
  rows_written {int} NOT NULL,
  rows_failed {int} NOT NULL,
  rows_unchanged {int} NOT NULL,
  next_row {int} NOT NULL,
  bytes_read {int},
  walk TEXT,
  error TEXT,
  lease_owner TEXT,
  lease_until {ts},
  created_at {ts} NOT NULL,
  updated_at {ts} NOT NULL,
  started_at {ts},
  finished_at {ts},
  expires_at {ts},
  PRIMARY KEY (workspace_id, id)
){strict}`),
			`CREATE UNIQUE INDEX jobs_id_idx ON jobs (id)`,
			`CREATE INDEX jobs_workspace_idx ON jobs (workspace_id, created_at, id)`,
			`CREATE INDEX jobs_due_idx ON jobs (state, lease_until)`}},
		{"job_data", []string{r(`CREATE TABLE job_data (
  workspace_id {uuid} NOT NULL,
  job_id {uuid} NOT NULL,
  part {int} NOT NULL,
  seq {int} NOT NULL,
  data {blob} NOT NULL,
  PRIMARY KEY (workspace_id, job_id, part, seq)
){strict}`)}},
		{"job_rows", []string{r(`CREATE TABLE job_rows (
  workspace_id {uuid} NOT NULL,
  job_id {uuid} NOT NULL,
  row_no {int} NOT NULL,
  status {int} NOT NULL,
  record_id {uuid},
  unchanged {bool} NOT NULL,
  errors {json},
  PRIMARY KEY (workspace_id, job_id, row_no)
){strict}`),
			`CREATE INDEX job_rows_failed_idx ON job_rows (workspace_id, job_id, status, row_no)`}},
	}
	if d.Kind() == sqlgen.SQLite {
		tables = append(tables, systemTable{AuthChangesTable, authChangesDDL()})
	} else {
		for i := range tables {
			if tables[i].name == "event_queue" {
				// A queue: every row is deleted within milliseconds of its insert. Vacuumed by count, not
				// by the default fraction of the table, so numbering never walks past thousands of dead
				// rows to find the live ones.
				tables[i].ddl = append(tables[i].ddl, `ALTER TABLE event_queue SET (autovacuum_vacuum_scale_factor = 0, autovacuum_vacuum_threshold = 1000, autovacuum_vacuum_cost_delay = 0)`)
			}
		}
	}
	return tables
}

// AuthChangesTable (SQLite) holds one row whose n grows with every change to what authenticating a
// key reads: triggers on workspaces, members, workspace_roles and api_keys bump it in the changing
// transaction, whichever process or tool makes the change, by hand included. A key's creation and the
// columns of its last use (written by the usage flush) do not count: no remembered key depends on
// them. runtime/auth reads n on every request and serves a remembered key only while n is what it was
// when the key was read. PostgreSQL announces changes with NOTIFY instead (runtime/auth Watch).
const AuthChangesTable = "auth_changes"

func authChangesDDL() []string {
	ddl := []string{
		`CREATE TABLE auth_changes (id INTEGER PRIMARY KEY CHECK (id = 1), n INTEGER NOT NULL) STRICT`,
		`INSERT INTO auth_changes (id, n) VALUES (1, 0)`,
	}
	const bump = ` BEGIN UPDATE auth_changes SET n = n + 1 WHERE id = 1; END`
	for _, t := range []string{"workspaces", "members", "workspace_roles", "api_keys"} {
		events := []string{"INSERT", "UPDATE", "DELETE"}
		if t == "api_keys" {
			events = []string{"UPDATE OF workspace_id, id, member_id, secret_hash, hint, access, resources, allow_ips, created_at, expires_at, revoked_at", "DELETE"}
		}
		for _, ev := range events {
			name := "auth_changes_" + t + "_" + strings.ToLower(strings.Fields(ev)[0])
			ddl = append(ddl, "CREATE TRIGGER "+name+" AFTER "+ev+" ON "+t+" FOR EACH ROW"+bump)
		}
	}
	return ddl
}

// The audit trail is read newest first in (created_at, id) order, across a workspace or one resource.
const (
	auditTimeIndex     = `CREATE INDEX audit_log_time_idx ON audit_log (workspace_id, created_at, id)`
	auditResourceIndex = `CREATE INDEX audit_log_resource_idx ON audit_log (workspace_id, resource, created_at, id)`
)

// systemAddition is an additive change to a system table made after the table first shipped. A
// database created since has it from the table's DDL above; an older one gets it from Run.
type systemAddition struct {
	table  string
	column string // a nullable column to add, of type typ
	typ    string
	index  string // or an index to create, with ddl
	ddl    string
	// or a column whose TOAST storage ddl sets to EXTERNAL (PostgreSQL): kept out of line, uncompressed
	storage string
}

// systemAdditions returns the additive changes to system tables, oldest first.
func systemAdditions(d sqlgen.Dialect) []systemAddition {
	js, boolType, tsType, uuidType, intType := "jsonb", "boolean", "timestamptz", "uuid", "bigint"
	if d.Kind() == sqlgen.SQLite {
		js, boolType, tsType, uuidType, intType = "TEXT", "INTEGER", "TEXT", "TEXT", "INTEGER"
	}
	adds := []systemAddition{
		// The values an update replaced, by field key: changes holds the new ones.
		{table: "audit_log", column: "previous", typ: js},
		{table: "audit_log", index: "audit_log_time_idx", ddl: auditTimeIndex},
		{table: "audit_log", index: "audit_log_resource_idx", ddl: auditResourceIndex},
		// The client address of a key's last use, written with last_used_at.
		{table: "api_keys", column: "last_used_ip", typ: "TEXT"},
		// The server instance (server_instances.id) holding a running claim.
		{table: "idempotency_keys", column: "owner", typ: "TEXT"},
		// A custom field that is a unique key of its resource (null: not unique).
		{table: "custom_field_defs", column: "is_unique", typ: boolType},
		// Own keys (docs/issue-24.md): the sign-in a key delegates, its name, and roll links.
		{table: "api_keys", column: "assured_at", typ: tsType},
		{table: "api_keys", column: "name", typ: "TEXT"},
		{table: "api_keys", column: "rolled_from", typ: uuidType},
		{table: "api_keys", column: "rolled_to", typ: uuidType},
		// How much of an import's upload its committed rows used: the job's progress and estimate.
		{table: "jobs", column: "bytes_read", typ: intType},
	}
	if d.Kind() == sqlgen.Postgres {
		// An export's file and an import's upload are stored in 1 MiB chunks: compressing each on the way in
		// (pglz, the default) and out cost the export more than the read of its records, for a few percent
		// of space on CSV; a client that wants it small asks for gzip on download.
		adds = append(adds, systemAddition{table: "job_data", storage: "data", ddl: `ALTER TABLE job_data ALTER COLUMN data SET STORAGE EXTERNAL`})
	}
	return adds
}

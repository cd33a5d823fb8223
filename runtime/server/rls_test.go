package server_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/workspace-records/records/engine/sqlgen"
	"github.com/workspace-records/records/runtime/customfields"
	"github.com/workspace-records/records/runtime/migrate"
	"github.com/workspace-records/records/runtime/server/servertest/tenancy"
	"github.com/workspace-records/records/runtime/store"
)

// noRowSecurity lists the tables that carry workspace_id but no row-level security, and why. A new table
// with a workspace_id column fails TestRowLevelSecurity until it gets the policy or a line here.
var noRowSecurity = map[string]string{
	"members":              "addressed by member id alone (recordsctl member …) and joined to authenticate a key, before any workspace is known",
	"api_keys":             "looked up by secret hash to authenticate, before the workspace is known",
	"workspace_roles":      "joined while authenticating a key, before the workspace is known",
	"member_preferences":   "joined by the key reminder job, which runs across workspaces",
	"key_reminders":        "scanned by the key reminder job across workspaces",
	"notifications":        "written by the key reminder job across workspaces; read by member (GET /v1/me) before any record scope",
	"usage_counters":       "quota counters, read and flushed outside any request's workspace scope",
	"idempotency_keys":     "keyed by API key; claimed before the request's workspace scope and swept across workspaces",
	"custom_field_defs":    "addressed by definition id alone (recordsctl field …)",
	"data_models":          "addressed by model id alone (recordsctl model …)",
	"webhook_endpoints":    "addressed by endpoint id (recordsctl webhook …); holds no record values",
	"webhook_deliveries":   "leased by every server's dispatcher across workspaces (FOR UPDATE SKIP LOCKED); ids and times only, the payload is read from events under the workspace's scope",
	"definitions_versions": "the definitions sets applied: one for the whole installation, no workspace's data",
	"console_links":        "a one-time sign-in token is redeemed by its hash before any workspace is known; hashes and times only",
	"console_sessions":     "looked up by the session secret's hash to authenticate a console request, before the workspace is known; hashes and times only",
	"webhook_attempts":     "the delivery log, written by the dispatcher outside a workspace scope; statuses and the start of the receiver's answer, no record values",
	"jobs":                 "leased by every server's job runner across workspaces (FOR UPDATE SKIP LOCKED); states, counts and the job's spec, while its upload, file and row results are in job_data and job_rows, under row-level security",
}

// TestRowLevelSecurity checks T1 and T2 of the research note: every tenant table of the records has
// row-level security enabled and forced, with one policy for all commands whose USING and WITH CHECK
// read records.workspace_id; the role the server connects as is neither a superuser nor BYPASSRLS, nor
// a member of such a role. It owns the tables (it runs the migrations), so FORCE is what puts it under
// the policy. T3: a statement without the workspace setting, or with the setting cleared or garbage,
// sees no row; an unfiltered update changes only the scoped workspace's rows. T6: a row cannot be
// moved to, or written into, another workspace. T4 at the store: runStoreScopeLeak over the server's
// pool of two connections.
func TestRowLevelSecurity(t *testing.T) {
	t.Parallel()
	e := tenancy.StartSmallPool(t)
	ctx := context.Background()
	be := e.Server.Backend()
	st := be.Store
	wsB, _, keyB := e.NewWorkspace("growth", "admin", "write")

	// Rows of A in every kind of tenant table: records, a link, a custom value, audit entries.
	company := e.Do("POST", "/v1/companies", map[string]any{"name": "A1"}).Data()["id"].(string)
	contact := e.Do("POST", "/v1/contacts", map[string]any{"last_name": "Lee"}).Data()["id"].(string)
	e.Expect(e.Do("PUT", "/v1/contacts/"+contact+"/companies/"+company, nil), 200, "")
	if _, err := be.Current().Custom.Create(ctx, e.Workspace, customfields.Def{Resource: "companies", Key: "tier", Type: "text"}); err != nil {
		t.Fatal(err)
	}
	e.Expect(e.Do("PATCH", "/v1/companies/"+company, map[string]any{"cf__tier": "gold"}), 200, "")
	e.Expect(e.DoKey(keyB, "POST", "/v1/companies", map[string]any{"name": "B1"}), 201, "")

	// T2: the app role.
	var super, bypass bool
	var elevated int64
	query := func(ctx context.Context, sql string, fn func(row []any)) {
		t.Helper()
		if err := st.Query(ctx, sqlgen.Stmt{SQL: sql}, func(row []any) error { fn(row); return nil }); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	query(ctx, "SELECT rolsuper, rolbypassrls FROM pg_roles WHERE rolname = current_user", func(row []any) { super, bypass = row[0].(bool), row[1].(bool) })
	query(ctx, "SELECT count(*) FROM pg_roles r WHERE pg_has_role(current_user, r.oid, 'USAGE') AND (r.rolsuper OR r.rolbypassrls)", func(row []any) { elevated = row[0].(int64) })
	if super || bypass || elevated != 0 {
		t.Errorf("the server's role: superuser %v, BYPASSRLS %v, member of %d roles that are either", super, bypass, elevated)
	}

	// T1: the catalog.
	want := map[string]bool{}
	for _, name := range migrate.TenantSystemTables() {
		want[name] = true
	}
	for _, r := range be.Current().Catalog.Resources {
		want[r.Table] = true
	}
	type table struct {
		enabled, forced, owned bool
		policies               int
		policy                 bool
	}
	tables := map[string]table{}
	query(ctx, `SELECT c.relname, c.relrowsecurity, c.relforcerowsecurity, c.relowner = (SELECT oid FROM pg_roles WHERE rolname = current_user),
  (SELECT count(*) FROM pg_policies p WHERE p.schemaname = n.nspname AND p.tablename = c.relname),
  EXISTS (SELECT 1 FROM pg_policies p WHERE p.schemaname = n.nspname AND p.tablename = c.relname AND p.policyname = '`+sqlgen.PolicyName+`'
    AND p.permissive = 'PERMISSIVE' AND p.cmd = 'ALL' AND p.roles = '{public}'
    AND p.qual LIKE '%records.workspace_id%' AND p.with_check LIKE '%records.workspace_id%')
FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE n.nspname = current_schema() AND c.relkind IN ('r', 'p')
  AND EXISTS (SELECT 1 FROM pg_attribute a WHERE a.attrelid = c.oid AND a.attname = 'workspace_id' AND NOT a.attisdropped)`,
		func(row []any) {
			tables[row[0].(string)] = table{enabled: row[1].(bool), forced: row[2].(bool), owned: row[3].(bool), policies: int(row[4].(int64)), policy: row[5].(bool)}
		})
	owned := 0
	for name, tb := range tables {
		if tb.owned {
			owned++
		}
		switch {
		case want[name]:
			if !tb.enabled || !tb.forced || tb.policies != 1 || !tb.policy {
				t.Errorf("%s: row security enabled %v, forced %v, %d policies, workspace policy for all commands %v", name, tb.enabled, tb.forced, tb.policies, tb.policy)
			}
		case noRowSecurity[name] == "":
			t.Errorf("%s has workspace_id but no row-level security and no reason in noRowSecurity", name)
		}
	}
	for name := range want {
		if _, ok := tables[name]; !ok {
			t.Errorf("tenant table %s not found", name)
		}
	}

	// T3: no setting, a cleared setting, a garbage setting: no rows (or an error), never rows.
	scopedA, scopedB := store.WithWorkspace(ctx, e.Workspace), store.WithWorkspace(ctx, wsB)
	for name := range want {
		var a, b, none int64
		count := "SELECT count(*) FROM " + sqlgen.Quote(name)
		query(scopedA, count, func(row []any) { a = row[0].(int64) })
		query(scopedB, count, func(row []any) { b = row[0].(int64) })
		query(ctx, count, func(row []any) { none = row[0].(int64) })
		if none != 0 {
			t.Errorf("%s: %d rows without a workspace", name, none)
		}
		switch name {
		case "rec_companies", "rec_contacts", "associations", "audit_log", "custom_values", "events":
			if a == 0 {
				t.Errorf("%s: A sees none of its rows", name)
			}
		}
		// B wrote one company: its record, audit row and event (and its event counter, once numbered),
		// and its key's requests were counted (once flushed).
		if b != 0 && !slices.Contains([]string{"rec_companies", "rec_entity_members", "audit_log", "events", "event_queue", "event_numbers", "event_sequences", "key_usage_daily"}, name) {
			t.Errorf("%s: B sees %d rows, has none", name, b)
		}
	}
	pc, err := pgxpool.ParseConfig(e.Config.DB) // the URL holds pool settings pgx.Connect refuses
	if err != nil {
		t.Fatal(err)
	}
	conn, err := pgx.ConnectConfig(ctx, pc.ConnConfig)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	countOn := func(setting string) (int64, error) {
		var n int64
		if _, err := conn.Exec(ctx, "SELECT set_config('records.workspace_id', $1, false)", setting); err != nil {
			return 0, err
		}
		err := conn.QueryRow(ctx, `SELECT count(*) FROM "rec_companies"`).Scan(&n)
		return n, err
	}
	if n, err := countOn(e.Workspace); n != 1 || err != nil {
		t.Errorf("session scoped to A: %d rows, %v", n, err)
	}
	if n, err := countOn(""); n != 0 || err != nil {
		t.Errorf("session setting cleared: %d rows, %v", n, err)
	}
	var pgErr *pgconn.PgError
	if n, err := countOn("not-a-uuid"); !errors.As(err, &pgErr) || pgErr.Code != "22P02" {
		t.Errorf("garbage setting: %d rows, %v; want error 22P02", n, err)
	}

	// An unfiltered update scoped to A changes A's rows only.
	if n, err := st.Exec(scopedA, sqlgen.Stmt{SQL: `UPDATE "rec_companies" SET name = name || ' (A)'`}); n != 1 || err != nil {
		t.Errorf("unfiltered update scoped to A: %d rows, %v; want 1", n, err)
	}

	// T6: a row cannot be moved to, or written into, another workspace.
	for _, sql := range []string{
		`UPDATE "rec_companies" SET workspace_id = $1`,
		`INSERT INTO "rec_companies" (workspace_id, id, name, created_at, updated_at) VALUES ($1, '0190a6d4-0000-7000-8000-000000000002', 'x', now(), now())`,
		`INSERT INTO "associations" (workspace_id, owner_resource, name, owner_id, target_resource, target_id, attributes, created_at, updated_at) VALUES ($1, 'contacts', 'companies', '0190a6d4-0000-7000-8000-000000000002', 'companies', '0190a6d4-0000-7000-8000-000000000003', '{}', now(), now())`,
	} {
		err := st.Tx(scopedA, func(q store.Querier) error {
			_, err := q.Exec(scopedA, sqlgen.Stmt{SQL: sql, Args: []any{wsB}})
			return err
		})
		if !errors.As(err, &pgErr) || pgErr.Code != "42501" {
			t.Errorf("scoped to A, %.40s… into B: %v; want 42501 (row-level security)", sql, err)
		}
	}
	// Nor by the bulk path (recordsctl seed, records import), whose COPY goes to a staging table and
	// reaches the records by an INSERT the policy checks.
	err = st.Tx(scopedA, func(q store.Querier) error {
		now := time.Now()
		_, err := store.Copy(scopedA, q, st.Dialect(), sqlgen.Rows{Table: "rec_companies", Columns: []string{"workspace_id", "id", "name", "created_at", "updated_at"},
			Values: [][]any{{e.Workspace, "0190a6d4-0000-7000-8000-000000000004", "a", now, now}, {wsB, "0190a6d4-0000-7000-8000-000000000005", "x", now, now}}})
		return err
	})
	if !errors.As(err, &pgErr) || pgErr.Code != "42501" {
		t.Errorf("scoped to A, a bulk copy into B: %v; want 42501 (row-level security)", err)
	}
	if l := e.DoKey(keyB, "GET", "/v1/companies", nil).List(); len(l) != 1 || l[0]["name"] != "B1" {
		t.Errorf("B's companies: %v", l)
	}
	t.Logf("row security: %d tenant tables enabled and forced with one policy; %d tables with workspace_id left out by reason; the app role owns %d of them, is not superuser or BYPASSRLS",
		len(want), len(noRowSecurity), owned)

	runStoreScopeLeak(t, e, 1000)
}

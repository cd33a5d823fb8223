package server_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/workspace-records/records/engine/sqlgen"
	"github.com/workspace-records/records/runtime/customfields"
	"github.com/workspace-records/records/runtime/server/servertest"
	"github.com/workspace-records/records/runtime/store"
)

// benchRows is how many deals BenchmarkCustomFieldFilter seeds: RECORDS_BENCH_ROWS, default 1,000,000.
func benchRows(b *testing.B) int {
	if s := os.Getenv("RECORDS_BENCH_ROWS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1000 {
			b.Fatalf("RECORDS_BENCH_ROWS=%q: want an integer of at least 1000", s)
		}
		return n
	}
	return 1_000_000
}

// BenchmarkCustomFieldFilter compares, over one workspace of a million deals, a filter on an integer
// custom field (custom_values side table) with the same filter on a declared indexed column (amount),
// through HTTP, next to the raw SQL of each. Both columns hold i % 50000, so an eq matches 20 records
// and the range (the top ten values) 200. Sorting by each is measured too. Rows are seeded with one SQL statement
// per table (generate_series / a recursive CTE), consistent with what the write path stores.
func BenchmarkCustomFieldFilter(b *testing.B) {
	rows := benchRows(b)
	for _, backend := range servertest.Backends {
		b.Run(string(backend), func(b *testing.B) {
			e := servertest.Start(b, backend, servertest.Options{})
			be := e.Server.Backend()
			ctx := context.Background()
			def, err := be.Current().Custom.Create(ctx, e.Workspace, customfields.Def{Resource: "deals", Key: "region_code", Type: "integer"})
			if err != nil {
				b.Fatal(err)
			}
			start := time.Now()
			seedDeals(b, be.Store, e.Workspace, def.ID, rows)
			b.Logf("%s: seeded %d deals with a custom value each in %s", backend, rows, time.Since(start).Round(time.Millisecond))

			filter := func(field, op string, v int) string {
				return url.QueryEscape(fmt.Sprintf(`[{"field":%q,"op":%q,"value":%d}]`, field, op, v))
			}
			cfv := def.FilterKey()
			top := min(rows, 50000) - 10 // the range matches 10 values
			d := be.Store.Dialect()
			wctx := store.WithWorkspace(ctx, e.Workspace)
			raw := func(name, where string, args ...any) {
				b.Run(name, func(b *testing.B) {
					sql := `SELECT * FROM "rec_deals" WHERE "workspace_id" = ? AND "archived" = ? AND ` + where + ` ORDER BY "created_at" DESC, "id" DESC LIMIT 26`
					stmt := d.Bind(sql, append([]any{e.Workspace, false}, args...)...)
					for i := 0; i < b.N; i++ {
						n := 0
						if err := be.Store.Query(wctx, stmt, func([]any) error { n++; return nil }); err != nil || n == 0 {
							b.Fatalf("%s: %d rows, %v", name, n, err)
						}
					}
				})
			}
			client := &http.Client{}
			api := func(name, query string) {
				b.Run(name, func(b *testing.B) {
					req, _ := http.NewRequest("GET", e.URL+"/v1/deals?"+query, nil)
					req.Header.Set("Authorization", "Bearer "+e.Key)
					for i := 0; i < b.N; i++ {
						res, err := client.Do(req)
						if err != nil {
							b.Fatal(err)
						}
						body, _ := io.ReadAll(res.Body)
						res.Body.Close()
						if res.StatusCode != 200 || len(body) < 200 {
							b.Fatalf("%s: %s %s", name, res.Status, body)
						}
					}
				})
			}
			raw("raw_sql/declared_eq", `"amount" = ?`, 4242)
			raw("raw_sql/custom_eq", `"id" IN (SELECT "record_id" FROM "custom_values" WHERE "workspace_id" = ? AND "field_id" = ? AND "t" = ?)`, e.Workspace, def.ID, "4242")
			api("api/declared_eq", "filter="+filter("amount", "eq", 4242))
			api("api/custom_eq", "filter="+filter(cfv, "eq", 4242))
			api("api/declared_range", "filter="+filter("amount", "gte", top))
			api("api/custom_range", "filter="+filter(cfv, "gte", top))
			api("api/declared_sort_first_page", "sort=amount&order=asc&cursor=start")
			api("api/custom_sort_first_page", "sort="+url.QueryEscape(cfv)+"&order=asc&cursor=start")
		})
	}
}

// seedDeals inserts rows deals into workspace, each with amount and custom field fieldID set to
// i % 50000, with the custom_values rows the write path would keep.
func seedDeals(b *testing.B, st store.Store, workspace, fieldID string, rows int) {
	ctx := store.WithWorkspace(context.Background(), workspace)
	now := time.Now().UTC()
	var stmts []sqlgen.Stmt
	if st.Dialect().Kind() == sqlgen.Postgres {
		id := `(lpad(to_hex(i), 8, '0') || '-0000-7000-8000-' || lpad(to_hex(i), 12, '0'))::uuid`
		stmts = []sqlgen.Stmt{
			{SQL: `INSERT INTO "rec_deals" (workspace_id, id, name, amount, probability, weighted_amount, currency, status, custom_fields, created_at, updated_at)
SELECT $1::uuid, ` + id + `, 'Deal ' || i, i % 50000, 50, (i % 50000) * 0.5, 'USD', 'open', jsonb_build_object($2::text, i % 50000), $3::timestamptz - make_interval(secs => i), $3::timestamptz
FROM generate_series(1, $4::int) i`, Args: []any{workspace, fieldID, now, rows}},
			{SQL: `INSERT INTO "custom_values" (workspace_id, field_id, record_id, t, n) SELECT $1::uuid, $2::uuid, ` + id + `, (i % 50000)::text, i % 50000 FROM generate_series(1, $3::int) i`,
				Args: []any{workspace, fieldID, rows}},
			{SQL: `ANALYZE "rec_deals"`}, {SQL: `ANALYZE "custom_values"`},
		}
	} else {
		id := `printf('%08x-0000-7000-8000-%012x', i, i)`
		series := `WITH RECURSIVE s(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM s WHERE i < ?1) `
		stmts = []sqlgen.Stmt{
			{SQL: series + `INSERT INTO "rec_deals" (workspace_id, id, name, amount, probability, weighted_amount, currency, status, custom_fields, created_at, updated_at)
SELECT ?2, ` + id + `, 'Deal ' || i, i % 50000, 50, (i % 50000) * 0.5, 'USD', 'open', json_object(?3, i % 50000), strftime('%Y-%m-%dT%H:%M:%S', ?4, '-' || i || ' seconds') || '.000000Z', ?5 FROM s`,
				Args: []any{rows, workspace, fieldID, now.Format("2006-01-02 15:04:05"), now.Format(sqlgen.SQLiteTime)}},
			{SQL: series + `INSERT INTO "custom_values" (workspace_id, field_id, record_id, t, n) SELECT ?2, ?3, ` + id + `, CAST(i % 50000 AS TEXT), i % 50000 FROM s`,
				Args: []any{rows, workspace, fieldID}},
			{SQL: `ANALYZE`},
		}
	}
	err := st.Tx(ctx, func(q store.Querier) error {
		for _, s := range stmts {
			if _, err := q.Exec(ctx, s); err != nil {
				return fmt.Errorf("%.60s: %w", s.SQL, err)
			}
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
}

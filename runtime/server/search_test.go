package server_test

import (
	"context"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/workspace-records/records/engine/sqlgen"
	"github.com/workspace-records/records/runtime/server/servertest"
	"github.com/workspace-records/records/runtime/store"
)

// searchRecords are companies with awkward names, domains and descriptions, keyed by a short label.
var searchRecords = map[string]map[string]any{
	"plist":   {"name": "plist-007-ab12"},
	"email":   {"name": "Mail desk", "description": "Write to ann.lee@x-corp.example for quotes"},
	"version": {"name": "Release v1.2.3", "domain": "releases.example.com"},
	"accents": {"name": "Crème Brûlée SARL", "description": "Señor Müller's café"},
	"cjk":     {"name": "東京都庁", "description": "カスタマー サポート"},
	"digits":  {"name": "Order 12345-67", "description": "2026/11/24 batch №5"},
	"mixed":   {"name": "O'Brien & Sons_Ltd", "domain": "obrien.example"},
	"case":    {"name": "ACME Widgets", "description": "ＡＣＭＥ full-width and ﬁne print"},
}

// searchCases are searches and the records each must find (by label), the same on both databases.
var searchCases = []struct {
	q    string
	want []string
}{
	{"plist-007-ab12", []string{"plist"}},
	{"plist 007", []string{"plist"}},
	{"007", []string{"plist"}},
	{"ab1", []string{"plist"}},
	{"plist-7", nil},
	{"ann.lee@x-corp.example", []string{"email"}},
	{"ann", []string{"email"}},
	{"x-corp", []string{"email"}},
	{"corp", []string{"email"}},
	{"v1.2.3", []string{"version"}},
	{"v1", []string{"version"}},
	{"releases.example", []string{"version"}},
	{"example", []string{"email", "mixed", "version"}},
	{"creme brulee", []string{"accents"}},
	{"Crème", []string{"accents"}},
	{"CRÈME", []string{"accents"}},
	{"muller cafe", []string{"accents"}},
	{"señor", []string{"accents"}},
	{"東京", []string{"cjk"}},
	{"東京都庁", []string{"cjk"}},
	{"京都", nil},
	{"カスタマー", []string{"cjk"}},
	{"12345", []string{"digits"}},
	{"12345-67", []string{"digits"}},
	{"67", []string{"digits"}},
	{"2026 11", []string{"digits"}},
	{"№5", []string{"digits"}},
	{"o'brien", []string{"mixed"}},
	{"sons_ltd", []string{"mixed"}},
	{"brien ltd", []string{"mixed"}},
	{"acme", []string{"case"}},
	{"ＡＣＭＥ", []string{"case"}},
	{"fine", []string{"case"}},
	{"ﬁ", []string{"case"}},
	{"widgets nothere", nil},
}

// TestSearchTokens: one tokenisation rule on both databases. Records with hyphens before digits, dots,
// e-mail addresses, accents, CJK text, digits and compatibility characters are found by the same searches
// on SQLite and PostgreSQL (PostgreSQL's own parser used to keep "-007" and "ann@x.example" whole, so
// searching plist-007-ab12 found nothing there). An update re-indexes: the old words stop matching.
func TestSearchTokens(t *testing.T) {
	t.Parallel()
	got := map[servertest.Backend]map[string][]string{}
	for _, b := range servertest.Backends {
		t.Run(string(b), func(t *testing.T) {
			e := servertest.Start(t, b, servertest.Options{})
			labels := map[string]string{}
			for label, body := range searchRecords {
				labels[createID(t, e, body)] = label
			}
			hits := map[string][]string{}
			for _, c := range searchCases {
				hits[c.q] = searchLabels(t, e, c.q, labels)
				if !slices.Equal(hits[c.q], c.want) {
					t.Errorf("search %q found %v, want %v", c.q, hits[c.q], c.want)
				}
			}
			got[b] = hits
			// The search text follows updates.
			var plist string
			for id, l := range labels {
				if l == "plist" {
					plist = id
				}
			}
			e.Expect(e.Do("PATCH", "/v1/companies/"+plist, map[string]any{"name": "qlist-008"}), 200, "")
			if h := searchLabels(t, e, "plist", labels); len(h) != 0 {
				t.Errorf("after renaming, plist still finds %v", h)
			}
			if h := searchLabels(t, e, "qlist-008", labels); !slices.Equal(h, []string{"plist"}) {
				t.Errorf("after renaming, qlist-008 finds %v", h)
			}
		})
	}
	if len(got) == 2 {
		for _, c := range searchCases {
			if a, b := got[servertest.SQLite][c.q], got[servertest.Postgres][c.q]; !slices.Equal(a, b) {
				t.Errorf("search %q: SQLite found %v, PostgreSQL %v", c.q, a, b)
			}
		}
	}
}

func createID(t *testing.T, e *servertest.Env, body map[string]any) string {
	t.Helper()
	res := e.Do("POST", "/v1/companies", body)
	e.Expect(res, 201, "")
	id, _ := res.Data()["id"].(string)
	return id
}

// searchLabels runs a search of companies and returns the labels of the records it found, sorted.
func searchLabels(t *testing.T, e *servertest.Env, q string, labels map[string]string) []string {
	t.Helper()
	res := e.Do("GET", "/v1/companies?page_size=100&search="+url.QueryEscape(q), nil)
	e.Expect(res, 200, "")
	var out []string
	for _, r := range res.List() {
		if l, ok := labels[r["id"].(string)]; ok {
			out = append(out, l)
		}
	}
	slices.Sort(out)
	return out
}

// oldSearch is the full-text search of rec_companies as migrations made it before the search text
// column (records_schema.search "name,domain,description").
var oldSearch = map[servertest.Backend][]string{
	servertest.Postgres: {
		`ALTER TABLE "rec_companies" ADD COLUMN "_search" tsvector GENERATED ALWAYS AS (to_tsvector('simple'::regconfig, coalesce("name", '') || ' ' || coalesce("domain", '') || ' ' || coalesce("description", ''))) STORED`,
		`CREATE INDEX IF NOT EXISTS "rec_companies_search_idx" ON "rec_companies" USING gin ("_search")`,
	},
	servertest.SQLite: {
		`CREATE VIRTUAL TABLE "rec_companies_fts" USING fts5("name", "domain", "description", content='rec_companies', content_rowid='rowid', tokenize='unicode61 remove_diacritics 2')`,
		`CREATE TRIGGER "rec_companies_fts_ai" AFTER INSERT ON "rec_companies" BEGIN INSERT INTO "rec_companies_fts"(rowid, "name", "domain", "description") VALUES (new.rowid, new."name", new."domain", new."description"); END`,
		`CREATE TRIGGER "rec_companies_fts_ad" AFTER DELETE ON "rec_companies" BEGIN INSERT INTO "rec_companies_fts"("rec_companies_fts", rowid, "name", "domain", "description") VALUES ('delete', old.rowid, old."name", old."domain", old."description"); END`,
		`CREATE TRIGGER "rec_companies_fts_au" AFTER UPDATE ON "rec_companies" BEGIN INSERT INTO "rec_companies_fts"("rec_companies_fts", rowid, "name", "domain", "description") VALUES ('delete', old.rowid, old."name", old."domain", old."description"); INSERT INTO "rec_companies_fts"(rowid, "name", "domain", "description") VALUES (new.rowid, new."name", new."domain", new."description"); END`,
		`INSERT INTO "rec_companies_fts"("rec_companies_fts") VALUES ('rebuild')`,
	},
}

// TestSearchMigration: a database whose companies were indexed by the old layout (PostgreSQL's parser
// over a generated column, SQLite's FTS5 over the columns) is moved to the search text column by the
// next start: the old objects are dropped, the column is added and filled for the records already there,
// the index is built, and the awkward searches then find the old records on both databases.
func TestSearchMigration(t *testing.T) {
	t.Parallel()
	for _, b := range servertest.Backends {
		t.Run(string(b), func(t *testing.T) {
			t.Parallel()
			db := servertest.DatabaseURL(t, b)
			old := servertest.Start(t, b, servertest.Options{DB: db})
			labels := map[string]string{}
			for label, body := range searchRecords {
				labels[createID(t, old, body)] = label
			}
			// Put rec_companies back in the old layout, records and all.
			ctx := context.Background()
			st := old.Server.Backend().Store
			d := st.Dialect()
			_, _, drop := d.SearchDDL("rec_companies")
			stmts := append(drop, d.DropSearchColumn("rec_companies"))
			stmts = append(stmts, oldSearch[b]...)
			for _, s := range stmts {
				if _, err := st.Exec(ctx, sqlgen.Stmt{SQL: s}); err != nil {
					t.Fatalf("%s: %v", s, err)
				}
			}
			if _, err := st.Exec(ctx, d.Bind("UPDATE records_schema SET search = ? WHERE resource = ?", "name,domain,description", "companies")); err != nil {
				t.Fatal(err)
			}
			// As the old version left it: its schema's fingerprint, not this one's (a start migrates then).
			if _, err := st.Exec(ctx, d.Bind("UPDATE settings SET value = ? WHERE name = ?", "the old layout's", "schema_fingerprint")); err != nil {
				t.Fatal(err)
			}
			if b == servertest.Postgres {
				// The old layout's miss this rebuild repairs: the search the old code ran for plist-007-ab12.
				var n int64
				if _, err := store.QueryOne(ctx, st, sqlgen.Stmt{SQL: `SELECT count(*) FROM rec_companies WHERE workspace_id = $1 AND _search @@ to_tsquery('simple'::regconfig, 'plist:* & 007:* & ab12:*')`, Args: []any{old.Workspace}}, func(row []any) error {
					n = store.Int(row[0])
					return nil
				}); err != nil {
					t.Fatal(err)
				}
				if n != 0 {
					t.Fatalf("the old layout finds plist-007-ab12 (%d); the test no longer reproduces the miss", n)
				}
			}

			started := servertest.Start(t, b, servertest.Options{DB: db})
			e := *started
			e.Workspace, e.Key = old.Workspace, old.Key // the old records' workspace
			applied := strings.Join(e.Server.Backend().Migration.Applied, "\n")
			if !strings.Contains(applied, "create search on rec_companies (name,domain,description) for ") {
				t.Errorf("the start did not rebuild the search of companies:\n%s", applied)
			}
			for _, c := range searchCases {
				if h := searchLabels(t, &e, c.q, labels); !slices.Equal(h, c.want) {
					t.Errorf("after the migration, search %q found %v, want %v", c.q, h, c.want)
				}
			}
			var n int64
			if _, err := store.QueryOne(ctx, e.Server.Backend().Store, sqlgen.Stmt{SQL: `SELECT count(*) FROM records_schema WHERE search LIKE 'v2:%'`}, func(row []any) error {
				n = store.Int(row[0])
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			if n == 0 {
				t.Error("no resource records the new search layout")
			}
		})
	}
}

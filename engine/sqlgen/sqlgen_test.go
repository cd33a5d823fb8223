package sqlgen_test

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/workspace-records/records/engine/access"
	"github.com/workspace-records/records/engine/listplan"
	"github.com/workspace-records/records/engine/model"
	"github.com/workspace-records/records/engine/model/modeltest"
	"github.com/workspace-records/records/engine/sqlgen"
)

var update = flag.Bool("update", false, "rewrite the golden files")

func deals(t *testing.T) *model.Resource {
	t.Helper()
	r, _ := modeltest.Shipped(t).Resource("deals")
	return r
}

func render(stmts ...sqlgen.Stmt) string {
	var b strings.Builder
	for _, s := range stmts {
		fmt.Fprintf(&b, "%s\n-- args: %v\n\n", s.SQL, s.Args)
	}
	return b.String()
}

// TestGolden renders the statements of deals for both dialects and compares them with testdata.
func TestGolden(t *testing.T) {
	r := deals(t)
	secret := []byte("0123456789abcdef0123456789abcdef")
	key := sqlgen.Key{Workspace: "ws", ID: "0190a6d4-0000-7000-8000-000000000001"}
	plan := func(p listplan.Params) *listplan.Plan {
		pl, errs := listplan.Build(r, p, listplan.Scope{Workspace: "ws", Secret: secret})
		if len(errs) > 0 {
			t.Fatal(errs)
		}
		return pl
	}
	size := 10
	page := 3
	filtered := plan(listplan.Params{PageSize: &size, Page: &page, Sort: "amount", Order: "asc", Join: "or", Search: "acme renewal",
		Filters: []any{
			map[string]any{"field": "status", "op": "in", "value": []any{"open", "won"}},
			map[string]any{"field": "name", "op": "contains", "value": "50%_off"},
			map[string]any{"field": "close_date", "op": "is_empty"},
			map[string]any{"field": "probability", "op": "ne", "value": json.Number("50")},
		}})
	// (status = won OR (amount > 10000 AND (probability >= 50 OR close_date is empty))) AND name starts with "Ac"
	grouped := plan(listplan.Params{Filters: []any{
		map[string]any{"join": "or", "filters": []any{
			map[string]any{"field": "status", "op": "eq", "value": "won"},
			map[string]any{"filters": []any{
				map[string]any{"field": "amount", "op": "gt", "value": json.Number("10000")},
				map[string]any{"join": "or", "filters": []any{
					map[string]any{"field": "probability", "op": "gte", "value": json.Number("50")},
					map[string]any{"field": "close_date", "op": "is_empty"},
				}},
			}},
		}},
		map[string]any{"field": "name", "op": "starts_with", "value": "Ac"},
	}})
	// Paths: across a reference (company.billing_city), an association (contacts.email, stored under
	// contacts' side or deals': see Association.StoredAs) under the caller's owned rule on the target,
	// and a custom field of the target.
	cat := modeltest.Shipped(t)
	companies, _ := cat.Resource("companies")
	contacts, _ := cat.Resource("contacts")
	custom := &model.Field{Key: "cfv:0190a6d4-0000-7000-8000-0000000000cf", Column: "0190a6d4-0000-7000-8000-0000000000cf", Type: model.String, MaxLength: 100, Custom: true}
	paths, errs := listplan.Build(r, listplan.Params{Join: "or", Filters: []any{
		map[string]any{"field": "company.billing_city", "op": "eq", "value": "Berlin"},
		map[string]any{"filters": []any{
			map[string]any{"field": "contacts.email", "op": "ne", "value": "a@x.example"},
			map[string]any{"field": "company." + custom.Key, "op": "starts_with", "value": "Gold"},
		}},
	}}, listplan.Scope{Workspace: "ws", Secret: secret, Targets: map[string]listplan.Target{
		"companies": {Resource: companies, Custom: []*model.Field{custom}},
		"contacts":  {Resource: contacts, Policy: &access.Policy{Resource: contacts, Level: access.Read, Rule: access.Owned, Member: "m1"}},
	}})
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	walk := func(sort, order string, keyVal any) *listplan.Plan {
		c := "start"
		p := plan(listplan.Params{Sort: sort, Order: order, Cursor: &c})
		p.After = &listplan.Position{Key: keyVal, ID: "0190a6d4-0000-7000-8000-000000000009"}
		return p
	}
	for _, d := range []sqlgen.Dialect{sqlgen.New(sqlgen.Postgres), sqlgen.New(sqlgen.SQLite)} {
		t.Run(d.String(), func(t *testing.T) {
			tbl := d.TableOf(r)
			addColumn, create, _ := d.SearchDDL(tbl.Name)
			var b strings.Builder
			b.WriteString("-- create table\n" + d.CreateTable(tbl, r) + "\n\n-- indexes\n")
			for _, ix := range d.Indexes(r) {
				b.WriteString(ix.SQL + "\n")
			}
			b.WriteString("\n-- search\n" + addColumn + "\n" + strings.Join(create, "\n") + "\n\n")
			b.WriteString("-- insert (the search text: the tokens of name, description and next_step)\n" + render(d.Insert(r, key, map[string]any{"name": "Plist-007-AB12 renewal", "description": "Crème brûlée for ann@x.example", "next_step": nil})))
			b.WriteString("-- get\n" + render(d.Get(r, key)))
			ruled := key
			ruled.Policy = &access.Policy{Resource: r, Level: access.Write, Rule: access.Department, Member: "m1", Department: "d1"}
			b.WriteString("-- get under a department record rule\n" + render(d.Get(r, ruled)))
			b.WriteString("-- update\n" + render(d.Update(r, key, map[string]any{"name": "Renewal", "amount": "10.5", sqlgen.SearchColumn: "renewal"})))
			b.WriteString("-- page 3, filters joined with or, search\n" + render(d.List(filtered, "ws")...))
			b.WriteString("-- nested filter groups\n" + render(d.List(grouped, "ws")...))
			b.WriteString("-- count under nested filter groups\n" + render(d.Count(grouped, "ws", 0)))
			b.WriteString("-- filter paths: a reference, an association under an owned rule, a custom field of the target\n" + render(d.List(paths, "ws")...))
			b.WriteString("-- cursor, non-null key (created_at desc)\n" + render(d.List(walk("created_at", "desc", time.Date(2026, 11, 21, 9, 30, 0, 0, time.UTC)), "ws")...))
			b.WriteString("-- cursor, nullable key, value band (amount asc)\n" + render(d.List(walk("amount", "asc", "100"), "ws")...))
			b.WriteString("-- cursor, nullable key, null band (amount desc)\n" + render(d.List(walk("amount", "desc", nil), "ws")...))
			got := b.String()
			path := filepath.Join("testdata", "deals."+d.String()+".sql")
			if *update {
				if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run go test ./engine/sqlgen -update)", err)
			}
			if got != string(want) {
				t.Errorf("%s differs from the golden file; run go test ./engine/sqlgen -update and review the diff\n%s", path, got)
			}
		})
	}
}

func TestQuote(t *testing.T) {
	for in, want := range map[string]string{`name`: `"name"`, `a"b`: `"a""b"`, "a\x00b": `"ab"`} {
		if got := sqlgen.Quote(in); got != want {
			t.Errorf("Quote(%q) = %s, want %s", in, got, want)
		}
	}
	if n := sqlgen.IndexName("rec_lead_disqualification_reasons", "forecast_category_identifier_long"); len(n) > sqlgen.IdentMax {
		t.Errorf("index name %q longer than %d", n, sqlgen.IdentMax)
	}
}

package listplan_test

import (
	"net/url"
	"strings"
	"testing"

	"github.com/workspace-records/records/engine/access"
	"github.com/workspace-records/records/engine/listplan"
	"github.com/workspace-records/records/engine/model/modeltest"
	"github.com/workspace-records/records/engine/sqlgen"
)

var secret = []byte("0123456789abcdef0123456789abcdef")

// FuzzParseFilters feeds arbitrary `filter` parameters through the parser and, when they are accepted,
// through SQL generation for both dialects: nothing may panic, and accepted plans always produce SQL
// whose only caller-controlled parts are placeholders.
func FuzzParseFilters(f *testing.F) {
	for _, s := range []string{
		`[]`,
		`[{"field":"name","op":"eq","value":"Acme"}]`,
		`[{"field":"amount","op":"gte","value":1000.5},{"field":"status","op":"in","value":["open","won"]}]`,
		`[{"field":"close_date","op":"lt","value":"2026-01-01"},{"field":"company_id","op":"is_empty"}]`,
		`[{"field":"name","op":"contains","value":"50%_off\\"}]`,
		`[{"field":"updated_at","op":"gt","value":"2026-01-01T00:00:00Z"}]`,
		`[{"field":"name; DROP TABLE x","op":"eq","value":1}]`,
		`[{"field":"probability","op":"eq","value":1e400}]`,
		`[{"join":"or","filters":[{"field":"status","op":"eq","value":"won"},{"filters":[{"field":"amount","op":"gt","value":10}]}]}]`,
		`[{"filters":[{"filters":[{"filters":[{"filters":[{"filters":[{"field":"name","op":"eq","value":"x"}]}]}]}]}]}]`,
		`[{"join":"or","filters":[]}]`, `[{"join":1,"filters":[{"field":"name"}]}]`, `[{"filters":[[]]}]`,
		`[{"field":"company.billing_city","op":"ne","value":"Berlin"},{"join":"or","filters":[{"field":"contacts.email","op":"eq","value":"a@x.example"}]}]`,
		`[{"field":"companies.name","op":"in","value":["a","b"]},{"field":"company.x.y","op":"eq","value":1},{"field":".","op":"eq"}]`,
		`[{"field":"primary_contact.email","op":"is_empty"},{"field":"pipeline.name","op":"eq","value":"x"}]`,
		`{"field":"name"}`, `[1,2]`, `[{"field":null}]`, `[[]]`, ``,
	} {
		f.Add(s, "and")
	}
	cat := modeltest.Shipped(f)
	deals, _ := cat.Resource("deals")
	companies, _ := cat.Resource("companies")
	contacts, _ := cat.Resource("contacts")
	viewer, _ := cat.Role("viewer")
	// Paths reach companies unrestricted and contacts as the viewer reads them (email masked).
	targets := map[string]listplan.Target{"companies": {Resource: companies}, "contacts": {Resource: contacts, Policy: access.For(viewer, contacts, "m", "")}}
	f.Fuzz(func(t *testing.T, filter, join string) {
		q := url.Values{"filter": {filter}, "join": {join}}
		p, errs := listplan.FromQuery(q)
		if len(errs) > 0 {
			return
		}
		plan, errs := listplan.Build(deals, p, listplan.Scope{Workspace: "w", Secret: secret, Targets: targets})
		if len(errs) > 0 {
			return
		}
		for _, c := range plan.Filter.Conditions() {
			if c.Path != nil && c.Path.Policy != nil && !c.Path.Policy.Readable(c.Field.Key) {
				t.Fatalf("a path to an unreadable field was accepted: %s", c.Key())
			}
		}
		for _, d := range []sqlgen.Dialect{sqlgen.New(sqlgen.Postgres), sqlgen.New(sqlgen.SQLite)} {
			for _, st := range d.List(plan, "w") {
				for _, fl := range plan.Filter.Conditions() {
					if s, ok := fl.Value.(string); ok && len(s) > 3 && strings.Contains(st.SQL, s) {
						t.Fatalf("filter value %q reached SQL text: %s", s, st.SQL)
					}
				}
			}
		}
	})
}

// FuzzDecodeCursor: arbitrary cursors never panic and are refused unless issued for the same query; an
// issued cursor always round-trips.
func FuzzDecodeCursor(f *testing.F) {
	cat := modeltest.Shipped(f)
	deals, _ := cat.Resource("deals")
	plan, errs := listplan.Build(deals, listplan.Params{Sort: "amount", Order: "asc"}, listplan.Scope{Workspace: "w", Secret: secret})
	if len(errs) > 0 {
		f.Fatal(errs)
	}
	good := listplan.EncodeCursor(secret, plan, listplan.Position{Key: "12.5", ID: "0190a6d4-0000-7000-8000-000000000001"})
	null := listplan.EncodeCursor(secret, plan, listplan.Position{ID: "0190a6d4-0000-7000-8000-000000000002"})
	for _, s := range []string{good, null, "start", "", ".", "a.b", good[:len(good)-2], strings.ToUpper(good), "eyJ2IjoxfQ.AAAAAAAAAAAAAAAAAAAAAA"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		pos, err := listplan.DecodeCursor(secret, s, plan)
		if err == nil && s != good && s != null {
			t.Fatalf("accepted a cursor that was never issued: %q -> %+v", s, pos)
		}
		if (s == good || s == null) && err != nil {
			t.Fatalf("refused an issued cursor: %v", err)
		}
	})
}

package sqlgen_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/workspace-records/records/engine/access"
	"github.com/workspace-records/records/engine/listplan"
	"github.com/workspace-records/records/engine/model/modeltest"
	"github.com/workspace-records/records/engine/sqlgen"
)

// TestExpandGolden renders the statements of expansions for both dialects: a reference's targets (with
// and without a record rule) and an association's first links from either side of it.
func TestExpandGolden(t *testing.T) {
	cat := modeltest.Shipped(t)
	companies, _ := cat.Resource("companies")
	deals, _ := cat.Resource("deals")
	ids := []string{"0190a6d4-0000-7000-8000-000000000001", "0190a6d4-0000-7000-8000-000000000002"}
	owned := &access.Policy{Resource: deals, Level: access.Read, Rule: access.Owned, Member: "m1"}
	dept := &access.Policy{Resource: deals, Level: access.Read, Rule: access.Department, Member: "m1", Department: "d1"}
	link := func(from string, assocName string, pol *access.Policy) sqlgen.Link {
		r, _ := cat.Resource(from)
		rel, _ := r.Relation(assocName)
		other, _ := cat.Resource(rel.Target)
		res, name, fromOwner := rel.Assoc.StoredAs(from)
		return sqlgen.Link{Workspace: "ws", Resource: res, Name: name, FromOwner: fromOwner, Other: other, OtherPolicy: pol}
	}
	for _, d := range []sqlgen.Dialect{sqlgen.New(sqlgen.Postgres), sqlgen.New(sqlgen.SQLite)} {
		t.Run(d.String(), func(t *testing.T) {
			var b strings.Builder
			b.WriteString("-- deals expand=company\n" + render(d.Records(companies, "ws", nil, ids)))
			b.WriteString("-- projects expand=deal, under an owned record rule\n" + render(d.Records(deals, "ws", owned, ids)))
			b.WriteString("-- deals expand=contacts (links stored under contacts.deals)\n" + render(d.LinkedRecords(link("deals", "contacts", nil), ids, listplan.ExpandedLinks+1)))
			b.WriteString("-- contacts expand=deals (the owning side), under a department record rule\n" + render(d.LinkedRecords(link("contacts", "deals", dept), ids, listplan.ExpandedLinks+1)))
			got := b.String()
			path := filepath.Join("testdata", "expand."+d.String()+".sql")
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

package listplan_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/workspace-records/records/engine/access"
	"github.com/workspace-records/records/engine/field"
	"github.com/workspace-records/records/engine/listplan"
	"github.com/workspace-records/records/engine/model"
	"github.com/workspace-records/records/engine/model/modeltest"
)

func decode(t *testing.T, s string) []any {
	t.Helper()
	var v []any
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		t.Fatal(err)
	}
	return v
}

func dealsOf(t *testing.T) *model.Resource {
	t.Helper()
	r, _ := modeltest.Shipped(t).Resource("deals")
	return r
}

// nest returns a condition wrapped in depth groups.
func nest(depth int, leaf string) string {
	s := leaf
	for range depth {
		s = `{"join":"or","filters":[` + s + `]}`
	}
	return s
}

// TestFilterGroups: groups parse into the tree, and every refusal names the item by its path.
func TestFilterGroups(t *testing.T) {
	t.Parallel()
	deals := dealsOf(t)
	won := `{"field":"status","op":"eq","value":"won"}`
	ok := map[string]string{
		"flat":          `[` + won + `,{"field":"amount","op":"gt","value":10000}]`,
		"or group":      `[{"join":"or","filters":[` + won + `,{"field":"amount","op":"gt","value":10000}]},{"field":"name","op":"contains","value":"a"}]`,
		"join omitted":  `[{"filters":[` + won + `]}]`,
		"deepest":       `[` + nest(listplan.MaxFilterDepth, won) + `]`,
		"50 conditions": `[` + strings.Repeat(won+`,`, 25) + `{"filters":[` + strings.TrimSuffix(strings.Repeat(won+`,`, 25), ",") + `]}]`,
	}
	for name, s := range ok {
		t.Run(name, func(t *testing.T) {
			plan, errs := listplan.Build(deals, listplan.Params{Filters: decode(t, s)}, listplan.Scope{Workspace: "w", Secret: secret})
			if len(errs) > 0 {
				t.Fatal(errs)
			}
			if plan.Filter.Empty() {
				t.Fatal("no filter")
			}
		})
	}
	bad := map[string]struct {
		filters string
		code    field.Code
		path    string
	}{
		"too deep":             {`[` + nest(listplan.MaxFilterDepth+1, won) + `]`, field.CodeInvalid, "filters[0].filters[0].filters[0].filters[0].filters[0]"},
		"empty group":          {`[` + won + `,{"join":"and","filters":[]}]`, field.CodeRequired, "filters[1].filters"},
		"bad join":             {`[{"join":"xor","filters":[` + won + `]}]`, field.CodeOption, "filters[0].join"},
		"join not a string":    {`[{"join":1,"filters":[` + won + `]}]`, field.CodeOption, "filters[0].join"},
		"filters not an array": {`[{"join":"or","filters":{}}]`, field.CodeType, "filters[0].filters"},
		"group and condition":  {`[{"join":"or","field":"name","filters":[` + won + `]}]`, field.CodeUnknown, "filters[0].field"},
		"nested op":            {`[` + won + `,` + won + `,{"filters":[{"field":"status","op":"gt","value":"won"}]}]`, field.CodeOption, "filters[2].filters[0].op"},
		"nested value":         {`[{"filters":[` + won + `,{"filters":[{"field":"amount","op":"eq","value":"x"}]}]}]`, field.CodeType, "filters[0].filters[1].filters[0].value"},
		"nested key":           {`[{"filters":[{"field":"nope","op":"eq","value":1}]}]`, field.CodeInvalid, "filters[0].filters[0].field"},
		"nested not an object": {`[{"filters":[1]}]`, field.CodeType, "filters[0].filters[0]"},
		"51 conditions":        {`[` + strings.Repeat(won+`,`, 25) + `{"filters":[` + strings.TrimSuffix(strings.Repeat(won+`,`, 26), ",") + `]}]`, field.CodeTooLong, "filters"},
		"too many items":       {`[` + strings.TrimSuffix(strings.Repeat(`{"filters":[{"filters":[`+won+`]}]},`, 40), ",") + `]`, field.CodeTooLong, "filters"},
	}
	for name, c := range bad {
		t.Run(name, func(t *testing.T) {
			_, errs := listplan.Build(deals, listplan.Params{Filters: decode(t, c.filters)}, listplan.Scope{Workspace: "w", Secret: secret})
			if len(errs) == 0 {
				t.Fatal("accepted")
			}
			for _, e := range errs {
				if e.Code == c.code && e.Field == c.path {
					return
				}
			}
			t.Fatalf("want %s at %s, got %v", c.code, c.path, errs)
		})
	}
}

// TestFilterFingerprint: the cursor fingerprint covers the whole tree: editing any nested item, or a
// group's join, refuses the cursor of the other.
func TestFilterFingerprint(t *testing.T) {
	t.Parallel()
	deals := dealsOf(t)
	base := `[{"field":"status","op":"eq","value":"won"},{"join":"or","filters":[{"field":"amount","op":"gt","value":10},{"join":"and","filters":[{"field":"name","op":"contains","value":"a"}]}]}]`
	edits := []string{
		strings.Replace(base, `"value":"a"`, `"value":"b"`, 1),
		strings.Replace(base, `"join":"and"`, `"join":"or"`, 1),
		strings.Replace(base, `"join":"or"`, `"join":"and"`, 1),
		strings.Replace(base, `"op":"gt"`, `"op":"gte"`, 1),
		`[{"field":"status","op":"eq","value":"won"},{"join":"or","filters":[{"field":"amount","op":"gt","value":10},{"field":"name","op":"contains","value":"a"}]}]`,
	}
	plan := func(s string) *listplan.Plan {
		c := "start"
		p, errs := listplan.Build(deals, listplan.Params{Filters: decode(t, s), Cursor: &c}, listplan.Scope{Workspace: "w", Secret: secret})
		if len(errs) > 0 {
			t.Fatal(errs)
		}
		return p
	}
	first := plan(base)
	cursor := listplan.EncodeCursor(secret, first, listplan.Position{ID: fixedID})
	if _, err := listplan.DecodeCursor(secret, cursor, plan(base)); err != nil {
		t.Fatal(err)
	}
	for i, e := range edits {
		if _, err := listplan.DecodeCursor(secret, cursor, plan(e)); err == nil {
			t.Errorf("edit %d: the cursor was accepted for %s", i, e)
		}
	}
}

// TestFilterPaths: a path crosses one relation to a resource in Scope.Targets, onto a filter key the
// caller can read there; every refusal names the item's field.
func TestFilterPaths(t *testing.T) {
	t.Parallel()
	cat := modeltest.Shipped(t)
	deals, _ := cat.Resource("deals")
	companies, _ := cat.Resource("companies")
	contacts, _ := cat.Resource("contacts")
	viewer, ok := cat.Role("viewer")
	if !ok {
		t.Fatal("no viewer role")
	}
	targets := map[string]listplan.Target{
		"companies": {Resource: companies},
		"contacts":  {Resource: contacts, Policy: access.For(viewer, contacts, "m", "")},
	}
	build := func(filters string, targets map[string]listplan.Target) (*listplan.Plan, field.ErrorList) {
		return listplan.Build(deals, listplan.Params{Filters: decode(t, filters)}, listplan.Scope{Workspace: "w", Secret: secret, Targets: targets})
	}
	for _, s := range []string{
		`[{"field":"company.billing_city","op":"eq","value":"Berlin"}]`,
		`[{"filters":[{"field":"contacts.last_name","op":"in","value":["A","B"]},{"field":"companies.name","op":"is_empty"}]}]`,
		`[{"field":"primary_contact.job_title","op":"not_contains","value":"x"}]`,
	} {
		plan, errs := build(s, targets)
		if len(errs) > 0 {
			t.Fatalf("%s: %v", s, errs)
		}
		if c := plan.Filter.Conditions(); c[0].Path == nil {
			t.Fatalf("%s: no path", s)
		}
	}
	for name, c := range map[string]struct{ filters, want string }{
		"unknown relation":   {`[{"field":"nope.name","op":"eq","value":"a"}]`, "is not one of its relations"},
		"two relations":      {`[{"field":"company.parent_company.name","op":"eq","value":"a"}]`, "more than one relation"},
		"unknown target key": {`[{"field":"company.nope","op":"eq","value":"a"}]`, "is not a filter key of companies"},
		"masked target":      {`[{"field":"contacts.email","op":"eq","value":"a@x.example"}]`, "is not readable with your role"},
		"unreachable target": {`[{"field":"pipeline.name","op":"eq","value":"a"}]`, "which this key cannot read"},
		"target op":          {`[{"field":"company.billing_city","op":"gt","value":1}]`, ""},
	} {
		_, errs := build(c.filters, targets)
		if len(errs) != 1 || errs[0].Field != "filters[0].field" && errs[0].Field != "filters[0].op" && errs[0].Field != "filters[0].value" || !strings.Contains(errs[0].Message, c.want) {
			t.Errorf("%s: %v", name, errs)
		}
	}
	// A record rule on a path's target narrows the plan's rows, as one on the resource does.
	owned := map[string]listplan.Target{"companies": {Resource: companies, Policy: &access.Policy{Resource: companies, Level: access.Read, Rule: access.Owned, Member: "m"}}}
	if p, _ := build(`[{"field":"company.name","op":"eq","value":"a"}]`, owned); p == nil || !p.RuleNarrows() {
		t.Error("a path under an owned rule does not narrow the plan")
	}
	if p, _ := build(`[{"field":"company.name","op":"eq","value":"a"}]`, targets); p == nil || p.RuleNarrows() {
		t.Error("a path without a rule narrows the plan")
	}
	// A reference field the caller cannot read opens no path.
	hiding := &model.Role{Name: "hiding", Resources: map[string]string{"*": "read"}, FieldRules: map[string]map[string]string{"deals": {"company_id": "hidden"}}}
	if _, errs := listplan.Build(deals, listplan.Params{Filters: decode(t, `[{"field":"company.name","op":"eq","value":"a"}]`)},
		listplan.Scope{Workspace: "w", Secret: secret, Policy: access.For(hiding, deals, "m", ""), Targets: targets}); len(errs) != 1 || !strings.Contains(errs[0].Message, "is not readable") {
		t.Errorf("a path through a hidden reference: %v", errs)
	}
	// Without targets, no path resolves.
	if _, errs := build(`[{"field":"company.billing_city","op":"eq","value":"Berlin"}]`, nil); len(errs) != 1 {
		t.Errorf("a path without targets: %v", errs)
	}
	// The path is part of the fingerprint: company.name is not name.
	a, _ := build(`[{"field":"company.name","op":"eq","value":"Acme"}]`, targets)
	b, _ := build(`[{"field":"name","op":"eq","value":"Acme"}]`, targets)
	c, _ := build(`[{"field":"companies.name","op":"eq","value":"Acme"}]`, targets)
	if a.Fingerprint == b.Fingerprint || a.Fingerprint == c.Fingerprint {
		t.Error("the fingerprint does not tell paths apart")
	}
	if got := listplan.PathTargets(deals, decode(t, `[{"field":"company.name"},{"filters":[{"field":"companies.x"},{"field":"contacts.y"},{"field":"nope.z"},{"field":"name"}]}]`)); strings.Join(got, ",") != "companies,contacts" {
		t.Errorf("PathTargets: %v", got)
	}
}

package listplan_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/workspace-records/records/engine/access"
	"github.com/workspace-records/records/engine/listplan"
	"github.com/workspace-records/records/engine/model"
	"github.com/workspace-records/records/engine/model/modeltest"
)

func paths(exps []*listplan.Expansion) string {
	var out []string
	var walk func([]*listplan.Expansion)
	walk = func(es []*listplan.Expansion) {
		for _, e := range es {
			out = append(out, fmt.Sprintf("%s→%s%v", e.Path, e.Target.Name, e.Fields))
			walk(e.Children)
		}
	}
	walk(exps)
	return strings.Join(out, " ")
}

func TestExpand(t *testing.T) {
	cat := modeltest.Shipped(t)
	deals, _ := cat.Resource("deals")
	exps, errs := listplan.Expand(cat, deals, []string{"company.contacts", "company", "primary_contact", "company.contacts", "contacts.companies"}, nil)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	if got, want := paths(exps), "company→companies[] company.contacts→contacts[] primary_contact→contacts[] contacts→contacts[] contacts.companies→companies[]"; got != want {
		t.Errorf("got %s, want %s", got, want)
	}
	if n := listplan.Count(exps); n != 5 {
		t.Errorf("count %d", n)
	}
	top, unmatched := listplan.SplitFields([]string{"name", "company", "company.name", "company.contacts.email", "contacts.companies.name", "nope.x", "company.contacts.email.x"}, exps)
	if fmt.Sprint(top) != "[name company]" || fmt.Sprint(unmatched) != "[nope.x company.contacts.email.x]" {
		t.Errorf("top %v unmatched %v", top, unmatched)
	}
	if got, want := paths(exps), "company→companies[name] company.contacts→contacts[email] primary_contact→contacts[] contacts→contacts[] contacts.companies→companies[name]"; got != want {
		t.Errorf("fields: got %s, want %s", got, want)
	}

	for _, c := range []struct {
		paths []string
		want  string
	}{
		{[]string{"compnay"}, `did you mean "company"`},
		{[]string{"company.account_manager.department"}, "3 levels deep"},
		{[]string{"company..x"}, "empty segment"},
		{[]string{""}, "empty segment"},
		{[]string{"name"}, "unknown relation of deals"},
		{[]string{"pipeline", "stage", "company", "primary_contact", "source", "loss_reason", "forecast_category", "contacts", "companies", "products", "competitors"}, "11 expansions"},
		{[]string{"pipeline", "stage", "company", "primary_contact", "source", "loss_reason", "forecast_category", "contacts", "companies", "products.deals"}, "11 expansions"},
	} {
		_, errs := listplan.Expand(cat, deals, c.paths, nil)
		if len(errs) == 0 || !strings.Contains(errs.Error(), c.want) {
			t.Errorf("%v: %v, want %q", c.paths, errs, c.want)
		}
	}

	// A masked reference field refuses its expansion; a hidden one is not shown to exist.
	role := &model.Role{Resources: map[string]string{"*": "read"}, FieldRules: map[string]map[string]string{"deals": {"company_id": "masked", "stage_id": "hidden"}}}
	pol := func(r *model.Resource) *access.Policy { return access.For(role, r, "m", "") }
	if _, errs := listplan.Expand(cat, deals, []string{"company"}, pol); len(errs) == 0 || !strings.Contains(errs.Error(), "company_id is not readable") {
		t.Errorf("masked reference: %v", errs)
	}
	if _, errs := listplan.Expand(cat, deals, []string{"stage"}, pol); len(errs) == 0 || !strings.Contains(errs.Error(), `unknown relation of deals "stage"`) || strings.Contains(errs.Error(), "did you mean") {
		t.Errorf("hidden reference: %v", errs)
	}
	for _, rel := range listplan.Expandable(cat, deals, pol(deals)) {
		if rel.Name == "stage" {
			t.Errorf("a hidden reference is listed as expandable")
		}
	}
}

package model_test

import (
	"testing"

	"github.com/workspace-records/records/definitions"
	"github.com/workspace-records/records/engine/model"
	"github.com/workspace-records/records/engine/spec"
)

// The 44 resource names of the API, exactly as SPEC.md lists them.
var specResources = []string{
	"companies", "contacts", "deals", "leads", "products", "activities", "locations", "testimonials", "competitors", "scope_documents",
	"pipelines", "pipeline_stages", "product_categories", "tax_classes", "loss_reasons", "deal_sources", "deal_role_types", "forecast_categories", "lead_disqualification_reasons", "tags",
	"activity_type_definitions", "activity_outcome_definitions", "activity_templates",
	"entity_members", "entity_departments", "entity_job_titles", "dashboards", "automations", "data_model_records",
	"projects", "project_tasks", "project_deliverables", "project_signals", "project_approvals",
	"project_statuses", "project_task_statuses", "project_task_types", "project_role_types", "project_task_role_types", "deliverable_statuses", "signal_statuses", "signal_types", "signal_severities", "signal_probabilities",
}

func TestShippedDefinitionsCompile(t *testing.T) {
	set, errs := spec.Load(definitions.FS)
	for _, e := range errs {
		t.Errorf("load: %v", e)
	}
	cat, errs := model.Compile(set)
	for _, e := range errs {
		t.Errorf("compile: %v", e)
	}
	if t.Failed() {
		return
	}
	if got := len(cat.Resources); got != len(specResources) {
		t.Errorf("resources: got %d, want %d", got, len(specResources))
	}
	for _, name := range specResources {
		if _, ok := cat.Resource(name); !ok {
			t.Errorf("resource %q is not defined", name)
		}
	}
	all := []model.Operation{model.OpList, model.OpQuery, model.OpGet, model.OpCreate, model.OpUpdate, model.OpArchive, model.OpRestore}
	for _, name := range []string{"competitors", "entity_departments", "data_model_records"} {
		r, _ := cat.Resource(name)
		for _, op := range all {
			if !r.Ops.Has(op) {
				t.Errorf("%s must support %s", name, op)
			}
		}
	}
	for _, name := range []string{"entity_members", "automations", "project_approvals"} {
		r, _ := cat.Resource(name)
		if got := len(r.Ops.List()); got != 3 || !r.ReadOnly() {
			t.Errorf("%s must be read-only with list, query, get; has %v", name, r.Ops.List())
		}
	}
	for _, name := range []string{"automations", "data_model_records"} {
		if r, _ := cat.Resource(name); len(r.Search) == 0 {
			t.Errorf("%s must be full-text searchable", name)
		}
	}
	for _, p := range []string{"pro", "growth", "scale", "enterprise"} {
		if plan, ok := cat.Plan(p); !ok || !plan.APIAccess {
			t.Errorf("plan %s must exist with API access", p)
		}
	}
}

func TestRelations(t *testing.T) {
	set, _ := spec.Load(definitions.FS)
	cat, errs := model.Compile(set)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	deals, _ := cat.Resource("deals")
	company, ok := deals.Relation("company")
	if !ok || company.Target != "companies" || company.Field == nil || company.Field.Key != "company_id" || company.Many() {
		t.Fatalf("deals.company: %+v %v", company, ok)
	}
	contacts, ok := deals.Relation("contacts")
	if !ok || contacts.Target != "contacts" || contacts.Assoc == nil || !contacts.Many() {
		t.Fatalf("deals.contacts: %+v %v", contacts, ok)
	}
	if _, ok := deals.Relation("company_id"); ok {
		t.Fatal("a reference field's key is not its relation name")
	}
	n := 0
	for _, r := range cat.Resources {
		for _, rel := range r.Relations() {
			if _, ok := cat.Resource(rel.Target); !ok {
				t.Errorf("%s.%s leads to unknown %s", r.Name, rel.Name, rel.Target)
			}
			n++
		}
	}
	if n < 50 {
		t.Errorf("only %d relations over the shipped resources", n)
	}
}

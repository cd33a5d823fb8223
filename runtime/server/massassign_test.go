package server_test

import (
	"context"
	"encoding/json"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/workspace-records/records/runtime/auth"
	"github.com/workspace-records/records/runtime/server/servertest"
)

// Roles of a workspace for the exposure tests: clerk writes everything but projects (read-only: a role
// that writes a resource may not mask a field its rules read) and has companies' revenue hidden and phone
// masked, and projects' start date masked and budget hidden; rep starts without field
// rules (tightened during the test).
const massRoles = `version: 1
roles:
  clerk:
    label: Clerk
    description: Writes records but projects (read-only, since their rule reads the start date it masks); sees no revenue or budget, and masked phones and project start dates.
    permissions: [api.access]
    resources: {"*": write, projects: read}
    record_rules: {"*": all}
    field_rules:
      companies: {annual_revenue: hidden, phone: masked}
      projects: {start_date: masked, budget_amount: hidden}
  rep:
    label: Rep
    description: Writes companies.
    permissions: [api.access]
    resources: {"*": write}
    record_rules: {"*": all}
`

const massRolesStricter = `version: 1
roles:
  rep:
    label: Rep
    description: Writes companies; phones masked and websites hidden since.
    permissions: [api.access]
    resources: {"*": write}
    record_rules: {"*": all}
    field_rules:
      companies: {phone: masked, website: hidden}
`

// errorFields returns details.errors as field → code.
func errorFields(res *servertest.Response) map[string]string {
	out := map[string]string{}
	env, _ := res.Body["error"].(map[string]any)
	details, _ := env["details"].(map[string]any)
	items, _ := details["errors"].([]any)
	for _, it := range items {
		m, _ := it.(map[string]any)
		f, _ := m["field"].(string)
		c, _ := m["code"].(string)
		out[f] = c
	}
	return out
}

// massWrites (OWASP API3, research note §8 item 6): bodies cannot set what the caller may not set —
// engine-managed fields, formulas, fields the caller's role masks or hides — under their own names,
// under case variants ("Name", "ID", "Annual_Revenue", which are unknown fields: nothing matches member
// names case-insensitively), or by naming a member twice ({"name":"a","name":"b"}, refused with 400
// before anything reads it: encoding/json would keep the last). Every refusal names the member and
// writes nothing.
func massWrites(t *testing.T, e *servertest.Env) {
	memberKey := e.NewKey(e.NewMember("member@mass.example", "member", ""), auth.KeyOptions{Access: "write"})
	created := e.Do("POST", "/v1/companies", map[string]any{"name": "Mass Co", "annual_revenue": 5000})
	e.Expect(created, 201, "")
	id := created.Data()["id"].(string)
	contact := e.Do("POST", "/v1/contacts", map[string]any{"last_name": "Lee"}).Data()["id"].(string)
	deal := e.Do("POST", "/v1/deals", map[string]any{"name": "Mass deal", "amount": 100, "probability": 50})
	e.Expect(deal, 201, "")
	dealID := deal.Data()["id"].(string)
	state := func() string {
		var sb strings.Builder
		for _, p := range []string{"/v1/companies?include_archived=true&page_size=100&sort=name", "/v1/companies/" + id, "/v1/companies/" + id + "/contacts", "/v1/deals/" + dealID, "/v1/contacts?include_archived=true"} {
			res := e.Do("GET", p, nil)
			sb.Write(res.Raw)
		}
		return sb.String()
	}
	before := state()
	now := time.Now().UTC().Format(time.RFC3339)
	other := "0190a6d4-0000-7000-8000-0000000000aa"

	// Engine-managed fields and formulas: 422 naming the member, on create and on update.
	for _, c := range []struct {
		resource, member string
		value            any
		code             string
	}{
		{"companies", "id", other, "read_only"},
		{"companies", "owner_id", e.Member, "read_only"},
		{"companies", "created_at", now, "read_only"},
		{"companies", "updated_at", now, "read_only"},
		{"companies", "archived", true, "read_only"},
		{"companies", "archived_at", now, "read_only"},
		{"companies", "archive_reason", "x", "read_only"},
		{"companies", "workspace_id", other, "unknown_field"},
		{"companies", "tenant_id", other, "unknown_field"},
		{"companies", "model_id", other, "unknown_field"},
		{"companies", "secret_hash", "x", "unknown_field"},
		{"deals", "weighted_amount", 1, "read_only"},
	} {
		body := map[string]any{"name": "Injected", c.member: c.value}
		path := "/v1/" + c.resource
		for _, w := range []struct{ method, path string }{{"POST", path}, {"PATCH", path + "/" + map[string]string{"companies": id, "deals": dealID}[c.resource]}} {
			res := e.Do(w.method, w.path, body, "Idempotency-Key", "mass-"+klHex(8))
			e.Expect(res, 422, "validation_failed")
			if got := errorFields(res); got[c.member] != c.code {
				t.Errorf("%s %s with %s: details %v, want %s %s", w.method, w.path, c.member, got, c.member, c.code)
			}
		}
	}

	// Case variants are other members: unknown, never matched to a field.
	for _, variant := range []string{"Name", "NAME", "nAme", "ID", "Id", "Owner_Id", "OWNER_ID", "Workspace_Id", "Archived", "Created_At", "Custom_Fields", "CF__tier", "Annual_Revenue", "ANNUAL_REVENUE", "ｎame", "name ", " name", "name\u200b"} {
		res := e.Do("POST", "/v1/companies", map[string]any{"name": "Variant", variant: "x"})
		e.Expect(res, 422, "validation_failed")
		if got := errorFields(res); got[variant] != "unknown_field" || len(got) != 1 {
			t.Errorf("member %q: details %v, want only it as unknown_field", variant, got)
		}
		res = e.DoKey(memberKey, "PATCH", "/v1/companies/"+id, map[string]any{variant: 1})
		e.Expect(res, 422, "validation_failed")
	}

	// A member named twice, anywhere: 400, naming it, before anything reads the body.
	filterDup := url.QueryEscape(`[{"field":"name","op":"eq","value":"Mass Co","field":"annual_revenue"}]`)
	for _, c := range []struct {
		key, method, path, body, field string
	}{
		{e.Key, "POST", "/v1/companies", `{"name":"a","name":"b"}`, "name"},
		{e.Key, "POST", "/v1/companies", `{"name":"a","name":"a"}`, "name"},
		{e.Key, "POST", "/v1/companies", `{"name":"a","n\u0061me":"b"}`, "name"},
		{e.Key, "POST", "/v1/companies", `{"name":"a","custom_fields":{"tier":"x","tier":"y"}}`, "custom_fields.tier"},
		{e.Key, "PATCH", "/v1/companies/" + id, `{"name":"a","name":"b"}`, "name"},
		{e.Key, "PATCH", "/v1/companies/" + id, `{"annual_revenue":1,"annual_revenue":2}`, "annual_revenue"},
		{memberKey, "PATCH", "/v1/companies/" + id, `{"annual_revenue":1,"annual_revenue":2}`, "annual_revenue"},
		{memberKey, "POST", "/v1/companies", `{"name":"a","annual_revenue":null,"annual_revenue":7}`, "annual_revenue"},
		{e.Key, "DELETE", "/v1/companies/" + id, `{"reason":"a","reason":"b"}`, "reason"},
		{e.Key, "POST", "/v1/companies/query", `{"filters":[{"field":"name","op":"eq","value":"a","field":"annual_revenue"}]}`, "filters[0].field"},
		{e.Key, "POST", "/v1/companies/query", `{"page_size":1,"page_size":100}`, "page_size"},
		{e.Key, "PUT", "/v1/companies/" + id + "/contacts/" + contact, `{"role":"a","role":"b"}`, "role"},
	} {
		res := e.DoKey(c.key, c.method, c.path, []byte(c.body), "Idempotency-Key", "dup-"+klHex(8))
		e.Expect(res, 400, "invalid_request")
		if got := errorFields(res); got[c.field] != "duplicate" {
			t.Errorf("%s %s %s: details %v, want %s duplicate", c.method, c.path, c.body, got, c.field)
		}
		if !strings.Contains(string(res.Raw), c.field) {
			t.Errorf("%s %s: the message does not name %s: %s", c.method, c.path, c.field, res.Raw)
		}
	}
	res := e.Do("GET", "/v1/companies?filter="+filterDup, nil)
	e.Expect(res, 400, "invalid_request")
	if got := errorFields(res); got["filter"] != "duplicate" {
		t.Errorf("filter parameter naming field twice: %v", got)
	}
	res = e.Do("POST", "/v1/companies/query", []byte(`{"filters":[{"field":"name","Field":"annual_revenue","op":"eq","value":"a"}]}`))
	e.Expect(res, 400, "invalid_request") // a case variant in a filter item is an unknown member

	// The member role may write companies but not their masked annual_revenue, in any form.
	for _, body := range []map[string]any{
		{"name": "x", "annual_revenue": 5},
		{"name": "x", "annual_revenue": nil},
		{"name": "x", "cf__annual_revenue": 5},
		{"name": "x", "custom_fields": map[string]any{"annual_revenue": 5}},
	} {
		for _, w := range []struct{ method, path string }{{"POST", "/v1/companies"}, {"PATCH", "/v1/companies/" + id}} {
			res := e.DoKey(memberKey, w.method, w.path, body)
			e.Expect(res, 422, "validation_failed")
			// Not in the request id either: a random one holds "5000" once in some 2,000 answers.
			if strings.Contains(strings.ReplaceAll(string(res.Raw), res.Header.Get("X-Request-Id"), ""), "5000") {
				t.Errorf("refusal shows the stored revenue: %s", res.Raw)
			}
		}
	}
	if after := state(); after != before {
		t.Errorf("refused writes changed data:\nbefore %s\nafter  %s", before, after)
	}

	// What the member may write is written, and what comes back is masked.
	ok := e.DoKey(memberKey, "PATCH", "/v1/companies/"+id, map[string]any{"name": "Mass Co renamed"})
	e.Expect(ok, 200, "")
	if v, present := ok.Data()["annual_revenue"]; !present || v != nil {
		t.Errorf("member's update response shows annual_revenue %v", v)
	}
}

// maskedExposure extends TestMasksMatrix (the viewer role over every endpoint) to the places a masked
// or hidden value could still come out: the responses to a restricted caller's own writes,
// idempotent replays after the caller's rules became stricter, formulas computed from a hidden input,
// refusals (sort, filter, search, validation) and what a rules plugin says back: a masked value it
// read, or the title of a record the caller's record rule hides, must not reach the caller.
func maskedExposure(t *testing.T, e *servertest.Env, b servertest.Backend) {
	ctx := context.Background()
	if _, err := e.Server.Backend().Members.PutRoles(ctx, e.Workspace, "roles.yaml", []byte(massRoles), true); err != nil {
		t.Fatal(err)
	}
	clerk := e.NewKey(e.NewMember("clerk@mass.example", "clerk", ""), auth.KeyOptions{Access: "write"})
	rep := e.NewKey(e.NewMember("rep@mass.example", "rep", ""), auth.KeyOptions{Access: "write"})
	viewer := e.NewKey(e.NewMember("viewer@mass.example", "viewer", ""), auth.KeyOptions{Access: "read"})
	secrets := []string{"987654.321", "987654", "999-555-7731", "5557731", "2031-07-19", "31337", "Secret layoffs plan"}
	var seen []*servertest.Response
	do := func(key, method, path string, body any, header ...string) *servertest.Response {
		res := e.DoKey(key, method, path, body, header...)
		seen = append(seen, res)
		return res
	}

	// clerk: annual_revenue hidden, phone masked.
	co := e.Do("POST", "/v1/companies", map[string]any{"name": "Hidden Co", "annual_revenue": json.Number("987654.321"), "phone": "+1 999-555-7731", "domain": "hidden.example"})
	e.Expect(co, 201, "")
	coID := co.Data()["id"].(string)
	check := func(what string, rec map[string]any) {
		t.Helper()
		if _, present := rec["annual_revenue"]; present {
			t.Errorf("%s: hidden annual_revenue present", what)
		}
		if p, _ := rec["phone"].(string); !strings.HasSuffix(p, "•••") && (rec["id"] == coID || rec["phone"] != nil) {
			t.Errorf("%s: phone %q is not masked", what, rec["phone"])
		}
	}
	check("get", do(clerk, "GET", "/v1/companies/"+coID, nil).Data())
	check("get fields=", do(clerk, "GET", "/v1/companies/"+coID+"?fields=annual_revenue,phone,name", nil).Data())
	upd := do(clerk, "PATCH", "/v1/companies/"+coID, map[string]any{"name": "Hidden Co 2"}, "Idempotency-Key", "clerk-1")
	e.Expect(upd, 200, "")
	check("update response", upd.Data())
	replay := do(clerk, "PATCH", "/v1/companies/"+coID, map[string]any{"name": "Hidden Co 2"}, "Idempotency-Key", "clerk-1")
	e.Expect(replay, 200, "")
	check("replay", replay.Data())
	mine := do(clerk, "POST", "/v1/companies", map[string]any{"name": "Clerk Co"})
	e.Expect(mine, 201, "")
	check("create response", mine.Data())
	for _, l := range []*servertest.Response{
		do(clerk, "GET", "/v1/companies?fields=annual_revenue,phone,name", nil),
		do(clerk, "POST", "/v1/companies/query", map[string]any{"fields": []string{"annual_revenue", "phone"}}),
		do(clerk, "GET", "/v1/companies?search=hidden", nil),
	} {
		e.Expect(l, 200, "")
		for _, rec := range l.List() {
			if rec["id"] == coID {
				check("list", rec)
			}
		}
	}
	for _, c := range []struct{ path, code string }{
		{"/v1/companies?sort=annual_revenue", "invalid_request"},
		{"/v1/companies?filter=" + url.QueryEscape(`[{"field":"annual_revenue","op":"gt","value":987654}]`), "invalid_request"},
		{"/v1/companies?filter=" + url.QueryEscape(`[{"field":"annual_revenue","op":"is_empty"}]`), "invalid_request"},
		{"/v1/companies?filter=" + url.QueryEscape(`[{"field":"annual_revenue","op":"eq","value":"987654.321"}]`), "invalid_request"},
	} {
		e.Expect(do(clerk, "GET", c.path, nil), 400, c.code)
	}
	// The refusal is the same whether the value guessed is right or wrong: no oracle.
	refusal := func(value any) string {
		filter, _ := json.Marshal([]any{map[string]any{"field": "annual_revenue", "op": "eq", "value": value}})
		res := do(clerk, "GET", "/v1/companies?filter="+url.QueryEscape(string(filter)), nil)
		env, _ := res.Body["error"].(map[string]any)
		data, _ := json.Marshal([]any{res.Status, env["code"], env["message"], env["details"]})
		return string(data)
	}
	if right, wrong := refusal(json.Number("987654.321")), refusal(json.Number("1")); right != wrong {
		t.Errorf("filtering on a hidden field answers differently for the right value:\n%s\n%s", right, wrong)
	}
	for _, body := range []map[string]any{{"annual_revenue": 1}, {"phone": "+1 000"}, {"phone": nil}, {"employee_count": "lots"}} {
		e.Expect(do(clerk, "PATCH", "/v1/companies/"+coID, body), 422, "validation_failed")
	}

	// A formula over a hidden input is hidden too (viewer: deals.amount hidden → weighted_amount).
	deal := e.Do("POST", "/v1/deals", map[string]any{"name": "Weighted", "amount": 62674, "probability": 50})
	e.Expect(deal, 201, "")
	if w := deal.Data()["weighted_amount"]; w == nil || !strings.Contains(rawText(w), "31337") {
		t.Fatalf("weighted_amount %v", w)
	}
	dealID := deal.Data()["id"].(string)
	if d := do(viewer, "GET", "/v1/deals/"+dealID+"?fields=weighted_amount,amount,name", nil).Data(); d["weighted_amount"] != nil || d["amount"] != nil {
		t.Errorf("viewer sees %v", d)
	}
	e.Expect(do(viewer, "GET", "/v1/deals?sort=weighted_amount", nil), 400, "invalid_request")
	e.Expect(do(viewer, "GET", "/v1/deals?filter="+url.QueryEscape(`[{"field":"weighted_amount","op":"gt","value":31336}]`), nil), 400, "invalid_request")

	// Replays apply the caller's current rules: rep's response, stored unmasked, comes back masked
	// once rep's role masks phone and hides website.
	first := do(rep, "POST", "/v1/companies", map[string]any{"name": "Rep Co", "phone": "+1 999-555-7731", "website": "https://31337.example"}, "Idempotency-Key", "rep-1")
	e.Expect(first, 201, "")
	if first.Data()["phone"] != "+1 999-555-7731" {
		t.Fatalf("rep's own phone: %v", first.Data()["phone"])
	}
	seen = seen[:len(seen)-1] // rep could read it then
	if _, err := e.Server.Backend().Members.PutRoles(ctx, e.Workspace, "roles.yaml", []byte(massRolesStricter), false); err != nil {
		t.Fatal(err)
	}
	// The server's own Directory forgets its cached principals before PutRoles returns: no wait.
	again := do(rep, "POST", "/v1/companies", map[string]any{"name": "Rep Co", "phone": "+1 999-555-7731", "website": "https://31337.example"}, "Idempotency-Key", "rep-1")
	e.Expect(again, 201, "")
	if again.Header.Get("Idempotent-Replayed") != "true" || again.Data()["id"] != first.Data()["id"] {
		t.Errorf("not a replay: %s", again.Raw)
	}
	if _, present := again.Data()["website"]; present || again.Data()["phone"] == first.Data()["phone"] {
		t.Errorf("the replay shows what rep may no longer read: %s", again.Raw)
	}

	// What the task-rules plugin says back: a masked project start date …
	project := e.Do("POST", "/v1/projects", map[string]any{"name": "Masked start", "start_date": "2031-07-19", "budget_amount": 31337})
	e.Expect(project, 201, "")
	refused := do(clerk, "POST", "/v1/project_tasks", map[string]any{"title": "Too early", "project_id": project.Data()["id"], "start_date": "2031-07-01"})
	e.Expect(refused, 422, "validation_failed")
	if errorFields(refused)["start_date"] != "out_of_range" {
		t.Errorf("the rule did not refuse the date: %s", refused.Raw)
	}
	// … the same refusal to an admin, who may read the date, keeps it.
	adminRefused := e.Do("POST", "/v1/project_tasks", map[string]any{"title": "Too early", "project_id": project.Data()["id"], "start_date": "2031-07-01"})
	e.Expect(adminRefused, 422, "validation_failed")
	if !strings.Contains(string(adminRefused.Raw), "2031-07-19") {
		t.Errorf("the admin's refusal lost the date it may read: %s", adminRefused.Raw)
	}

	// … and the title of a subtask the caller's record rule hides (member: department rule).
	dept := e.Do("POST", "/v1/entity_departments", map[string]any{"name": "Delivery"}).Data()["id"].(string)
	member := e.NewKey(e.NewMember("dm@mass.example", "member", dept), auth.KeyOptions{Access: "write"})
	closed := e.Do("POST", "/v1/project_task_statuses", map[string]any{"name": "Done", "is_closed": true})
	e.Expect(closed, 201, "")
	mp := do(member, "POST", "/v1/projects", map[string]any{"name": "Member project"})
	e.Expect(mp, 201, "")
	parent := do(member, "POST", "/v1/project_tasks", map[string]any{"title": "Parent", "project_id": mp.Data()["id"]})
	e.Expect(parent, 201, "")
	sub := e.Do("POST", "/v1/project_tasks", map[string]any{"title": "Secret layoffs plan", "project_id": mp.Data()["id"], "parent_task_id": parent.Data()["id"]})
	e.Expect(sub, 201, "")
	e.Expect(do(member, "GET", "/v1/project_tasks/"+sub.Data()["id"].(string), nil), 404, "not_found")
	closing := do(member, "PATCH", "/v1/project_tasks/"+parent.Data()["id"].(string), map[string]any{"status_id": closed.Data()["id"]})
	e.Expect(closing, 422, "validation_failed")
	if errorFields(closing)["status_id"] != "invalid" {
		t.Errorf("the rule did not refuse closing: %s", closing.Raw)
	}

	for _, res := range seen {
		for _, s := range secrets {
			if strings.Contains(string(res.Raw), s) {
				t.Errorf("%q shown to a caller who may not read it: %s", s, res.Raw)
			}
		}
	}
	t.Logf("%d responses to restricted callers scanned for %d withheld values", len(seen), len(secrets))
}

// TestMassAssignment runs massWrites ("writes") and then maskedExposure ("exposure") on one server per
// backend.
func TestMassAssignment(t *testing.T) {
	t.Parallel()
	for _, b := range servertest.Backends {
		t.Run(string(b), func(t *testing.T) {
			t.Parallel()
			e := servertest.Start(t, b, servertest.Options{})
			t.Run("writes", func(t *testing.T) { e.T = t; massWrites(t, e) })
			t.Run("exposure", func(t *testing.T) { e.T = t; maskedExposure(t, e, b) })
			e.T = t
		})
	}
}

package server_test

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/workspace-records/records/engine/model"
	"github.com/workspace-records/records/runtime/customfields"
	"github.com/workspace-records/records/runtime/server/servertest"
)

// keyReferenceMatrix is K9's rule for references (the key restriction tests, TestKeys): a reference, like
// a link, needs the key to be allowed both sides. For every writable resource R, a write key allowed R
// alone sets every declared reference field of R that points outside R (update and create), a custom
// reference field points outside its resource (in both body forms), and a key allowed both sides of an
// association sets its reference attributes that point elsewhere. Each is refused 422 not_permitted
// naming the field as sent, with the same answer whether the id exists, does not exist, or is null, so
// that the refusal tells nothing of the other resource's records; nothing is written. References inside
// the allowlist still work (an existing record is taken, a missing one is reference_not_found).
func keyReferenceMatrix(t *testing.T, e *servertest.Env, newKey func(resources ...string) string, do func(t *testing.T, key, method, path string, body any) *servertest.Response) {
	t.Helper()
	be := e.Server.Backend()
	cat := be.Current().Catalog
	ids := seedAll(t, e)
	if _, err := be.Current().Custom.Create(context.Background(), e.Workspace, customfields.Def{Resource: "companies", Key: "main_contact", Type: "reference", Target: "contacts"}); err != nil {
		t.Fatal(err)
	}
	const missing = "0190a6d4-0000-7000-8000-00000000beef"
	var writable []*model.Resource
	for _, r := range cat.Resources {
		if r.Ops.Has(model.OpUpdate) && !r.ModelScoped {
			writable = append(writable, r)
		}
	}
	snapshot := func() string {
		var sb strings.Builder
		for _, r := range writable {
			sb.Write(e.Do("GET", "/v1/"+r.Name+"?include_archived=true&page_size=100&sort=created_at&order=asc", nil).Raw)
		}
		return sb.String()
	}
	before := snapshot()

	// answer is a refusal without its request id, for comparing answers.
	answer := func(res *servertest.Response) string {
		env, _ := res.Body["error"].(map[string]any)
		delete(env, "request_id")
		data, _ := json.Marshal(res.Body)
		return res.Header.Get("Content-Type") + " " + string(data)
	}
	checked := 0
	// sameRefusal sends body with each value at name (existing id, missing id, null) and wants one and
	// the same 422 not_permitted naming name.
	sameRefusal := func(t *testing.T, key, method, path, name string, body func(v any) map[string]any, existing string) {
		t.Helper()
		checked++
		var first string
		for i, v := range []any{existing, missing, nil} {
			res := do(t, key, method, path, body(v))
			if res.Status != 422 || !strings.Contains(string(res.Raw), `{"code":"not_permitted","field":"`+name+`"`) {
				t.Errorf("%s %s with %s = %v: %d %s; want 422 not_permitted naming %s", method, path, name, v, res.Status, res.Raw, name)
			}
			if i == 0 {
				first = answer(res)
			} else if got := answer(res); got != first {
				t.Errorf("%s %s: %s = %v is answered differently from an existing record:\n%s\n%s", method, path, name, v, first, got)
			}
		}
	}

	var inside [][3]string // resource, field, record: references within the allowlist, set at the end
	for _, r := range writable {
		key := newKey(r.Name)
		own := ids[r.Name][0]
		for _, f := range r.Declared() {
			if f.Type != model.Reference || !f.Writable() {
				continue
			}
			if f.Target == r.Name {
				inside = append(inside, [3]string{r.Name, f.Key, own})
				continue
			}
			one := func(v any) map[string]any { return map[string]any{f.Key: v} }
			sameRefusal(t, key, "PATCH", "/v1/"+r.Name+"/"+own, f.Key, one, ids[f.Target][0])
			sameRefusal(t, key, "POST", "/v1/"+r.Name, f.Key, one, ids[f.Target][0])
		}
		for _, as := range r.Associations {
			both := newKey(r.Name, as.Target)
			path := "/v1/" + r.Name + "/" + own + "/" + as.Name + "/" + ids[as.Target][0]
			for _, f := range as.Attrs.Declared() {
				if f.Type != model.Reference || !f.Writable() || f.Target == r.Name || f.Target == as.Target {
					continue
				}
				sameRefusal(t, both, "PUT", path, f.Key, func(v any) map[string]any { return map[string]any{f.Key: v} }, ids[f.Target][0])
			}
		}
	}
	companies := newKey("companies")
	company := ids["companies"][0]
	sameRefusal(t, companies, "PATCH", "/v1/companies/"+company, "cf__main_contact", func(v any) map[string]any { return map[string]any{"cf__main_contact": v} }, ids["contacts"][0])
	sameRefusal(t, companies, "PATCH", "/v1/companies/"+company, "custom_fields.main_contact", func(v any) map[string]any {
		return map[string]any{"custom_fields": map[string]any{"main_contact": v}}
	}, ids["contacts"][0])
	t.Logf("%d writes of reference fields (declared, custom, association attributes) refused alike for existing, missing and null ids; %d inside the allowlist", checked, len(inside))
	if checked < 40 {
		t.Errorf("only %d reference fields checked", checked)
	}
	if after := snapshot(); after != before {
		t.Errorf("refused writes changed data")
	}
	// The catalog says the same: for the companies key, the fields pointing elsewhere and every
	// association (none of whose targets it may use) are not writable; the rest of companies is.
	w := writableEntries(do(t, companies, "GET", "/v1/resources/companies", nil).Data())
	if !slices.Contains(w, "name") || !slices.Contains(w, "parent_company_id") {
		t.Errorf("the companies key's catalog does not show its own fields writable: %v", w)
	}
	for _, name := range w {
		if name == "account_manager_id" || name == "custom_fields.main_contact" || strings.HasPrefix(name, "associations.") {
			t.Errorf("the companies key's catalog shows %s writable", name)
		}
	}
	// A key allowed both sides of deals.contacts may write the link and its attributes that point
	// inside (none here: role_type_id points at deal_role_types, which it may not use).
	w = writableEntries(do(t, newKey("deals", "contacts"), "GET", "/v1/resources/deals", nil).Data())
	if !slices.Contains(w, "associations.contacts") || slices.Contains(w, "associations.contacts.role_type_id") || slices.Contains(w, "associations.companies") {
		t.Errorf("the deals+contacts key's catalog shows writable %v", w)
	}
	w = writableEntries(do(t, newKey("deals", "contacts", "deal_role_types"), "GET", "/v1/resources/deals", nil).Data())
	if !slices.Contains(w, "associations.contacts.role_type_id") {
		t.Errorf("the deals+contacts+deal_role_types key's catalog does not show role_type_id writable: %v", w)
	}

	// Inside the allowlist references work as ever.
	if len(inside) == 0 {
		t.Fatal("no reference field points into its own resource")
	}
	for _, in := range inside {
		key := newKey(in[0])
		e.Expect(do(t, key, "PATCH", "/v1/"+in[0]+"/"+in[2], map[string]any{in[1]: ids[in[0]][1]}), 200, "")
		res := do(t, key, "PATCH", "/v1/"+in[0]+"/"+in[2], map[string]any{in[1]: missing})
		if res.Status != 422 || !strings.Contains(string(res.Raw), `{"code":"reference_not_found","field":"`+in[1]+`"`) {
			t.Errorf("%s.%s = a missing record: %d %s", in[0], in[1], res.Status, res.Raw)
		}
	}
}

package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"sort"
	"strings"
	"testing"

	"github.com/workspace-records/records/engine/model"
	"github.com/workspace-records/records/runtime/auth"
	"github.com/workspace-records/records/runtime/customfields"
	"github.com/workspace-records/records/runtime/records"
	"github.com/workspace-records/records/runtime/server/servertest"
)

// secretValue returns a distinctive valid value for f, whose text must never reach a restricted caller.
func secretValue(f *model.Field) any {
	switch f.Type {
	case model.Email:
		return "zq.secret.person@hidden-domain.example"
	case model.Phone:
		return "+1 999-555-7731"
	case model.Decimal:
		return json.Number("987654.321")
	case model.Integer:
		return json.Number("98765")
	case model.Date:
		return "2031-07-19"
	case model.DateTime:
		return "2031-07-19T11:22:33Z"
	case model.URL:
		return "https://zq-secret.example/x"
	}
	if len(f.Options) > 0 {
		return f.Options[len(f.Options)-1]
	}
	return "zqsecretvalue"
}

func rawText(v any) string {
	switch x := v.(type) {
	case json.Number:
		return x.String()
	case string:
		return x
	}
	data, _ := json.Marshal(v)
	return string(data)
}

// For every field the viewer role masks or hides, no response of any endpoint shows its value.
func TestMasksMatrix(t *testing.T) {
	t.Parallel()
	for _, b := range servertest.Backends {
		t.Run(string(b), func(t *testing.T) {
			t.Parallel()
			e := servertest.Start(t, b, servertest.Options{})
			cat := e.Server.Backend().Catalog
			viewer, _ := cat.Role("viewer")
			vkey := e.NewKey(e.NewMember("viewer@x.example", "viewer", ""), auth.KeyOptions{Access: "read"})
			names := make([]string, 0, len(viewer.FieldRules))
			for n := range viewer.FieldRules {
				names = append(names, n)
			}
			sort.Strings(names)
			for _, name := range names {
				rules := viewer.FieldRules[name]
				r, _ := cat.Resource(name)
				t.Run(name, func(t *testing.T) {
					body := map[string]any{}
					for _, f := range r.Declared() {
						if f.Required && f.Type != model.Reference {
							body[f.Key] = secretValue(f)
							if f.Type == model.String && len(f.Options) == 0 {
								body[f.Key] = "Plain " + f.Key
							}
						}
					}
					for key := range rules {
						f, _ := r.Field(key)
						body[key] = secretValue(f)
					}
					var id string
					if r.ReadOnly() {
						if _, err := e.Server.Backend().Records.Import(context.Background(), adminActor(e), r, "", []map[string]any{body}); err != nil {
							t.Fatal(err)
						}
						id = e.Do("GET", "/v1/"+name+"?page_size=1", nil).List()[0]["id"].(string)
					} else {
						created := e.Do("POST", "/v1/"+name, body)
						e.Expect(created, 201, "")
						id = created.Data()["id"].(string)
					}
					var raw []string
					for key := range rules {
						raw = append(raw, rawText(body[key]))
					}
					check := func(what string, res *servertest.Response) {
						t.Helper()
						for _, s := range raw {
							if strings.Contains(string(res.Raw), s) {
								t.Errorf("%s leaks %q: %s", what, s, res.Raw)
							}
						}
					}
					keys := make([]string, 0, len(rules))
					for k := range rules {
						keys = append(keys, k)
					}
					sort.Strings(keys)
					fieldsParam := strings.Join(append(keys, "id"), ",")
					got := e.DoKey(vkey, "GET", "/v1/"+name+"/"+id, nil)
					e.Expect(got, 200, "")
					check("get", got)
					for key, rule := range rules {
						v, present := got.Data()[key]
						if rule == "hidden" && present {
							t.Errorf("hidden %s present: %v", key, v)
						}
						if rule == "masked" && !present {
							t.Errorf("masked %s absent", key)
						}
					}
					check("get fields=", e.DoKey(vkey, "GET", "/v1/"+name+"/"+id+"?fields="+fieldsParam, nil))
					check("list", e.DoKey(vkey, "GET", "/v1/"+name+"?fields="+fieldsParam, nil))
					check("query", e.DoKey(vkey, "POST", "/v1/"+name+"/query", map[string]any{"fields": keys}))
					// Names the answer lacks are reported, a hidden field exactly as a name that does not
					// exist; a masked one is carried (masked) and not reported.
					// (In the query string names are split at commas; in a query body a name may hold one.)
					asked := append(append([]string{"zz_not_a_field"}, keys...), "id")
					var hidden []string
					for _, k := range keys {
						if rules[k] == "hidden" {
							hidden = append(hidden, k)
						}
					}
					param := url.QueryEscape(strings.Join(append(asked, "a bé"), ","))
					for _, c := range []struct {
						what string
						res  *servertest.Response
						want []string
					}{
						{"get", e.DoKey(vkey, "GET", "/v1/"+name+"/"+id+"?fields="+param, nil), append(append([]string{"zz_not_a_field"}, hidden...), "a%20b%C3%A9")},
						{"list", e.DoKey(vkey, "GET", "/v1/"+name+"?fields="+param, nil), append(append([]string{"zz_not_a_field"}, hidden...), "a%20b%C3%A9")},
						{"query", e.DoKey(vkey, "POST", "/v1/"+name+"/query", map[string]any{"fields": append(asked, "a b,c")}), append(append([]string{"zz_not_a_field"}, hidden...), "a%20b%2Cc")},
						{"admin", e.Do("POST", "/v1/"+name+"/query", map[string]any{"fields": append(asked, "a b,c")}), []string{"zz_not_a_field", "a%20b%2Cc"}},
					} {
						e.Expect(c.res, 200, "")
						if got := c.res.Header.Get("Records-Unknown-Fields"); got != strings.Join(c.want, ",") {
							t.Errorf("%s with fields %v: Records-Unknown-Fields %q, want %q", c.what, asked, got, strings.Join(c.want, ","))
						}
					}
					if res := e.DoKey(vkey, "GET", "/v1/"+name+"/"+id+"?fields=id", nil); res.Header.Values("Records-Unknown-Fields") != nil {
						t.Errorf("Records-Unknown-Fields sent when every name was found: %q", res.Header.Get("Records-Unknown-Fields"))
					}
					check("catalog", e.DoKey(vkey, "GET", "/v1/resources/"+name, nil))
					for _, key := range keys {
						f, _ := r.Field(key)
						if f.Filterable {
							filter, _ := json.Marshal([]any{map[string]any{"field": key, "op": "eq", "value": body[key]}})
							res := e.DoKey(vkey, "GET", "/v1/"+name+"?filter="+url.QueryEscape(string(filter)), nil)
							e.Expect(res, 400, "invalid_request")
							check("filter refusal", res)
						}
						if f.Sortable {
							res := e.DoKey(vkey, "GET", "/v1/"+name+"?sort="+key, nil)
							e.Expect(res, 400, "invalid_request")
						}
					}
					if len(r.Search) > 0 {
						res := e.DoKey(vkey, "GET", "/v1/"+name+"?search=zqsecretvalue", nil)
						check("search", res)
						if res.Status == 200 && len(res.List()) > 0 {
							t.Errorf("search over a restricted field found records")
						}
					}
					// A cursor walk never carries a restricted value.
					page := e.DoKey(vkey, "GET", "/v1/"+name+"?page_size=1&cursor=start&include_archived=true", nil)
					check("cursor page", page)
					if c, _ := page.Body["meta"].(map[string]any)["next_cursor"].(string); c != "" {
						check("cursor text", &servertest.Response{Raw: []byte(c)})
					}
				})
			}
			// The viewer role writes nothing: no catalog shows it a writable field, custom field,
			// association or association attribute.
			if _, err := e.Server.Backend().Custom.Create(context.Background(), e.Workspace, customfields.Def{Resource: "deals", Key: "tier", Type: "text"}); err != nil {
				t.Fatal(err)
			}
			for _, r := range cat.Resources {
				if r.ModelScoped || viewer.Resources[r.Name] == "none" {
					continue // a data model's catalog is TestKeys' K9
				}
				doc := e.DoKey(vkey, "GET", "/v1/resources/"+r.Name, nil)
				e.Expect(doc, 200, "")
				if w := writableEntries(doc.Data()); len(w) > 0 {
					t.Errorf("the viewer's catalog of %s shows writable %v", r.Name, w)
				}
			}
		})
	}
}

// writableEntries lists the entries of a field catalog that say writable: true — fields, custom fields,
// associations and their attributes — by path.
func writableEntries(doc map[string]any) []string {
	var out []string
	list := func(prefix string, items any) {
		l, _ := items.([]any)
		for _, it := range l {
			m, _ := it.(map[string]any)
			name, _ := m["key"].(string)
			if name == "" {
				name, _ = m["name"].(string)
			}
			if m["writable"] == true || m["read_only"] == false {
				out = append(out, prefix+name)
			}
			if attrs, ok := m["attributes"]; ok {
				l2, _ := attrs.([]any)
				for _, a := range l2 {
					am, _ := a.(map[string]any)
					if am["writable"] == true || am["read_only"] == false {
						out = append(out, prefix+name+"."+fmt.Sprint(am["key"]))
					}
				}
			}
		}
	}
	list("", doc["fields"])
	list("custom_fields.", doc["custom_fields"])
	list("associations.", doc["associations"])
	return out
}

// Record rules: a member sees only the deals they own and the projects of their department; anything
// else is a 404, as if it did not exist.
func TestRecordRules(t *testing.T) {
	t.Parallel()
	for _, b := range servertest.Backends {
		t.Run(string(b), func(t *testing.T) {
			t.Parallel()
			e := servertest.Start(t, b, servertest.Options{})
			dept := e.Do("POST", "/v1/entity_departments", map[string]any{"name": "Delivery"}).Data()["id"].(string)
			other := e.Do("POST", "/v1/entity_departments", map[string]any{"name": "Sales"}).Data()["id"].(string)
			newMember := func(email, department string) (string, string) {
				id := e.NewMember(email, "member", department)
				return id, e.NewKey(id, auth.KeyOptions{Access: "write"})
			}
			_, alice := newMember("alice@x.example", dept)
			_, bob := newMember("bob@x.example", dept)
			_, carol := newMember("carol@x.example", other)

			adminDeal := e.Do("POST", "/v1/deals", map[string]any{"name": "Admin deal"}).Data()["id"].(string)
			aliceDeal := e.DoKey(alice, "POST", "/v1/deals", map[string]any{"name": "Alice deal"})
			e.Expect(aliceDeal, 201, "")
			aliceDealID := aliceDeal.Data()["id"].(string)
			for _, c := range []struct{ method, path string }{
				{"GET", "/v1/deals/" + adminDeal}, {"PATCH", "/v1/deals/" + adminDeal}, {"DELETE", "/v1/deals/" + adminDeal},
				{"POST", "/v1/deals/" + adminDeal + "/restore"},
			} {
				var body any
				if c.method == "PATCH" {
					body = map[string]any{"name": "taken"}
				}
				e.Expect(e.DoKey(alice, c.method, c.path, body), 404, "not_found")
			}
			e.Expect(e.DoKey(bob, "GET", "/v1/deals/"+aliceDealID, nil), 404, "not_found")
			if l := e.DoKey(alice, "GET", "/v1/deals?include_archived=true", nil).List(); len(l) != 1 || l[0]["id"] != aliceDealID {
				t.Errorf("alice lists deals %v", l)
			}
			if l := e.Do("GET", "/v1/deals", nil).List(); len(l) != 2 {
				t.Errorf("admin lists %d deals", len(l))
			}

			// A reference, like a link, reaches only records the caller sees: one to a deal outside alice's
			// record rule is answered exactly as one to a deal that does not exist.
			missingDeal := "0190a6d4-0000-7000-8000-00000000beef"
			var answers []string
			for _, deal := range []string{adminDeal, missingDeal} {
				res := e.DoKey(alice, "POST", "/v1/projects", map[string]any{"name": "Hidden deal project", "deal_id": deal})
				e.Expect(res, 422, "validation_failed")
				env := res.Body["error"].(map[string]any)
				delete(env, "request_id")
				data, _ := json.Marshal(res.Body)
				answers = append(answers, strings.ReplaceAll(string(data), deal, "ID"))
			}
			if answers[0] != answers[1] || !strings.Contains(answers[0], `"code":"reference_not_found","field":"deal_id"`) {
				t.Errorf("a deal alice cannot see and a missing deal are answered differently:\n%s\n%s", answers[0], answers[1])
			}
			e.Expect(e.DoKey(alice, "POST", "/v1/projects", map[string]any{"name": "Own deal project", "deal_id": aliceDealID}), 201, "")

			bobProject := e.DoKey(bob, "POST", "/v1/projects", map[string]any{"name": "Bob project"}).Data()["id"].(string)
			adminProject := e.Do("POST", "/v1/projects", map[string]any{"name": "Admin project"}).Data()["id"].(string)
			e.Expect(e.DoKey(alice, "GET", "/v1/projects/"+bobProject, nil), 200, "")
			e.Expect(e.DoKey(alice, "PATCH", "/v1/projects/"+bobProject, map[string]any{"name": "Renamed"}), 200, "")
			e.Expect(e.DoKey(alice, "GET", "/v1/projects/"+adminProject, nil), 404, "not_found")
			e.Expect(e.DoKey(carol, "GET", "/v1/projects/"+bobProject, nil), 404, "not_found")
			if l := e.DoKey(carol, "GET", "/v1/projects", nil).List(); len(l) != 0 {
				t.Errorf("carol lists %d projects of another department", len(l))
			}
			// Companies have no record rule for members, but annual_revenue is masked: writing it is refused.
			res := e.DoKey(alice, "POST", "/v1/companies", map[string]any{"name": "X", "annual_revenue": 5})
			e.Expect(res, 422, "validation_failed")
			if !strings.Contains(string(res.Raw), `"field":"annual_revenue"`) || !strings.Contains(string(res.Raw), "not_permitted") {
				t.Errorf("refusal does not name the field: %s", res.Raw)
			}
			// The member role reads but does not write pipelines.
			e.Expect(e.DoKey(alice, "GET", "/v1/pipelines", nil), 200, "")
			e.Expect(e.DoKey(alice, "POST", "/v1/pipelines", map[string]any{"name": "x"}), 403, "forbidden")
			doc := e.DoKey(alice, "GET", "/v1/resources/companies", nil).Data()
			for _, f := range doc["fields"].([]any) {
				fm := f.(map[string]any)
				if fm["key"] == "annual_revenue" && (fm["visibility"] != "masked" || fm["writable"] != false || fm["sortable"] != false) {
					t.Errorf("catalog entry for annual_revenue: %v", fm)
				}
			}
		})
	}
}

func adminActor(e *servertest.Env) records.Actor {
	return records.Actor{Workspace: e.Workspace, Member: e.Member}
}

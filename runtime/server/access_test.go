package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/url"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/workspace-records/records/engine/access"
	"github.com/workspace-records/records/engine/catalog"
	"github.com/workspace-records/records/engine/model"
	"github.com/workspace-records/records/engine/route"
	"github.com/workspace-records/records/engine/sample"
	"github.com/workspace-records/records/runtime/auth"
	"github.com/workspace-records/records/runtime/customfields"
	"github.com/workspace-records/records/runtime/dispatch"
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
			cat := e.Server.Backend().Current().Catalog
			viewer, _ := cat.Role("viewer")
			viewerID := e.NewMember("viewer@x.example", "viewer", "")
			vkey := e.NewKey(viewerID, auth.KeyOptions{Access: "read"})
			vwkey := e.NewKey(viewerID, auth.KeyOptions{Access: "write"})
			// A manager with the viewer's field rules: the admin API's audit trail shows them the
			// viewer's masks (an admin key reads no records, but it reads the trail).
			vm := map[string]any{"label": "Viewer manager", "permissions": []string{"api.access", "api.manage"}, "resources": viewer.Resources,
				"record_rules": viewer.RecordRules, "field_rules": viewer.FieldRules}
			vmYAML, _ := json.Marshal(map[string]any{"version": 1, "roles": map[string]any{"viewer_manager": vm}})
			if _, err := e.Server.Backend().Members.PutRoles(context.Background(), e.Workspace, "roles.yaml", vmYAML, true); err != nil {
				t.Fatal(err)
			}
			vmkey := e.NewKey(e.NewMember("viewer-manager@x.example", "viewer_manager", ""), auth.KeyOptions{Access: auth.AccessAdmin})
			// A webhook endpoint the viewer owns: its payloads are the events as the viewer reads them.
			vHooks := newHookReceiver(t, time.Now)
			newEndpoint(t, e, viewerID, vHooks, dispatch.Input{})
			names := make([]string, 0, len(viewer.FieldRules))
			for n := range viewer.FieldRules {
				names = append(names, n)
			}
			sort.Strings(names)
			// Filter paths: every masked or hidden field of every role is refused as the target of a path
			// from every relation that leads to its resource, from each resource the role can list; and a
			// path through a reference field the role cannot read is refused too.
			t.Run("paths", func(t *testing.T) {
				for _, role := range cat.Roles {
					if len(role.FieldRules) == 0 || !slices.Contains(role.Permissions, "api.access") {
						continue
					}
					key := e.NewKey(e.NewMember("paths-"+role.Name+"@x.example", role.Name, ""), auth.KeyOptions{Access: "read"})
					checked := 0
					for _, src := range cat.Resources {
						if src.ModelScoped || !src.Ops.Has(model.OpList) || access.For(role, src, "", "").Level == access.None {
							continue
						}
						for _, rel := range src.Relations() {
							if rel.Field != nil && !rel.Field.Filterable {
								continue
							}
							target, _ := cat.Resource(rel.Target)
							var keys []string
							if rel.Field != nil && !access.For(role, src, "", "").Readable(rel.Field.Key) {
								keys = append(keys, "id")
							} else if pol := access.For(role, target, "", ""); pol.Level != access.None {
								for _, f := range target.Fields {
									if !pol.Readable(f.Key) {
										keys = append(keys, f.Key) // masked or hidden, by a rule or as a formula's input
									}
								}
							}
							for _, k := range keys {
								if f, ok := target.Field(k); ok && !f.Filterable {
									continue // refused as no filter key at all
								}
								path := rel.Name + "." + k
								filter, _ := json.Marshal([]any{map[string]any{"filters": []any{map[string]any{"field": path, "op": "is_empty"}}}})
								res := e.DoKey(key, "GET", "/v1/"+src.Name+"?filter="+url.QueryEscape(string(filter)), nil)
								e.Expect(res, 400, "invalid_request")
								if !strings.Contains(string(res.Raw), "is not readable with your role; it cannot be filtered on") || !strings.Contains(string(res.Raw), `"field":"filters[0].filters[0].field"`) {
									t.Errorf("%s: %s path %s: %s", role.Name, src.Name, path, res.Raw)
								}
								q := e.DoKey(key, "POST", "/v1/"+src.Name+"/query", map[string]any{"filters": []any{map[string]any{"field": path, "op": "is_empty"}}})
								e.Expect(q, 400, "invalid_request")
								checked++
							}
						}
					}
					if role.Name == "viewer" && checked == 0 {
						t.Errorf("no path checked for the viewer")
					}
					t.Logf("%s: %d restricted path targets refused", role.Name, checked)
				}
			})
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
						if _, err := e.Server.Backend().Current().Records.Import(context.Background(), adminActor(e), r, "", []map[string]any{body}); err != nil {
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
					// An export job as the viewer, in both formats: the file holds no masked or hidden
					// value, and a hidden field is no CSV column.
					if !r.ModelScoped {
						for _, format := range []string{"csv", "ndjson"} {
							made := e.DoKey(vkey, "POST", "/v1/jobs", map[string]any{"type": "export", "resource": name, "format": format})
							e.Expect(made, 201, "")
							job := awaitJob(t, e, vkey, made.Data()["id"].(string))
							if job["state"] != "completed" {
								t.Fatalf("the viewer's %s export of %s: %v", format, name, job)
							}
							file := e.DoKey(vkey, "GET", "/v1/jobs/"+job["id"].(string)+"/download", nil)
							e.Expect(file, 200, "")
							check("export "+format, file)
							header, _, _ := strings.Cut(string(file.Raw), "\n")
							for key, rule := range rules {
								if rule == "hidden" && (strings.Contains(string(file.Raw), `"`+key+`"`) || format == "csv" && slices.Contains(strings.Split(header, ","), key)) {
									t.Errorf("the viewer's %s export of %s names hidden %s", format, name, key)
								}
							}
						}
					}
					// The change feed: the viewer reads the record's event (as it reads the record) with the
					// values masked, and hidden fields named in withheld.
					awaitEvent(t, e, "&resource="+name, id, name+".created")
					fe := e.DoKey(vkey, "GET", "/v1/events?limit=1000&resource="+name, nil)
					e.Expect(fe, 200, "")
					check("feed", fe)
					var seen bool
					for _, ev := range fe.List() {
						if ev["record_id"] != id {
							continue
						}
						seen = true
						withheld := fmt.Sprint(ev["withheld"])
						for key, rule := range rules {
							if rule == "hidden" && !strings.Contains(withheld, key) {
								t.Errorf("the feed's event of %s does not name hidden %s in withheld %s", name, key, withheld)
							}
						}
					}
					if !seen {
						t.Errorf("the viewer reads %s %s but not its event", name, id)
					}
					delivered := vHooks.await(t, 10*time.Second, "the viewer's webhook payload of "+name, func(got []received) bool {
						for _, r := range got {
							if r.event["record_id"] == id {
								return true
							}
						}
						return false
					})
					for _, r := range delivered {
						if r.event["record_id"] == id {
							raw, _ := json.Marshal(r.event)
							check("webhook payload", &servertest.Response{Raw: raw})
						}
					}
					// The record's history: an update (where the resource takes one) clears the restricted
					// fields that may be empty, so that their values are in its previous; the viewer reads
					// every entry with masked values masked and hidden fields named in withheld.
					cleared := map[string]any{}
					for key := range rules {
						if f, _ := r.Field(key); !f.Required && f.Writable() {
							cleared[key] = nil
						}
					}
					wantActions := "create"
					if r.ReadOnly() {
						wantActions = "import"
					} else if r.Ops.Has(model.OpUpdate) && len(cleared) > 0 {
						e.Expect(e.Do("PATCH", "/v1/"+name+"/"+id, cleared), 200, "")
						wantActions = "update,create"
					}
					hist := e.DoKey(vkey, "GET", "/v1/"+name+"/"+id+"/history", nil)
					e.Expect(hist, 200, "")
					check("history", hist)
					trail := e.DoKey(vmkey, "GET", "/v1/admin/audit?resource="+name+"&record_id="+id, nil)
					e.Expect(trail, 200, "")
					check("admin audit trail", trail)
					if got := actions(trail.List()); got != wantActions {
						t.Errorf("the viewer manager reads the audit trail of %s %s as %s, want %s", name, id, got, wantActions)
					}
					if got := actions(hist.List()); got != wantActions {
						t.Errorf("the viewer reads the history of %s %s as %s, want %s", name, id, got, wantActions)
					}
					for _, en := range hist.List() {
						withheld := fmt.Sprint(en["withheld"])
						changes, _ := en["changes"].(map[string]any)
						previous, _ := en["previous"].(map[string]any)
						for key, rule := range rules {
							_, inChanges := changes[key]
							_, inPrevious := previous[key]
							// The update's entry holds only the fields it changed: the cleared ones.
							_, written := cleared[key]
							written = written || en["action"] != "update"
							switch {
							case rule == "hidden" && (inChanges || inPrevious):
								t.Errorf("the %s entry of %s shows hidden %s: %v", en["action"], name, key, en)
							case rule == "hidden" && written && !strings.Contains(withheld, key):
								t.Errorf("the %s entry of %s does not name hidden %s in withheld %s", en["action"], name, key, withheld)
							case rule == "masked" && written && !inChanges:
								t.Errorf("the %s entry of %s leaves out masked %s: %v", en["action"], name, key, en)
							case rule == "masked" && written && en["action"] == "update" && !inPrevious:
								t.Errorf("the update entry of %s leaves out the previous value of masked %s: %v", name, key, en)
							}
						}
					}
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
					// Writes: the viewer's read key and a write key of the viewer role are refused every batch
					// item (403) and the upsert (403), and no answer shows a restricted value or the record.
					for _, key := range []string{vkey, vwkey} {
						if route.Batches(r) {
							items := []any{
								map[string]any{"op": "create", "body": body},
								map[string]any{"op": "update", "id": id, "body": map[string]any{}},
								map[string]any{"op": "archive", "id": id},
							}
							for _, mode := range []string{"per_item", "atomic"} {
								res := e.DoKey(key, "POST", "/v1/"+name+"/batch", map[string]any{"mode": mode, "items": items})
								if got := res.Statuses(); got != "403,403,403" || (mode == "per_item") != (res.Status == 200) {
									t.Errorf("the viewer's %s batch of %s: %d %s", mode, name, res.Status, got)
								}
								check("batch", res)
							}
						}
						if route.Upserts(r) {
							for _, k := range catalog.UniqueKeys(r) {
								v := rawText(body[k])
								if v == "" {
									v = "viewer-upsert.example"
								}
								res := e.DoKey(key, "PUT", "/v1/"+name+"/by/"+k+"/"+url.PathEscape(v), map[string]any{})
								e.Expect(res, 403, "")
								if strings.Contains(string(res.Raw), id) {
									t.Errorf("the viewer's upsert of %s by %s names the record: %s", name, k, res.Raw)
								}
								check("upsert", res)
							}
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
			if _, err := e.Server.Backend().Current().Custom.Create(context.Background(), e.Workspace, customfields.Def{Resource: "deals", Key: "tier", Type: "text"}); err != nil {
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
			// Expansions into records with masked and hidden fields (expand_test.go).
			checkExpandMasks(t, e, "viewer", "member")
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
			aliceID, alice := newMember("alice@x.example", dept)
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
			// A record's history is read exactly when the record is: the admin's deal and bob's view of
			// alice's deal are 404, as their gets; alice reads her own deal's history.
			e.Expect(e.DoKey(alice, "GET", "/v1/deals/"+adminDeal+"/history", nil), 404, "not_found")
			e.Expect(e.DoKey(bob, "GET", "/v1/deals/"+aliceDealID+"/history", nil), 404, "not_found")
			if h := e.DoKey(alice, "GET", "/v1/deals/"+aliceDealID+"/history", nil); h.Status != 200 || actions(h.List()) != "create" {
				t.Errorf("alice reads her deal's history: %d %s", h.Status, h.Raw)
			}
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
			// Batches keep the record rules item by item: a record outside them is that item's 404 (the
			// admin's deal for alice's owned rule, bob's project for carol's department rule), the caller's
			// own items are written; atomically nothing is.
			aliceDeal2 := e.DoKey(alice, "POST", "/v1/deals", map[string]any{"name": "Alice deal 2"}).Data()["id"].(string)
			br := e.DoKey(alice, "POST", "/v1/deals/batch", map[string]any{"mode": "per_item", "items": []any{
				map[string]any{"op": "update", "id": adminDeal, "body": map[string]any{"name": "taken"}},
				map[string]any{"op": "archive", "id": adminDeal},
				map[string]any{"op": "restore", "id": adminDeal},
				map[string]any{"op": "update", "id": aliceDealID, "body": map[string]any{"name": "Alice deal, batched"}},
				map[string]any{"op": "archive", "id": aliceDeal2},
			}})
			e.Expect(br, 200, "")
			if got := br.Statuses(); got != "404,404,404,200,200" || strings.Contains(string(br.Raw), "Admin deal") {
				t.Errorf("alice's batch of deals: %s: %s", got, br.Raw)
			}
			br = e.DoKey(alice, "POST", "/v1/deals/batch", map[string]any{"mode": "atomic", "items": []any{
				map[string]any{"op": "update", "id": aliceDealID, "body": map[string]any{"name": "Alice deal, atomic"}},
				map[string]any{"op": "archive", "id": adminDeal},
			}})
			e.Expect(br, 422, "batch_failed")
			if got := br.Statuses(); got != "424,404" {
				t.Errorf("alice's atomic batch of deals: %s: %s", got, br.Raw)
			}
			if d := e.Do("GET", "/v1/deals/"+adminDeal, nil).Data(); d["name"] != "Admin deal" || d["archived"] != false {
				t.Errorf("alice's batches changed the admin's deal: %v", d)
			}
			if d := e.Do("GET", "/v1/deals/"+aliceDealID, nil).Data(); d["name"] != "Alice deal, batched" {
				t.Errorf("alice's deal after her batches: %v", d["name"])
			}
			if d := e.Do("GET", "/v1/deals/"+aliceDeal2, nil).Data(); d["archived"] != true {
				t.Errorf("alice's second deal not archived by her batch: %v", d["archived"])
			}
			for key, want := range map[string]string{carol: "404", alice: "200"} {
				br := e.DoKey(key, "POST", "/v1/projects/batch", map[string]any{"mode": "per_item", "items": []any{
					map[string]any{"op": "update", "id": bobProject, "body": map[string]any{"description": "batched"}},
				}})
				if got := br.Statuses(); got != want {
					t.Errorf("batch update of bob's project: %s, want %s: %s", got, want, br.Raw)
				}
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

			// Expansions keep the targets' record rules: a deal alice does not own expands to null (the
			// reference's id stays, as before), a company's linked deals leave it out; her own deals expand,
			// archived ones too (as a get shows them). A key limited to scope_documents expands no deal.
			scopes := map[string]string{}
			for name, deal := range map[string]string{"admin": adminDeal, "alice": aliceDealID, "archived": aliceDeal2} {
				scopes[name] = e.Do("POST", "/v1/scope_documents", map[string]any{"title": name + " scope", "deal_id": deal}).Data()["id"].(string)
			}
			company := e.Do("POST", "/v1/companies", map[string]any{"name": "Linked to both"}).Data()["id"].(string)
			for _, deal := range []string{adminDeal, aliceDealID} {
				e.Expect(e.Do("PUT", "/v1/companies/"+company+"/deals/"+deal, map[string]any{}), 200, "")
			}
			limited := e.NewKey(aliceID, auth.KeyOptions{Access: "read", Resources: []string{"scope_documents", "companies"}})
			for _, c := range []struct {
				who, key string
				deals    map[string]string // scope document → the expanded deal's id ("" for null)
				linked   string
			}{
				{"alice", alice, map[string]string{"admin": "", "alice": aliceDealID, "archived": aliceDeal2}, "[" + aliceDealID + "]"},
				{"bob", bob, map[string]string{"admin": "", "alice": "", "archived": ""}, "[]"},
				{"admin", e.Key, map[string]string{"admin": adminDeal, "alice": aliceDealID, "archived": aliceDeal2}, "[" + adminDeal + " " + aliceDealID + "]"},
				{"alice's limited key", limited, map[string]string{"admin": "", "alice": "", "archived": ""}, "null"},
			} {
				list := e.DoKey(c.key, "GET", "/v1/scope_documents?page_size=100&expand=deal", nil)
				e.Expect(list, 200, "")
				byID := map[string]map[string]any{}
				for _, rec := range list.List() {
					byID[rec["id"].(string)] = rec
				}
				for name, want := range c.deals {
					rec := byID[scopes[name]]
					got, _ := rec["deal"].(map[string]any)
					if (want == "" && rec["deal"] != nil) || (want != "" && (got == nil || got["id"] != want)) {
						t.Errorf("%s: the %s scope document's deal expands to %v, want %q", c.who, name, rec["deal"], want)
					}
					if name == "archived" && got != nil && got["archived"] != true {
						t.Errorf("%s: the archived deal expands as %v", c.who, got)
					}
				}
				co := e.DoKey(c.key, "GET", "/v1/companies/"+company+"?expand=deals", nil)
				e.Expect(co, 200, "")
				linked := "null"
				if m, ok := co.Data()["deals"].(map[string]any); ok {
					linked = fmt.Sprint(servertest.ExpandedIDs(t, co.Data(), "deals"))
					if m["has_more"] != false {
						t.Errorf("%s: has_more %v", c.who, m["has_more"])
					}
				}
				if linked != c.linked && !(c.linked == "[]" && linked == "[]") {
					t.Errorf("%s: the company's deals expand to %s, want %s", c.who, linked, c.linked)
				}
			}
		})
	}
}

func adminActor(e *servertest.Env) records.Actor {
	return records.Actor{Workspace: e.Workspace, Member: e.Member}
}

// writerRole is a role of TestMasksMatrixWrites: it writes every resource under field rules.
type writerRole struct {
	name    string
	records map[string]string            // record rules, as roles.yaml gives them
	fields  map[string]map[string]string // field rules
}

// writerRoles derives from the catalog the roles that write under field rules: every built-in role with
// field rules, made a writer of every resource (its record and field rules kept), and two roles that
// mask and hide every declared unique key of the resources that take upserts.
func writerRoles(cat *model.Catalog) []writerRole {
	var out []writerRole
	for _, role := range cat.Roles {
		if len(role.FieldRules) > 0 {
			out = append(out, writerRole{name: role.Name + "_writer", records: role.RecordRules, fields: role.FieldRules})
		}
	}
	for _, vis := range []string{"masked", "hidden"} {
		wr := writerRole{name: "unique_" + vis, records: map[string]string{"*": "all"}, fields: map[string]map[string]string{}}
		for _, r := range cat.Resources {
			for _, k := range catalog.UniqueKeys(r) {
				if route.Upserts(r) {
					if wr.fields[r.Name] == nil {
						wr.fields[r.Name] = map[string]string{}
					}
					wr.fields[r.Name][k] = vis
				}
			}
		}
		out = append(out, wr)
	}
	return out
}

// restrictedFields returns the fields of r that rules mask or hide, with the formulas that read them (a
// formula is as restricted as its most restricted input).
func restrictedFields(r *model.Resource, rules map[string]string) map[string]string {
	out := maps.Clone(rules)
	for _, f := range r.Computed {
		for _, in := range f.Formula.Inputs {
			if v := out[in.Key]; v == "hidden" || (v == "masked" && out[f.Key] == "") {
				out[f.Key] = v
			}
		}
	}
	return out
}

// TestMasksMatrixWrites is the write side of the masks matrix: for every role of writerRoles and every
// resource it writes under field rules, the batch (per_item), the upsert (on the unique keys) and the
// replays of Idempotency-Key batches answer records as the role reads them (hidden fields absent,
// masked ones masked) and never show a value the admin set in a restricted field; an item writing a
// restricted field is that item's 422 not_permitted and the other items are written; an upsert by a
// restricted unique key is refused whether or not a record holds the value (no lookup by a value the
// caller may not see); a record outside the role's record rule is the item's 404.
func TestMasksMatrixWrites(t *testing.T) {
	t.Parallel()
	for _, b := range servertest.Backends {
		t.Run(string(b), func(t *testing.T) {
			t.Parallel()
			e := servertest.Start(t, b, servertest.Options{})
			cat := e.Server.Backend().Current().Catalog
			gen := sample.New(5)
			roles := writerRoles(cat)
			doc := map[string]any{}
			for _, wr := range roles {
				doc[wr.name] = map[string]any{"label": wr.name, "permissions": []string{"api.access"}, "resources": map[string]string{"*": "write"}, "record_rules": wr.records, "field_rules": wr.fields}
			}
			yaml, _ := json.Marshal(map[string]any{"version": 1, "roles": doc})
			if _, err := e.Server.Backend().Members.PutRoles(context.Background(), e.Workspace, "roles.yaml", yaml, true); err != nil {
				t.Fatal(err)
			}
			checked := 0
			n := 0 // numbers the values of unique fields apart
			for _, wr := range roles {
				wkey := e.NewKey(e.NewMember(wr.name+"@x.example", wr.name, ""), auth.KeyOptions{Access: "write"})
				names := slices.Sorted(maps.Keys(wr.fields))
				for _, name := range names {
					r, _ := cat.Resource(name)
					if r.ReadOnly() || !r.Ops.Has(model.OpCreate) || !route.Batches(r) {
						continue
					}
					t.Run(wr.name+"/"+name, func(t *testing.T) {
						checked++
						restricted := restrictedFields(r, wr.fields[name])
						rule := wr.records[name]
						if rule == "" {
							rule = wr.records["*"]
						}
						secretOf := func(f *model.Field) any {
							v := secretValue(f)
							if f.Unique {
								n++
								if s, ok := v.(string); ok {
									v = strings.Replace(s, "zq", fmt.Sprintf("zq%d", n), 1)
								}
							}
							return v
						}
						var secrets []string
						// secretBody is the admin's write of every restricted writable field, each a new value.
						secretBody := func() map[string]any {
							body := map[string]any{}
							for key := range restricted {
								if f, _ := r.Field(key); f.Writable() {
									body[key] = secretOf(f)
									secrets = append(secrets, rawText(body[key]))
								}
							}
							return body
						}
						// plain is a create body without restricted fields (required references left out: no
						// resource with field rules requires one); creatable says whether the role can create.
						creatable := true
						for _, f := range r.Declared() {
							if restricted[f.Key] != "" && f.Required {
								creatable = false
							}
						}
						plain := func() map[string]any {
							body := gen.Body(r, func(string) []string { return nil }, time.Now())
							for key := range restricted {
								delete(body, key)
							}
							return body
						}
						// edit is an update body of one plain field the role writes.
						var editKey string
						for _, f := range r.Declared() {
							if f.Writable() && restricted[f.Key] == "" && !f.Unique && f.Type == model.String && len(f.Options) == 0 {
								editKey = f.Key
								break
							}
						}
						edit := func(s string) map[string]any { return map[string]any{editKey: "Edited " + s} }
						// writerValue is a value of a restricted field the writer sends (and is refused).
						var restrictedKey string
						for _, key := range slices.Sorted(maps.Keys(restricted)) {
							if f, _ := r.Field(key); f.Writable() && !f.Unique {
								restrictedKey = key
								break
							}
						}
						if restrictedKey == "" {
							restrictedKey = slices.Sorted(maps.Keys(restricted))[0]
						}
						rf, _ := r.Field(restrictedKey)
						writerValue := map[model.Type]any{model.Email: "own@writer.example", model.Phone: "+1 555 0142", model.Decimal: json.Number("12.5"), model.Integer: json.Number("7")}[rf.Type]
						if writerValue == nil {
							writerValue = "writer-own-value.example"
						}

						// check fails when an answer shows a secret or a restricted field as the admin sees it.
						check := func(what string, res *servertest.Response) {
							t.Helper()
							for _, s := range secrets {
								if strings.Contains(string(res.Raw), s) {
									t.Errorf("%s leaks %q: %.600s", what, s, res.Raw)
								}
							}
							recs := []map[string]any{}
							if d := res.Data(); d != nil {
								recs = append(recs, d)
							}
							for _, it := range res.Results() {
								if d, ok := it["data"].(map[string]any); ok {
									recs = append(recs, d)
								}
							}
							for _, rec := range recs {
								for key, vis := range restricted {
									v, present := rec[key]
									switch {
									case vis == "hidden" && present:
										t.Errorf("%s: hidden %s present: %v", what, key, v)
									case vis == "masked" && v != nil && v != "" && !strings.Contains(fmt.Sprint(v), "•"):
										t.Errorf("%s: masked %s shows %v", what, key, v)
									}
								}
							}
						}
						expect := func(what string, res *servertest.Response, status int, want string) {
							t.Helper()
							if res.Status != status {
								t.Errorf("%s: %d, want %d: %.600s", what, res.Status, status, res.Raw)
							}
							if got := res.Statuses(); want != "" && got != want {
								t.Errorf("%s: statuses %s, want %s: %.600s", what, got, want, res.Raw)
							}
							check(what, res)
						}
						notPermitted := func(what string, it map[string]any, key string) {
							t.Helper()
							env, _ := it["error"].(map[string]any)
							data, _ := json.Marshal(env)
							if fmt.Sprint(it["status"]) != "422" || !strings.Contains(string(data), `"code":"not_permitted","field":"`+key+`"`) {
								t.Errorf("%s: want 422 not_permitted naming %s: %s", what, key, data)
							}
						}
						batch := func(items ...any) map[string]any { return map[string]any{"mode": "per_item", "items": items} }

						// The admin's record, every restricted field set.
						adminBody := plain()
						maps.Copy(adminBody, secretBody())
						made := e.Do("POST", "/v1/"+name, adminBody)
						if made.Status != 201 {
							t.Fatalf("the admin's create: %d %s", made.Status, made.Raw)
						}
						adminID := made.Data()["id"].(string)
						seen, create := "200", "201"
						if rule != "all" {
							seen = "404"
						}
						if !creatable {
							create = "422"
						}

						// One per_item batch: the admin's record changed (or not found), creates, and items
						// writing a restricted field, which alone are refused.
						res := e.DoKey(wkey, "POST", "/v1/"+name+"/batch", batch(
							map[string]any{"op": "update", "id": adminID, "body": edit("by batch")},
							map[string]any{"op": "create", "body": plain()},
							map[string]any{"op": "create", "body": func() map[string]any { b := plain(); b[restrictedKey] = writerValue; return b }()},
							map[string]any{"op": "update", "id": adminID, "body": map[string]any{restrictedKey: writerValue}},
							map[string]any{"op": "create", "body": plain()},
						))
						expect("batch", res, 200, strings.Join([]string{seen, create, "422", "422", create}, ","))
						items := res.Results()
						if len(items) == 5 {
							notPermitted("batch create writing "+restrictedKey, items[2], restrictedKey)
							notPermitted("batch update writing "+restrictedKey, items[3], restrictedKey)
						}
						if got := e.Do("GET", "/v1/"+name+"/"+adminID, nil).Data(); rawText(got[restrictedKey]) != rawText(adminBody[restrictedKey]) {
							t.Errorf("the refused item wrote %s: %v", restrictedKey, got[restrictedKey])
						}

						if creatable && len(items) == 5 {
							own, _ := items[1]["data"].(map[string]any)["id"].(string)
							// The admin sets the restricted fields of the writer's record; the writer's
							// batch update answers it as the role reads it.
							e.Expect(e.Do("PATCH", "/v1/"+name+"/"+own, secretBody()), 200, "")
							expect("batch update of own", e.DoKey(wkey, "POST", "/v1/"+name+"/batch", batch(map[string]any{"op": "update", "id": own, "body": edit("own")})), 200, "200")
							check("get own", e.DoKey(wkey, "GET", "/v1/"+name+"/"+own, nil))

							// Replays: of a batch that answered the record with its secrets, after the admin
							// changed them; of a batch that created a record, after the admin set them.
							body := batch(map[string]any{"op": "update", "id": own, "body": edit("idem")})
							first := e.DoKey(wkey, "POST", "/v1/"+name+"/batch", body, "Idempotency-Key", "mw-upd-"+wr.name+"-"+name)
							expect("idempotent batch", first, 200, "200")
							e.Expect(e.Do("PATCH", "/v1/"+name+"/"+own, secretBody()), 200, "")
							again := e.DoKey(wkey, "POST", "/v1/"+name+"/batch", body, "Idempotency-Key", "mw-upd-"+wr.name+"-"+name)
							expect("replayed batch", again, 200, "200")
							if again.Header.Get("Idempotent-Replayed") != "true" {
								t.Errorf("not replayed: %v", again.Header)
							}
							body = batch(map[string]any{"op": "create", "body": plain()})
							first = e.DoKey(wkey, "POST", "/v1/"+name+"/batch", body, "Idempotency-Key", "mw-new-"+wr.name+"-"+name)
							expect("idempotent batch create", first, 200, "201")
							if l := first.Results(); len(l) == 1 && l[0]["data"] != nil {
								d := l[0]["data"].(map[string]any)
								e.Expect(e.Do("PATCH", "/v1/"+name+"/"+d["id"].(string), secretBody()), 200, "")
							}
							again = e.DoKey(wkey, "POST", "/v1/"+name+"/batch", body, "Idempotency-Key", "mw-new-"+wr.name+"-"+name)
							expect("replayed batch create", again, 200, "201")
						}

						// Upserts, by every declared unique key.
						if !route.Upserts(r) {
							return
						}
						for _, k := range catalog.UniqueKeys(r) {
							kf, _ := r.Field(k)
							path := func(v any) string { return "/v1/" + name + "/by/" + k + "/" + url.PathEscape(rawText(v)) }
							if restricted[k] != "" {
								// By the value the admin's record holds and by a value none holds: the same
								// refusal, naming the key, never the record.
								var answers []string
								for _, v := range []any{adminBody[k], secretOf(kf)} {
									for _, res := range []*servertest.Response{
										e.DoKey(wkey, "PUT", path(v), plain()),
										e.DoKey(wkey, "POST", "/v1/"+name+"/batch", batch(map[string]any{"op": "upsert", "key": k, "value": rawText(v), "body": plain()})),
									} {
										if strings.Contains(string(res.Raw), adminID) {
											t.Errorf("the upsert by restricted %s names the admin's record: %s", k, res.Raw)
										}
										it := res.Body
										if l := res.Results(); len(l) == 1 {
											it = l[0]
										} else {
											it = map[string]any{"status": res.Status, "error": res.Body["error"]}
										}
										notPermitted("upsert by restricted "+k, it, k)
										env, _ := it["error"].(map[string]any)
										answers = append(answers, fmt.Sprint(it["status"], env["code"], env["message"], env["details"]))
									}
								}
								if answers[0] != answers[2] || answers[1] != answers[3] {
									t.Errorf("upserts by restricted %s tell a held value from a free one:\n%s", k, strings.Join(answers, "\n"))
								}
								if got := e.Do("GET", "/v1/"+name+"/"+adminID, nil).Data(); got[editKey] == "Edited upsert" {
									t.Errorf("the upsert by restricted %s changed the admin's record", k)
								}
								continue
							}
							v := secretOf(kf) // a value the writer chooses: not a secret
							body := plain()
							delete(body, k)
							made := e.DoKey(wkey, "PUT", path(v), body)
							expect("upsert create", made, 201, "")
							id, _ := made.Data()["id"].(string)
							e.Expect(e.Do("PATCH", "/v1/"+name+"/"+id, secretBody()), 200, "")
							expect("upsert update", e.DoKey(wkey, "PUT", path(v), edit("upsert")), 200, "")
							expect("batch upsert", e.DoKey(wkey, "POST", "/v1/"+name+"/batch", batch(
								map[string]any{"op": "upsert", "key": k, "value": rawText(v), "body": edit("batch upsert")},
								map[string]any{"op": "upsert", "key": k, "value": rawText(v), "body": map[string]any{restrictedKey: writerValue}},
							)), 200, "200,422")
							res := e.DoKey(wkey, "PUT", path(v), map[string]any{restrictedKey: writerValue})
							notPermitted("upsert writing "+restrictedKey, map[string]any{"status": res.Status, "error": res.Body["error"]}, restrictedKey)
						}
					})
				}
			}
			if checked == 0 {
				t.Fatal("no role writes a resource under field rules")
			}
			t.Logf("%d roles, %d role × resource pairs", len(roles), checked)
		})
	}
}

package server_test

import (
	"context"
	"testing"
	"time"

	"github.com/workspace-records/records/engine/sample"
	"github.com/workspace-records/records/runtime/auth"
	"github.com/workspace-records/records/runtime/server/servertest"
)

// seedAll creates one record of every resource (imports for read-only ones) and returns ids by resource.
func seedAll(t *testing.T, e *servertest.Env) map[string][]string {
	t.Helper()
	be := e.Server.Backend()
	gen := sample.New(5)
	ids := map[string][]string{"entity_members": {e.Member}}
	refs := func(res string) []string { return ids[res] }
	seen := map[string]map[string]any{}
	gen.SetLookup(func(_, id string) map[string]any { return seen[id] })
	modelID, err := be.Current().Custom.CreateModel(context.Background(), e.Workspace, "Vendors", nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range servertest.ResourceOrder(be.Current().Catalog) {
		for i := 0; i < 2; i++ {
			if r.ReadOnly() {
				if r.Name == "entity_members" {
					continue
				}
				if _, err := be.Current().Records.Import(context.Background(), adminActor(e), r, "", []map[string]any{gen.Body(r, refs, time.Now())}); err != nil {
					t.Fatal(err)
				}
				continue
			}
			q := ""
			if r.ModelScoped {
				q = "?model_id=" + modelID
			}
			res := e.Do("POST", "/v1/"+r.Name+q, gen.Body(r, refs, time.Now()))
			e.Expect(res, 201, "")
			id := res.Data()["id"].(string)
			ids[r.Name] = append(ids[r.Name], id)
			seen[id] = res.Data()
		}
		if r.ReadOnly() && r.Name != "entity_members" {
			for _, rec := range e.Do("GET", "/v1/"+r.Name, nil).List() {
				ids[r.Name] = append(ids[r.Name], rec["id"].(string))
				seen[rec["id"].(string)] = rec
			}
		}
	}
	return ids
}

func linkedIDs(res *servertest.Response) map[string]bool {
	out := map[string]bool{}
	for _, l := range res.List() {
		out[l["id"].(string)] = true
	}
	return out
}

// Every declared association can be put, listed from both sides, updated and deleted.
func TestAssociationMatrix(t *testing.T) {
	t.Parallel()
	for _, b := range servertest.Backends {
		t.Run(string(b), func(t *testing.T) {
			t.Parallel()
			e := servertest.Start(t, b, servertest.Options{})
			ids := seedAll(t, e)
			gen := sample.New(9)
			refs := func(res string) []string { return ids[res] }
			for _, r := range e.Server.Backend().Current().Catalog.Resources {
				for _, a := range r.Associations {
					t.Run(r.Name+"."+a.Name, func(t *testing.T) {
						from, to := ids[r.Name][0], ids[a.Target][len(ids[a.Target])-1]
						path := "/v1/" + r.Name + "/" + from + "/" + a.Name + "/" + to
						if r.ReadOnly() { // links are made from the writable side
							e.Expect(e.Do("PUT", path, nil), 405, "method_not_allowed")
							return
						}
						put := e.Do("PUT", path, gen.Body(a.Attrs, refs, time.Now()))
						e.Expect(put, 200, "")
						if put.Data()["id"] != to || put.Data()["attributes"] == nil {
							t.Fatalf("put returned %s", put.Raw)
						}
						if got := linkedIDs(e.Do("GET", "/v1/"+r.Name+"/"+from+"/"+a.Name, nil)); !got[to] || len(got) != 1 {
							t.Errorf("links from %s: %v", r.Name, got)
						}
						if a.Inverse != "" {
							if got := linkedIDs(e.Do("GET", "/v1/"+a.Target+"/"+to+"/"+a.Inverse, nil)); !got[from] {
								t.Errorf("inverse %s.%s does not show the link: %v", a.Target, a.Inverse, got)
							}
						}
						e.Expect(e.Do("PUT", path, gen.Body(a.Attrs, refs, time.Now())), 200, "")
						if got := linkedIDs(e.Do("GET", "/v1/"+r.Name+"/"+from+"/"+a.Name, nil)); len(got) != 1 {
							t.Errorf("a second put made %d links", len(got))
						}
						e.Expect(e.Do("DELETE", path, nil), 200, "")
						if got := linkedIDs(e.Do("GET", "/v1/"+r.Name+"/"+from+"/"+a.Name, nil)); len(got) != 0 {
							t.Errorf("links after delete: %v", got)
						}
						e.Expect(e.Do("DELETE", path, nil), 404, "not_found")
					})
				}
			}
		})
	}
}

func TestAssociationRules(t *testing.T) {
	t.Parallel()
	for _, b := range servertest.Backends {
		t.Run(string(b), func(t *testing.T) {
			t.Parallel()
			e := servertest.Start(t, b, servertest.Options{})
			deal := e.Do("POST", "/v1/deals", map[string]any{"name": "Linked deal"}).Data()["id"].(string)
			contact := e.Do("POST", "/v1/contacts", map[string]any{"last_name": "Lee"}).Data()["id"].(string)
			path := "/v1/deals/" + deal + "/contacts/" + contact
			e.Expect(e.Do("PUT", path, map[string]any{"role_type_id": "nope"}), 422, "validation_failed")
			e.Expect(e.Do("PUT", path, map[string]any{"colour": "red"}), 422, "validation_failed")
			e.Expect(e.Do("PUT", "/v1/deals/"+deal+"/friends/"+contact, nil), 404, "not_found")
			e.Expect(e.Do("PUT", "/v1/deals/"+deal+"/contacts/123", nil), 400, "invalid_request")
			e.Expect(e.Do("POST", "/v1/deals/"+deal+"/contacts", nil), 405, "method_not_allowed")
			e.Expect(e.Do("PUT", "/v1/deals/"+deal+"/contacts/0190a6d4-0000-7000-8000-000000000001", nil), 404, "not_found")
			// Idempotency-Key applies to association writes.
			p1 := e.Do("PUT", path, map[string]any{}, "Idempotency-Key", "link-1")
			p2 := e.Do("PUT", path, map[string]any{}, "Idempotency-Key", "link-1")
			if p1.Status != 200 || string(p1.Raw) != string(p2.Raw) || p2.Header.Get("Idempotent-Replayed") != "true" {
				t.Errorf("association replay: %d %s / %s", p1.Status, p1.Raw, p2.Raw)
			}
			// Both sides must be allowed to the key.
			dealsOnly := e.NewKey(e.Member, auth.KeyOptions{Access: "write", Resources: []string{"deals"}})
			e.Expect(e.DoKey(dealsOnly, "GET", "/v1/deals/"+deal+"/contacts", nil), 403, "insufficient_scope")
			e.Expect(e.DoKey(dealsOnly, "PUT", path, nil), 403, "insufficient_scope")
			// Another workspace reaches neither side.
			_, _, other := e.NewWorkspace("growth", "admin", "write")
			e.Expect(e.DoKey(other, "GET", "/v1/deals/"+deal+"/contacts", nil), 404, "not_found")
			e.Expect(e.DoKey(other, "DELETE", path, nil), 404, "not_found")
			theirs := e.DoKey(other, "POST", "/v1/contacts", map[string]any{"last_name": "Theirs"}).Data()["id"].(string)
			e.Expect(e.Do("PUT", "/v1/deals/"+deal+"/contacts/"+theirs, nil), 404, "not_found")
			// Record rules apply on both sides: a member sees links only to what it may see.
			memberKey := e.NewKey(e.NewMember("m@x.example", "member", ""), auth.KeyOptions{Access: "write"})
			e.Expect(e.DoKey(memberKey, "GET", "/v1/deals/"+deal+"/contacts", nil), 404, "not_found")
			if l := e.DoKey(memberKey, "GET", "/v1/contacts/"+contact+"/deals", nil).List(); len(l) != 0 {
				t.Errorf("member sees a link to a deal it does not own: %v", l)
			}
			if l := e.Do("GET", "/v1/contacts/"+contact+"/deals", nil).List(); len(l) != 1 {
				t.Errorf("admin sees %d links", len(l))
			}
		})
	}
}

package server_test

import (
	"context"
	"testing"
	"time"

	"github.com/workspace-records/records/engine/model"
	"github.com/workspace-records/records/engine/sample"
	"github.com/workspace-records/records/runtime/server/servertest"
)

// For every resource and every operation, a key of workspace B never reaches a record of workspace A.
func TestIsolationMatrix(t *testing.T) {
	for _, b := range servertest.Backends {
		t.Run(string(b), func(t *testing.T) {
			t.Parallel()
			e := servertest.Start(t, b, servertest.Options{})
			be := e.Server.Backend()
			ctx := context.Background()
			_, _, keyB := e.NewWorkspace("enterprise", "admin", "write")
			gen := sample.New(11)
			ids := map[string][]string{"entity_members": {e.Member}}
			refs := func(res string) []string { return ids[res] }
			seen := map[string]map[string]any{}
			gen.SetLookup(func(_, id string) map[string]any { return seen[id] })
			modelA, err := be.Directory.CreateModel(ctx, e.Workspace, "Vendors", nil)
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range resourceOrder(be.Catalog) {
				q, sep := "", "?"
				if r.ModelScoped {
					q, sep = "?model_id="+modelA, "?model_id="+modelA+"&"
				}
				var id string
				if r.ReadOnly() {
					if r.Name != "entity_members" {
						if _, err := be.Records.Import(ctx, adminActor(e), r, "", []map[string]any{gen.Body(r, refs, time.Now())}); err != nil {
							t.Fatal(err)
						}
					}
					first := e.Do("GET", "/v1/"+r.Name+"?page_size=1", nil).List()[0]
					id = first["id"].(string)
					seen[id] = first
				} else {
					res := e.Do("POST", "/v1/"+r.Name+q, gen.Body(r, refs, time.Now()))
					e.Expect(res, 201, "")
					id = res.Data()["id"].(string)
					seen[id] = res.Data()
				}
				ids[r.Name] = append(ids[r.Name], id)
				t.Run(r.Name, func(t *testing.T) {
					base := "/v1/" + r.Name
					notFound := func(status int) bool { return status == 404 || (r.ModelScoped && status == 404) }
					for _, c := range []struct {
						op     model.Operation
						method string
						path   string
						body   any
					}{
						{model.OpGet, "GET", base + "/" + id + q, nil},
						{model.OpUpdate, "PATCH", base + "/" + id + q, map[string]any{}},
						{model.OpArchive, "DELETE", base + "/" + id + q, nil},
						{model.OpRestore, "POST", base + "/" + id + "/restore" + q, nil},
					} {
						if !r.Ops.Has(c.op) {
							continue
						}
						res := e.DoKey(keyB, c.method, c.path, c.body)
						if !notFound(res.Status) {
							t.Errorf("B %s %s: %d %s", c.method, c.path, res.Status, res.Raw)
						}
					}
					for _, path := range []string{base + sep + "include_archived=true&filter=" + idFilter(id), base + sep + "include_archived=true&page_size=100"} {
						res := e.DoKey(keyB, "GET", path, nil)
						leaked := false
						for _, rec := range res.List() {
							for _, a := range ids[r.Name] {
								leaked = leaked || rec["id"] == a
							}
						}
						if leaked {
							t.Errorf("B lists A's %s: %s", r.Name, res.Raw)
						} else if res.Status != 200 && !notFound(res.Status) {
							t.Errorf("B list %s: %d", path, res.Status)
						}
					}
					query := map[string]any{"include_archived": true, "filters": []any{map[string]any{"field": "id", "op": "eq", "value": id}}}
					if r.ModelScoped {
						query["model_id"] = modelA
					}
					if res := e.DoKey(keyB, "POST", base+"/query", query); res.Status == 200 && len(res.List()) != 0 {
						t.Errorf("B queries A's %s: %s", r.Name, res.Raw)
					}
					// Nor through associations: B cannot list, put or delete links of A's record.
					for _, as := range r.Associations {
						other := ids[as.Target]
						target := "0190a6d4-0000-7000-8000-000000000001"
						if len(other) > 0 {
							target = other[0]
						}
						res := e.DoKey(keyB, "GET", base+"/"+id+"/"+as.Name, nil)
						if res.Status != 404 {
							t.Errorf("B lists %s.%s of A's record: %d %s", r.Name, as.Name, res.Status, res.Raw)
						}
						for _, m := range []string{"PUT", "DELETE"} {
							if res := e.DoKey(keyB, m, base+"/"+id+"/"+as.Name+"/"+target, nil); res.Status != 404 && res.Status != 405 {
								t.Errorf("B %s %s.%s of A's record: %d %s", m, r.Name, as.Name, res.Status, res.Raw)
							}
						}
					}
					// B cannot point its own records at A's.
					if r.ModelScoped || r.ReadOnly() {
						return
					}
					for _, other := range be.Catalog.Resources {
						if other.ReadOnly() || other.ModelScoped {
							continue
						}
						for _, f := range other.Declared() {
							if f.Type == model.Reference && f.Target == r.Name && f.Writable() {
								body := gen.Body(other, nil, time.Now())
								body[f.Key] = id
								res := e.DoKey(keyB, "POST", "/v1/"+other.Name, body)
								e.Expect(res, 422, "validation_failed")
							}
						}
					}
				})
			}
		})
	}
}

package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"github.com/workspace-records/records/runtime/customfields"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/workspace-records/records/engine/model"
	"github.com/workspace-records/records/engine/sample"
	"github.com/workspace-records/records/runtime/server/servertest"
)

// sameValue compares a value sent with the value returned, through the field's canonical form.
func sameValue(t *testing.T, f *model.Field, sent, got any) bool {
	t.Helper()
	if sent == nil || got == nil {
		return sent == got
	}
	a, err1 := model.Canonical(f, sent)
	b, err2 := model.Canonical(f, got)
	if err1 != nil || err2 != nil {
		return false
	}
	if ta, ok := a.(time.Time); ok {
		return ta.Equal(b.(time.Time))
	}
	if f.Type == model.Decimal {
		return fmt.Sprint(a) == fmt.Sprint(b)
	}
	return a == b
}

func checkValues(t *testing.T, r *model.Resource, body, rec map[string]any) {
	t.Helper()
	for k, v := range body {
		f, _ := r.Field(k)
		if !sameValue(t, f, v, rec[k]) {
			t.Errorf("%s.%s: sent %v, got %v", r.Name, k, v, rec[k])
		}
	}
}

func idFilter(id string) string {
	data, _ := json.Marshal([]any{map[string]any{"field": "id", "op": "eq", "value": id}})
	return url.QueryEscape(string(data))
}

// runLifecycle drives every resource of the env's definitions through its operations.
func runLifecycle(t *testing.T, e *servertest.Env, only map[string]bool) {
	b := e.Server.Backend()
	ctx := context.Background()
	modelID, err := b.Current().Custom.CreateModel(ctx, e.Workspace, "Vendors", map[string]customfields.ModelField{"category": {Type: "string"}})
	if err != nil {
		t.Fatal(err)
	}
	ids := map[string][]string{"entity_members": {e.Member}}
	refs := func(res string) []string { return ids[res] }
	gen := sample.New(2026)
	seen := map[string]map[string]any{} // records by id, so bodies keep the plugins' rules
	gen.SetLookup(func(_, id string) map[string]any { return seen[id] })
	now := time.Now()
	for _, r := range servertest.ResourceOrder(b.Current().Catalog) {
		if only != nil && !only[r.Name] {
			continue
		}
		base := "/v1/" + r.Name
		q := ""
		if r.ModelScoped {
			q = "?model_id=" + modelID
		}
		t.Run(r.Name, func(t *testing.T) {
			if r.ReadOnly() {
				for _, c := range []struct{ method, path string }{
					{"POST", base}, {"PATCH", base + "/" + e.Member}, {"DELETE", base + "/" + e.Member}, {"POST", base + "/" + e.Member + "/restore"},
				} {
					res := e.Do(c.method, c.path, map[string]any{})
					e.Expect(res, 405, "method_not_allowed")
					if got := res.Header.Get("Allow"); c.path == base && got != "GET, HEAD" {
						t.Errorf("%s %s: Allow %q, want GET, HEAD", c.method, c.path, got)
					}
				}
				e.Expect(e.Do("GET", base, nil), 200, "")
				e.Expect(e.Do("POST", base+"/query", map[string]any{"page_size": 5}), 200, "")
				return
			}
			body := gen.Body(r, refs, now)
			created := e.Do("POST", base+q, body)
			e.Expect(created, 201, "")
			rec := created.Data()
			id, _ := rec["id"].(string)
			if !model.IsUUID(id) {
				t.Fatalf("create returned id %v: %s", rec["id"], created.Raw)
			}
			if loc := created.Header.Get("Location"); !strings.HasPrefix(loc, base+"/"+id) {
				t.Errorf("Location %q", loc)
			}
			checkValues(t, r, body, rec)
			if rec["archived"] != false || rec["owner_id"] != e.Member {
				t.Errorf("managed fields: archived %v owner %v", rec["archived"], rec["owner_id"])
			}
			ids[r.Name] = append(ids[r.Name], id)
			seen[id] = rec

			got := e.Do("GET", base+"/"+id+q, nil)
			e.Expect(got, 200, "")
			if string(mustJSON(got.Data())) != string(mustJSON(rec)) {
				t.Errorf("get differs from create:\n%s\n%s", mustJSON(got.Data()), mustJSON(rec))
			}

			upd := gen.Update(r, rec, refs, now)
			updated := e.Do("PATCH", base+"/"+id+q, upd)
			e.Expect(updated, 200, "")
			checkValues(t, r, upd, updated.Data())
			seen[id] = updated.Data()

			sep := "?"
			if q != "" {
				sep = q + "&"
			}
			listed := e.Do("GET", base+sep+"filter="+idFilter(id), nil)
			e.Expect(listed, 200, "")
			if l := listed.List(); len(l) != 1 || l[0]["id"] != id {
				t.Errorf("list by id: %s", listed.Raw)
			}

			archived := e.Do("DELETE", base+"/"+id+q, map[string]any{"reason": "Duplicate entry"})
			e.Expect(archived, 200, "")
			if a := archived.Data(); a["archived"] != true || a["archive_reason"] != "Duplicate entry" || a["archived_at"] == nil {
				t.Errorf("archive: %s", archived.Raw)
			}
			e.Expect(e.Do("DELETE", base+"/"+id+q, nil), 409, "conflict")
			if l := e.Do("GET", base+sep+"filter="+idFilter(id), nil).List(); len(l) != 0 {
				t.Errorf("archived record listed without include_archived")
			}
			if l := e.Do("GET", base+sep+"include_archived=true&filter="+idFilter(id), nil).List(); len(l) != 1 {
				t.Errorf("archived record missing with include_archived=true")
			}
			e.Expect(e.Do("PATCH", base+"/"+id+q, upd), 409, "conflict")

			restored := e.Do("POST", base+"/"+id+"/restore"+q, nil)
			e.Expect(restored, 200, "")
			if a := restored.Data(); a["archived"] != false || a["archived_at"] != nil {
				t.Errorf("restore: %s", restored.Raw)
			}
			e.Expect(e.Do("POST", base+"/"+id+"/restore"+q, nil), 409, "conflict")
		})
	}
}

func mustJSON(v any) []byte {
	data, _ := json.Marshal(v)
	return data
}

func TestLifecycle(t *testing.T) {
	t.Parallel()
	for _, b := range servertest.Backends {
		t.Run(string(b), func(t *testing.T) {
			t.Parallel()
			runLifecycle(t, servertest.Start(t, b, servertest.Options{}), nil)
		})
	}
}

package server_test

import (
	"context"
	"testing"

	"github.com/workspace-records/records/engine/apierr"
	"github.com/workspace-records/records/runtime/customfields"
	"github.com/workspace-records/records/runtime/records"
	"github.com/workspace-records/records/runtime/server/servertest"
)

// A custom field created unique is a unique key of its resource in the workspace: a create, update or
// restore taking a value another active record holds is 409 conflict naming cf__<key>; archived records
// hold no value; 50 concurrent creates of one value leave one record; types without a whole comparable
// value are refused; the catalog lists the key.
func TestUniqueCustomField(t *testing.T) {
	t.Parallel()
	for _, b := range servertest.Backends {
		t.Run(string(b), func(t *testing.T) {
			t.Parallel()
			e, client := concurrentEnv(t, b)
			ctx := context.Background()
			reg := e.Server.Backend().Current().Custom
			if _, err := reg.Create(ctx, e.Workspace, customfields.Def{Resource: "companies", Key: "notes_key", Type: "long_text", Unique: true}); err == nil {
				t.Errorf("a unique long_text field was created")
			}
			if _, err := reg.Create(ctx, e.Workspace, customfields.Def{Resource: "companies", Key: "erp_id", Type: "text", Unique: true}); err != nil {
				t.Fatal(err)
			}
			first := e.Do("POST", "/v1/companies", map[string]any{"name": "One", "cf__erp_id": "E-1"})
			e.Expect(first, 201, "")
			id := first.Data()["id"].(string)
			expectKeyConflict(t, e, e.Do("POST", "/v1/companies", map[string]any{"name": "Two", "cf__erp_id": "E-1"}), "cf__erp_id", id)
			second := e.Do("POST", "/v1/companies", map[string]any{"name": "Two", "cf__erp_id": "E-2"})
			e.Expect(second, 201, "")
			sid := second.Data()["id"].(string)
			expectKeyConflict(t, e, e.Do("PATCH", "/v1/companies/"+sid, map[string]any{"cf__erp_id": "E-1"}), "cf__erp_id", id)
			e.Expect(e.Do("PATCH", "/v1/companies/"+id, map[string]any{"cf__erp_id": "E-1", "name": "One Inc"}), 200, "")
			e.Expect(e.Do("POST", "/v1/companies", map[string]any{"name": "No key"}), 201, "")
			e.Expect(e.Do("POST", "/v1/companies", map[string]any{"name": "No key 2"}), 201, "")

			e.Expect(e.Do("DELETE", "/v1/companies/"+id, nil), 200, "")
			third := e.Do("POST", "/v1/companies", map[string]any{"name": "Three", "cf__erp_id": "E-1"})
			e.Expect(third, 201, "")
			expectKeyConflict(t, e, e.Do("POST", "/v1/companies/"+id+"/restore", nil), "cf__erp_id", third.Data()["id"].(string))
			e.Expect(e.Do("PATCH", "/v1/companies/"+third.Data()["id"].(string), map[string]any{"cf__erp_id": "E-3"}), 200, "")
			e.Expect(e.Do("POST", "/v1/companies/"+id+"/restore", nil), 200, "")

			cat := e.Do("GET", "/v1/resources/companies", nil).Data()
			if keys, _ := cat["unique_keys"].([]any); len(keys) != 2 || keys[1] != "cf__erp_id" {
				t.Errorf("unique_keys = %v", cat["unique_keys"])
			}

			// An import taking a held value, declared or custom, or repeating one within itself, writes
			// nothing and is refused as a conflict naming the key.
			companies, _ := e.Server.Backend().Current().Catalog.Resource("companies")
			for name, bodies := range map[string][]map[string]any{
				"custom held":       {{"name": "I1", "cf__erp_id": "E-1"}},
				"custom repeated":   {{"name": "I2", "cf__erp_id": "E-9"}, {"name": "I3", "cf__erp_id": "E-9"}},
				"declared held":     {{"name": "I4", "domain": "held.example"}},
				"declared repeated": {{"name": "I5", "domain": "twice.example"}, {"name": "I6", "domain": "twice.example"}},
			} {
				if name == "declared held" {
					e.Expect(e.Do("POST", "/v1/companies", map[string]any{"name": "Holder", "domain": "held.example"}), 201, "")
				}
				_, err := e.Server.Backend().Current().Records.Import(ctx, adminActor(e), companies, "", bodies)
				if ae := records.Explain(err); ae.Code != apierr.Conflict || ae.Details["unique_key"] == nil {
					t.Errorf("import %s: %v", name, err)
				}
			}
			if l := e.Do("GET", "/v1/companies?search=I1", nil).List(); len(l) != 0 {
				t.Errorf("a refused import wrote %v", l)
			}

			raceCreates(t, e, client, "cf__erp_id", "RACE")
		})
	}
}

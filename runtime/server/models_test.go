package server_test

import (
	"context"
	"encoding/json"
	"github.com/workspace-records/records/runtime/customfields"
	"net/url"
	"testing"

	"github.com/workspace-records/records/runtime/server/servertest"
)

// A data model's fields are the custom fields of its records: validated, stored, filtered and listed
// in the model's catalog.
func TestDataModelFields(t *testing.T) {
	t.Parallel()
	for _, b := range servertest.Backends {
		t.Run(string(b), func(t *testing.T) {
			t.Parallel()
			e := servertest.Start(t, b, servertest.Options{})
			custom := e.Server.Backend().Current().Custom
			ctx := context.Background()
			vendors, err := custom.CreateModel(ctx, e.Workspace, "Vendors", map[string]customfields.ModelField{
				"category":  {Type: "string", Options: []string{"software", "hardware"}},
				"employees": {Type: "integer", Required: true},
				"website":   {Type: "url"},
			})
			if err != nil {
				t.Fatal(err)
			}
			other, err := custom.CreateModel(ctx, e.Workspace, "Partners", map[string]customfields.ModelField{"region": {Type: "string"}})
			if err != nil {
				t.Fatal(err)
			}
			q := "?model_id=" + vendors
			res := e.Do("POST", "/v1/data_model_records"+q, map[string]any{"name": "No size"})
			e.Expect(res, 422, "validation_failed")
			if !containsField(res, "custom_fields.employees") {
				t.Errorf("missing required model field not named: %s", res.Raw)
			}
			e.Expect(e.Do("POST", "/v1/data_model_records"+q, map[string]any{"name": "Bad", "cf__employees": 5, "cf__category": "food"}), 422, "validation_failed")
			e.Expect(e.Do("POST", "/v1/data_model_records"+q, map[string]any{"name": "Wrong model", "cf__employees": 5, "cf__region": "EU"}), 422, "validation_failed")
			created := e.Do("POST", "/v1/data_model_records", map[string]any{"model_id": vendors, "name": "Acme", "custom_fields": map[string]any{"employees": 120, "category": "software"}})
			e.Expect(created, 201, "")
			cf := created.Data()["custom_fields"].(map[string]any)
			if cf["employees"] != json.Number("120") || cf["category"] != "software" || created.Data()["model_id"] != vendors {
				t.Errorf("read back %v", created.Data())
			}
			id := created.Data()["id"].(string)
			e.Expect(e.Do("PATCH", "/v1/data_model_records/"+id+q, map[string]any{"cf__website": "https://acme.example"}), 200, "")

			doc := e.Do("GET", "/v1/resources/data_model_records"+q, nil).Data()
			fields := doc["custom_fields"].([]any)
			if len(fields) != 3 {
				t.Fatalf("model catalog lists %d fields: %v", len(fields), fields)
			}
			var filterKey string
			for _, f := range fields {
				if m := f.(map[string]any); m["key"] == "employees" {
					filterKey = m["filter_key"].(string)
				}
			}
			filter, _ := json.Marshal([]any{map[string]any{"field": filterKey, "op": "gte", "value": 100}})
			if l := e.Do("GET", "/v1/data_model_records"+q+"&filter="+url.QueryEscape(string(filter)), nil).List(); len(l) != 1 || l[0]["id"] != id {
				t.Errorf("filter on a model field: %v", l)
			}
			if l := e.Do("GET", "/v1/resources/data_model_records?model_id="+other, nil).Data()["custom_fields"].([]any); len(l) != 1 {
				t.Errorf("other model's catalog: %v", l)
			}
			// The record belongs to its model: another model id does not reach it.
			e.Expect(e.Do("GET", "/v1/data_model_records/"+id+"?model_id="+other, nil), 404, "not_found")
		})
	}
}

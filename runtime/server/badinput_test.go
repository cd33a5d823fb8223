package server_test

import (
	"bytes"
	"context"
	"net/url"
	"strings"
	"testing"

	"github.com/workspace-records/records/runtime/auth"
	"github.com/workspace-records/records/runtime/server/servertest"
)

func TestBadInput(t *testing.T) {
	t.Parallel()
	for _, b := range servertest.Backends {
		t.Run(string(b), func(t *testing.T) {
			t.Parallel()
			e := servertest.Start(t, b, servertest.Options{})
			created := e.Do("POST", "/v1/companies", map[string]any{"name": "Northwind"})
			e.Expect(created, 201, "")
			id := created.Data()["id"].(string)
			f := func(s string) string { return url.QueryEscape(s) }
			big := bytes.Repeat([]byte("a"), 2<<20)
			cases := []struct {
				name, method, path string
				body               any
				status             int
				code               string
			}{
				{"malformed json", "POST", "/v1/companies", []byte(`{"name":`), 400, "invalid_request"},
				{"trailing data", "POST", "/v1/companies", []byte(`{"name":"a"} {}`), 400, "invalid_request"},
				{"array body", "POST", "/v1/companies", []byte(`[]`), 400, "invalid_request"},
				{"empty body", "POST", "/v1/companies", []byte(``), 400, "invalid_request"},
				{"duplicate member", "POST", "/v1/companies", []byte(`{"name":"a","name":"b"}`), 400, "invalid_request"},
				{"deep nesting", "POST", "/v1/companies", []byte(strings.Repeat(`{"a":`, 100) + "1" + strings.Repeat("}", 100)), 400, "invalid_request"},
				{"invalid utf8", "POST", "/v1/companies", []byte("{\"name\":\"\xff\"}"), 400, "invalid_request"},
				{"wrong type", "POST", "/v1/companies", map[string]any{"name": 5}, 422, "validation_failed"},
				{"unknown field", "POST", "/v1/companies", map[string]any{"name": "a", "nope": 1}, 422, "validation_failed"},
				{"missing required", "POST", "/v1/companies", map[string]any{}, 422, "validation_failed"},
				{"required null", "PATCH", "/v1/companies/" + id, map[string]any{"name": nil}, 422, "validation_failed"},
				{"read-only field", "POST", "/v1/companies", map[string]any{"name": "a", "id": id}, 422, "validation_failed"},
				{"both custom forms", "POST", "/v1/companies", map[string]any{"name": "a", "cf__x": 1, "custom_fields": map[string]any{"y": 1}}, 422, "validation_failed"},
				{"unknown custom field", "POST", "/v1/companies", map[string]any{"name": "a", "custom_fields": map[string]any{"y": 1}}, 422, "validation_failed"},
				{"NUL in text", "POST", "/v1/companies", map[string]any{"name": "a\x00b"}, 422, "validation_failed"},
				{"bad date", "POST", "/v1/deals", map[string]any{"name": "a", "close_date": "2026-02-30"}, 422, "validation_failed"},
				{"huge integer", "POST", "/v1/deals", map[string]any{"name": "a", "probability": 1e30}, 422, "validation_failed"},
				{"bad option", "POST", "/v1/deals", map[string]any{"name": "a", "status": "maybe"}, 422, "validation_failed"},
				{"bad reference", "POST", "/v1/deals", map[string]any{"name": "a", "company_id": "not-a-uuid"}, 422, "validation_failed"},
				{"missing reference", "POST", "/v1/deals", map[string]any{"name": "a", "company_id": "0190a6d4-0000-7000-8000-000000000001"}, 422, "validation_failed"},
				{"oversized body", "POST", "/v1/companies", big, 413, "payload_too_large"},
				{"oversized query", "POST", "/v1/companies/query", big, 413, "payload_too_large"},
				{"oversized update", "PATCH", "/v1/companies/" + id, big, 413, "payload_too_large"},
				{"oversized archive", "DELETE", "/v1/companies/" + id, big, 413, "payload_too_large"},
				{"oversized restore", "POST", "/v1/companies/" + id + "/restore", big, 413, "payload_too_large"},
				{"non-json content type", "POST", "/v1/companies", []byte(`name=a`), 400, "invalid_request"},
				{"bad uuid get", "GET", "/v1/companies/123", nil, 400, "invalid_request"},
				{"unknown id", "GET", "/v1/companies/0190a6d4-0000-7000-8000-000000000001", nil, 404, "not_found"},
				{"unknown sort", "GET", "/v1/companies?sort=nope", nil, 400, "invalid_request"},
				{"text not sortable", "GET", "/v1/companies?sort=description", nil, 400, "invalid_request"},
				{"bad order", "GET", "/v1/companies?order=up", nil, 400, "invalid_request"},
				{"page zero", "GET", "/v1/companies?page=0", nil, 400, "invalid_request"},
				{"page too big", "GET", "/v1/companies?page=10001", nil, 400, "invalid_request"},
				{"page not integer", "GET", "/v1/companies?page=x", nil, 400, "invalid_request"},
				{"page_size too big", "GET", "/v1/companies?page_size=101", nil, 400, "invalid_request"},
				{"page with cursor", "GET", "/v1/companies?page=2&cursor=start", nil, 400, "invalid_request"},
				{"garbage cursor", "GET", "/v1/companies?cursor=abc.def", nil, 400, "invalid_request"},
				{"bad include_archived", "GET", "/v1/companies?include_archived=yes", nil, 400, "invalid_request"},
				{"unknown parameter", "GET", "/v1/companies?colour=red", nil, 400, "invalid_request"},
				{"filter not json", "GET", "/v1/companies?filter=" + f("[{"), nil, 400, "invalid_request"},
				{"filter not array", "GET", "/v1/companies?filter=" + f(`{"field":"name"}`), nil, 400, "invalid_request"},
				{"filter unknown field", "GET", "/v1/companies?filter=" + f(`[{"field":"nope","op":"eq","value":1}]`), nil, 400, "invalid_request"},
				{"filter bad op", "GET", "/v1/companies?filter=" + f(`[{"field":"name","op":"gt","value":"a"}]`), nil, 400, "invalid_request"},
				{"filter wrong value type", "GET", "/v1/deals?filter=" + f(`[{"field":"amount","op":"gt","value":"lots"}]`), nil, 400, "invalid_request"},
				{"filter missing value", "GET", "/v1/deals?filter=" + f(`[{"field":"amount","op":"gt"}]`), nil, 400, "invalid_request"},
				{"filter in not array", "GET", "/v1/deals?filter=" + f(`[{"field":"status","op":"in","value":"open"}]`), nil, 400, "invalid_request"},
				{"filter extra member", "GET", "/v1/deals?filter=" + f(`[{"field":"status","op":"eq","value":"open","x":1}]`), nil, 400, "invalid_request"},
				{"bad join", "GET", "/v1/companies?join=xor", nil, 400, "invalid_request"},
				{"search not indexed", "GET", "/v1/signal_types?search=risk", nil, 400, "invalid_request"},
				{"query unknown member", "POST", "/v1/companies/query", map[string]any{"filter": "[]"}, 400, "invalid_request"},
				{"query fields over 100", "POST", "/v1/companies/query", map[string]any{"fields": make([]string, 101)}, 400, "invalid_request"},
				{"query filters not array", "POST", "/v1/companies/query", map[string]any{"filters": "[]"}, 400, "invalid_request"},
				{"query with url params", "POST", "/v1/companies/query?page=2", nil, 400, "invalid_request"},
				{"archive reason too long", "DELETE", "/v1/companies/" + id, map[string]any{"reason": strings.Repeat("r", 1001)}, 422, "validation_failed"},
				{"archive unknown member", "DELETE", "/v1/companies/" + id, map[string]any{"why": "x"}, 422, "validation_failed"},
				{"restore with body", "POST", "/v1/companies/" + id + "/restore", map[string]any{"x": 1}, 400, "invalid_request"},
				{"unknown resource", "GET", "/v1/widgets", nil, 404, "unknown_resource"},
				{"unknown resource catalog", "GET", "/v1/resources/widgets", nil, 404, "unknown_resource"},
				{"no route", "GET", "/v1/companies/" + id + "/x/y", nil, 404, "route_not_found"},
				{"outside v1", "GET", "/v2/companies", nil, 404, "route_not_found"},
				{"trailing slash", "GET", "/v1/companies/", nil, 404, "route_not_found"},
				{"unclean path", "GET", "/v1//companies", nil, 404, "route_not_found"},
				{"method not allowed", "PUT", "/v1/companies", nil, 405, "method_not_allowed"},
				{"post on item", "POST", "/v1/companies/" + id, nil, 405, "method_not_allowed"},
				{"model_id missing", "GET", "/v1/data_model_records", nil, 400, "invalid_request"},
				{"model_id malformed", "GET", "/v1/data_model_records?model_id=x", nil, 400, "invalid_request"},
				{"model_id unknown", "GET", "/v1/data_model_records?model_id=0190a6d4-0000-7000-8000-000000000001", nil, 404, "not_found"},
				{"model_id elsewhere", "GET", "/v1/companies?model_id=0190a6d4-0000-7000-8000-000000000001", nil, 400, "invalid_request"},
			}
			for _, c := range cases {
				t.Run(c.name, func(t *testing.T) {
					e.T = t
					e.Expect(e.Do(c.method, c.path, c.body, "Content-Type", contentType(c.name)), c.status, c.code)
				})
			}
		})
	}
}

func contentType(name string) string {
	if name == "non-json content type" {
		return "application/x-www-form-urlencoded"
	}
	return "application/json"
}

// A 422 lists every bad field at once, each with its path and code.
func TestValidationListsEveryField(t *testing.T) {
	t.Parallel()
	e := servertest.Start(t, servertest.SQLite, servertest.Options{})
	res := e.Do("POST", "/v1/deals", map[string]any{"amount": "x", "probability": 101, "status": "maybe", "nope": true, "id": "x"})
	e.Expect(res, 422, "validation_failed")
	details := res.Body["error"].(map[string]any)["details"].(map[string]any)["errors"].([]any)
	got := map[string]string{}
	for _, d := range details {
		m := d.(map[string]any)
		got[m["field"].(string)] = m["code"].(string)
	}
	want := map[string]string{"name": "required", "amount": "invalid_type", "probability": "out_of_range", "status": "invalid_option", "nope": "unknown_field", "id": "read_only"}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("field %s: code %q, want %q (all: %v)", k, got[k], v, got)
		}
	}
}

// Keys are required, and a workspace never sees or references another's records.
func TestKeysAndTenancy(t *testing.T) {
	t.Parallel()
	for _, b := range servertest.Backends {
		t.Run(string(b), func(t *testing.T) {
			t.Parallel()
			e := servertest.Start(t, b, servertest.Options{})
			e.Expect(e.DoKey("", "GET", "/v1/companies", nil), 401, "invalid_api_key")
			e.Expect(e.DoKey("wsk_"+strings.Repeat("0", 64), "GET", "/v1/companies", nil), 401, "invalid_api_key")
			e.Expect(e.DoKey("nope", "GET", "/v1/me", nil), 401, "invalid_api_key")
			e.Expect(e.DoKey("", "GET", "/v1", nil), 200, "")
			e.Expect(e.DoKey("", "GET", "/v1/openapi.json", nil), 200, "")

			mine := e.Do("POST", "/v1/companies", map[string]any{"name": "Mine"}).Data()["id"].(string)
			ows, omember, other := e.NewWorkspace("growth", "admin", "write")
			e.Expect(e.DoKey(other, "GET", "/v1/companies/"+mine, nil), 404, "not_found")
			e.Expect(e.DoKey(other, "PATCH", "/v1/companies/"+mine, map[string]any{"name": "Theirs"}), 404, "not_found")
			e.Expect(e.DoKey(other, "DELETE", "/v1/companies/"+mine, nil), 404, "not_found")
			e.Expect(e.DoKey(other, "POST", "/v1/deals", map[string]any{"name": "x", "company_id": mine}), 422, "validation_failed")
			if l := e.DoKey(other, "GET", "/v1/companies", nil).List(); len(l) != 0 {
				t.Errorf("other workspace lists %d companies", len(l))
			}
			me := e.DoKey(other, "GET", "/v1/me", nil)
			e.Expect(me, 200, "")
			if ws := me.Data()["workspace"].(map[string]any)["id"]; ws != ows {
				t.Errorf("me: workspace %v, want %s", ws, ows)
			}

			read := e.NewKey(omember, auth.KeyOptions{Access: "read"})
			e.Expect(e.DoKey(read, "GET", "/v1/companies", nil), 200, "")
			e.Expect(e.DoKey(read, "POST", "/v1/companies/query", map[string]any{}), 200, "")
			e.Expect(e.DoKey(read, "POST", "/v1/companies", map[string]any{"name": "x"}), 403, "insufficient_scope")
			scoped := e.NewKey(omember, auth.KeyOptions{Access: "write", Resources: []string{"deals"}})
			e.Expect(e.DoKey(scoped, "GET", "/v1/companies", nil), 403, "insufficient_scope")
			e.Expect(e.DoKey(scoped, "GET", "/v1/deals", nil), 200, "")
			if l := e.DoKey(scoped, "GET", "/v1/resources", nil).List(); len(l) != 1 || l[0]["name"] != "deals" {
				t.Errorf("scoped key lists resources %v", l)
			}
			if err := e.Server.Backend().Members.Deactivate(context.Background(), omember); err != nil {
				t.Fatal(err)
			}
			e.Expect(e.DoKey(read, "GET", "/v1/companies", nil), 401, "invalid_api_key")
			if err := e.Server.Backend().Members.Activate(context.Background(), omember); err != nil {
				t.Fatal(err)
			}
			e.Expect(e.DoKey(read, "GET", "/v1/companies", nil), 401, "invalid_api_key")
		})
	}
}

func TestCatalog(t *testing.T) {
	t.Parallel()
	e := servertest.Start(t, servertest.SQLite, servertest.Options{})
	list := e.Do("GET", "/v1/resources", nil)
	e.Expect(list, 200, "")
	if n := len(list.List()); n != 44 {
		t.Errorf("GET /v1/resources lists %d resources, want 44", n)
	}
	doc := e.Do("GET", "/v1/resources/deals", nil).Data()
	for _, k := range []string{"fields", "required", "sort_keys", "filter_keys", "associations", "operations", "search", "schema"} {
		if doc[k] == nil {
			t.Errorf("deals catalog lacks %s", k)
		}
	}
	sortKeys := map[string]bool{}
	for _, k := range doc["sort_keys"].([]any) {
		sortKeys[k.(string)] = true
	}
	if !sortKeys["amount"] || !sortKeys["created_at"] || sortKeys["description"] {
		t.Errorf("deals sort keys %v", doc["sort_keys"])
	}
	ro := e.Do("GET", "/v1/resources/automations", nil).Data()
	if ops := ro["operations"].([]any); len(ops) != 3 {
		t.Errorf("automations operations %v", ops)
	}
	e.Expect(e.Do("GET", "/v1/resources/data_model_records", nil), 400, "invalid_request")
	e.Expect(e.Do("POST", "/v1/resources", nil), 405, "method_not_allowed")
}

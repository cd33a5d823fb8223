package catalog_test

import (
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/workspace-records/records/engine/access"
	"github.com/workspace-records/records/engine/catalog"
	"github.com/workspace-records/records/engine/model/modeltest"
	"github.com/workspace-records/records/engine/schema"
)

func TestSummary(t *testing.T) {
	cat := modeltest.Shipped(t)
	all := []string{"list", "query", "get", "create", "update", "archive", "restore"}
	for _, tc := range []struct {
		resource   string
		ops        []string
		readOnly   bool
		searchable bool
		scoped     bool
	}{
		{"deals", all, false, true, false},
		{"automations", []string{"list", "query", "get"}, true, true, false},
		{"entity_job_titles", all, false, false, false},
		{"data_model_records", all, false, true, true},
	} {
		r, _ := cat.Resource(tc.resource)
		s := catalog.Summary(r)
		want := map[string]any{
			"name": r.Name, "label": r.Label, "label_plural": r.LabelPlural, "group": r.Group, "description": r.Description,
			"path": "/v1/" + tc.resource, "operations": tc.ops, "read_only": tc.readOnly, "searchable": tc.searchable,
			"model_scoped": tc.scoped, "history_path": "/v1/" + tc.resource + "/{id}/history",
		}
		if !reflect.DeepEqual(s, want) {
			t.Errorf("Summary(%s) =\n%v\nwant\n%v", tc.resource, s, want)
		}
	}
}

func TestField(t *testing.T) {
	cat := modeltest.Shipped(t)
	deals, _ := cat.Resource("deals")
	for _, tc := range []struct {
		key    string
		want   map[string]any // entries checked
		absent []string       // entries that must not be there
	}{
		{"name", map[string]any{"type": "string", "required": true, "writable": true, "read_only": false, "managed": false,
			"sortable": true, "filterable": true, "filter_key": "name", "max_length": 255}, []string{"formula", "target", "options", "default"}},
		{"weighted_amount", map[string]any{"type": "decimal", "writable": false, "read_only": true,
			"formula": "amount * double(probability) / 100.0"}, []string{"max_length"}},
		{"status", map[string]any{"options": []string{"open", "won", "lost"}, "default": "open"}, nil},
		{"company_id", map[string]any{"type": "reference", "target": "companies", "filter_key": "company_id"}, nil},
		{"description", map[string]any{"type": "text", "sortable": false, "filterable": false}, []string{"filter_key"}},
		{"id", map[string]any{"type": "uuid", "managed": true, "writable": false, "read_only": true}, nil},
	} {
		f, ok := deals.Field(tc.key)
		if !ok {
			t.Fatalf("deals has no field %s", tc.key)
		}
		got := catalog.Field(f)
		if got["key"] != tc.key || got["label"] != f.Label {
			t.Errorf("%s: key %v label %v", tc.key, got["key"], got["label"])
		}
		for k, want := range tc.want {
			if !reflect.DeepEqual(got[k], want) {
				t.Errorf("%s: %s = %#v, want %#v", tc.key, k, got[k], want)
			}
		}
		for _, k := range tc.absent {
			if v, ok := got[k]; ok {
				t.Errorf("%s: has %s = %v", tc.key, k, v)
			}
		}
	}
}

// TestDocument renders GET /v1/resources/{resource} for roles of the shipped roles.yaml: what a role
// cannot read is neither sortable, filterable nor searchable for it, and nothing is writable without
// write access.
func TestDocument(t *testing.T) {
	cat := modeltest.Shipped(t)
	sch, err := schema.Compile(cat)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		role, resource string
		rule           string
		visibility     map[string]string // field → visibility
		writable       map[string]bool
		unreadable     []string // not in sort keys or filter keys, no filter_key
		searchable     bool
		schema         bool
	}{
		{"admin", "deals", "all", map[string]string{"amount": "visible", "weighted_amount": "visible"},
			map[string]bool{"amount": true, "weighted_amount": false, "id": false}, nil, true, true},
		{"member", "deals", "owned", map[string]string{"amount": "visible"}, map[string]bool{"amount": true}, nil, true, true},
		{"viewer", "deals", "all", map[string]string{"amount": "hidden", "weighted_amount": "hidden", "name": "visible"},
			map[string]bool{"name": false, "amount": false}, []string{"amount", "weighted_amount"}, true, true},
		{"viewer", "contacts", "all", map[string]string{"email": "masked", "phone": "masked", "first_name": "visible"},
			map[string]bool{"first_name": false}, []string{"email", "phone", "mobile_phone"}, false, true},
		{"member", "companies", "all", map[string]string{"annual_revenue": "masked"},
			map[string]bool{"annual_revenue": false, "name": true}, []string{"annual_revenue"}, true, true},
		{"member", "automations", "all", nil, nil, nil, true, false},
	} {
		t.Run(tc.role+"/"+tc.resource, func(t *testing.T) {
			r, _ := cat.Resource(tc.resource)
			role, _ := cat.Role(tc.role)
			doc := catalog.Document(r, sch.Resource(tc.resource), access.For(role, r, "m", ""), nil)
			// Through JSON, as a client reads it.
			data, err := json.Marshal(doc)
			if err != nil {
				t.Fatal(err)
			}
			var got struct {
				RecordRule string `json:"record_rule"`
				Fields     []struct {
					Key        string  `json:"key"`
					Visibility string  `json:"visibility"`
					Writable   bool    `json:"writable"`
					Sortable   bool    `json:"sortable"`
					Filterable bool    `json:"filterable"`
					FilterKey  *string `json:"filter_key"`
				} `json:"fields"`
				SortKeys   []string `json:"sort_keys"`
				FilterKeys []struct {
					Key string `json:"key"`
				} `json:"filter_keys"`
				Searchable bool            `json:"searchable"`
				Schema     json.RawMessage `json:"schema"`
				Path       string          `json:"path"`
			}
			if err := json.Unmarshal(data, &got); err != nil {
				t.Fatal(err)
			}
			if got.RecordRule != tc.rule || got.Searchable != tc.searchable || got.Path != "/v1/"+tc.resource {
				t.Errorf("record_rule %q searchable %v path %q", got.RecordRule, got.Searchable, got.Path)
			}
			if (got.Schema != nil) != tc.schema {
				t.Errorf("schema present = %v, want %v", got.Schema != nil, tc.schema)
			}
			if len(got.Fields) != len(r.Fields) {
				t.Errorf("%d fields, want %d", len(got.Fields), len(r.Fields))
			}
			for _, f := range got.Fields {
				if want, ok := tc.visibility[f.Key]; ok && f.Visibility != want {
					t.Errorf("%s: visibility %q, want %q", f.Key, f.Visibility, want)
				}
				if want, ok := tc.writable[f.Key]; ok && f.Writable != want {
					t.Errorf("%s: writable %v, want %v", f.Key, f.Writable, want)
				}
				if slices.Contains(tc.unreadable, f.Key) && (f.Sortable || f.Filterable || f.FilterKey != nil) {
					t.Errorf("%s: unreadable but sortable %v filterable %v filter_key %v", f.Key, f.Sortable, f.Filterable, f.FilterKey)
				}
			}
			for _, key := range tc.unreadable {
				if slices.Contains(got.SortKeys, key) {
					t.Errorf("sort_keys has the unreadable %s", key)
				}
				if slices.ContainsFunc(got.FilterKeys, func(f struct {
					Key string `json:"key"`
				}) bool {
					return f.Key == key
				}) {
					t.Errorf("filter_keys has the unreadable %s", key)
				}
			}
		})
	}
}

func TestEncode(t *testing.T) {
	for _, tc := range []struct {
		name    string
		doc     map[string]any
		base    string
		want    string
		wantErr string
	}{
		{"keys sorted, placeholder replaced", map[string]any{"b": 1, "a": []any{map[string]any{"url": catalog.ServerURL}}},
			"http://x:8080", `{"a":[{"url":"http://x:8080"}],"b":1}`, ""},
		{"base JSON-escaped, HTML kept", map[string]any{"u": catalog.ServerURL + "/v1", "h": "<b>&"},
			`http://"q"\`, `{"h":"<b>&","u":"http://\"q\"\\/v1"}`, ""},
		{"placeholder missing", map[string]any{"a": 1}, "", "", "occurs 0 times"},
		{"placeholder twice", map[string]any{"a": catalog.ServerURL, "b": catalog.ServerURL}, "", "", "occurs 2 times"},
		{"not encodable", map[string]any{"a": catalog.ServerURL, "f": func() {}}, "", "", "encode"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			enc, err := catalog.Encode(tc.doc, catalog.ServerURL)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err %v, want one with %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := string(enc.Render(tc.base)); got != tc.want {
				t.Errorf("Render = %s, want %s", got, tc.want)
			}
			if !json.Valid(enc.Render(tc.base)) {
				t.Error("not valid JSON")
			}
		})
	}
}

// TestOpenAPIEncodes: the shipped document has its placeholder exactly once.
func TestOpenAPIEncodes(t *testing.T) {
	cat := modeltest.Shipped(t)
	sch, err := schema.Compile(cat)
	if err != nil {
		t.Fatal(err)
	}
	enc, err := catalog.Encode(catalog.OpenAPI(cat, sch), catalog.ServerURL)
	if err != nil {
		t.Fatal(err)
	}
	body := enc.Render("https://records.example")
	if !json.Valid(body) || !strings.Contains(string(body), `"url":"https://records.example"`) {
		t.Error("the rendered document is not JSON naming the server")
	}
}

package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/url"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/workspace-records/records/runtime/customfields"
	"github.com/workspace-records/records/runtime/server/servertest"
)

// A valid value, a second valid value and an invalid value for each custom field type.
var customCases = []struct {
	typ         string
	options     []string
	target      string
	good, other any
	bad         any
	wantGood    string // JSON of the stored value when it differs from good
}{
	{typ: "text", good: "Gold", other: "Silver", bad: 5},
	{typ: "long_text", good: "A long note.", other: "Another.", bad: true},
	{typ: "integer", good: 42, other: 7, bad: 1.5},
	{typ: "decimal", good: 12.5, other: 0.25, bad: "lots"},
	{typ: "boolean", good: true, other: false, bad: "yes"},
	{typ: "date", good: "2026-03-01", other: "2025-12-31", bad: "2026-02-30"},
	{typ: "datetime", good: "2026-03-01T10:00:00Z", other: "2026-03-02T11:30:00Z", bad: "tomorrow", wantGood: `"2026-03-01T10:00:00.000000Z"`},
	{typ: "select", options: []string{"a", "b"}, good: "a", other: "b", bad: "c"},
	{typ: "multi_select", options: []string{"x", "y", "z"}, good: []string{"x", "z"}, other: []string{"y"}, bad: []string{"w"}},
	{typ: "email", good: "ops@example.com", other: "cfo@example.com", bad: "not-an-email"},
	{typ: "url", good: "https://example.com/a", other: "https://example.com/b", bad: "not a url"},
	{typ: "phone", good: "+1 415-555-0100", other: "+44 20 7946 0000", bad: "call me"},
	{typ: "reference", target: "companies", bad: "0190a6d4-0000-7000-8000-000000000001"},
}

func TestCustomFields(t *testing.T) {
	t.Parallel()
	for _, b := range servertest.Backends {
		t.Run(string(b), func(t *testing.T) {
			t.Parallel()
			e := servertest.Start(t, b, servertest.Options{})
			reg := e.Server.Backend().Current().Custom
			ctx := context.Background()
			c1 := e.Do("POST", "/v1/companies", map[string]any{"name": "Target one"}).Data()["id"].(string)
			c2 := e.Do("POST", "/v1/companies", map[string]any{"name": "Target two"}).Data()["id"].(string)
			for _, c := range customCases {
				c := c
				if c.typ == "reference" {
					c.good, c.other = c1, c2
				}
				key := "cf_" + c.typ
				d, err := reg.Create(ctx, e.Workspace, customfields.Def{Resource: "deals", Key: key, Type: c.typ, Options: c.options, Target: c.target})
				if err != nil {
					t.Fatal(err)
				}
				t.Run(c.typ, func(t *testing.T) {
					// Top-level cf__<key> form.
					res := e.Do("POST", "/v1/deals", map[string]any{"name": "Deal " + c.typ, "cf__" + key: c.good})
					e.Expect(res, 201, "")
					got, _ := json.Marshal(res.Data()["custom_fields"].(map[string]any)[key])
					want, _ := json.Marshal(c.good)
					if c.wantGood != "" {
						want = []byte(c.wantGood)
					}
					if string(got) != string(want) {
						t.Errorf("created with %s, read back %s", want, got)
					}
					id := res.Data()["id"].(string)
					// custom_fields object form on update.
					upd := e.Do("PATCH", "/v1/deals/"+id, map[string]any{"custom_fields": map[string]any{key: c.other}})
					e.Expect(upd, 200, "")
					got, _ = json.Marshal(upd.Data()["custom_fields"].(map[string]any)[key])
					want, _ = json.Marshal(c.other)
					if c.typ != "datetime" && string(got) != string(want) {
						t.Errorf("updated to %s, read back %s", want, got)
					}
					if g := e.Do("GET", "/v1/deals/"+id, nil).Data()["custom_fields"].(map[string]any)[key]; g == nil {
						t.Errorf("get lost the value")
					}
					// Filter by the filter key (cfv:<id>), never by the write key.
					found := func(op string, v any) bool {
						filter, _ := json.Marshal([]any{map[string]any{"field": d.FilterKey(), "op": op, "value": v}})
						res := e.Do("GET", "/v1/deals?page_size=100&filter="+url.QueryEscape(string(filter)), nil)
						e.Expect(res, 200, "")
						for _, rec := range res.List() {
							if rec["id"] == id {
								return true
							}
						}
						return false
					}
					if c.typ == "multi_select" {
						if !found("contains", "y") || found("contains", "x") || found("is_empty", nil) || !found("is_not_empty", nil) {
							t.Errorf("multi_select filters wrong")
						}
					} else {
						if !found("eq", c.other) || found("eq", c.good) || !found("is_not_empty", nil) || found("is_empty", nil) || (c.typ != "boolean" && !found("in", []any{c.good, c.other})) {
							t.Errorf("%s: eq/in filters wrong", c.typ)
						}
						if c.typ == "integer" && (!found("gt", 5) || found("gt", 7) || !found("lte", 7)) {
							t.Errorf("integer range filters wrong")
						}
						if c.typ == "decimal" && (!found("lt", 1) || found("gt", 1)) {
							t.Errorf("decimal range filters wrong")
						}
						if c.typ == "date" && (!found("lt", "2026-01-01") || found("gte", "2026-01-01")) {
							t.Errorf("date range filters wrong")
						}
						if c.typ == "text" && (!found("contains", "ilv") || !found("starts_with", "sil") || found("ne", c.other)) {
							t.Errorf("text filters wrong")
						}
					}
					for _, wrong := range []string{key, "cf__" + key} {
						filter, _ := json.Marshal([]any{map[string]any{"field": wrong, "op": "eq", "value": c.other}})
						e.Expect(e.Do("GET", "/v1/deals?filter="+url.QueryEscape(string(filter)), nil), 400, "invalid_request")
					}
					// Both forms at once, and type errors.
					e.Expect(e.Do("POST", "/v1/deals", map[string]any{"name": "x", "cf__" + key: c.good, "custom_fields": map[string]any{key: c.good}}), 422, "validation_failed")
					res = e.Do("POST", "/v1/deals", map[string]any{"name": "x", "cf__" + key: c.bad})
					e.Expect(res, 422, "validation_failed")
					if !containsField(res, "cf__"+key) {
						t.Errorf("error does not name cf__%s as sent: %s", key, res.Raw)
					}
					res = e.Do("POST", "/v1/deals", map[string]any{"name": "x", "custom_fields": map[string]any{key: c.bad}})
					e.Expect(res, 422, "validation_failed")
					if !containsField(res, "custom_fields."+key) {
						t.Errorf("error does not name custom_fields.%s as sent: %s", key, res.Raw)
					}
					// Clearing with null.
					cleared := e.Do("PATCH", "/v1/deals/"+id, map[string]any{"cf__" + key: nil})
					if _, present := cleared.Data()["custom_fields"].(map[string]any)[key]; present {
						t.Errorf("null did not clear the value: %s", cleared.Raw)
					}
				})
			}
			// The catalog lists custom fields with write and filter keys.
			doc := e.Do("GET", "/v1/resources/deals", nil).Data()
			list := doc["custom_fields"].([]any)
			if len(list) != len(customCases) {
				t.Fatalf("catalog lists %d custom fields, want %d", len(list), len(customCases))
			}
			first := list[0].(map[string]any)
			if first["write_key"] == nil || fmt.Sprint(first["filter_key"])[:4] != "cfv:" || first["filter_key"] == first["write_key"] {
				t.Errorf("catalog entry %v", first)
			}
			// Unknown custom field, and a custom field of another resource.
			e.Expect(e.Do("POST", "/v1/deals", map[string]any{"name": "x", "cf__nope": 1}), 422, "validation_failed")
			e.Expect(e.Do("POST", "/v1/companies", map[string]any{"name": "x", "cf__cf_text": "a"}), 422, "validation_failed")
		})
	}
}

func containsField(res *servertest.Response, name string) bool {
	e, _ := res.Body["error"].(map[string]any)
	d, _ := e["details"].(map[string]any)
	list, _ := d["errors"].([]any)
	for _, x := range list {
		if m, _ := x.(map[string]any); m["field"] == name {
			return true
		}
	}
	return false
}

// Required custom fields are required on create; archiving a definition hides it and keeps the values.
func TestCustomFieldLifecycle(t *testing.T) {
	t.Parallel()
	e := servertest.Start(t, servertest.SQLite, servertest.Options{})
	reg := e.Server.Backend().Current().Custom
	ctx := context.Background()
	d, err := reg.Create(ctx, e.Workspace, customfields.Def{Resource: "contacts", Key: "tier", Type: "select", Options: []string{"gold", "silver"}, Required: true})
	if err != nil {
		t.Fatal(err)
	}
	res := e.Do("POST", "/v1/contacts", map[string]any{"last_name": "Lee"})
	e.Expect(res, 422, "validation_failed")
	if !containsField(res, "custom_fields.tier") {
		t.Errorf("missing required custom field not named: %s", res.Raw)
	}
	id := e.Do("POST", "/v1/contacts", map[string]any{"last_name": "Lee", "cf__tier": "gold"}).Data()["id"].(string)
	yes := true
	if _, err := reg.Update(ctx, d.ID, customfields.Change{Archived: &yes}); err != nil {
		t.Fatal(err)
	}
	if cf := e.Do("GET", "/v1/contacts/"+id, nil).Data()["custom_fields"].(map[string]any); len(cf) != 0 {
		t.Errorf("archived field still shown: %v", cf)
	}
	e.Expect(e.Do("POST", "/v1/contacts", map[string]any{"last_name": "Kim"}), 201, "")
	no := false
	if _, err := reg.Update(ctx, d.ID, customfields.Change{Archived: &no}); err != nil {
		t.Fatal(err)
	}
	if cf := e.Do("GET", "/v1/contacts/"+id, nil).Data()["custom_fields"].(map[string]any); cf["tier"] != "gold" {
		t.Errorf("value lost across archive and restore: %v", cf)
	}
	for _, bad := range []customfields.Def{
		{Resource: "contacts", Key: "tier", Type: "text"},
		{Resource: "automations", Key: "x", Type: "text"},
		{Resource: "contacts", Key: "Bad Key", Type: "text"},
		{Resource: "contacts", Key: "s", Type: "select"},
		{Resource: "contacts", Key: "r", Type: "reference", Target: "nope"},
		{Resource: "contacts", Key: "q", Type: "float"},
	} {
		if _, err := reg.Create(ctx, e.Workspace, bad); err == nil {
			t.Errorf("accepted %+v", bad)
		}
	}
}

// Long custom values (long text, long URLs) exceed what a B-tree index entry holds; they are stored,
// read back whole and filtered exactly, never refused with a 500.
func TestLongCustomValues(t *testing.T) {
	t.Parallel()
	for _, b := range servertest.Backends {
		t.Run(string(b), func(t *testing.T) {
			t.Parallel()
			e := servertest.Start(t, b, servertest.Options{})
			reg := e.Server.Backend().Current().Custom
			d, err := reg.Create(context.Background(), e.Workspace, customfields.Def{Resource: "deals", Key: "notes", Type: "long_text"})
			if err != nil {
				t.Fatal(err)
			}
			// Incompressible text: a compressible one would fit an index entry after compression.
			rnd := rand.New(rand.NewPCG(1, 2))
			noise := func(n int) string {
				b := make([]byte, n)
				for i := range b {
					b[i] = "abcdefghijklmnopqrstuvwxyz ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"[rnd.IntN(63)]
				}
				return string(b)
			}
			a, bb := noise(50000)+" needle", noise(50000)+" other"
			// Same first 2,097 bytes, 700 characters: longer than any indexed prefix, short enough to filter by.
			c, dd := strings.Repeat("€", 700), strings.Repeat("€", 699)+"x"
			for name, v := range map[string]string{"A": a, "B": bb, "C": c, "D": dd} {
				e.Expect(e.Do("POST", "/v1/deals", map[string]any{"name": name, "cf__notes": v}), 201, "")
			}
			names := func(op string, v any) string {
				res := e.Do("POST", "/v1/deals/query", map[string]any{"sort": "name", "order": "asc", "filters": []any{map[string]any{"field": d.FilterKey(), "op": op, "value": v}}})
				if res.Status != 200 {
					t.Errorf("%s: status %d %s", op, res.Status, res.Code())
					return ""
				}
				var out []string
				for _, rec := range res.List() {
					out = append(out, fmt.Sprint(rec["name"]))
					if rec["name"] == "A" && rec["custom_fields"].(map[string]any)["notes"] != a {
						t.Errorf("A read back changed")
					}
				}
				return strings.Join(out, "")
			}
			for _, c := range []struct {
				op   string
				v    any
				want string
			}{
				{"contains", "NEEDLE", "A"},
				{"not_contains", "needle", "BCD"},
				{"eq", c, "C"},
				{"ne", c, "ABD"},
				{"in", []any{dd, "x"}, "D"},
				{"not_in", []any{dd, c}, "AB"},
				{"starts_with", "€€€", "CD"},
				{"is_not_empty", nil, "ABCD"},
			} {
				if got := names(c.op, c.v); got != c.want {
					t.Errorf("%s: %s, want %s", c.op, got, c.want)
				}
			}
		})
	}
}

// Custom fields sort like declared fields: cursor walks and pages in both orders, ties broken by id,
// records without a value last in both orders; unsortable types are refused.
func TestCustomFieldSort(t *testing.T) {
	t.Parallel()
	for _, b := range servertest.Backends {
		t.Run(string(b), func(t *testing.T) {
			t.Parallel()
			e := servertest.Start(t, b, servertest.Options{})
			reg := e.Server.Backend().Current().Custom
			ctx := context.Background()
			values := map[string][]any{
				"integer":  {5, -2, 5, nil, 40, 0, nil},
				"decimal":  {2.5, 10, -0.75, 2.5, nil, 1e6, 3},
				"text":     {"pear", "apple", nil, "fig", "apple", "kiwi", nil},
				"date":     {"2026-03-01", nil, "2025-12-31", "2026-03-01", "2027-01-01", nil, "2000-02-29"},
				"datetime": {"2026-03-01T10:00:00Z", "2026-03-01T09:59:59.5Z", nil, "2026-03-01T10:00:00+02:00", nil, "1999-12-31T23:59:59Z", "2026-03-01T10:00:00Z"},
				"boolean":  {true, false, nil, true, false, nil, true},
			}
			defs := map[string]*customfields.Def{}
			for typ := range values {
				d, err := reg.Create(ctx, e.Workspace, customfields.Def{Resource: "deals", Key: "s_" + typ, Type: typ})
				if err != nil {
					t.Fatal(err)
				}
				defs[typ] = d
			}
			ids := make([]string, 7)
			for i := range ids {
				body := map[string]any{"name": "Sort me"}
				for typ, vs := range values {
					if vs[i] != nil {
						body["cf__s_"+typ] = vs[i]
					}
				}
				res := e.Do("POST", "/v1/deals", body)
				e.Expect(res, 201, "")
				ids[i] = res.Data()["id"].(string)
			}
			e.Expect(e.Do("POST", "/v1/deals", map[string]any{"name": "Other"}), 201, "")
			filter := url.QueryEscape(`[{"field":"name","op":"eq","value":"Sort me"}]`)
			for typ, vs := range values {
				d := defs[typ]
				for _, desc := range []bool{false, true} {
					order := "asc"
					if desc {
						order = "desc"
					}
					// The expected order, computed here from the values written.
					want := make([]int, len(ids))
					for i := range want {
						want[i] = i
					}
					// Records without a value come last in both orders.
					sort.SliceStable(want, func(x, y int) bool {
						i, j := want[x], want[y]
						if (vs[i] == nil) != (vs[j] == nil) {
							return vs[j] == nil
						}
						c := 0
						if vs[i] != nil {
							c = compareValues(vs[i], vs[j])
						}
						if c == 0 {
							c = strings.Compare(ids[i], ids[j])
						}
						if desc {
							return c > 0
						}
						return c < 0
					})
					var wantIDs []string
					for _, i := range want {
						wantIDs = append(wantIDs, ids[i])
					}
					var walked, paged []string
					cursor := "start"
					for n := 0; cursor != "" && n < 20; n++ {
						res := e.Do("GET", "/v1/deals?page_size=2&sort="+d.FilterKey()+"&order="+order+"&filter="+filter+"&cursor="+url.QueryEscape(cursor), nil)
						e.Expect(res, 200, "")
						for _, rec := range res.List() {
							walked = append(walked, rec["id"].(string))
						}
						cursor, _ = res.Body["meta"].(map[string]any)["next_cursor"].(string)
					}
					for page := 1; page <= 4; page++ {
						res := e.Do("GET", fmt.Sprintf("/v1/deals?page_size=2&page=%d&sort=%s&order=%s&filter=%s", page, d.FilterKey(), order, filter), nil)
						e.Expect(res, 200, "")
						for _, rec := range res.List() {
							paged = append(paged, rec["id"].(string))
						}
					}
					if strings.Join(walked, " ") != strings.Join(wantIDs, " ") {
						t.Errorf("%s %s cursor walk:\n got %v\nwant %v", typ, order, walked, wantIDs)
					}
					if strings.Join(paged, " ") != strings.Join(wantIDs, " ") {
						t.Errorf("%s %s pages:\n got %v\nwant %v", typ, order, paged, wantIDs)
					}
				}
			}
			// The catalog names the sort keys; unsortable types and write keys are refused.
			doc := e.Do("GET", "/v1/resources/deals", nil).Data()
			if !strings.Contains(fmt.Sprint(doc["sort_keys"]), defs["integer"].FilterKey()) {
				t.Errorf("sort_keys lacks the custom field: %v", doc["sort_keys"])
			}
			ms, err := reg.Create(ctx, e.Workspace, customfields.Def{Resource: "deals", Key: "s_multi", Type: "multi_select", Options: []string{"a"}})
			if err != nil {
				t.Fatal(err)
			}
			e.Expect(e.Do("GET", "/v1/deals?sort="+ms.FilterKey(), nil), 400, "invalid_request")
			e.Expect(e.Do("GET", "/v1/deals?sort=cf__s_integer", nil), 400, "invalid_request")
		})
	}
}

// compareValues orders two non-null JSON values of one custom field type.
func compareValues(a, b any) int {
	switch x := a.(type) {
	case int:
		return cmpOrdered(float64(x), toFloat(b))
	case float64:
		return cmpOrdered(x, toFloat(b))
	case bool:
		return cmpOrdered(fmt.Sprint(x), fmt.Sprint(b))
	case string:
		if ta, err := time.Parse(time.RFC3339Nano, x); err == nil {
			tb, _ := time.Parse(time.RFC3339Nano, b.(string))
			return ta.Compare(tb)
		}
		return strings.Compare(x, b.(string))
	}
	panic(fmt.Sprintf("compareValues %T", a))
}

func toFloat(v any) float64 {
	switch x := v.(type) {
	case int:
		return float64(x)
	case float64:
		return x
	}
	panic(fmt.Sprintf("toFloat %T", v))
}

func cmpOrdered[T int | float64 | string](a, b T) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

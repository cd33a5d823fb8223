package server_test

// Filter trees (README "Filters"): nested groups and paths across references and associations.

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/workspace-records/records/engine/listplan"
	"github.com/workspace-records/records/runtime/auth"
	"github.com/workspace-records/records/runtime/customfields"
	"github.com/workspace-records/records/runtime/server/servertest"
)

// propertyFields are the deal fields the property test filters on, with the values records hold (nil
// is an empty value) and the operands filters use.
var propertyFields = map[string][]any{
	"name":                {"Alpha", "alpha beta", "Beta", "Gamma ray", "delta"},
	"amount":              {nil, 0.0, 100.0, 2500.5, 10000.0},
	"probability":         {nil, 0.0, 10.0, 50.0, 90.0},
	"close_date":          {nil, "2026-01-01", "2026-03-15", "2026-12-31"},
	"status":              {"open", "won", "lost"},
	"expected_close_date": {nil, "2026-06-30"},
}

// operand returns a JSON operand for field key from its domain (never nil).
func operand(rng *rand.Rand, key string) any {
	dom := propertyFields[key]
	for {
		v := dom[rng.IntN(len(dom))]
		switch x := v.(type) {
		case nil:
			continue
		case float64:
			return json.Number(strconv.FormatFloat(x, 'f', -1, 64))
		case string:
			if key == "name" && rng.IntN(3) == 0 {
				return strings.ToLower(x[:1+rng.IntN(len(x)-1)]) // a fragment, for contains and starts_with
			}
			return x
		}
	}
}

// randomTree returns a random filter tree of depth at most depth groups below the top level.
func randomTree(rng *rand.Rand, ops map[string][]string, depth int, conds *int) []any {
	n := 1 + rng.IntN(3)
	items := make([]any, 0, n)
	keys := make([]string, 0, len(propertyFields))
	for k := range propertyFields {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for range n {
		if depth > 0 && rng.IntN(2) == 0 && *conds < listplan.MaxFilters-8 {
			join := []string{"and", "or"}[rng.IntN(2)]
			items = append(items, map[string]any{"join": join, "filters": randomTree(rng, ops, depth-1, conds)})
			continue
		}
		*conds++
		key := keys[rng.IntN(len(keys))]
		op := ops[key][rng.IntN(len(ops[key]))]
		item := map[string]any{"field": key, "op": op}
		switch op {
		case "is_empty", "is_not_empty":
		case "in", "not_in":
			vals := []any{operand(rng, key)}
			if rng.IntN(2) == 0 {
				vals = append(vals, operand(rng, key))
			}
			item["value"] = vals
		default:
			item["value"] = operand(rng, key)
		}
		items = append(items, item)
	}
	return items
}

// holds evaluates a filter tree on one record's values as README "Filters" defines the operators.
func holds(rec map[string]any, items []any, or bool) bool {
	if len(items) == 0 {
		return true
	}
	for _, raw := range items {
		it := raw.(map[string]any)
		var ok bool
		if sub, isGroup := it["filters"]; isGroup {
			ok = holds(rec, sub.([]any), it["join"] == "or")
		} else {
			ok = condition(rec[it["field"].(string)], it["op"].(string), it["value"])
		}
		if or && ok {
			return true
		}
		if !or && !ok {
			return false
		}
	}
	return !or
}

func condition(v any, op string, operand any) bool {
	empty := v == nil || v == ""
	cmp := func(x any) int {
		switch y := x.(type) {
		case json.Number:
			f, _ := y.Float64()
			a := v.(float64)
			switch {
			case a < f:
				return -1
			case a > f:
				return 1
			}
			return 0
		}
		return strings.Compare(v.(string), x.(string))
	}
	in := func() bool {
		for _, x := range operand.([]any) {
			if cmp(x) == 0 {
				return true
			}
		}
		return false
	}
	lower := func() (string, string) { return strings.ToLower(fmt.Sprint(v)), strings.ToLower(operand.(string)) }
	switch op {
	case "is_empty":
		return empty
	case "is_not_empty":
		return !empty
	case "ne":
		return v == nil || cmp(operand) != 0
	case "not_in":
		return v == nil || !in()
	case "not_contains":
		if v == nil {
			return true
		}
		s, sub := lower()
		return !strings.Contains(s, sub)
	}
	if v == nil {
		return false
	}
	switch op {
	case "eq":
		return cmp(operand) == 0
	case "lt":
		return cmp(operand) < 0
	case "lte":
		return cmp(operand) <= 0
	case "gt":
		return cmp(operand) > 0
	case "gte":
		return cmp(operand) >= 0
	case "in":
		return in()
	case "contains":
		s, sub := lower()
		return strings.Contains(s, sub)
	case "starts_with":
		s, sub := lower()
		return strings.HasPrefix(s, sub)
	}
	panic("unknown op " + op)
}

// TestFilterGroupsProperty: random filter trees nested up to four groups deep over seeded deals select
// exactly the deals the same predicate selects evaluated in Go (the returned rows and the excluded ones),
// and count=exact counts them.
func TestFilterGroupsProperty(t *testing.T) {
	t.Parallel()
	for _, b := range servertest.Backends {
		t.Run(string(b), func(t *testing.T) {
			t.Parallel()
			e := servertest.Start(t, b, servertest.Options{})
			e.Contract()
			rng := rand.New(rand.NewPCG(23, uint64(len(b))))
			// The operators each field takes, from the field catalog.
			ops := map[string][]string{}
			cat := e.Do("GET", "/v1/resources/deals", nil)
			e.Expect(cat, 200, "")
			for _, raw := range cat.Data()["filter_keys"].([]any) {
				fk := raw.(map[string]any)
				if _, ok := propertyFields[fk["key"].(string)]; ok {
					for _, op := range fk["ops"].([]any) {
						ops[fk["key"].(string)] = append(ops[fk["key"].(string)], op.(string))
					}
				}
			}
			if len(ops) != len(propertyFields) {
				t.Fatalf("filter keys: %v", ops)
			}
			// The deals keep the shipped rules: a won or lost deal has a close date, a lost one a loss reason
			// (a field the trees do not filter on).
			reason := e.Do("POST", "/v1/loss_reasons", map[string]any{"name": "Price"})
			e.Expect(reason, 201, "")
			values := map[string]map[string]any{}
			for i := range 30 {
				rec := map[string]any{}
				body := map[string]any{}
				for key, dom := range propertyFields {
					v := dom[(i*7+len(key)*i/3+len(key))%len(dom)]
					if rng.IntN(4) == 0 {
						v = dom[rng.IntN(len(dom))]
					}
					rec[key] = v
					if f, ok := v.(float64); ok {
						body[key] = json.Number(strconv.FormatFloat(f, 'f', -1, 64))
					} else {
						body[key] = v
					}
				}
				if rec["status"] != "open" && rec["close_date"] == nil {
					rec["close_date"], body["close_date"] = "2026-03-15", "2026-03-15"
				}
				if rec["status"] == "lost" {
					body["loss_reason_id"] = reason.Data()["id"]
				}
				res := e.Do("POST", "/v1/deals", body)
				e.Expect(res, 201, "")
				values[res.Data()["id"].(string)] = rec
			}
			split := 0 // trees that select some records but not all
			for i := range 150 {
				conds := 0
				tree := randomTree(rng, ops, listplan.MaxFilterDepth, &conds)
				join := []string{"and", "or"}[rng.IntN(2)]
				var want []string
				for id, rec := range values {
					if holds(rec, tree, join == "or") {
						want = append(want, id)
					}
				}
				slices.Sort(want)
				var res *servertest.Response
				if i%2 == 0 {
					res = e.Do("POST", "/v1/deals/query", map[string]any{"filters": tree, "join": join, "page_size": 100, "count": "exact"})
				} else {
					data, _ := json.Marshal(tree)
					res = e.Do("GET", "/v1/deals?page_size=100&count=exact&join="+join+"&filter="+url.QueryEscape(string(data)), nil)
				}
				e.Expect(res, 200, "")
				var got []string
				for _, r := range res.List() {
					got = append(got, r["id"].(string))
				}
				slices.Sort(got)
				if !slices.Equal(got, want) {
					data, _ := json.Marshal(tree)
					t.Fatalf("tree %d (join %s) %s:\ngot  %d %v\nwant %d %v", i, join, data, len(got), got, len(want), want)
				}
				if n, ok, _ := totalOf(t, res); !ok || n != len(want) {
					t.Fatalf("tree %d: count=exact %d, want %d", i, n, len(want))
				}
				if len(want) > 0 && len(want) < len(values) {
					split++
				}
			}
			if split < 50 {
				t.Errorf("only %d of 150 trees split the records: the property says little", split)
			}
			t.Logf("%d of 150 trees split the records", split)
		})
	}
}

// TestFilterGroupsCursor: a cursor is bound to the whole filter tree; editing a nested item after the
// first page refuses it, and the unchanged tree walks on.
func TestFilterGroupsCursor(t *testing.T) {
	t.Parallel()
	for _, b := range servertest.Backends {
		t.Run(string(b), func(t *testing.T) {
			t.Parallel()
			e := servertest.Start(t, b, servertest.Options{})
			e.Contract()
			for i := range 6 {
				e.Expect(e.Do("POST", "/v1/deals", map[string]any{"name": fmt.Sprintf("Walk %d", i), "probability": i * 10}), 201, "")
			}
			tree := func(v int) []any {
				return []any{map[string]any{"field": "name", "op": "starts_with", "value": "Walk"},
					map[string]any{"join": "or", "filters": []any{
						map[string]any{"field": "probability", "op": "gte", "value": 0},
						map[string]any{"filters": []any{map[string]any{"field": "probability", "op": "lt", "value": v}}},
					}}}
			}
			first := e.Do("POST", "/v1/deals/query", map[string]any{"filters": tree(5), "cursor": "start", "page_size": 2})
			e.Expect(first, 200, "")
			next := first.NextCursor()
			if next == "" {
				t.Fatal("no next cursor")
			}
			e.Expect(e.Do("POST", "/v1/deals/query", map[string]any{"filters": tree(5), "cursor": next, "page_size": 2}), 200, "")
			res := e.Do("POST", "/v1/deals/query", map[string]any{"filters": tree(6), "cursor": next, "page_size": 2})
			e.Expect(res, 400, "invalid_request")
			data, _ := json.Marshal(tree(6))
			e.Expect(e.Do("GET", "/v1/deals?page_size=2&cursor="+url.QueryEscape(next)+"&filter="+url.QueryEscape(string(data)), nil), 400, "invalid_request")
		})
	}
}

// TestFilterGroupsRefused: bad trees are 400 invalid_request naming the item, never a 500.
func TestFilterGroupsRefused(t *testing.T) {
	t.Parallel()
	for _, b := range servertest.Backends {
		t.Run(string(b), func(t *testing.T) {
			t.Parallel()
			e := servertest.Start(t, b, servertest.Options{})
			won := map[string]any{"field": "status", "op": "eq", "value": "won"}
			nested := func(n int) any {
				deep := any(won)
				for range n {
					deep = map[string]any{"filters": []any{deep}}
				}
				return deep
			}
			wide := make([]any, 300)
			for i := range wide {
				wide[i] = map[string]any{"filters": []any{won, won}}
			}
			for name, c := range map[string]struct {
				filters any
				field   string
			}{
				"too deep": {[]any{nested(listplan.MaxFilterDepth + 2)}, "filters[0].filters[0].filters[0].filters[0].filters[0]"},
				// Past the JSON nesting bound, the decoder refuses the body or parameter before the planner.
				"far too deep": {[]any{nested(40)}, ""},
				"too many":     {wide, "filters"},
				"empty group":  {[]any{map[string]any{"join": "or", "filters": []any{}}}, "filters[0].filters"},
				"nested op":    {[]any{won, map[string]any{"filters": []any{won, map[string]any{"field": "status", "op": "gt", "value": 1}}}}, "filters[1].filters[1].op"},
				"nested type":  {[]any{map[string]any{"filters": []any{"status"}}}, "filters[0].filters[0]"},
				"bad join":     {[]any{map[string]any{"join": []any{}, "filters": []any{won}}}, "filters[0].join"},
				"group member": {[]any{map[string]any{"filters": []any{won}, "op": "eq"}}, "filters[0].op"},
			} {
				for _, get := range []bool{false, true} {
					var res *servertest.Response
					if get {
						data, _ := json.Marshal(c.filters)
						res = e.Do("GET", "/v1/deals?filter="+url.QueryEscape(string(data)), nil)
					} else {
						res = e.Do("POST", "/v1/deals/query", map[string]any{"filters": c.filters})
					}
					e.Expect(res, 400, "invalid_request")
					if c.field != "" && !strings.Contains(string(res.Raw), `"field":"`+c.field+`"`) {
						t.Errorf("%s (GET %v): the error does not name %s: %s", name, get, c.field, res.Raw)
					}
				}
			}
		})
	}
}

// ids returns the ids of a list response, sorted.
func ids(res *servertest.Response) []string {
	var out []string
	for _, r := range res.List() {
		out = append(out, r["id"].(string))
	}
	slices.Sort(out)
	return out
}

func sorted(s ...string) []string {
	out := slices.Clone(s)
	slices.Sort(out)
	return out
}

// filtered lists path with the filter tree as the key, by the URL parameter and by a query body, checks
// both give the same records and count=exact counts them, and returns their ids.
func filtered(t *testing.T, e *servertest.Env, key, resource string, filters []any) []string {
	t.Helper()
	data, _ := json.Marshal(filters)
	get := e.DoKey(key, "GET", "/v1/"+resource+"?page_size=100&count=exact&filter="+url.QueryEscape(string(data)), nil)
	e.Expect(get, 200, "")
	post := e.DoKey(key, "POST", "/v1/"+resource+"/query", map[string]any{"filters": filters, "page_size": 100})
	e.Expect(post, 200, "")
	got := ids(get)
	if !slices.Equal(got, ids(post)) {
		t.Fatalf("%s %s: GET %v, query %v", resource, data, got, ids(post))
	}
	if n, ok, _ := totalOf(t, get); !ok || n != len(got) {
		t.Fatalf("%s %s: count %d, %d records", resource, data, n, len(got))
	}
	return got
}

func cond(field, op string, v any) map[string]any {
	m := map[string]any{"field": field, "op": op}
	if v != nil {
		m["value"] = v
	}
	return m
}

// TestFilterPaths: conditions across a reference (company.billing_city) and an association
// (contacts.email, companies.…, deals.…), on custom fields of the target too, with the target's record
// rule, masks and the key's allowlist holding: README "Filters".
func TestFilterPaths(t *testing.T) {
	t.Parallel()
	for _, b := range servertest.Backends {
		t.Run(string(b), func(t *testing.T) {
			t.Parallel()
			e := servertest.Start(t, b, servertest.Options{})
			e.Contract()
			create := func(key, resource string, body map[string]any) string {
				t.Helper()
				res := e.DoKey(key, "POST", "/v1/"+resource, body)
				e.Expect(res, 201, "")
				return res.Data()["id"].(string)
			}
			admin := e.Key
			berlin := create(admin, "companies", map[string]any{"name": "Berlin Co", "billing_city": "Berlin"})
			paris := create(admin, "companies", map[string]any{"name": "Paris Co", "billing_city": "Paris"})
			nowhere := create(admin, "companies", map[string]any{"name": "Nowhere Co"})
			gone := create(admin, "companies", map[string]any{"name": "Gone Co", "billing_city": "Berlin"})
			d1 := create(admin, "deals", map[string]any{"name": "D1", "company_id": berlin})
			d2 := create(admin, "deals", map[string]any{"name": "D2", "company_id": paris})
			d3 := create(admin, "deals", map[string]any{"name": "D3"})
			d4 := create(admin, "deals", map[string]any{"name": "D4", "company_id": gone})
			d5 := create(admin, "deals", map[string]any{"name": "D5", "company_id": nowhere})
			e.Expect(e.Do("DELETE", "/v1/companies/"+gone, nil), 200, "")
			c1 := create(admin, "contacts", map[string]any{"last_name": "One", "email": "one@x.example"})
			c2 := create(admin, "contacts", map[string]any{"last_name": "Two", "email": "two@x.example"})
			c3 := create(admin, "contacts", map[string]any{"last_name": "Three"})
			e.Expect(e.Do("PUT", "/v1/contacts/"+c1+"/companies/"+berlin, nil), 200, "")
			e.Expect(e.Do("PUT", "/v1/contacts/"+c2+"/companies/"+paris, nil), 200, "")
			e.Expect(e.Do("PUT", "/v1/contacts/"+c3+"/companies/"+gone, nil), 200, "")
			e.Expect(e.Do("PUT", "/v1/deals/"+d1+"/contacts/"+c1, nil), 200, "")
			e.Expect(e.Do("PUT", "/v1/deals/"+d1+"/contacts/"+c2, nil), 200, "")
			e.Expect(e.Do("PUT", "/v1/deals/"+d2+"/contacts/"+c3, nil), 200, "")
			e.Expect(e.Do("PUT", "/v1/companies/"+berlin+"/deals/"+d1, nil), 200, "")
			e.Expect(e.Do("PUT", "/v1/companies/"+paris+"/deals/"+d3, nil), 200, "")

			check := func(key, resource string, filters []any, want ...string) {
				t.Helper()
				if got := filtered(t, e, key, resource, filters); !slices.Equal(got, sorted(want...)) {
					data, _ := json.Marshal(filters)
					t.Errorf("%s %s: got %v, want %v", resource, data, got, sorted(want...))
				}
			}
			// Across a reference: the referenced active record matches; negative operators are the target
			// field's (an empty city is not Berlin), and a deal without a company (or with an archived one)
			// never matches.
			check(admin, "deals", []any{cond("company.billing_city", "eq", "Berlin")}, d1)
			check(admin, "deals", []any{cond("company.billing_city", "ne", "Berlin")}, d2, d5)
			check(admin, "deals", []any{cond("company.billing_city", "is_empty", nil)}, d5)
			check(admin, "deals", []any{cond("company_id", "eq", gone)}, d4) // the reference itself still filters
			check(admin, "deals", []any{cond("company.billing_city", "not_in", []any{"Paris"})}, d1, d5)
			check(admin, "deals", []any{map[string]any{"join": "or", "filters": []any{cond("company.name", "starts_with", "paris"), cond("name", "eq", "D3")}}}, d2, d3)
			// Across associations: at least one linked active record matches.
			check(admin, "deals", []any{cond("contacts.email", "eq", "two@x.example")}, d1)
			check(admin, "deals", []any{cond("contacts.email", "is_empty", nil)}, d2)
			check(admin, "deals", []any{cond("contacts.email", "ne", "one@x.example")}, d1, d2)
			check(admin, "contacts", []any{cond("companies.billing_city", "eq", "Berlin")}, c1) // c3's company is archived
			check(admin, "contacts", []any{cond("deals.name", "in", []any{"D1", "D2"})}, c1, c2, c3)
			check(admin, "companies", []any{cond("contacts.last_name", "eq", "Two")}, paris)
			check(admin, "companies", []any{cond("deals.name", "eq", "D1"), cond("contacts.email", "eq", "one@x.example")}, berlin)
			check(admin, "companies", []any{cond("deals.name", "ne", "D1")}, paris)
			check(admin, "deals", []any{cond("companies.name", "eq", "Paris Co")}, d3) // the association, not company_id

			// A custom field of the target.
			def, err := e.Server.Backend().Current().Custom.Create(context.Background(), e.Workspace, customfields.Def{Resource: "companies", Key: "tier", Type: "text"})
			if err != nil {
				t.Fatal(err)
			}
			e.Expect(e.Do("PATCH", "/v1/companies/"+paris, map[string]any{"custom_fields": map[string]any{"tier": "Gold"}}), 200, "")
			check(admin, "deals", []any{cond("company."+def.FilterKey(), "eq", "Gold")}, d2)
			check(admin, "contacts", []any{cond("companies."+def.FilterKey(), "is_not_empty", nil)}, c2)

			// A member sees only the deals it owns: a path to deals matches through those only.
			memberID := e.NewMember("m@x.example", "member", "")
			member := e.NewKey(memberID, auth.KeyOptions{Access: "write"})
			mine := create(member, "deals", map[string]any{"name": "D1", "company_id": paris})
			e.Expect(e.DoKey(member, "PUT", "/v1/deals/"+mine+"/contacts/"+c3, nil), 200, "")
			check(member, "contacts", []any{cond("deals.name", "eq", "D1")}, c3) // not c1, c2: linked to the admin's D1
			check(admin, "contacts", []any{cond("deals.name", "eq", "D1")}, c1, c2, c3)
			// The member's rule on deals narrows the contacts a deals path matches: an estimate is an exact
			// count there (the planner's figure would tell about deals the member cannot see).
			est := e.DoKey(member, "POST", "/v1/contacts/query", map[string]any{"filters": []any{cond("deals.name", "eq", "D1")}, "count": "estimated"})
			e.Expect(est, 200, "")
			if n, ok, estimated := totalOf(t, est); !ok || n != 1 || estimated {
				t.Errorf("the member's estimated count across deals: %d %v %v, want 1 exact", n, ok, estimated)
			}
			// Masked on the target for the member: refused, not filtered.
			refused := func(key, resource string, filters []any, field string) {
				t.Helper()
				data, _ := json.Marshal(filters)
				for _, res := range []*servertest.Response{
					e.DoKey(key, "GET", "/v1/"+resource+"?filter="+url.QueryEscape(string(data)), nil),
					e.DoKey(key, "POST", "/v1/"+resource+"/query", map[string]any{"filters": filters}),
				} {
					e.Expect(res, 400, "invalid_request")
					if !strings.Contains(string(res.Raw), `"field":"`+field+`"`) {
						t.Errorf("%s %s: the error does not name %s: %s", resource, data, field, res.Raw)
					}
				}
			}
			refused(member, "deals", []any{cond("company.annual_revenue", "gt", 0)}, "filters[0].field")
			viewer := e.NewKey(e.NewMember("v@x.example", "viewer", ""), auth.KeyOptions{Access: "read"})
			refused(viewer, "deals", []any{cond("name", "eq", "D1"), map[string]any{"filters": []any{cond("contacts.email", "eq", "one@x.example")}}}, "filters[1].filters[0].field")
			refused(viewer, "companies", []any{cond("contacts.email", "is_empty", nil)}, "filters[0].field")
			refused(viewer, "deals", []any{cond("primary_contact.phone", "is_empty", nil)}, "filters[0].field")
			// A key whose allowlist leaves the target out is refused, not answered empty.
			dealsOnly := e.NewKey(e.Member, auth.KeyOptions{Access: "read", Resources: []string{"deals"}})
			refused(dealsOnly, "deals", []any{cond("company.billing_city", "eq", "Berlin")}, "filters[0].field")
			refused(dealsOnly, "deals", []any{cond("contacts.last_name", "eq", "One")}, "filters[0].field")
			check(dealsOnly, "deals", []any{cond("name", "eq", "D2")}, d2)
			// The catalog lists the paths each key can filter by.
			pathsOf := func(key string) []string {
				res := e.DoKey(key, "GET", "/v1/resources/deals", nil)
				e.Expect(res, 200, "")
				var out []string
				for _, p := range res.Data()["filter_paths"].([]any) {
					out = append(out, p.(map[string]any)["relation"].(string)+">"+p.(map[string]any)["target"].(string))
				}
				return out
			}
			if got := pathsOf(admin); !slices.Contains(got, "company>companies") || !slices.Contains(got, "contacts>contacts") || !slices.Contains(got, "companies>companies") {
				t.Errorf("the admin's filter paths of deals: %v", got)
			}
			if got := pathsOf(dealsOnly); len(got) != 0 {
				t.Errorf("a deals-only key's filter paths: %v", got)
			}
			// Bad paths are 400, never 500.
			refused(admin, "deals", []any{cond("nope.name", "eq", "x")}, "filters[0].field")
			refused(admin, "deals", []any{cond("company.parent_company.name", "eq", "x")}, "filters[0].field")
			refused(admin, "deals", []any{cond("company.", "eq", "x")}, "filters[0].field")
			refused(admin, "deals", []any{cond(".name", "eq", "x")}, "filters[0].field")
			refused(admin, "deals", []any{cond("company.billing_city", "eq", 5)}, "filters[0].value")
			refused(admin, "deals", []any{cond("company.description", "eq", "x")}, "filters[0].field")
		})
	}
}

package server_test

// Filter trees (README "Filters"): nested groups and paths across references and associations.

import (
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
				res := e.Do("POST", "/v1/deals", body)
				e.Expect(res, 201, "")
				values[res.Data()["id"].(string)] = rec
			}
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
			}
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
			next := nextCursor(first)
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

package server_test

// Counts (README "Counts"): count=exact|estimated|none on list and query, under the same tenancy,
// record rules, search and filters as the records.

import (
	"fmt"
	"net/url"
	"testing"

	"github.com/workspace-records/records/runtime/auth"
	"github.com/workspace-records/records/runtime/server/servertest"
)

func totalOf(t *testing.T, res *servertest.Response) (int, bool, bool) {
	t.Helper()
	meta, _ := res.Body["meta"].(map[string]any)
	n, ok := meta["total_count"]
	if !ok {
		return 0, false, false
	}
	var v int
	fmt.Sscan(fmt.Sprint(n), &v)
	return v, true, meta["total_count_estimated"] == true
}

// walkCount counts the records a full cursor walk of path returns with key.
func walkCount(t *testing.T, e *servertest.Env, key, path string) int {
	t.Helper()
	n, cursor := 0, "start"
	for range 100 {
		res := e.DoKey(key, "GET", path+"&page_size=7&cursor="+url.QueryEscape(cursor), nil)
		e.Expect(res, 200, "")
		n += len(res.List())
		if cursor = res.NextCursor(); cursor == "" {
			return n
		}
	}
	t.Fatal("walk did not end")
	return 0
}

func TestCounts(t *testing.T) {
	t.Parallel()
	for _, b := range servertest.Backends {
		t.Run(string(b), func(t *testing.T) {
			t.Parallel()
			e := servertest.Start(t, b, servertest.Options{})
			e.Contract()
			member := e.NewKey(e.NewMember("m@x.example", "member", ""), auth.KeyOptions{Access: "write"})
			for i := range 40 {
				e.Expect(e.Do("POST", "/v1/deals", map[string]any{"name": fmt.Sprintf("Counted %02d", i)}), 201, "")
			}
			for i := range 3 {
				e.Expect(e.DoKey(member, "POST", "/v1/deals", map[string]any{"name": fmt.Sprintf("Mine %d", i)}), 201, "")
			}
			filter := url.QueryEscape(`[{"field":"name","op":"starts_with","value":"Counted 1"}]`)
			for _, c := range []struct {
				key, path string
				want      int
			}{
				{e.Key, "/v1/deals?x=1", 43},
				{e.Key, "/v1/deals?filter=" + filter, 10},
				{member, "/v1/deals?x=1", 3}, // deals are owned-only for members: 3 of 43
				{member, "/v1/deals?filter=" + filter, 0},
			} {
				base := c.path
				if base == "/v1/deals?x=1" {
					base = "/v1/deals?include_archived=false"
				}
				if got := walkCount(t, e, c.key, base); got != c.want {
					t.Fatalf("%s: the walk returns %d, want %d", base, got, c.want)
				}
				res := e.DoKey(c.key, "GET", base+"&count=exact&page_size=2", nil)
				e.Expect(res, 200, "")
				if n, ok, est := totalOf(t, res); !ok || n != c.want || est {
					t.Errorf("%s count=exact: %d %v %v, want %d", base, n, ok, est, c.want)
				}
				// A later page counts the same: every page, not what follows the cursor.
				if next := res.NextCursor(); next != "" {
					res2 := e.DoKey(c.key, "GET", base+"&count=exact&page_size=2&cursor="+url.QueryEscape(next), nil)
					if n, _, _ := totalOf(t, res2); n != c.want {
						t.Errorf("%s second page counts %d", base, n)
					}
				}
				est := e.DoKey(c.key, "GET", base+"&count=estimated", nil)
				e.Expect(est, 200, "")
				n, ok, estimated := totalOf(t, est)
				if !ok || n != c.want || estimated {
					// Under the cap, an estimate is an exact count wherever the planner's figure could tell of
					// other rows than the caller's: a filter (its statistics cover every workspace), a record
					// rule (the member's), SQLite, or a table never analysed (the planner does not know the
					// workspace). TestCountEstimateTenancy has the planner's own figure, after ANALYZE.
					t.Errorf("%s count=estimated: %d %v %v, want %d exact", base, n, ok, estimated, c.want)
				}
				q := e.DoKey(c.key, "POST", "/v1/deals/query", map[string]any{"count": "exact", "page_size": 1})
				e.Expect(q, 200, "")
				if c.path == "/v1/deals?x=1" {
					if n, _, _ := totalOf(t, q); n != c.want {
						t.Errorf("query count %d, want %d", n, c.want)
					}
				}
			}
			if _, ok, _ := totalOf(t, e.Do("GET", "/v1/deals?count=none", nil)); ok {
				t.Error("count=none answers a total")
			}
			if _, ok, _ := totalOf(t, e.Do("GET", "/v1/deals", nil)); ok {
				t.Error("a list without count answers a total")
			}
			e.Expect(e.Do("GET", "/v1/deals?count=all", nil), 400, "invalid_request")
			e.Expect(e.Do("POST", "/v1/deals/query", map[string]any{"count": 5}), 400, "invalid_request")
		})
	}
}

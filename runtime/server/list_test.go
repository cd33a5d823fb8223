package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"testing"

	"github.com/workspace-records/records/runtime/records"
	"github.com/workspace-records/records/runtime/server/servertest"
)

// seedTags imports n tags; every third has no position, names repeat so that ties are broken by id.
func seedTags(t *testing.T, e *servertest.Env, n int) {
	t.Helper()
	b := e.Server.Backend()
	r, _ := b.Current().Catalog.Resource("tags")
	bodies := make([]map[string]any, n)
	for i := range bodies {
		body := map[string]any{"name": fmt.Sprintf("Tag %03d", i%500)}
		if i%3 == 0 {
			body["position"] = nil
		} else {
			body["position"] = json.Number(fmt.Sprint(i % 97))
		}
		bodies[i] = body
	}
	if _, err := b.Current().Records.Import(context.Background(), records.Actor{Workspace: e.Workspace, Member: e.Member}, r, "", bodies); err != nil {
		t.Fatal(err)
	}
}

// cmpKeys orders two sort values the way the backend does: NULL after every value in ascending order on
// PostgreSQL, before every value on SQLite.
func cmpKeys(b servertest.Backend, x, y any) int {
	switch {
	case x == nil && y == nil:
		return 0
	case x == nil || y == nil:
		nullFirst := -1
		if b == servertest.Postgres {
			nullFirst = 1
		}
		if x == nil {
			return nullFirst
		}
		return -nullFirst
	}
	if nx, ok := x.(json.Number); ok {
		a, _ := nx.Int64()
		c, _ := y.(json.Number).Int64()
		return int(a - c)
	}
	return strings.Compare(fmt.Sprint(x), fmt.Sprint(y))
}

// walk follows a cursor to the end and checks that every record comes once, in (key, id) order.
func walk(t *testing.T, e *servertest.Env, b servertest.Backend, sort, order string, want int) {
	t.Helper()
	seen := map[string]bool{}
	var prev map[string]any
	cursor := "start"
	for pages := 0; ; pages++ {
		if pages > want/100+2 {
			t.Fatalf("walk does not end")
		}
		res := e.Do("GET", fmt.Sprintf("/v1/tags?page_size=100&sort=%s&order=%s&cursor=%s", sort, order, url.QueryEscape(cursor)), nil)
		e.Expect(res, 200, "")
		for _, rec := range res.List() {
			id := rec["id"].(string)
			if seen[id] {
				t.Fatalf("record %s returned twice", id)
			}
			seen[id] = true
			if prev != nil {
				c := cmpKeys(b, prev[sort], rec[sort])
				if c == 0 {
					c = strings.Compare(prev["id"].(string), id)
				}
				if order == "desc" {
					c = -c
				}
				if c >= 0 {
					t.Fatalf("out of order: %v/%v then %v/%v", prev[sort], prev["id"], rec[sort], id)
				}
			}
			prev = rec
		}
		next, _ := res.Body["meta"].(map[string]any)["next_cursor"].(string)
		if next == "" {
			break
		}
		cursor = next
	}
	if len(seen) != want {
		t.Fatalf("walk visited %d records, want %d", len(seen), want)
	}
}

func TestCursorWalk(t *testing.T) {
	t.Parallel()
	const n = 10000
	for _, b := range servertest.Backends {
		t.Run(string(b), func(t *testing.T) {
			t.Parallel()
			e := servertest.Start(t, b, servertest.Options{})
			seedTags(t, e, n)
			for _, c := range []struct{ sort, order string }{
				{"name", "asc"}, {"position", "asc"}, {"position", "desc"}, {"created_at", "desc"},
			} {
				t.Run(c.sort+"_"+c.order, func(t *testing.T) { walk(t, e, b, c.sort, c.order, n) })
			}
		})
	}
}

func TestCursorRefused(t *testing.T) {
	t.Parallel()
	for _, b := range servertest.Backends {
		t.Run(string(b), func(t *testing.T) {
			t.Parallel()
			e := servertest.Start(t, b, servertest.Options{})
			seedTags(t, e, 30)
			first := e.Do("GET", "/v1/tags?page_size=10&cursor=start&sort=name", nil)
			e.Expect(first, 200, "")
			cursor := first.Body["meta"].(map[string]any)["next_cursor"].(string)
			ok := e.Do("GET", "/v1/tags?page_size=10&sort=name&cursor="+url.QueryEscape(cursor), nil)
			e.Expect(ok, 200, "")

			filter := url.QueryEscape(`[{"field":"name","op":"starts_with","value":"Tag"}]`)
			e.Expect(e.Do("GET", "/v1/tags?page_size=10&sort=name&filter="+filter+"&cursor="+url.QueryEscape(cursor), nil), 400, "invalid_request")
			e.Expect(e.Do("GET", "/v1/tags?page_size=10&sort=position&cursor="+url.QueryEscape(cursor), nil), 400, "invalid_request")
			e.Expect(e.Do("GET", "/v1/tags?page_size=10&sort=name&order=asc&include_archived=true&cursor="+url.QueryEscape(cursor), nil), 400, "invalid_request")
			e.Expect(e.Do("POST", "/v1/tags/query", map[string]any{"sort": "name", "join": "or", "cursor": cursor}), 400, "invalid_request")
			// Every single-character change breaks it.
			for i := 0; i < len(cursor); i += 7 {
				c := []byte(cursor)
				if c[i] == 'A' {
					c[i] = 'B'
				} else {
					c[i] = 'A'
				}
				e.Expect(e.Do("GET", "/v1/tags?page_size=10&sort=name&cursor="+url.QueryEscape(string(c)), nil), 400, "invalid_request")
			}
			// Another workspace cannot replay it.
			_, _, other := e.NewWorkspace("growth", "admin", "read")
			e.Expect(e.DoKey(other, "GET", "/v1/tags?page_size=10&sort=name&cursor="+url.QueryEscape(cursor), nil), 400, "invalid_request")
			// Another resource neither.
			e.Expect(e.Do("GET", "/v1/companies?page_size=10&sort=name&cursor="+url.QueryEscape(cursor), nil), 400, "invalid_request")
		})
	}
}

func TestPageMode(t *testing.T) {
	t.Parallel()
	for _, b := range servertest.Backends {
		t.Run(string(b), func(t *testing.T) {
			t.Parallel()
			pageMode(t, servertest.Start(t, b, servertest.Options{}))
		})
	}
}

func pageMode(t *testing.T, e *servertest.Env) {
	seedTags(t, e, 60)
	res := e.Do("GET", "/v1/tags?page=2&page_size=25&sort=name&order=asc", nil)
	e.Expect(res, 200, "")
	meta := res.Body["meta"].(map[string]any)
	if len(res.List()) != 25 || meta["page"] != json.Number("2") || meta["has_more"] != true || meta["next_cursor"] == nil {
		t.Errorf("page 2: %d records, meta %v", len(res.List()), meta)
	}
	last := e.Do("GET", "/v1/tags?page=3&page_size=25", nil)
	if len(last.List()) != 10 || last.Body["meta"].(map[string]any)["next_cursor"] != nil {
		t.Errorf("page 3: %d records, meta %v", len(last.List()), last.Body["meta"])
	}
	// The last page of the 10,000-record window is floor(10000/page_size)+1.
	e.Expect(e.Do("GET", "/v1/tags?page=334&page_size=30", nil), 200, "")
	e.Expect(e.Do("GET", "/v1/tags?page=335&page_size=30", nil), 400, "invalid_request")
	e.Expect(e.Do("GET", "/v1/tags?page=401&page_size=25", nil), 200, "")
	e.Expect(e.Do("GET", "/v1/tags?page=402&page_size=25", nil), 400, "invalid_request")
	// Field selection keeps id and skips unknown names.
	sel := e.Do("GET", "/v1/tags?page_size=1&fields=name,nope", nil)
	if rec := sel.List()[0]; len(rec) != 2 || rec["id"] == nil || rec["name"] == nil {
		t.Errorf("fields=name,nope gave %v", rec)
	}
	q := e.Do("POST", "/v1/tags/query", map[string]any{"fields": []string{"color"}, "page_size": 2, "filters": []any{map[string]any{"field": "name", "op": "in", "value": []string{"Tag 001", "Tag 002"}}}})
	e.Expect(q, 200, "")
	if l := q.List(); len(l) != 2 || len(l[0]) != 2 || l[0]["color"] == nil {
		t.Errorf("query fields: %s", q.Raw)
	}
	// Search finds by word prefix.
	s := e.Do("GET", "/v1/tags?search=tag%20001", nil)
	if l := s.List(); len(l) == 0 || l[0]["name"] != "Tag 001" {
		t.Errorf("search: %s", s.Raw)
	}
}

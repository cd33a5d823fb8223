package server_test

// The change feed (README "Change feed"): GET /v1/events, one event per committed write, in a
// per-workspace sequence that consumers resume from.

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/workspace-records/records/runtime/auth"
	"github.com/workspace-records/records/runtime/server/servertest"
)

// feed reads key's whole feed from after the cursor, page by page (limit per page), and returns its
// events and the cursor after them.
func feed(t *testing.T, e *servertest.Env, key, cursor, query string, limit int) ([]map[string]any, string) {
	t.Helper()
	var out []map[string]any
	for range 1000 {
		res := e.DoKey(key, "GET", fmt.Sprintf("/v1/events?cursor=%s&limit=%d%s", cursor, limit, query), nil)
		e.Expect(res, 200, "")
		page := res.List()
		out = append(out, page...)
		meta, _ := res.Body["meta"].(map[string]any)
		next, _ := meta["next_cursor"].(string)
		if next == "" {
			t.Fatalf("no next_cursor: %s", res.Raw)
		}
		cursor = next
		if meta["has_more"] != true {
			return out, cursor
		}
	}
	t.Fatal("the feed did not end")
	return nil, ""
}

// awaitEvent waits until the admin's feed (with the query's filters) holds an event of record id of type
// typ (numbering follows the commit by a few milliseconds) and returns all its events so far.
func awaitEvent(t *testing.T, e *servertest.Env, query, id, typ string) []map[string]any {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		evs, _ := feed(t, e, e.Key, "start", query, 1000)
		for _, ev := range evs {
			if ev["record_id"] == id && ev["type"] == typ {
				return evs
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no %s event of %s within 10 s: %v", typ, id, evs)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func types(evs []map[string]any) string { return joinMember(evs, "type") }

// joinMember is the member key of each of items, comma-separated.
func joinMember(items []map[string]any, key string) string {
	var out []string
	for _, it := range items {
		out = append(out, fmt.Sprint(it[key]))
	}
	return strings.Join(out, ",")
}

func TestEventFeed(t *testing.T) {
	t.Parallel()
	for _, b := range servertest.Backends {
		t.Run(string(b), func(t *testing.T) {
			t.Parallel()
			e := servertest.Start(t, b, servertest.Options{})
			e.Contract()
			created := e.Do("POST", "/v1/companies", map[string]any{"name": "Feed Co", "domain": "feed.example"})
			e.Expect(created, 201, "")
			id := created.Data()["id"].(string)
			upd := e.Do("PATCH", "/v1/companies/"+id, map[string]any{"name": "Feed Co 2", "description": "x"})
			e.Expect(upd, 200, "")
			e.Expect(e.Do("DELETE", "/v1/companies/"+id, nil), 200, "")
			e.Expect(e.Do("POST", "/v1/companies/"+id+"/restore", nil), 200, "")
			contact := e.Do("POST", "/v1/contacts", map[string]any{"first_name": "Ann", "last_name": "Lee"}).Data()["id"].(string)
			e.Expect(e.Do("PUT", "/v1/companies/"+id+"/contacts/"+contact, nil), 200, "")
			e.Expect(e.Do("DELETE", "/v1/companies/"+id+"/contacts/"+contact, nil), 200, "")
			// Refused and rolled-back writes leave no event; a replayed Idempotency-Key none more.
			e.Expect(e.Do("POST", "/v1/companies", map[string]any{"name": "Dup", "domain": "feed.example"}), 409, "conflict")
			e.Expect(e.Do("POST", "/v1/companies", map[string]any{"phone": "no name"}), 422, "validation_failed")
			e.Expect(e.Do("POST", "/v1/companies/batch", map[string]any{"items": []any{
				map[string]any{"op": "create", "body": map[string]any{"name": "Atomic one"}},
				map[string]any{"op": "create", "body": map[string]any{"name": "Atomic dup", "domain": "feed.example"}},
			}}), 422, "batch_failed")
			for range 2 {
				e.Expect(e.Do("POST", "/v1/companies", map[string]any{"name": "Once"}, "Idempotency-Key", "feed-once"), 201, "")
			}
			br := e.Do("POST", "/v1/companies/batch", map[string]any{"mode": "per_item", "items": []any{
				map[string]any{"op": "create", "body": map[string]any{"name": "Batch one"}},
				map[string]any{"op": "create", "body": map[string]any{"name": "Batch dup", "domain": "feed.example"}},
				map[string]any{"op": "upsert", "key": "domain", "value": "up.example", "body": map[string]any{"name": "Upserted"}},
			}})
			e.Expect(br, 200, "")
			last := br.Results()[2]["data"].(map[string]any)["id"].(string)

			evs := awaitEvent(t, e, "", last, "companies.created")
			want := "companies.created,companies.updated,companies.archived,companies.restored,contacts.created,companies.linked,companies.unlinked,companies.created,companies.created,companies.created"
			if got := types(evs); got != want {
				t.Fatalf("feed types\n got %s\nwant %s", got, want)
			}
			for i, ev := range evs {
				if fmt.Sprint(ev["sequence"]) != fmt.Sprint(i+1) {
					t.Errorf("event %d has sequence %v", i, ev["sequence"])
				}
			}
			u := evs[1]
			prev, _ := u["previous"].(map[string]any)
			data, _ := u["data"].(map[string]any)
			if prev["name"] != "Feed Co" || data["name"] != "Feed Co 2" || data["domain"] != "feed.example" || u["record_id"] != id {
				t.Errorf("update event: %v", u)
			}
			if _, ok := prev["domain"]; ok {
				t.Errorf("previous holds an unchanged field: %v", prev)
			}
			actor, _ := u["actor"].(map[string]any)
			if actor["request_id"] != upd.Header.Get("X-Request-Id") || actor["member_id"] != e.Member {
				t.Errorf("update event actor %v (request %s)", actor, upd.Header.Get("X-Request-Id"))
			}
			if l, _ := evs[5]["data"].(map[string]any); l["contacts"] != contact {
				t.Errorf("link event data %v", evs[5]["data"])
			}

			// Resuming from any sequence sees every later event once, in order, across page sizes.
			for _, from := range []int{0, 1, 4, 9, 10} {
				got, _ := feed(t, e, e.Key, fmt.Sprint(from), "", 3)
				if types(got) != types(evs[from:]) {
					t.Errorf("from %d: %s", from, types(got))
				}
			}
			got, _ := feed(t, e, e.Key, "start", "&type=companies.updated,companies.archived", 1)
			if types(got) != "companies.updated,companies.archived" {
				t.Errorf("type filter: %s", types(got))
			}
			got, _ = feed(t, e, e.Key, "start", "&resource=contacts", 5)
			if types(got) != "contacts.created" {
				t.Errorf("resource filter: %s", types(got))
			}
			latest, cur := feed(t, e, e.Key, "latest", "", 10)
			if len(latest) != 0 || cur != "10" {
				t.Errorf("cursor=latest: %d events, cursor %s", len(latest), cur)
			}
			for q, code := range map[string]string{
				"cursor=abc": "invalid_request", "cursor=-1": "invalid_request", "limit=0": "invalid_request", "limit=1001": "invalid_request",
				"wait=31s": "invalid_request", "wait=soon": "invalid_request", "resource=nope": "invalid_request",
				"type=companies.deleted": "invalid_request", "page_size=5": "invalid_request", "cursor=1&cursor=2": "invalid_request",
			} {
				res := e.Do("GET", "/v1/events?"+q, nil)
				if res.Status != 400 || res.Code() != code {
					t.Errorf("%s: %d %s", q, res.Status, res.Raw)
				}
			}

			// Long poll: a caught-up reader is answered within a second of the next commit.
			var wg sync.WaitGroup
			var polled *servertest.Response
			var answered time.Time
			wg.Go(func() {
				polled = e.Do("GET", "/v1/events?cursor=10&wait=20s", nil)
				answered = time.Now()
			})
			time.Sleep(300 * time.Millisecond)
			committed := time.Now()
			e.Expect(e.Do("POST", "/v1/companies", map[string]any{"name": "Polled"}), 201, "")
			wg.Wait()
			e.Expect(polled, 200, "")
			// Within a second under RECORDS_TIMING=strict; 10 s in make test (servertest.Budget).
			if l := polled.List(); len(l) != 1 || l[0]["type"] != "companies.created" || answered.Sub(committed) > servertest.Budget(time.Second, 10*time.Second) {
				t.Errorf("long poll answered %v after the commit with %s", answered.Sub(committed), polled.Raw)
			}
			start := time.Now()
			e.Expect(e.Do("GET", "/v1/events?cursor=latest&wait=300ms", nil), 200, "")
			if d := time.Since(start); d < 300*time.Millisecond || d > 3*time.Second {
				t.Errorf("an empty wait of 300ms answered after %v", d)
			}

			// Another workspace's key sees none of this workspace's events, and its own.
			_, _, otherKey := e.NewWorkspace("growth", "admin", "write")
			if got, _ := feed(t, e, otherKey, "start", "", 100); len(got) != 0 {
				t.Errorf("another workspace reads %d events", len(got))
			}
		})
	}
}

// Record rules, the key's allowlist and field masks hold on the feed as on reads.
func TestEventFeedAccess(t *testing.T) {
	t.Parallel()
	for _, b := range servertest.Backends {
		t.Run(string(b), func(t *testing.T) {
			t.Parallel()
			e := servertest.Start(t, b, servertest.Options{})
			alice := e.NewKey(e.NewMember("alice@x.example", "member", ""), auth.KeyOptions{Access: "write"})
			bob := e.NewKey(e.NewMember("bob@x.example", "member", ""), auth.KeyOptions{Access: "write"})
			dealsOnly := e.NewKey(e.Member, auth.KeyOptions{Access: "read", Resources: []string{"deals"}})
			adminDeal := e.Do("POST", "/v1/deals", map[string]any{"name": "Admin deal"}).Data()["id"].(string)
			aliceDeal := e.DoKey(alice, "POST", "/v1/deals", map[string]any{"name": "Alice deal"}).Data()["id"].(string)
			co := e.Do("POST", "/v1/companies", map[string]any{"name": "Rich", "annual_revenue": 987654321}).Data()["id"].(string)
			e.Expect(e.Do("PATCH", "/v1/companies/"+co, map[string]any{"annual_revenue": 123456789}), 200, "")
			awaitEvent(t, e, "", co, "companies.updated")

			// Deals are owned-only for members: alice sees her deal's event, not the admin's; bob neither.
			ids := func(evs []map[string]any, typ string) string {
				var out []string
				for _, ev := range evs {
					if ev["type"] == typ {
						out = append(out, fmt.Sprint(ev["record_id"]))
					}
				}
				return strings.Join(out, ",")
			}
			aliceFeed, _ := feed(t, e, alice, "start", "", 2)
			if got := ids(aliceFeed, "deals.created"); got != aliceDeal {
				t.Errorf("alice's feed has deals %s, want only %s (admin's %s)", got, aliceDeal, adminDeal)
			}
			bobFeed, _ := feed(t, e, bob, "start", "", 100)
			if got := ids(bobFeed, "deals.created"); got != "" {
				t.Errorf("bob's feed has deals %s", got)
			}
			// annual_revenue is masked for members: neither the value nor the previous one shows.
			for _, ev := range aliceFeed {
				if ev["record_id"] != co {
					continue
				}
				raw := fmt.Sprint(ev)
				if strings.Contains(raw, "987654321") || strings.Contains(raw, "123456789") {
					t.Errorf("alice's feed shows the masked revenue: %v", ev)
				}
			}
			// The key's allowlist: a deals-only key sees deals only.
			only, _ := feed(t, e, dealsOnly, "start", "", 100)
			for _, ev := range only {
				if ev["resource"] != "deals" {
					t.Errorf("a deals-only key reads %v", ev["type"])
				}
			}
			if len(only) != 2 {
				t.Errorf("the deals-only key reads %d events, want 2", len(only))
			}
			if got, _ := feed(t, e, dealsOnly, "start", "&resource=companies", 100); len(got) != 0 {
				t.Errorf("a deals-only key asking for companies reads %d events", len(got))
			}
		})
	}
}

// A key expiry reminder is a notice of the feed: its owner reads it (and can take it by webhook), as do
// the members who manage the API; other members do not.
func TestKeyExpiryNoticeEvent(t *testing.T) {
	t.Parallel()
	for _, b := range servertest.Backends {
		t.Run(string(b), func(t *testing.T) {
			t.Parallel()
			// A server of its own: its reminder sweep covers every workspace's keys.
			e := servertest.Start(t, b, servertest.Options{Private: true})
			dir := e.Server.Backend().Directory
			ann := e.NewMember("ann@x.example", "member", "")
			annKey := e.NewKey(ann, auth.KeyOptions{Access: "read"})
			bob := e.NewMember("bob@x.example", "member", "")
			bobKey := e.NewKey(bob, auth.KeyOptions{Access: "read"})
			expiring, _, err := dir.CreateKey(context.Background(), ann, auth.KeyOptions{Access: "read", ExpiresIn: 30 * 24 * time.Hour})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := e.Server.Backend().Notices.SendDueReminders(context.Background(), time.Now().Add(17*24*time.Hour)); err != nil {
				t.Fatal(err)
			}
			notices := awaitEvent(t, e, "&type=api_keys.expiring", expiring.ID, "api_keys.expiring")
			var seen bool
			for _, n := range notices {
				if n["record_id"] == expiring.ID {
					seen = true
					if d, _ := n["data"].(map[string]any); d["member_id"] != ann || fmt.Sprint(d["days_before"]) != "14" {
						t.Errorf("notice data %v", d)
					}
				}
			}
			if !seen {
				t.Fatalf("no notice of key %s", expiring.ID)
			}
			// Every key of the test expires in 30 days: ann has two (hers and the one above), bob one, the
			// admin one. Each member reads their own; the admin, who manages the API, all four.
			for _, c := range []struct {
				key, member string
				want        int
			}{{annKey, ann, 2}, {bobKey, bob, 1}, {e.Key, "", 4}} {
				got, _ := feed(t, e, c.key, "start", "&resource=api_keys", 10)
				if len(got) != c.want {
					t.Errorf("member %q reads %d notices, want %d", c.member, len(got), c.want)
				}
				for _, n := range got {
					if d, _ := n["data"].(map[string]any); c.member != "" && d["member_id"] != c.member {
						t.Errorf("member %s reads another member's notice: %v", c.member, n)
					}
				}
			}
		})
	}
}

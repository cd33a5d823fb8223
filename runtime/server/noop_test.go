package server_test

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/workspace-records/records/runtime/audit"
	"github.com/workspace-records/records/runtime/customfields"
	"github.com/workspace-records/records/runtime/dispatch"
	"github.com/workspace-records/records/runtime/httpapi"
	"github.com/workspace-records/records/runtime/records"
	"github.com/workspace-records/records/runtime/server/servertest"
)

// A write whose values all equal the stored ones is a no-op, as an empty PATCH is (issue 37): a PATCH,
// an upsert and a batch upsert of unchanged declared and custom values answer 200 with the record as
// it is, keep its version and ETag, and write no audit entry and no event; the first real change after
// them is the feed's next event.
func TestNoOpWrites(t *testing.T) {
	t.Parallel()
	for _, b := range servertest.Backends {
		t.Run(string(b), func(t *testing.T) {
			t.Parallel()
			e := servertest.Start(t, b, servertest.Options{})
			e.Contract()
			if _, err := e.Server.Backend().Current().Custom.Create(context.Background(), e.Workspace, customfields.Def{Resource: "companies", Key: "tier", Type: "text"}); err != nil {
				t.Fatal(err)
			}
			body := map[string]any{"name": "Same", "domain": "same.example", "employee_count": 12, "cf__tier": "gold"}
			made := e.Do("PUT", "/v1/companies/by/domain/same.example", body)
			e.Expect(made, 201, "")
			id := made.Data()["id"].(string)
			tag0, _ := tagOf(t, made)
			// The cursor after the create's event (events are numbered just after their commit).
			cursor := ""
			for range 50 {
				events, after := feed(t, e, e.Key, "0", "", 100)
				if len(events) > 0 && events[len(events)-1]["type"] == "companies.created" {
					cursor = after
					break
				}
				e.Do("GET", "/v1/events?cursor="+after+"&wait=200ms", nil)
			}
			if cursor == "" {
				t.Fatal("the create's event was not numbered")
			}

			for name, r := range map[string]*servertest.Response{
				"patch":        e.Do("PATCH", "/v1/companies/"+id, body),
				"patch, one":   e.Do("PATCH", "/v1/companies/"+id, map[string]any{"employee_count": 12.0}),
				"patch, empty": e.Do("PATCH", "/v1/companies/"+id, map[string]any{}),
				"upsert":       e.Do("PUT", "/v1/companies/by/domain/same.example", body),
			} {
				e.Expect(r, 200, "")
				if tag, _ := tagOf(t, r); tag != tag0 {
					t.Errorf("%s of unchanged values: ETag %s, was %s", name, tag, tag0)
				}
				if r.Data()["updated_at"] != made.Data()["updated_at"] {
					t.Errorf("%s of unchanged values moved updated_at: %v", name, r.Data()["updated_at"])
				}
				if got := r.Header.Get(httpapi.UnchangedHeader); got != "true" {
					t.Errorf("%s of unchanged values: %s %q, want \"true\"", name, httpapi.UnchangedHeader, got)
				}
			}
			// Replayed under its Idempotency-Key, a no-op's answer is the same, marker and all.
			for range 2 {
				r := e.Do("PATCH", "/v1/companies/"+id, body, "Idempotency-Key", "noop-"+id)
				e.Expect(r, 200, "")
				if got := r.Header.Get(httpapi.UnchangedHeader); got != "true" {
					t.Errorf("unchanged PATCH under an Idempotency-Key (replayed %q): %s %q", r.Header.Get("Idempotent-Replayed"), httpapi.UnchangedHeader, got)
				}
			}
			batch := e.Do("POST", "/v1/companies/batch", map[string]any{"items": []any{
				map[string]any{"op": "upsert", "key": "domain", "value": "same.example", "body": body},
				map[string]any{"op": "update", "id": id, "body": map[string]any{"cf__tier": "gold"}, "if_match": tag0},
			}})
			e.Expect(batch, 200, "")
			if got := batch.Statuses(); got != "200,200" {
				t.Errorf("batch statuses %s: %s", got, batch.Raw)
			}
			for i, it := range batch.Results() {
				if it["unchanged"] != true || it["etag"] != tag0 {
					t.Errorf("batch item %d of unchanged values: %v", i, it)
				}
			}
			if meta, _ := batch.Body["meta"].(map[string]any); num(meta, "unchanged") != "2" {
				t.Errorf("batch meta: %v, want 2 unchanged", meta)
			}
			if trail := auditActions(t, e, id); strings.Join(trail, ",") != "create" {
				t.Errorf("unchanged writes wrote audit entries: %v", trail)
			}

			// The first change after them: a new ETag, an update in the trail, and the feed's next event.
			changed := e.Do("PATCH", "/v1/companies/"+id, map[string]any{"cf__tier": "silver"})
			e.Expect(changed, 200, "")
			if tag, _ := tagOf(t, changed); tag == tag0 {
				t.Error("a change kept the ETag")
			}
			if got := changed.Header.Get(httpapi.UnchangedHeader); got != "" {
				t.Errorf("a change is marked %s: %q", httpapi.UnchangedHeader, got)
			}
			if trail := auditActions(t, e, id); strings.Join(trail, ",") != "update,create" {
				t.Errorf("audit actions after a change: %v", trail)
			}
			var events []map[string]any
			for range 50 {
				if events, _ = feed(t, e, e.Key, cursor, "", 100); len(events) > 0 {
					break
				}
				e.Do("GET", "/v1/events?cursor="+cursor+"&wait=200ms", nil)
			}
			if len(events) != 1 || events[0]["type"] != "companies.updated" {
				var types []any
				for _, ev := range events {
					types = append(types, ev["type"])
				}
				t.Errorf("events after the unchanged writes and one change: %v, want the change's companies.updated alone", types)
			}
		})
	}
}

// A nightly sync that upserts its whole, unchanged source writes nothing the second time (issue 37):
// 1,000 companies upserted by domain in ten batches of 100, then the same ten batches again. The second
// pass answers every item `unchanged` with the first pass's ETag, and writes no audit entry, no event and
// no webhook delivery: after it and one real change, a real receiver has had exactly the first pass's
// 1,000 deliveries and the change's one, and the newest audit entry is the change's.
func TestNightlySyncWritesNothing(t *testing.T) {
	t.Parallel()
	const batches, size = 10, 100
	for _, b := range servertest.Backends {
		t.Run(string(b), func(t *testing.T) {
			t.Parallel()
			// The loaded request deadline: a batch of 100 upserts with a webhook endpoint took past the
			// production 10 s on PostgreSQL under make test beside another run (2026-11-28) and answered 503.
			e := servertest.Start(t, b, servertest.Options{RequestTimeout: servertest.Budget(10*time.Second, 60*time.Second)})
			rc := newHookReceiver(t, time.Now)
			newEndpoint(t, e, e.Member, rc, dispatch.Input{EventTypes: &[]string{"companies.created", "companies.updated"}})
			pass := func(n int) (tags map[string]any, unchanged int) {
				tags = map[string]any{}
				for i := range batches {
					items := make([]any, size)
					for k := range items {
						d := fmt.Sprintf("sync-%04d.example", i*size+k)
						items[k] = map[string]any{"op": "upsert", "key": "domain", "value": d, "body": map[string]any{"name": "Synced " + d, "employee_count": k + 1}}
					}
					r := e.Do("POST", "/v1/companies/batch", map[string]any{"mode": "per_item", "items": items})
					e.Expect(r, 200, "")
					for _, it := range r.Results() {
						rec, _ := it["data"].(map[string]any)
						if rec == nil {
							t.Fatalf("pass %d: item %v", n, it)
						}
						tags[rec["id"].(string)] = it["etag"]
						if it["unchanged"] == true {
							unchanged++
						}
					}
				}
				return tags, unchanged
			}
			newest := func() string {
				t.Helper()
				page, err := e.Server.Backend().Current().Records.AuditLog(context.Background(), records.Actor{Workspace: e.Workspace}, audit.Query{Limit: 1})
				if err != nil || len(page.Entries) != 1 {
					t.Fatalf("newest audit entry: %v %v", page, err)
				}
				return page.Entries[0].ID
			}

			first, unchanged := pass(1)
			if len(first) != batches*size || unchanged != 0 {
				t.Fatalf("first pass: %d records, %d unchanged", len(first), unchanged)
			}
			rc.await(t, 30*time.Second, "the first pass's deliveries", func(got []received) bool { return len(got) >= batches*size })
			entry := newest()

			second, unchanged := pass(2)
			if unchanged != batches*size || !maps.Equal(first, second) {
				t.Errorf("second, identical pass: %d of %d unchanged; ETags kept: %v", unchanged, batches*size, maps.Equal(first, second))
			}
			if got := newest(); got != entry {
				t.Errorf("the second pass wrote audit entries (newest %s, was %s)", got, entry)
			}
			// One real change: its delivery comes after any the second pass would have caused (deliveries
			// follow the events' order), so the count is final once it is in.
			var id string
			for k := range first {
				id = k
				break
			}
			e.Expect(e.Do("PATCH", "/v1/companies/"+id, map[string]any{"name": "Changed tonight"}), 200, "")
			got := rc.await(t, 30*time.Second, "the change's delivery", func(got []received) bool {
				return slices.ContainsFunc(got, func(r received) bool {
					return r.event["type"] == "companies.updated" && r.event["record_id"] == id
				})
			})
			updated := 0
			for _, r := range got {
				if r.event["type"] == "companies.updated" {
					updated++
				}
			}
			if len(got) != batches*size+1 || updated != 1 {
				t.Errorf("deliveries: %d (%d companies.updated), want the first pass's %d and the change's one", len(got), updated, batches*size)
			}
			if newest() == entry {
				t.Error("the change wrote no audit entry")
			}
		})
	}
}

package server_test

// Batch writes (README "Batch writes"): POST /v1/{resource}/batch, atomic or per item, one result per
// item in order.

import (
	"context"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"github.com/workspace-records/records/runtime/audit"
	"github.com/workspace-records/records/runtime/auth"
	"github.com/workspace-records/records/runtime/server/servertest"
)

// companiesNamed counts the active companies whose name contains s.
func companiesNamed(t *testing.T, e *servertest.Env, s string) int {
	t.Helper()
	f := url.QueryEscape(fmt.Sprintf(`[{"field":"name","op":"contains","value":%q}]`, s))
	page := e.Do("GET", "/v1/companies?page_size=100&filter="+f, nil)
	e.Expect(page, 200, "")
	return len(page.List())
}

func TestBatch(t *testing.T) {
	t.Parallel()
	for _, b := range servertest.Backends {
		t.Run(string(b), func(t *testing.T) {
			t.Parallel()
			e := servertest.Start(t, b, servertest.Options{})
			e.Contract()
			held := e.Do("POST", "/v1/companies", map[string]any{"name": "Held", "domain": "held.example"})
			e.Expect(held, 201, "")
			heldID := held.Data()["id"].(string)
			heldTag, _ := tagOf(t, held)

			// per_item: every item stands alone.
			r := e.Do("POST", "/v1/companies/batch", map[string]any{"mode": "per_item", "items": []any{
				map[string]any{"op": "create", "body": map[string]any{"name": "PI one"}},
				map[string]any{"op": "create", "body": map[string]any{"name": "PI two", "domain": "held.example"}}, // 409
				map[string]any{"op": "create", "body": map[string]any{"name": "PI three"}},
				map[string]any{"op": "create", "body": map[string]any{"phone": "no name"}}, // 422
				map[string]any{"op": "update", "id": heldID, "body": map[string]any{"description": "changed"}, "if_match": heldTag},
				map[string]any{"op": "upsert", "key": "domain", "value": "pi.example", "body": map[string]any{"name": "PI upserted"}},
				map[string]any{"op": "archive", "id": "0190b6a0-0000-7000-8000-000000000000"},                                     // 404
				map[string]any{"op": "update", "id": heldID, "body": map[string]any{"description": "stale"}, "if_match": heldTag}, // 412
			}})
			e.Expect(r, 200, "")
			if got := r.Statuses(); got != "201,409,201,422,200,201,404,412" {
				t.Errorf("per_item statuses %s: %s", got, r.Raw)
			}
			meta, _ := r.Body["meta"].(map[string]any)
			if fmt.Sprintf("%v %v %v", meta["succeeded"], meta["failed"], meta["mode"]) != "4 4 per_item" {
				t.Errorf("meta %v", meta)
			}
			res := r.Results()
			if err, _ := res[1]["error"].(map[string]any); err["code"] != "conflict" {
				t.Errorf("item 1: %v", res[1])
			}
			if tag, _ := res[0]["etag"].(string); !etagForm.MatchString(tag) {
				t.Errorf("item 0 etag %q", tag)
			}
			if n := companiesNamed(t, e, "PI "); n != 3 {
				t.Errorf("%d PI companies, want 3", n)
			}
			if got := e.Do("GET", "/v1/companies/"+heldID, nil).Data()["description"]; got != "changed" {
				t.Errorf("held description %v", got)
			}
			// One audit entry per written item, with the batch's request id; an item's etag is the one a
			// get of its record answers.
			id0 := res[0]["data"].(map[string]any)["id"].(string)
			if got := e.Do("GET", "/v1/companies/"+id0, nil).Header.Get("ETag"); got != res[0]["etag"] {
				t.Errorf("item 0 etag %v, get's ETag %s", res[0]["etag"], got)
			}
			rows := auditOf(t, e, audit.Query{RecordID: id0})
			if len(rows) != 1 || rows[0].Action != "create" || rows[0].RequestID == nil || *rows[0].RequestID != r.Header.Get("X-Request-Id") {
				t.Errorf("audit of item 0: %+v", rows)
			}

			// atomic, a refusal found by validation: nothing written, every item's result given.
			r = e.Do("POST", "/v1/companies/batch", map[string]any{"items": []any{
				map[string]any{"op": "create", "body": map[string]any{"name": "AT one"}},
				map[string]any{"op": "create", "body": map[string]any{"name": 5}},
			}})
			e.Expect(r, 422, "batch_failed")
			if got := r.Statuses(); got != "424,422" {
				t.Errorf("atomic statuses %s", got)
			}
			// atomic, a refusal found inside the transaction (a held key, after a run of creates).
			r = e.Do("POST", "/v1/companies/batch", map[string]any{"mode": "atomic", "items": []any{
				map[string]any{"op": "create", "body": map[string]any{"name": "AT two"}},
				map[string]any{"op": "create", "body": map[string]any{"name": "AT three", "domain": "held.example"}},
				map[string]any{"op": "update", "id": heldID, "body": map[string]any{"description": "atomic"}},
			}})
			e.Expect(r, 422, "batch_failed")
			if got := r.Statuses(); got != "424,409,424" {
				t.Errorf("atomic statuses %s: %s", got, r.Raw)
			}
			if n := companiesNamed(t, e, "AT "); n != 0 {
				t.Errorf("a failed atomic batch wrote %d companies", n)
			}
			if got := e.Do("GET", "/v1/companies/"+heldID, nil).Data()["description"]; got != "changed" {
				t.Errorf("a failed atomic batch changed held: %v", got)
			}
			// atomic success: a run of creates in multi-row statements, then other items.
			items := []any{}
			for i := 0; i < 30; i++ {
				items = append(items, map[string]any{"op": "create", "body": map[string]any{"name": fmt.Sprintf("OK %02d", i), "domain": fmt.Sprintf("ok%d.example", i)}})
			}
			items = append(items, map[string]any{"op": "archive", "id": heldID, "body": map[string]any{"reason": "batch"}})
			r = e.Do("POST", "/v1/companies/batch", map[string]any{"items": items})
			e.Expect(r, 200, "")
			if n := companiesNamed(t, e, "OK "); n != 30 {
				t.Errorf("%d OK companies, want 30", n)
			}
			if got := e.Do("GET", "/v1/companies/"+heldID, nil).Data(); got["archived"] != true || got["archive_reason"] != "batch" {
				t.Errorf("held after archive item: %v", got)
			}
			// A batch counts one request against the rate limits and one per item against the monthly
			// quota (issue 37: batching buys throughput). A Growth plan's limits (300 a minute per key, 600
			// per workspace, 10,000 an hour, 1,000,000 a month): ten batches of 100 right after each other
			// are admitted, take ten units of the key's minute and 1,000 of the quota.
			gw, _, growth := e.NewWorkspace("growth", "admin", "write")
			perMinute, perHour, wsPerMinute, quota := int64(300), int64(10_000), int64(600), int64(1_000_000)
			if err := e.Server.Backend().Members.SetLimits(context.Background(), gw, auth.Limits{KeyPerMinute: &perMinute, KeyPerHour: &perHour, WorkspacePerMinute: &wsPerMinute, MonthlyQuota: &quota}); err != nil {
				t.Fatal(err)
			}
			one := e.DoKey(growth, "POST", "/v1/companies/batch", map[string]any{"items": []any{map[string]any{"op": "create", "body": map[string]any{"name": "Rate 0"}}}})
			e.Expect(one, 200, "")
			var last *servertest.Response
			for b := range 10 {
				hundred := make([]any, 100)
				for i := range hundred {
					hundred[i] = map[string]any{"op": "create", "body": map[string]any{"name": fmt.Sprintf("Rate %d-%d", b, i)}}
				}
				last = e.DoKey(growth, "POST", "/v1/companies/batch", map[string]any{"items": hundred})
				e.Expect(last, 200, "")
			}
			remaining := func(r *servertest.Response, name string) int {
				n, err := strconv.Atoi(r.Header.Get(name))
				if err != nil {
					t.Fatalf("%s %q", name, r.Header.Get(name))
				}
				return n
			}
			// The key's minute window refills one request every 200 ms: a few may come back between the
			// answers, never more than were taken.
			if used := remaining(one, "X-RateLimit-Remaining") - remaining(last, "X-RateLimit-Remaining"); used > 10 || used < 0 {
				t.Errorf("X-RateLimit-Remaining %s then %s: ten batches of 100 counted %d", one.Header.Get("X-RateLimit-Remaining"), last.Header.Get("X-RateLimit-Remaining"), used)
			}
			if used := remaining(one, "X-Quota-Remaining") - remaining(last, "X-Quota-Remaining"); used != 1000 {
				t.Errorf("X-Quota-Remaining %s then %s: ten batches of 100 counted %d of the quota, want 1,000", one.Header.Get("X-Quota-Remaining"), last.Header.Get("X-Quota-Remaining"), used)
			}

			// Two creates of one key value in one run: the run falls back to items one by one.
			r = e.Do("POST", "/v1/companies/batch", map[string]any{"mode": "per_item", "items": []any{
				map[string]any{"op": "create", "body": map[string]any{"name": "Twin a", "domain": "twin.example"}},
				map[string]any{"op": "create", "body": map[string]any{"name": "Twin b", "domain": "twin.example"}},
				map[string]any{"op": "create", "body": map[string]any{"name": "Twin c"}},
			}})
			if got := r.Statuses(); got != "201,409,201" {
				t.Errorf("twin statuses %s: %s", got, r.Raw)
			}

			// One Idempotency-Key covers the batch: the replay has the same results and writes nothing.
			body := map[string]any{"mode": "per_item", "items": []any{
				map[string]any{"op": "create", "body": map[string]any{"name": "Idem one"}},
				map[string]any{"op": "create", "body": map[string]any{"name": 1}},
			}}
			first := e.Do("POST", "/v1/companies/batch", body, "Idempotency-Key", "batch-1")
			again := e.Do("POST", "/v1/companies/batch", body, "Idempotency-Key", "batch-1")
			e.Expect(again, 200, "")
			if again.Header.Get("Idempotent-Replayed") != "true" || again.Statuses() != first.Statuses() ||
				again.Results()[0]["data"].(map[string]any)["id"] != first.Results()[0]["data"].(map[string]any)["id"] {
				t.Errorf("replay differs: %s vs %s", again.Raw, first.Raw)
			}
			if n := companiesNamed(t, e, "Idem one"); n != 1 {
				t.Errorf("%d Idem companies after a replay", n)
			}

			// The shape of the whole is checked first (400).
			e.Expect(e.Do("POST", "/v1/companies/batch", map[string]any{"items": []any{}}), 400, "invalid_request")
			e.Expect(e.Do("POST", "/v1/companies/batch", map[string]any{"items": []any{}, "extra": 1}), 400, "invalid_request")
			e.Expect(e.Do("POST", "/v1/companies/batch", map[string]any{"mode": "sometimes", "items": []any{map[string]any{"op": "create", "body": map[string]any{"name": "x"}}}}), 400, "invalid_request")
			many := make([]any, 101)
			for i := range many {
				many[i] = map[string]any{"op": "create", "body": map[string]any{"name": "x"}}
			}
			e.Expect(e.Do("POST", "/v1/companies/batch", map[string]any{"items": many}), 400, "invalid_request")
			// Malformed items (an unknown op or member, a member of the wrong type) are the whole batch's 400,
			// as the document says.
			for _, it := range []map[string]any{{"op": "frobnicate"}, {"op": "create", "body": map[string]any{"name": "x"}, "extra": true}, {"op": "update", "id": "nope", "body": map[string]any{}}, {"op": "update", "body": map[string]any{}}, {"op": "upsert", "key": "domain", "body": map[string]any{}}} {
				r := e.Do("POST", "/v1/companies/batch", map[string]any{"items": []any{map[string]any{"op": "create", "body": map[string]any{"name": "Never"}}, it}})
				e.Expect(r, 400, "invalid_request")
				if !strings.Contains(string(r.Raw), "items[1]") {
					t.Errorf("400 does not name items[1]: %s", r.Raw)
				}
			}
			for _, m := range []string{"GET", "PATCH", "DELETE"} {
				e.Expect(e.Do(m, "/v1/companies/batch", nil), 405, "method_not_allowed")
				e.Expect(e.Do(m, "/v1/companies/query", nil), 405, "method_not_allowed")
			}
		})
	}
}

// A key that may not write the resource, or whose allowlist leaves it out, gets its refusal as every
// item's result; a member's record rule makes others' records not found, item by item, while its own
// items are written.
func TestBatchAccess(t *testing.T) {
	t.Parallel()
	for _, b := range servertest.Backends {
		t.Run(string(b), func(t *testing.T) {
			t.Parallel()
			e := servertest.Start(t, b, servertest.Options{})
			e.Contract()
			pen := penKey(t, e)
			admins := e.Do("POST", "/v1/companies", map[string]any{"name": "Admin's"})
			e.Expect(admins, 201, "")
			adminID := admins.Data()["id"].(string)
			items := []any{
				map[string]any{"op": "create", "body": map[string]any{"name": "Pen batch"}},
				map[string]any{"op": "update", "id": adminID, "body": map[string]any{"name": "taken"}},
				map[string]any{"op": "create", "body": map[string]any{"name": "Pen phone", "phone": "+1 555 0100"}},
			}
			r := e.DoKey(pen, "POST", "/v1/companies/batch", map[string]any{"mode": "per_item", "items": items})
			e.Expect(r, 200, "")
			if got := r.Statuses(); got != "201,404,422" {
				t.Errorf("pen statuses %s: %s", got, r.Raw)
			}
			if got := e.Do("GET", "/v1/companies/"+adminID, nil).Data()["name"]; got != "Admin's" {
				t.Errorf("pen changed admin's record: %v", got)
			}
			for name, key := range map[string]string{
				"read key":  e.NewKey(e.Member, auth.KeyOptions{Access: "read"}),
				"allowlist": e.NewKey(e.Member, auth.KeyOptions{Access: "write", Resources: []string{"deals"}}),
				"viewer":    e.NewKey(e.NewMember("viewer@x.example", "viewer", ""), auth.KeyOptions{Access: "write"}),
			} {
				r := e.DoKey(key, "POST", "/v1/companies/batch", map[string]any{"mode": "per_item", "items": items})
				e.Expect(r, 200, "")
				if got := r.Statuses(); got != "403,403,403" {
					t.Errorf("%s: statuses %s: %s", name, got, r.Raw)
				}
				if strings.Contains(string(r.Raw), "Admin's") {
					t.Errorf("%s: the answer shows a record: %s", name, r.Raw)
				}
				e.Expect(e.DoKey(key, "POST", "/v1/companies/batch", map[string]any{"items": items}), 422, "batch_failed")
			}
			if n := companiesNamed(t, e, "Pen batch"); n != 1 {
				t.Errorf("%d Pen batch companies, want 1", n)
			}
		})
	}
}

// Plugins see each item: on deals (the deal-rules plugin), a run of creates in multi-row statements
// runs the Before hook per item, and an item the plugin vetoes is that item's 422 while the others are
// written; the hook's set values reach the written records.
func TestBatchHooks(t *testing.T) {
	t.Parallel()
	for _, b := range servertest.Backends {
		t.Run(string(b), func(t *testing.T) {
			t.Parallel()
			e := servertest.Start(t, b, servertest.Options{})
			e.Contract()
			pipeline := e.Do("POST", "/v1/pipelines", map[string]any{"name": "Sales"}).Data()["id"]
			stage := func(name, kind string, probability int) any {
				return e.Do("POST", "/v1/pipeline_stages", map[string]any{"pipeline_id": pipeline, "name": name, "stage_type": kind, "probability": probability}).Data()["id"]
			}
			open, won := stage("Qualified", "open", 30), stage("Won", "won", 100)
			r := e.Do("POST", "/v1/deals/batch", map[string]any{"mode": "per_item", "items": []any{
				map[string]any{"op": "create", "body": map[string]any{"name": "Open deal", "pipeline_id": pipeline, "stage_id": open}},
				map[string]any{"op": "create", "body": map[string]any{"name": "Won, no close date", "pipeline_id": pipeline, "stage_id": won}},
				map[string]any{"op": "create", "body": map[string]any{"name": "Won deal", "pipeline_id": pipeline, "stage_id": won, "close_date": "2026-11-01"}},
			}})
			e.Expect(r, 200, "")
			if got := r.Statuses(); got != "201,422,201" {
				t.Fatalf("statuses %s: %s", got, r.Raw)
			}
			res := r.Results()
			if err, _ := res[1]["error"].(map[string]any); !strings.Contains(fmt.Sprint(err["details"]), "close_date") {
				t.Errorf("the veto does not name close_date: %v", res[1])
			}
			// The atomic form of the same batch writes nothing.
			before := len(e.Do("GET", "/v1/deals?page_size=100", nil).List())
			r = e.Do("POST", "/v1/deals/batch", map[string]any{"items": []any{
				map[string]any{"op": "create", "body": map[string]any{"name": "Open deal 2", "pipeline_id": pipeline, "stage_id": open}},
				map[string]any{"op": "create", "body": map[string]any{"name": "Won, no close date 2", "pipeline_id": pipeline, "stage_id": won}},
			}})
			e.Expect(r, 422, "batch_failed")
			if after := len(e.Do("GET", "/v1/deals?page_size=100", nil).List()); after != before {
				t.Errorf("a failed atomic batch on deals wrote %d records", after-before)
			}
		})
	}
}

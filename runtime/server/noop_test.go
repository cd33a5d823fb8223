package server_test

import (
	"context"
	"strings"
	"testing"

	"github.com/workspace-records/records/runtime/customfields"
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
			}
			batch := e.Do("POST", "/v1/companies/batch", map[string]any{"items": []any{
				map[string]any{"op": "upsert", "key": "domain", "value": "same.example", "body": body},
				map[string]any{"op": "update", "id": id, "body": map[string]any{"cf__tier": "gold"}, "if_match": tag0},
			}})
			e.Expect(batch, 200, "")
			if got := batch.Statuses(); got != "200,200" {
				t.Errorf("batch statuses %s: %s", got, batch.Raw)
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

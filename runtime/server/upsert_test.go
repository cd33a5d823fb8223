package server_test

// Upsert (README "Upsert"): PUT /v1/{resource}/by/{key}/{value} creates the record holding a unique key's
// value (201) or changes the active one that holds it (200).

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/workspace-records/records/runtime/audit"
	"github.com/workspace-records/records/runtime/auth"
	"github.com/workspace-records/records/runtime/customfields"
	"github.com/workspace-records/records/runtime/server/servertest"
)

func TestUpsert(t *testing.T) {
	t.Parallel()
	for _, b := range servertest.Backends {
		t.Run(string(b), func(t *testing.T) {
			t.Parallel()
			e := servertest.Start(t, b, servertest.Options{})
			e.Contract()
			path := "/v1/companies/by/domain/up.example"

			// Create, then change the same record.
			made := e.Do("PUT", path, map[string]any{"name": "Up"})
			e.Expect(made, 201, "")
			id := made.Data()["id"].(string)
			if made.Data()["domain"] != "up.example" || made.Header.Get("Location") != "/v1/companies/"+id {
				t.Errorf("created %v, Location %q", made.Data(), made.Header.Get("Location"))
			}
			tag0, _ := tagOf(t, made)
			changed := e.Do("PUT", path, map[string]any{"name": "Up 2", "domain": "up.example"})
			e.Expect(changed, 200, "")
			if changed.Data()["id"] != id || changed.Data()["name"] != "Up 2" || changed.Header.Get("Location") != "" {
				t.Errorf("changed %v, Location %q", changed.Data(), changed.Header.Get("Location"))
			}
			// An empty body changes nothing: 200 with the record as it is.
			same := e.Do("PUT", path, map[string]any{})
			e.Expect(same, 200, "")
			if same.Data()["name"] != "Up 2" {
				t.Errorf("empty upsert: %v", same.Data())
			}
			if l := e.Do("GET", "/v1/companies?filter="+url.QueryEscape(`[{"field":"domain","op":"eq","value":"up.example"}]`), nil).List(); len(l) != 1 {
				t.Errorf("%d records hold up.example", len(l))
			}
			// The trail has the create and the update.
			if trail := auditActions(t, e, id); strings.Join(trail, ",") != "update,create" {
				t.Errorf("audit actions %v", trail)
			}

			// A create's rules apply when no record holds the value; an update's otherwise.
			e.Expect(e.Do("PUT", "/v1/companies/by/domain/new.example", map[string]any{"phone": "+1 555 0100"}), 422, "validation_failed")
			e.Expect(e.Do("PUT", path, map[string]any{"name": 7}), 422, "validation_failed")
			e.Expect(e.Do("PUT", path, map[string]any{"domain": "other.example"}), 400, "invalid_request")
			e.Expect(e.Do("PUT", "/v1/contacts/by/email/not%20an%20email", map[string]any{"first_name": "x", "last_name": "y"}), 422, "validation_failed")
			// Keys that are not unique keys, and resources that take no upserts.
			e.Expect(e.Do("PUT", "/v1/companies/by/name/Up", map[string]any{"name": "x"}), 404, "not_found")
			if r := e.Do("PUT", "/v1/companies/by/domian/up.example", map[string]any{"name": "x"}); !strings.Contains(string(r.Raw), `\"domain\"`) {
				t.Errorf("unknown key's answer does not suggest domain: %s", r.Raw)
			}
			e.Expect(e.Do("GET", path, nil), 405, "method_not_allowed")

			// Preconditions: If-Match needs the record at that version; If-None-Match: * creates only.
			e.Expect(e.Do("PUT", path, map[string]any{"name": "stale"}, "If-Match", tag0), 412, "precondition_failed")
			cur, _ := tagOf(t, e.Do("GET", "/v1/companies/"+id, nil))
			e.Expect(e.Do("PUT", path, map[string]any{"name": "Up 3"}, "If-Match", cur), 200, "")
			e.Expect(e.Do("PUT", "/v1/companies/by/domain/absent.example", map[string]any{"name": "x"}, "If-Match", "*"), 412, "precondition_failed")
			e.Expect(e.Do("PUT", path, map[string]any{"name": "x"}, "If-None-Match", "*"), 412, "precondition_failed")
			e.Expect(e.Do("PUT", "/v1/companies/by/domain/only.example", map[string]any{"name": "Only"}, "If-None-Match", "*"), 201, "")
			e.Expect(e.Do("PUT", path, map[string]any{"name": "x"}, "If-None-Match", `"1-0000000000000000"`), 400, "invalid_request")
			if got := e.Do("GET", "/v1/companies/"+id, nil).Data()["name"]; got != "Up 3" {
				t.Errorf("refused upserts wrote: name %v", got)
			}

			// Idempotency-Key: the replay is the first answer, 201 and Location included.
			first := e.Do("PUT", "/v1/companies/by/domain/idem.example", map[string]any{"name": "Idem"}, "Idempotency-Key", "up-1")
			e.Expect(first, 201, "")
			again := e.Do("PUT", "/v1/companies/by/domain/idem.example", map[string]any{"name": "Idem"}, "Idempotency-Key", "up-1")
			if again.Status != 201 || again.Header.Get("Idempotent-Replayed") != "true" || again.Data()["id"] != first.Data()["id"] || again.Header.Get("Location") == "" {
				t.Errorf("replay: %d %v %s", again.Status, again.Header, again.Raw)
			}
			e.Expect(e.Do("PUT", "/v1/companies/by/domain/idem.example", map[string]any{"name": "Other"}, "Idempotency-Key", "up-1"), 422, "idempotency_key_reused")

			// An archived record holds no key: the upsert makes a new active record beside it.
			e.Expect(e.Do("DELETE", "/v1/companies/"+id, nil), 200, "")
			fresh := e.Do("PUT", path, map[string]any{"name": "Up again"})
			e.Expect(fresh, 201, "")
			if fresh.Data()["id"] == id {
				t.Errorf("the upsert changed the archived record")
			}

			// contacts.email; a custom unique key as cf__<key>, in both body forms.
			e.Expect(e.Do("PUT", "/v1/contacts/by/email/ada%40up.example", map[string]any{"first_name": "Ada", "last_name": "L"}), 201, "")
			e.Expect(e.Do("PUT", "/v1/contacts/by/email/ada@up.example", map[string]any{"last_name": "Lovelace"}), 200, "")
			if _, err := e.Server.Backend().Current().Custom.Create(context.Background(), e.Workspace, customfields.Def{Resource: "companies", Key: "erp_id", Type: "text", Unique: true}); err != nil {
				t.Fatal(err)
			}
			erp := e.Do("PUT", "/v1/companies/by/cf__erp_id/E-7", map[string]any{"name": "ERP"})
			e.Expect(erp, 201, "")
			if cf, _ := erp.Data()["custom_fields"].(map[string]any); cf["erp_id"] != "E-7" {
				t.Errorf("custom key not set: %v", erp.Data())
			}
			erp2 := e.Do("PUT", "/v1/companies/by/cf__erp_id/E-7", map[string]any{"name": "ERP 2", "custom_fields": map[string]any{"erp_id": "E-7"}})
			e.Expect(erp2, 200, "")
			if erp2.Data()["id"] != erp.Data()["id"] {
				t.Errorf("custom upsert made a second record")
			}
			e.Expect(e.Do("PUT", "/v1/companies/by/cf__nope/E-7", map[string]any{"name": "x"}), 404, "not_found")

			// Another workspace holds its own values.
			_, _, other := e.NewWorkspace("growth", "admin", "write")
			if r := e.DoKey(other, "PUT", "/v1/companies/by/domain/only.example", map[string]any{"name": "Theirs"}); r.Status != 201 {
				t.Errorf("other workspace: %d %s", r.Status, r.Raw)
			}
		})
	}
}

// A value held by a record outside the caller's record rule is refused as a create of it would be (409
// naming the key), never changed and never shown; a read key is refused; masks apply to the answer.
func TestUpsertAccess(t *testing.T) {
	t.Parallel()
	for _, b := range servertest.Backends {
		t.Run(string(b), func(t *testing.T) {
			t.Parallel()
			e := servertest.Start(t, b, servertest.Options{})
			e.Contract()
			pen := penKey(t, e)
			held := e.Do("POST", "/v1/companies", map[string]any{"name": "Admin's", "domain": "held.example", "phone": "+1 555 0199"})
			e.Expect(held, 201, "")
			expectKeyConflict(t, e, e.DoKey(pen, "PUT", "/v1/companies/by/domain/held.example", map[string]any{"name": "Pen's"}), "domain", held.Data()["id"].(string))
			if got := e.Do("GET", "/v1/companies/"+held.Data()["id"].(string), nil).Data(); got["name"] != "Admin's" {
				t.Errorf("pen changed admin's record: %v", got)
			}
			// pen may not write its masked phone, on an upsert as on a create.
			e.Expect(e.DoKey(pen, "PUT", "/v1/companies/by/domain/pen.example", map[string]any{"name": "Pen's", "phone": "+1 555 0123"}), 422, "validation_failed")
			e.Expect(e.DoKey(pen, "PUT", "/v1/companies/by/domain/pen.example", map[string]any{"name": "Pen's"}), 201, "")
			e.Expect(e.DoKey(pen, "PUT", "/v1/companies/by/domain/pen.example", map[string]any{"name": "Pen's 2"}), 200, "")
			reader := e.NewKey(e.Member, auth.KeyOptions{Access: "read"})
			e.Expect(e.DoKey(reader, "PUT", "/v1/companies/by/domain/pen.example", map[string]any{"name": "x"}), 403, "insufficient_scope")
			narrow := e.NewKey(e.Member, auth.KeyOptions{Access: "write", Resources: []string{"deals"}})
			e.Expect(e.DoKey(narrow, "PUT", "/v1/companies/by/domain/pen.example", map[string]any{"name": "x"}), 403, "insufficient_scope")
		})
	}
}

// 1,000 concurrent upserts (250 under -race) of 50 key values make exactly 50 records, on both backends: the first upsert
// of each value creates, the others change it; none is refused.
func TestUpsertConcurrent(t *testing.T) {
	t.Parallel()
	for _, b := range servertest.Backends {
		t.Run(string(b), func(t *testing.T) {
			t.Parallel()
			e, client := concurrentEnv(t, b)
			total, values := 1000, 50
			if servertest.Race {
				total = 250 // the race step looks for data races, not for the count: 1,000 take 19 s there
			}
			var created, updated atomic.Int32
			var wg sync.WaitGroup
			work := make(chan int)
			for w := 0; w < writers; w++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := range work {
						r := try(t, e, client, e.Key, "PUT", fmt.Sprintf("/v1/companies/by/domain/v%d.race.example", i%values), map[string]any{"name": fmt.Sprintf("Upserter %d", i)})
						switch r.Status {
						case http.StatusCreated:
							created.Add(1)
						case http.StatusOK:
							updated.Add(1)
						default:
							t.Errorf("upsert %d: %d %s", i, r.Status, r.Raw)
						}
					}
				}()
			}
			for i := 0; i < total; i++ {
				work <- i
			}
			close(work)
			wg.Wait()
			if int(created.Load()) != values || int(updated.Load()) != total-values {
				t.Errorf("created %d, updated %d; want %d and %d", created.Load(), updated.Load(), values, total-values)
			}
			n := 0
			for cursor := "start"; cursor != ""; {
				page := e.Do("GET", "/v1/companies?page_size=100&cursor="+url.QueryEscape(cursor)+"&filter="+url.QueryEscape(`[{"field":"domain","op":"contains","value":"race.example"}]`), nil)
				e.Expect(page, 200, "")
				n += len(page.List())
				cursor, _ = page.Body["meta"].(map[string]any)["next_cursor"].(string)
			}
			if n != values {
				t.Errorf("%d records, want %d", n, values)
			}
		})
	}
}

// auditActions lists the actions of record id's audit entries, newest first.
func auditActions(t *testing.T, e *servertest.Env, id string) []string {
	t.Helper()
	var out []string
	for _, row := range auditOf(t, e, audit.Query{RecordID: id}) {
		out = append(out, row.Action)
	}
	return out
}

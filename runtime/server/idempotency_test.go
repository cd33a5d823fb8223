package server_test

import (
	"context"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/workspace-records/records/runtime/auth"
	"github.com/workspace-records/records/runtime/idempotency"
	"github.com/workspace-records/records/runtime/server/servertest"
)

func countNamed(t *testing.T, e *servertest.Env, name string) int {
	t.Helper()
	filter := url.QueryEscape(`[{"field":"name","op":"eq","value":"` + name + `"}]`)
	return len(e.Do("GET", "/v1/companies?include_archived=true&page_size=100&filter="+filter, nil).List())
}

func TestIdempotency(t *testing.T) {
	t.Parallel()
	for _, b := range servertest.Backends {
		t.Run(string(b), func(t *testing.T) {
			t.Parallel()
			e := servertest.Start(t, b, servertest.Options{})
			first := e.Do("POST", "/v1/companies", []byte(`{"name":"Idem Co","employee_count":5}`), "Idempotency-Key", "create-1")
			e.Expect(first, 201, "")
			if first.Header.Get("Idempotent-Replayed") != "" {
				t.Error("first response marked as replayed")
			}
			// Same meaning, other member order and whitespace: a replay, byte for byte.
			again := e.Do("POST", "/v1/companies", []byte("{ \"employee_count\": 5,\n \"name\": \"Idem Co\" }"), "Idempotency-Key", "create-1")
			e.Expect(again, 201, "")
			if again.Header.Get("Idempotent-Replayed") != "true" || string(again.Raw) != string(first.Raw) || again.Header.Get("Location") != first.Header.Get("Location") {
				t.Errorf("replay differs:\n%s\n%s\n%v", first.Raw, again.Raw, again.Header)
			}
			if n := countNamed(t, e, "Idem Co"); n != 1 {
				t.Errorf("%d records after a replay, want 1", n)
			}
			// Another request with the same key.
			e.Expect(e.Do("POST", "/v1/companies", map[string]any{"name": "Other"}, "Idempotency-Key", "create-1"), 422, "idempotency_key_reused")
			e.Expect(e.Do("POST", "/v1/companies?x=1", []byte(`{"name":"Idem Co","employee_count":5}`), "Idempotency-Key", "create-1"), 400, "invalid_request")
			// A key is the API key's own: another key may use the same value.
			other := e.NewKey(e.Member, auth.KeyOptions{Access: "write"})
			e.Expect(e.DoKey(other, "POST", "/v1/companies", map[string]any{"name": "Idem Co"}, "Idempotency-Key", "create-1"), 201, "")

			// A failed request releases its key.
			e.Expect(e.Do("POST", "/v1/companies", map[string]any{"name": 5}, "Idempotency-Key", "create-2"), 422, "validation_failed")
			e.Expect(e.Do("POST", "/v1/companies", map[string]any{"name": "Fixed"}, "Idempotency-Key", "create-2"), 201, "")

			// Malformed keys.
			for _, k := range []string{strings.Repeat("k", 256), "caf\u00e9", "tab\there"} {
				e.Expect(e.Do("POST", "/v1/companies", map[string]any{"name": "x"}, "Idempotency-Key", k), 400, "invalid_request")
			}
			e.Expect(e.Do("POST", "/v1/companies", map[string]any{"name": "x"}, "Idempotency-Key", ""), 400, "invalid_request")

			// Update, archive and restore replay too, and perform no second write.
			id := first.Data()["id"].(string)
			u1 := e.Do("PATCH", "/v1/companies/"+id, map[string]any{"employee_count": 6}, "Idempotency-Key", "upd-1")
			e.Do("PATCH", "/v1/companies/"+id, map[string]any{"employee_count": 7})
			u2 := e.Do("PATCH", "/v1/companies/"+id, map[string]any{"employee_count": 6}, "Idempotency-Key", "upd-1")
			if string(u1.Raw) != string(u2.Raw) || u2.Header.Get("Idempotent-Replayed") != "true" {
				t.Errorf("update replay differs")
			}
			if got := e.Do("GET", "/v1/companies/"+id, nil).Data()["employee_count"]; got.(interface{ String() string }).String() != "7" {
				t.Errorf("a replayed update wrote again: employee_count %v", got)
			}
			a1 := e.Do("DELETE", "/v1/companies/"+id, map[string]any{"reason": "dup"}, "Idempotency-Key", "arch-1")
			a2 := e.Do("DELETE", "/v1/companies/"+id, map[string]any{"reason": "dup"}, "Idempotency-Key", "arch-1")
			e.Expect(a1, 200, "")
			if string(a1.Raw) != string(a2.Raw) {
				t.Errorf("archive replay differs")
			}

			// An abandoned claim (its server died) is taken over once its lease has passed.
			st := e.Server.Backend().Store
			if _, err := st.Exec(context.Background(), st.Dialect().Bind(`INSERT INTO idempotency_keys (api_key_id, idem_key, workspace_id, fingerprint, status, token, locked_until, created_at)
VALUES (?, 'dead-1', ?, ?, 'running', 't', ?, ?)`, keyID(t, e), e.Workspace, idempotency.Fingerprint("POST", "/v1/companies", "", map[string]any{"name": "Recovered"}), time.Now().Add(-time.Second), time.Now().Add(-time.Minute))); err != nil {
				t.Fatal(err)
			}
			e.Expect(e.Do("POST", "/v1/companies", map[string]any{"name": "Recovered"}, "Idempotency-Key", "dead-1"), 201, "")
			// A live claim answers 409.
			if _, err := st.Exec(context.Background(), st.Dialect().Bind(`INSERT INTO idempotency_keys (api_key_id, idem_key, workspace_id, fingerprint, status, token, locked_until, created_at)
VALUES (?, 'busy-1', ?, ?, 'running', 't', ?, ?)`, keyID(t, e), e.Workspace, idempotency.Fingerprint("POST", "/v1/companies", "", map[string]any{"name": "Busy"}), time.Now().Add(time.Minute), time.Now())); err != nil {
				t.Fatal(err)
			}
			e.Expect(e.Do("POST", "/v1/companies", []byte(`{"name":"Busy"}`), "Idempotency-Key", "busy-1"), 409, "idempotency_key_in_use")
		})
	}
}

func keyID(t *testing.T, e *servertest.Env) string {
	t.Helper()
	return e.Do("GET", "/v1/me", nil).Data()["key"].(map[string]any)["id"].(string)
}

// A replay never shows a value the caller's role no longer lets it read.
func TestReplayAppliesCurrentMasks(t *testing.T) {
	t.Parallel()
	e := servertest.Start(t, servertest.SQLite, servertest.Options{})
	m := e.NewMember("owner@x.example", "admin", "")
	key := e.NewKey(m, auth.KeyOptions{Access: "write"})
	first := e.DoKey(key, "POST", "/v1/companies", map[string]any{"name": "Secretive", "annual_revenue": 7654321}, "Idempotency-Key", "mask-1")
	e.Expect(first, 201, "")
	if !strings.Contains(string(first.Raw), "7654321") {
		t.Fatalf("admin does not see the revenue: %s", first.Raw)
	}
	if err := e.Server.Backend().Members.SetRole(context.Background(), m, "member"); err != nil {
		t.Fatal(err)
	}
	again := e.DoKey(key, "POST", "/v1/companies", map[string]any{"name": "Secretive", "annual_revenue": 7654321}, "Idempotency-Key", "mask-1")
	if again.Header.Get("Idempotent-Replayed") != "true" || strings.Contains(string(again.Raw), "7654321") {
		t.Errorf("replay after the field became masked: %d %s", again.Status, again.Raw)
	}
}

// 50 concurrent identical creates with one key, spread over two servers, create exactly one record; every
// other answer is a byte-identical replay or a 409, never a 5xx.
func TestIdempotentConcurrentCreates(t *testing.T) {
	t.Parallel()
	for _, b := range servertest.Backends {
		t.Run(string(b), func(t *testing.T) {
			t.Parallel()
			db := servertest.DatabaseURL(t, b)
			e1 := servertest.Start(t, b, servertest.Options{DB: db})
			e2 := servertest.Start(t, b, servertest.Options{DB: db})
			e2.Key, e2.Workspace, e2.Member = e1.Key, e1.Workspace, e1.Member
			var mu sync.Mutex
			var bodies []string
			codes := map[int]int{}
			var wg sync.WaitGroup
			for i := 0; i < 50; i++ {
				env := e1
				if i%2 == 1 {
					env = e2
				}
				wg.Add(1)
				go func() {
					defer wg.Done()
					res := env.Do("POST", "/v1/companies", []byte(`{"name":"Concurrent Co"}`), "Idempotency-Key", "burst-1")
					mu.Lock()
					defer mu.Unlock()
					codes[res.Status]++
					if res.Status == 201 {
						bodies = append(bodies, string(res.Raw))
					} else if res.Status == 409 && res.Code() != "idempotency_key_in_use" {
						t.Errorf("409 with code %s", res.Code())
					}
				}()
			}
			wg.Wait()
			if codes[201]+codes[409] != 50 || codes[201] == 0 {
				t.Errorf("statuses %v", codes)
			}
			for _, body := range bodies {
				if body != bodies[0] {
					t.Errorf("201 bodies differ:\n%s\n%s", bodies[0], body)
				}
			}
			if n := countNamed(t, e1, "Concurrent Co"); n != 1 {
				t.Errorf("%d records created, want exactly 1", n)
			}
		})
	}
}

// A replay answers as a read would now: after the caller's role narrows to its own deals, replaying its
// PATCH of someone else's deal is 404 (not the stored record), while replaying the create of its own deal
// still returns the stored response.
func TestReplayUnderNarrowedRecordRule(t *testing.T) {
	t.Parallel()
	for _, b := range servertest.Backends {
		t.Run(string(b), func(t *testing.T) {
			t.Parallel()
			e := servertest.Start(t, b, servertest.Options{})
			member := e.NewMember("narrowed@example.com", "admin", "")
			key := e.NewKey(member, auth.KeyOptions{Access: "write"})
			theirs := e.Do("POST", "/v1/deals", map[string]any{"name": "Admin's deal"}).Data()["id"].(string)
			patch := map[string]any{"description": "seen by the member"}
			e.Expect(e.DoKey(key, "PATCH", "/v1/deals/"+theirs, patch, "Idempotency-Key", "patch-1"), 200, "")
			created := e.DoKey(key, "POST", "/v1/deals", map[string]any{"name": "Member's deal"}, "Idempotency-Key", "create-1")
			e.Expect(created, 201, "")

			if err := e.Server.Backend().Members.SetRole(context.Background(), member, "member"); err != nil {
				t.Fatal(err)
			}
			e.Expect(e.DoKey(key, "GET", "/v1/deals/"+theirs, nil), 404, "not_found")
			replayed := e.DoKey(key, "PATCH", "/v1/deals/"+theirs, patch, "Idempotency-Key", "patch-1")
			e.Expect(replayed, 404, "not_found")
			if strings.Contains(string(replayed.Raw), "Admin's deal") {
				t.Errorf("the 404 shows the record: %s", replayed.Raw)
			}
			again := e.DoKey(key, "POST", "/v1/deals", map[string]any{"name": "Member's deal"}, "Idempotency-Key", "create-1")
			e.Expect(again, 201, "")
			if again.Header.Get("Idempotent-Replayed") != "true" || again.Data()["id"] != created.Data()["id"] {
				t.Errorf("replay of the member's own create: %v %s", again.Header, again.Raw)
			}
		})
	}
}

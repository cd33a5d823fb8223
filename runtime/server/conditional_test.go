package server_test

// Conditional requests (RFC 9110 §13, README "Conditional requests"): the ETag of record answers,
// If-None-Match on a get, If-Match on update, archive and restore.

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/workspace-records/records/runtime/auth"
	"github.com/workspace-records/records/runtime/server/servertest"
)

// penRoles: pen writes every resource but sees only the records it owns, with companies' phone masked.
const penRoles = `version: 1
roles:
  pen:
    label: Pen
    permissions: [api.access]
    resources: {"*": write}
    record_rules: {"*": owned}
    field_rules:
      companies: {phone: masked}
`

// penKey installs penRoles in e's workspace and returns a write key of a new member with the pen role.
func penKey(t *testing.T, e *servertest.Env) string {
	t.Helper()
	if _, err := e.Server.Backend().Members.PutRoles(context.Background(), e.Workspace, "roles.yaml", []byte(penRoles), true); err != nil {
		t.Fatal(err)
	}
	return e.NewKey(e.NewMember("pen@x.example", "pen", ""), auth.KeyOptions{Access: "write"})
}

var etagForm = regexp.MustCompile(`^"([0-9]+)-[0-9a-f]{16}"$`)

// tagOf returns r's ETag and its version, failing the test when it has none of the documented form.
func tagOf(t *testing.T, r *servertest.Response) (string, int64) {
	t.Helper()
	tag := r.Header.Get("ETag")
	m := etagForm.FindStringSubmatch(tag)
	if m == nil {
		t.Fatalf("%d answer has ETag %q, want \"<version>-<hash>\": %s", r.Status, tag, r.Raw)
	}
	v, _ := strconv.ParseInt(m[1], 10, 64)
	return tag, v
}

func TestConditionalRequests(t *testing.T) {
	t.Parallel()
	for _, b := range servertest.Backends {
		t.Run(string(b), func(t *testing.T) {
			t.Parallel()
			e := servertest.Start(t, b, servertest.Options{})
			created := e.Do("POST", "/v1/companies", map[string]any{"name": "Tagged", "phone": "+1 555 0100"})
			e.Expect(created, 201, "")
			id := created.Data()["id"].(string)
			path := "/v1/companies/" + id
			tag0, v0 := tagOf(t, created)

			// Get: the same tag as the create's answer; If-None-Match with it (strong, weak or in a
			// list) is 304 without a body; another tag is 200.
			got := e.Do("GET", path, nil)
			e.Expect(got, 200, "")
			if tag, _ := tagOf(t, got); tag != tag0 {
				t.Errorf("get's ETag %s differs from the create's %s", tag, tag0)
			}
			for _, inm := range []string{tag0, "W/" + tag0, `"other", ` + tag0, "*"} {
				r := e.Do("GET", path, nil, "If-None-Match", inm)
				if r.Status != 304 || len(r.Raw) != 0 || r.Header.Get("ETag") != tag0 {
					t.Errorf("If-None-Match %s: %d, ETag %q, body %q; want 304 with the ETag and no body", inm, r.Status, r.Header.Get("ETag"), r.Raw)
				}
			}
			e.Expect(e.Do("GET", path, nil, "If-None-Match", `"1-0000000000000000"`), 200, "")
			// Fewer fields are another representation: another tag.
			if tag, _ := tagOf(t, e.Do("GET", path+"?fields=name", nil)); tag == tag0 {
				t.Error("a get with fields has the full record's ETag")
			}

			// If-Match with the current tag writes and answers a new tag of a greater version.
			upd := e.Do("PATCH", path, map[string]any{"name": "Tagged 2"}, "If-Match", tag0)
			e.Expect(upd, 200, "")
			tag1, v1 := tagOf(t, upd)
			if tag1 == tag0 || v1 <= v0 {
				t.Errorf("update's ETag %s (version %d) after %s (version %d)", tag1, v1, tag0, v0)
			}
			// The stale tag is 412 precondition_failed and writes nothing; so is a weak tag and one
			// this server never issued. A malformed If-Match is 400.
			for _, im := range []string{tag0, "W/" + tag1, `"nonsense"`} {
				e.Expect(e.Do("PATCH", path, map[string]any{"name": "Lost update"}, "If-Match", im), 412, "precondition_failed")
			}
			for _, im := range []string{"no-quotes", `"unterminated`, ","} {
				e.Expect(e.Do("PATCH", path, map[string]any{"name": "Lost update"}, "If-Match", im), 400, "invalid_request")
			}
			if name := e.Do("GET", path, nil).Data()["name"]; name != "Tagged 2" {
				t.Errorf("a refused precondition wrote: name %v", name)
			}
			// A list naming the current tag holds; * holds for any existing record.
			upd = e.Do("PATCH", path, map[string]any{"name": "Tagged 3"}, "If-Match", tag0+", "+tag1)
			e.Expect(upd, 200, "")
			upd = e.Do("PATCH", path, map[string]any{"name": "Tagged 4"}, "If-Match", "*")
			e.Expect(upd, 200, "")
			tag4, _ := tagOf(t, upd)

			// Archive and restore take If-Match the same way.
			e.Expect(e.Do("DELETE", path, nil, "If-Match", tag1), 412, "precondition_failed")
			arch := e.Do("DELETE", path, nil, "If-Match", tag4)
			e.Expect(arch, 200, "")
			tag5, _ := tagOf(t, arch)
			e.Expect(e.Do("POST", path+"/restore", nil, "If-Match", tag4), 412, "precondition_failed")
			rest := e.Do("POST", path+"/restore", nil, "If-Match", tag5)
			e.Expect(rest, 200, "")
			tag6, _ := tagOf(t, rest)
			if tag6 == tag5 {
				t.Error("restore did not change the ETag")
			}

			// An Idempotency-Key replay returns the stored answer, its ETag included, even though the
			// tag it was sent with is stale by then.
			first := e.Do("PATCH", path, map[string]any{"name": "Tagged 7"}, "If-Match", tag6, "Idempotency-Key", "cond-1")
			e.Expect(first, 200, "")
			again := e.Do("PATCH", path, map[string]any{"name": "Tagged 7"}, "If-Match", tag6, "Idempotency-Key", "cond-1")
			if again.Status != 200 || again.Header.Get("Idempotent-Replayed") != "true" || again.Header.Get("ETag") != first.Header.Get("ETag") {
				t.Errorf("replay: %d, replayed %q, ETag %q (first %q)", again.Status, again.Header.Get("Idempotent-Replayed"), again.Header.Get("ETag"), first.Header.Get("ETag"))
			}
		})
	}
}

// Concurrent writers with the same If-Match: the check runs on the locked row inside the write's
// transaction, so exactly one wins and every other is 412 with nothing written.
func TestConditionalConcurrentWriters(t *testing.T) {
	t.Parallel()
	for _, b := range servertest.Backends {
		t.Run(string(b), func(t *testing.T) {
			t.Parallel()
			e := servertest.Start(t, b, servertest.Options{})
			created := e.Do("POST", "/v1/companies", map[string]any{"name": "Raced", "employee_count": 0})
			e.Expect(created, 201, "")
			path := "/v1/companies/" + created.Data()["id"].(string)
			tag, _ := tagOf(t, created)
			const writers = 8
			var wg sync.WaitGroup
			statuses := make([]int, writers)
			for i := range writers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					r := e.Do("PATCH", path, map[string]any{"employee_count": i + 1}, "If-Match", tag)
					statuses[i] = r.Status
				}()
			}
			wg.Wait()
			won, winner := 0, 0
			for i, s := range statuses {
				switch s {
				case 200:
					won++
					winner = i + 1
				case 412:
				default:
					t.Errorf("writer %d: %d", i, s)
				}
			}
			if won != 1 {
				t.Fatalf("%d writers won with the same If-Match (statuses %v), want exactly 1", won, statuses)
			}
			if n := e.Do("GET", path, nil).Data()["employee_count"]; fmt.Sprint(n) != strconv.Itoa(winner) {
				t.Errorf("employee_count %v, want the winner's %d", n, winner)
			}
		})
	}
}

// Field rules and record rules: a record the caller cannot see is 404 whatever the precondition (no
// existence leak through 412); callers with different masks get different tags for one record, so
// one's tag never gives the other a 304, while If-Match (which compares versions) holds for both.
func TestConditionalRequestsAccess(t *testing.T) {
	t.Parallel()
	for _, b := range servertest.Backends {
		t.Run(string(b), func(t *testing.T) {
			t.Parallel()
			e := servertest.Start(t, b, servertest.Options{})
			pen := penKey(t, e)

			// The admin's record is outside pen's record rule: 404 with any If-Match, a stale one
			// included, and with If-None-Match; nothing is written.
			theirs := e.Do("POST", "/v1/companies", map[string]any{"name": "Not pen's"})
			e.Expect(theirs, 201, "")
			tp := "/v1/companies/" + theirs.Data()["id"].(string)
			tag, _ := tagOf(t, theirs)
			for _, im := range []string{tag, `"1-0000000000000000"`, "*"} {
				e.Expect(e.DoKey(pen, "PATCH", tp, map[string]any{"name": "Pen was here"}, "If-Match", im), 404, "not_found")
				e.Expect(e.DoKey(pen, "DELETE", tp, nil, "If-Match", im), 404, "not_found")
				e.Expect(e.DoKey(pen, "POST", tp+"/restore", nil, "If-Match", im), 404, "not_found")
			}
			e.Expect(e.DoKey(pen, "GET", tp, nil, "If-None-Match", tag), 404, "not_found")
			if r := e.Do("GET", tp, nil); r.Data()["name"] != "Not pen's" || r.Header.Get("ETag") != tag {
				t.Errorf("pen's refused writes changed the record: %s", r.Raw)
			}

			// Pen's own record, phone masked for pen: the two callers' tags differ, share the version.
			mine := e.DoKey(pen, "POST", "/v1/companies", map[string]any{"name": "Pen's"})
			e.Expect(mine, 201, "")
			mp := "/v1/companies/" + mine.Data()["id"].(string)
			e.Expect(e.Do("PATCH", mp, map[string]any{"phone": "+1 555 0199"}), 200, "") // pen may not write it
			penTag, penV := tagOf(t, e.DoKey(pen, "GET", mp, nil))
			adminTag, adminV := tagOf(t, e.Do("GET", mp, nil))
			if penTag == adminTag || penV != adminV {
				t.Errorf("pen's ETag %s, the admin's %s: want different tags of one version", penTag, adminTag)
			}
			if r := e.DoKey(pen, "GET", mp, nil, "If-None-Match", adminTag); r.Status != 200 || strings.Contains(string(r.Raw), "0199") {
				t.Errorf("pen with the admin's tag: %d %s; want 200 with the masked phone", r.Status, r.Raw)
			}
			e.Expect(e.DoKey(pen, "PATCH", mp, map[string]any{"name": "Pen's, by the admin's tag"}, "If-Match", adminTag), 200, "")
			e.Expect(e.Do("PATCH", mp, map[string]any{"name": "Stale"}, "If-Match", adminTag), 412, "precondition_failed")
		})
	}
}

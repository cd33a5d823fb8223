package server_test

// The Idempotency-Key scenarios I1–I11 of the reliability research note (../shared/research/reliability.md
// §1), on SQLite and PostgreSQL where the behaviour exists on both. I7 (a crash between claim and commit,
// or after commit before the answer) runs against real recordsd processes in tests/crash.

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/workspace-records/records/runtime/auth"
	"github.com/workspace-records/records/runtime/idempotency"
	"github.com/workspace-records/records/runtime/server/servertest"
	"github.com/workspace-records/records/runtime/store"
)

// idemCount runs a counting query in e's workspace, straight against e's database.
func idemCount(t testing.TB, e *servertest.Env, query string, args ...any) int {
	t.Helper()
	st := e.Server.Backend().Store
	ctx := store.WithWorkspace(context.Background(), e.Workspace)
	var n int64
	if _, err := store.QueryOne(ctx, st, st.Dialect().Bind(query, args...), func(row []any) error {
		n = store.Int(row[0])
		return nil
	}); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	return int(n)
}

// idemExec runs a statement against e's database (outside any workspace).
func idemExec(t testing.TB, e *servertest.Env, query string, args ...any) int64 {
	t.Helper()
	st := e.Server.Backend().Store
	n, err := st.Exec(context.Background(), st.Dialect().Bind(query, args...))
	if err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	return n
}

// idemKeyRows counts the stored Idempotency-Keys of the API key with id keyID (all of them when key is
// "", else the one named key).
func idemKeyRows(t testing.TB, e *servertest.Env, keyID, key string) int {
	t.Helper()
	if key == "" {
		return idemCount(t, e, "SELECT count(*) FROM idempotency_keys WHERE api_key_id = ?", keyID)
	}
	return idemCount(t, e, "SELECT count(*) FROM idempotency_keys WHERE api_key_id = ? AND idem_key = ?", keyID, key)
}

// idemAudit counts the audit rows of one record and action.
func idemAudit(t testing.TB, e *servertest.Env, resource, id, action string) int {
	t.Helper()
	return idemCount(t, e, "SELECT count(*) FROM audit_log WHERE workspace_id = ? AND resource = ? AND record_id = ? AND action = ?", e.Workspace, resource, id, action)
}

// idemNamed counts the records of resource named name in e's workspace, archived ones included.
func idemNamed(t testing.TB, e *servertest.Env, resource, name string) int {
	t.Helper()
	return idemCount(t, e, "SELECT count(*) FROM rec_"+resource+" WHERE workspace_id = ? AND name = ?", e.Workspace, name)
}

// idemBeforeCalls sums the Before hook calls the servers made to plugin (any outcome), from their
// Prometheus registries: each is one gRPC call into the plugin's process.
func idemBeforeCalls(t testing.TB, plugin string, envs ...*servertest.Env) int {
	t.Helper()
	total, _ := idemBeforeCallsBy(t, plugin, envs...)
	return total
}

// idemBeforeCallsBy is idemBeforeCalls with the count of each server and outcome ("server 1 ok=2").
func idemBeforeCallsBy(t testing.TB, plugin string, envs ...*servertest.Env) (int, []string) {
	t.Helper()
	total := 0.0
	var by []string
	for i, e := range envs {
		fams, err := e.Server.Metrics().Registry().Gather()
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range fams {
			if f.GetName() != "records_plugin_calls_total" {
				continue
			}
			for _, m := range f.Metric {
				labels := map[string]string{}
				for _, l := range m.Label {
					labels[l.GetName()] = l.GetValue()
				}
				if labels["plugin"] == plugin && labels["hook"] == "before" {
					total += m.GetCounter().GetValue()
					by = append(by, fmt.Sprintf("server %d %s=%v", i, labels["outcome"], m.GetCounter().GetValue()))
				}
			}
		}
	}
	return int(total), by
}

// idemDealSetup creates a pipeline with a won stage (probability 100) and returns the body of a deal in
// it: deal-rules sets such a deal's status to won, which a create without the plugin would leave unset.
func idemDealSetup(t testing.TB, e *servertest.Env, name string) map[string]any {
	t.Helper()
	pipeline := e.Do("POST", "/v1/pipelines", map[string]any{"name": "Pipeline " + name})
	e.Expect(pipeline, 201, "")
	stage := e.Do("POST", "/v1/pipeline_stages", map[string]any{"pipeline_id": pipeline.Data()["id"], "name": "Won", "stage_type": "won", "probability": 100})
	e.Expect(stage, 201, "")
	return map[string]any{"name": name, "pipeline_id": pipeline.Data()["id"], "stage_id": stage.Data()["id"], "close_date": "2026-12-31", "amount": 1200}
}

// isReplayOf reports whether r replays first: same status, body bytes and Location, marked replayed,
// under its own request id.
func isReplayOf(r, first *servertest.Response) bool {
	return r.Status == first.Status && r.Header.Get("Idempotent-Replayed") == "true" && string(r.Raw) == string(first.Raw) &&
		r.Header.Get("Location") == first.Header.Get("Location") && r.Header.Get("X-Request-Id") != first.Header.Get("X-Request-Id")
}

// I1: 100 identical creates of a hooked resource (deals, through the shipped deal-rules plugin, a real
// process), released together by a barrier over three servers sharing one database: one record, one
// 201, every other answer a byte-identical replay or 409 idempotency_key_in_use, no 5xx, and the plugin's
// Before hook called once (the host's call count) with its effect (status won) and one audit row.
func TestIdempotencyConcurrentHookedCreates(t *testing.T) {
	t.Parallel()
	const n = 100
	for _, b := range servertest.Backends {
		t.Run(string(b), func(t *testing.T) {
			db := servertest.DatabaseURL(t, b)
			envs := make([]*servertest.Env, 3)
			for i := range envs {
				envs[i] = servertest.Start(t, b, servertest.Options{DB: db, Metrics: true})
				if i > 0 {
					envs[i].Key, envs[i].Workspace, envs[i].Member = envs[0].Key, envs[0].Workspace, envs[0].Member
				}
			}
			e := envs[0]
			body := idemDealSetup(t, e, "Concurrent hooked deal")
			before := idemBeforeCalls(t, "deal-rules", envs...)
			out := make([]*servertest.Response, n)
			var unavailable atomic.Int32 // 503s retried
			release := make(chan struct{})
			var wg sync.WaitGroup
			for i := range n {
				wg.Go(func() {
					<-release
					// A 503 (SQLite's one writer busy past its timeout with three servers on one file, which a
					// loaded machine reaches; nothing written, the claim released) is retried with the same
					// key, as a client would: never under RECORDS_TIMING=strict, for up to a minute in make test.
					e := envs[i%len(envs)]
					for first := time.Now(); ; time.Sleep(100 * time.Millisecond) {
						out[i] = e.Do("POST", "/v1/deals", body, "Idempotency-Key", "i1-burst")
						if out[i].Status != 503 || time.Since(first) > servertest.Budget(0, time.Minute) {
							break
						}
						unavailable.Add(1)
					}
				})
			}
			start := time.Now()
			close(release)
			wg.Wait()
			elapsed := time.Since(start)
			var fresh *servertest.Response
			replays, inUse, lost := 0, 0, 0
			ids := map[string]bool{}
			for _, r := range out {
				ids[r.Header.Get("X-Request-Id")] = true
				switch {
				case r.Status == 201 && r.Header.Get("Idempotent-Replayed") == "":
					if fresh != nil {
						t.Errorf("two fresh 201s for one key:\n%s\n%s", fresh.Raw, r.Raw)
					}
					fresh = r
				case r.Status == 201 && r.Header.Get("Idempotent-Replayed") == "true":
					replays++
				case r.Status == 409 && r.Code() == "idempotency_key_in_use":
					inUse++
					if strings.Contains(r.Message(), "took over") {
						lost++
					}
				default:
					t.Errorf("unexpected answer %d: %s", r.Status, r.Raw)
				}
			}
			if fresh == nil {
				t.Fatalf("no fresh 201 among %d answers", n)
			}
			for _, r := range out {
				if r.Header.Get("Idempotent-Replayed") == "true" && !isReplayOf(r, fresh) {
					t.Errorf("a replay differs from the first answer:\n%s\n%s", fresh.Raw, r.Raw)
				}
			}
			if len(ids) != n {
				t.Errorf("%d distinct X-Request-Id among %d answers", len(ids), n)
			}
			rec := fresh.Data()
			id, _ := rec["id"].(string)
			if got := idemNamed(t, e, "deals", "Concurrent hooked deal"); got != 1 {
				t.Errorf("%d deals stored, want 1", got)
			}
			if rec["status"] != "won" {
				t.Errorf("status %v: deal-rules did not run on the one write", rec["status"])
			}
			if got := idemAudit(t, e, "deals", id, "create"); got != 1 {
				t.Errorf("%d audit rows for the create, want 1", got)
			}
			// The hook runs once per claim holder: once, unless a holder's claim was taken over — its
			// server's heartbeat more than idempotency.DeadAfter late, which SQLite's one writer under the
			// race detector on a loaded machine once made — and that holder's write rolled back and
			// answered 409 "took over".
			all, by := idemBeforeCallsBy(t, "deal-rules", envs...)
			calls := all - before
			// A write refused with 503 may have called the hook before the database refused it; it wrote
			// nothing and released its claim, and the next holder calls the hook again.
			if extra := lost + int(unavailable.Load()); calls < 1 || calls > 1+extra {
				t.Errorf("deal-rules Before hook called %d times, want 1 (plus one per claim taken over, %d, or refused with 503, %d); by server and outcome, with the %d before: %v",
					calls, lost, unavailable.Load(), before, by)
			}
			t.Logf("%s: %d concurrent identical POST /v1/deals over 3 servers in %v: 1 × 201, %d × 201 replayed, %d × 409 idempotency_key_in_use (%d taken over), 0 other (%d 503s retried); 1 row, 1 audit row, %d Before hook call",
				b, n, elapsed.Round(time.Millisecond), replays, inUse, lost, unavailable.Load(), calls)
		})
	}
}

// TestIdempotencyScenarios runs I2–I6, I8, I9 and I11 on each backend, one after another over one server
// (each scenario with an API key of its own, so that it sees only its own Idempotency-Keys).
func TestIdempotencyScenarios(t *testing.T) {
	t.Parallel()
	scenarios := []struct {
		name string
		run  func(t *testing.T, e *servertest.Env, b servertest.Backend)
	}{
		{"I2_I8_retention", idemRetention},
		{"I3_I4_fingerprint", idemFingerprint},
		{"I5_scope", idemScope},
		{"I6_release_after_rollback", idemReleaseAfterRollback},
		{"I9_key_format", idemKeyFormat},
		{"I11_auth_before_replay", idemAuthBeforeReplay},
	}
	for _, b := range servertest.Backends {
		t.Run(string(b), func(t *testing.T) {
			t.Parallel()
			e := servertest.Start(t, b, servertest.Options{Metrics: true})
			for _, sc := range scenarios {
				t.Run(sc.name, func(t *testing.T) {
					own := *e
					own.T = t
					own.Key = e.NewKey(e.Member, auth.KeyOptions{Access: "write"})
					sc.run(t, &own, b)
				})
			}
		})
	}
}

// I2 and I8: a completed key replays the first answer byte for byte with Idempotent-Replayed and a fresh
// request id, and writes nothing (no row, no audit row, no hook call), one second and 23 h 59 min later
// (the key's age is set in the database, which is what the passing of time does to it); 24 h + 1 s later
// the same request is new and runs once more. The reaper deletes exactly the expired keys, so the table
// stays flat.
func idemRetention(t *testing.T, e *servertest.Env, b servertest.Backend) {
	kid := keyID(t, e)
	body := idemDealSetup(t, e, "Retained deal")
	calls0 := idemBeforeCalls(t, "deal-rules", e)
	first := e.Do("POST", "/v1/deals", body, "Idempotency-Key", "i2-key")
	e.Expect(first, 201, "")
	id, _ := first.Data()["id"].(string)
	if first.Header.Get("Location") == "" {
		t.Error("no Location on the first answer")
	}
	age := func(d time.Duration) {
		created := time.Now().Add(-d)
		if n := idemExec(t, e, "UPDATE idempotency_keys SET created_at = ?, completed_at = ? WHERE api_key_id = ? AND idem_key = ?", created, created, kid, "i2-key"); n != 1 {
			t.Fatalf("aged %d keys, want 1", n)
		}
	}
	for _, d := range []time.Duration{time.Second, 23*time.Hour + 59*time.Minute} {
		age(d)
		r := e.Do("POST", "/v1/deals", body, "Idempotency-Key", "i2-key")
		if !isReplayOf(r, first) {
			t.Errorf("at +%v: not a replay: %d %s (Idempotent-Replayed %q)", d, r.Status, r.Raw, r.Header.Get("Idempotent-Replayed"))
		}
	}
	if n := idemNamed(t, e, "deals", "Retained deal"); n != 1 {
		t.Errorf("%d deals after the replays, want 1", n)
	}
	if n := idemAudit(t, e, "deals", id, "create"); n != 1 {
		t.Errorf("%d audit rows after the replays, want 1", n)
	}
	if n := idemBeforeCalls(t, "deal-rules", e) - calls0; n != 1 {
		t.Errorf("%d Before hook calls after two replays, want 1", n)
	}

	// Past the retention the key starts a new request.
	age(idempotency.Retention + time.Second)
	again := e.Do("POST", "/v1/deals", body, "Idempotency-Key", "i2-key")
	e.Expect(again, 201, "")
	if again.Header.Get("Idempotent-Replayed") != "" || again.Data()["id"] == id {
		t.Errorf("after 24 h + 1 s: %s (Idempotent-Replayed %q), want a new record", again.Raw, again.Header.Get("Idempotent-Replayed"))
	}
	if n := idemNamed(t, e, "deals", "Retained deal"); n != 2 {
		t.Errorf("%d deals after the key expired and the request ran again, want 2", n)
	}
	if n := idemBeforeCalls(t, "deal-rules", e) - calls0; n != 2 {
		t.Errorf("%d Before hook calls, want 2", n)
	}

	// The reaper (what recordsd runs every minute): three rounds of 20 keys that all expire; after
	// each round's clean-up only the live key above is left.
	keys := idempotency.New(e.Server.Backend().Store, nil)
	var removed []int64
	var left []int
	for round := range 3 {
		for i := range 20 {
			e.Expect(e.Do("POST", "/v1/companies", map[string]any{"name": fmt.Sprintf("Reaped %d-%d", round, i)}, "Idempotency-Key", fmt.Sprintf("reap-%d-%d", round, i)), 201, "")
		}
		old := time.Now().Add(-idempotency.Retention - time.Second)
		idemExec(t, e, "UPDATE idempotency_keys SET created_at = ? WHERE api_key_id = ? AND idem_key LIKE 'reap-%'", old, kid)
		n, err := keys.Cleanup(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		removed = append(removed, n)
		if n < 20 {
			t.Errorf("round %d: the reaper removed %d keys, want at least the 20 expired", round, n)
		}
		left = append(left, idemKeyRows(t, e, kid, ""))
		if left[round] != 1 {
			t.Errorf("round %d: %d keys left after the clean-up, want 1 (the live one)", round, left[round])
		}
	}
	if idemKeyRows(t, e, kid, "i2-key") != 1 {
		t.Error("the reaper removed a live key")
	}
	t.Logf("%s: replayed at +1 s and +23 h 59 min (0 new rows, audit rows or hook calls); new at +24 h 1 s; reaper removed %v keys in three rounds of 20 expired ones, keys left %v", b, removed, left)
}

// I3 and I4: the same key with a changed value, on another route, with another method or on another
// record is 422 idempotency_key_reused and writes nothing (no row, no hook call); the same JSON with its
// members reordered, spaced differently or with a character escaped is the same request and replays.
func idemFingerprint(t *testing.T, e *servertest.Env, b servertest.Backend) {
	other := e.Do("POST", "/v1/companies", map[string]any{"name": "Other record"})
	e.Expect(other, 201, "")
	first := e.Do("POST", "/v1/companies", []byte(`{"name":"Fingerprinted","employee_count":12,"industry":"software"}`), "Idempotency-Key", "i3-key")
	e.Expect(first, 201, "")
	id := first.Data()["id"].(string)
	for _, same := range []string{
		`{"industry":"software","employee_count":12,"name":"Fingerprinted"}`,
		"{\n  \"name\" : \"Fingerprinted\",\t\"employee_count\" : 12 ,\"industry\":\"software\"\n}",
		`{"name":"Fingerpr\u0069nted","employee_count":12,"industry":"software"}`,
	} {
		r := e.Do("POST", "/v1/companies", []byte(same), "Idempotency-Key", "i3-key")
		if !isReplayOf(r, first) {
			t.Errorf("%s: not a replay: %d %s", same, r.Status, r.Raw)
		}
	}
	deal := idemDealSetup(t, e, "Fingerprinted deal")
	calls := idemBeforeCalls(t, "deal-rules", e)
	reused := []struct {
		name, method, path string
		body               any
	}{
		{"one value changed", "POST", "/v1/companies", `{"name":"Fingerprinted","employee_count":13,"industry":"software"}`},
		{"one member more", "POST", "/v1/companies", `{"name":"Fingerprinted","employee_count":12,"industry":"software","domain":"f.example"}`},
		{"one member less", "POST", "/v1/companies", `{"name":"Fingerprinted","employee_count":12}`},
		{"another resource", "POST", "/v1/contacts", map[string]any{"first_name": "Fingerprinted", "last_name": "Contact"}},
		{"another hooked resource", "POST", "/v1/deals", deal},
		{"another method", "PATCH", "/v1/companies/" + id, map[string]any{"employee_count": 12}},
		{"another record", "PATCH", "/v1/companies/" + other.Data()["id"].(string), map[string]any{"employee_count": 12}},
		{"archive", "DELETE", "/v1/companies/" + id, nil},
	}
	for _, c := range reused {
		body := c.body
		if s, ok := body.(string); ok {
			body = []byte(s)
		}
		r := e.Do(c.method, c.path, body, "Idempotency-Key", "i3-key")
		if r.Status != 422 || r.Code() != "idempotency_key_reused" {
			t.Errorf("%s: %d %s, want 422 idempotency_key_reused", c.name, r.Status, r.Raw)
		}
	}
	if n := idemNamed(t, e, "companies", "Fingerprinted"); n != 1 {
		t.Errorf("%d companies named Fingerprinted, want 1", n)
	}
	if n := idemCount(t, e, "SELECT count(*) FROM rec_contacts WHERE workspace_id = ?", e.Workspace); n != 0 {
		t.Errorf("%d contacts written under a reused key", n)
	}
	if n := idemNamed(t, e, "deals", "Fingerprinted deal"); n != 0 {
		t.Errorf("%d deals written under a reused key", n)
	}
	if n := idemBeforeCalls(t, "deal-rules", e) - calls; n != 0 {
		t.Errorf("deal-rules called %d times for a reused key", n)
	}
	if got := e.Do("GET", "/v1/companies/"+id, nil).Data(); got["archived"] != false || num(got, "employee_count") != "12" {
		t.Errorf("a refused request changed the record: %v", got)
	}
	// The original still replays.
	if r := e.Do("POST", "/v1/companies", []byte(`{"name":"Fingerprinted","employee_count":12,"industry":"software"}`), "Idempotency-Key", "i3-key"); !isReplayOf(r, first) {
		t.Errorf("after the refusals: %d %s", r.Status, r.Raw)
	}
}

// I5: a key is its API key's own. The same Idempotency-Key sent with another key of the same member,
// with a key of another member, and from another workspace runs independently, and never answers with
// another caller's stored body.
func idemScope(t *testing.T, e *servertest.Env, b servertest.Backend) {
	body := map[string]any{"name": "Scoped"}
	first := e.Do("POST", "/v1/companies", body, "Idempotency-Key", "i5-key")
	e.Expect(first, 201, "")
	sameMember := e.NewKey(e.Member, auth.KeyOptions{Access: "write"})
	otherMember := e.NewKey(e.NewMember("other@i5.example", "admin", ""), auth.KeyOptions{Access: "write"})
	_, _, foreign := e.NewWorkspace("growth", "admin", "write")
	seen := map[string]string{first.Data()["id"].(string): "the first key"}
	for _, c := range []struct{ name, key string }{{"another key of the same member", sameMember}, {"another member's key", otherMember}, {"a key of another workspace", foreign}} {
		r := e.DoKey(c.key, "POST", "/v1/companies", body, "Idempotency-Key", "i5-key")
		e.Expect(r, 201, "")
		id, _ := r.Data()["id"].(string)
		if r.Header.Get("Idempotent-Replayed") != "" || seen[id] != "" || strings.Contains(string(r.Raw), first.Data()["id"].(string)) {
			t.Errorf("%s got %s's answer: %s", c.name, seen[id], r.Raw)
		}
		seen[id] = c.name
		// Each caller's own repeat replays its own answer.
		if again := e.DoKey(c.key, "POST", "/v1/companies", body, "Idempotency-Key", "i5-key"); !isReplayOf(again, r) {
			t.Errorf("%s: its repeat is not a replay of its own answer: %s", c.name, again.Raw)
		}
	}
	if n := idemNamed(t, e, "companies", "Scoped"); n != 3 {
		t.Errorf("%d companies named Scoped in the first workspace, want 3 (one per key there)", n)
	}
	// A different body under another key is not "reused": the keys do not meet.
	e.Expect(e.DoKey(sameMember, "POST", "/v1/companies", map[string]any{"name": "Scoped but other"}, "Idempotency-Key", "i5-other"), 201, "")
	e.Expect(e.Do("POST", "/v1/companies", map[string]any{"name": "Scoped differently"}, "Idempotency-Key", "i5-other"), 201, "")
}

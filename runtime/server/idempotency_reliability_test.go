package server_test

// The Idempotency-Key scenarios I1–I11 of the reliability research note (../shared/research/reliability.md
// §1), on SQLite and PostgreSQL where the behaviour exists on both. I7 (a crash between claim and commit,
// or after commit before the answer) runs against real recordsd processes in tests/crash.

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

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
	total := 0.0
	for _, e := range envs {
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
				}
			}
		}
	}
	return int(total)
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
			release := make(chan struct{})
			var wg sync.WaitGroup
			for i := range n {
				wg.Go(func() {
					<-release
					out[i] = envs[i%len(envs)].Do("POST", "/v1/deals", body, "Idempotency-Key", "i1-burst")
				})
			}
			start := time.Now()
			close(release)
			wg.Wait()
			elapsed := time.Since(start)
			var fresh *servertest.Response
			replays, inUse := 0, 0
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
			calls := idemBeforeCalls(t, "deal-rules", envs...) - before
			if calls != 1 {
				t.Errorf("deal-rules Before hook called %d times, want 1", calls)
			}
			t.Logf("%s: %d concurrent identical POST /v1/deals over 3 servers in %v: 1 × 201, %d × 201 replayed, %d × 409 idempotency_key_in_use, 0 other; 1 row, 1 audit row, %d Before hook call",
				b, n, elapsed.Round(time.Millisecond), replays, inUse, calls)
		})
	}
}

// TestIdempotencyScenarios runs I2–I6, I8, I9 and I11 on each backend, one after another over one server
// (each scenario with an API key of its own, so that it sees only its own Idempotency-Keys).
func TestIdempotencyScenarios(t *testing.T) {
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

// idemFault installs a fault in e's database: while the table idem_fault_armed has a row, every audit
// row inserted (the last statement of a write before its response is stored) fails its transaction with
// a unique violation, which the API answers 409 conflict. On PostgreSQL the trigger first sleeps for
// sleep, keeping the doomed transaction open.
func idemFault(t testing.TB, e *servertest.Env, b servertest.Backend, sleep time.Duration) (arm, disarm func()) {
	t.Helper()
	stmts := []string{
		"CREATE TABLE idem_fault (n INTEGER PRIMARY KEY)",
		"INSERT INTO idem_fault VALUES (1)",
		"CREATE TABLE idem_fault_armed (n INTEGER)",
	}
	if b == servertest.SQLite {
		stmts = append(stmts, "CREATE TRIGGER idem_fault AFTER INSERT ON audit_log WHEN EXISTS (SELECT 1 FROM idem_fault_armed) BEGIN INSERT INTO idem_fault VALUES (1); END")
	} else {
		stmts = append(stmts, fmt.Sprintf(`CREATE FUNCTION idem_fault_fire() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF EXISTS (SELECT 1 FROM idem_fault_armed) THEN
    PERFORM pg_sleep(%f);
    INSERT INTO idem_fault VALUES (1);
  END IF;
  RETURN NEW;
END $$`, sleep.Seconds()),
			"CREATE TRIGGER idem_fault AFTER INSERT ON audit_log FOR EACH ROW EXECUTE FUNCTION idem_fault_fire()")
	}
	for _, s := range stmts {
		idemExec(t, e, s)
	}
	return func() { idemExec(t, e, "INSERT INTO idem_fault_armed VALUES (1)") }, func() { idemExec(t, e, "DELETE FROM idem_fault_armed") }
}

// I6: a write that fails after its record was written (the audit insert fails inside the same
// transaction) rolls back and only then frees its key: nothing of it is stored, a retry with the same
// key runs it once. While the doomed write still runs (PostgreSQL: the fault sleeps first), the key is
// held: a concurrent retry is told 409 idempotency_key_in_use, never run alongside. A Before hook's
// refusal (deal-rules: a won deal needs a close date) releases the key the same way, and the corrected
// request then runs under it.
func idemReleaseAfterRollback(t *testing.T, e *servertest.Env, b servertest.Backend) {
	kid := keyID(t, e)
	sleep := time.Duration(0)
	if b == servertest.Postgres {
		sleep = 1500 * time.Millisecond
	}
	arm, disarm := idemFault(t, e, b, sleep)
	audits := func() int {
		return idemCount(t, e, "SELECT count(*) FROM audit_log WHERE workspace_id = ? AND resource = 'companies'", e.Workspace)
	}
	body := map[string]any{"name": "Doomed once", "employee_count": 3}
	auditBefore := audits()
	arm()
	var failed *servertest.Response
	done := make(chan struct{})
	go func() {
		defer close(done)
		failed = e.Do("POST", "/v1/companies", body, "Idempotency-Key", "i6-key")
	}()
	if b == servertest.Postgres {
		// The doomed write is in its trigger's sleep: the key is claimed, not yet released.
		time.Sleep(500 * time.Millisecond)
		r := e.Do("POST", "/v1/companies", body, "Idempotency-Key", "i6-key")
		if r.Status != 409 || r.Code() != "idempotency_key_in_use" {
			t.Errorf("retry while the failing write runs: %d %s, want 409 idempotency_key_in_use", r.Status, r.Raw)
		}
		if n := idemKeyRows(t, e, kid, "i6-key"); n != 1 {
			t.Errorf("%d claims while the write runs, want 1", n)
		}
	}
	<-done
	if failed.Status != 409 || failed.Code() != "conflict" {
		t.Fatalf("the faulted write: %d %s, want 409 conflict", failed.Status, failed.Raw)
	}
	disarm()
	if n := idemNamed(t, e, "companies", "Doomed once"); n != 0 {
		t.Errorf("the failed write left %d records", n)
	}
	if n := audits() - auditBefore; n != 0 {
		t.Errorf("the failed write left %d audit rows", n)
	}
	if n := idemKeyRows(t, e, kid, "i6-key"); n != 0 {
		t.Errorf("the failed write left its key stored (%d rows): a retry could not run", n)
	}
	retry := e.Do("POST", "/v1/companies", body, "Idempotency-Key", "i6-key")
	e.Expect(retry, 201, "")
	if retry.Header.Get("Idempotent-Replayed") != "" {
		t.Error("the retry after a failure is marked replayed")
	}
	if n := idemNamed(t, e, "companies", "Doomed once"); n != 1 {
		t.Errorf("%d records after the retry, want 1", n)
	}
	if n := audits() - auditBefore; n != 1 {
		t.Errorf("%d audit rows after the retry, want 1", n)
	}
	if r := e.Do("POST", "/v1/companies", body, "Idempotency-Key", "i6-key"); !isReplayOf(r, retry) {
		t.Errorf("the retry's answer does not replay: %d %s", r.Status, r.Raw)
	}

	// An update that fails the same way leaves the record as it was.
	id := retry.Data()["id"].(string)
	arm()
	e.Expect(e.Do("PATCH", "/v1/companies/"+id, map[string]any{"employee_count": 4}, "Idempotency-Key", "i6-upd"), 409, "conflict")
	disarm()
	if got := e.Do("GET", "/v1/companies/"+id, nil).Data(); num(got, "employee_count") != "3" {
		t.Errorf("a failed update changed the record: employee_count %v", got["employee_count"])
	}
	e.Expect(e.Do("PATCH", "/v1/companies/"+id, map[string]any{"employee_count": 4}, "Idempotency-Key", "i6-upd"), 200, "")
	if n := idemAudit(t, e, "companies", id, "update"); n != 1 {
		t.Errorf("%d update audit rows, want 1", n)
	}

	// A Before hook refuses: the key is released, the same refused request is refused again (a
	// failure is not stored), and the corrected one runs under the same key.
	deal := idemDealSetup(t, e, "Refused deal")
	delete(deal, "close_date")
	e.Expect(e.Do("POST", "/v1/deals", deal, "Idempotency-Key", "i6-deal"), 422, "validation_failed")
	if n := idemKeyRows(t, e, kid, "i6-deal"); n != 0 {
		t.Errorf("a refused write left its key stored")
	}
	e.Expect(e.Do("POST", "/v1/deals", deal, "Idempotency-Key", "i6-deal"), 422, "validation_failed")
	deal["close_date"] = "2026-10-01"
	ok := e.Do("POST", "/v1/deals", deal, "Idempotency-Key", "i6-deal")
	e.Expect(ok, 201, "")
	if n := idemNamed(t, e, "deals", "Refused deal"); n != 1 {
		t.Errorf("%d deals, want 1", n)
	}

	if b == servertest.Postgres {
		// The database refuses for a while (disk full): 503 with Retry-After, nothing stored,
		// the key free for the retry.
		idemExec(t, e, "DROP TRIGGER idem_fault ON audit_log")
		idemExec(t, e, "DROP FUNCTION idem_fault_fire()")
		arm, disarm := idemFaultReplace(t, e)
		arm()
		r := e.Do("POST", "/v1/companies", map[string]any{"name": "Disk full"}, "Idempotency-Key", "i6-full")
		disarm()
		if r.Status != 503 || r.Header.Get("Retry-After") == "" {
			t.Errorf("disk full: %d %s (Retry-After %q), want 503 with Retry-After", r.Status, r.Raw, r.Header.Get("Retry-After"))
		}
		if idemKeyRows(t, e, kid, "i6-full") != 0 || idemNamed(t, e, "companies", "Disk full") != 0 {
			t.Error("the refused write left its key or its record")
		}
		e.Expect(e.Do("POST", "/v1/companies", map[string]any{"name": "Disk full"}, "Idempotency-Key", "i6-full"), 201, "")
	}
}

// idemFaultReplace re-creates idemFault's PostgreSQL trigger raising SQLSTATE 53100 without a sleep.
func idemFaultReplace(t testing.TB, e *servertest.Env) (arm, disarm func()) {
	t.Helper()
	idemExec(t, e, `CREATE FUNCTION idem_fault_fire() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF EXISTS (SELECT 1 FROM idem_fault_armed) THEN
    RAISE EXCEPTION 'injected: disk full' USING ERRCODE = '53100';
  END IF;
  RETURN NEW;
END $$`)
	idemExec(t, e, "CREATE TRIGGER idem_fault AFTER INSERT ON audit_log FOR EACH ROW EXECUTE FUNCTION idem_fault_fire()")
	return func() { idemExec(t, e, "INSERT INTO idem_fault_armed VALUES (1)") }, func() { idemExec(t, e, "DELETE FROM idem_fault_armed") }
}

// I9: the key is optional; an empty one, one of 256 characters, one with a control or non-ASCII
// character, or the header twice is 400 invalid_request with the envelope, and nothing is stored or
// written. 255 printable characters (spaces and quotes included) are a valid key.
func idemKeyFormat(t *testing.T, e *servertest.Env, b servertest.Backend) {
	kid := keyID(t, e)
	e.Expect(e.Do("POST", "/v1/companies", map[string]any{"name": "Without a key"}), 201, "")
	if n := idemKeyRows(t, e, kid, ""); n != 0 {
		t.Errorf("a write without a key stored %d keys", n)
	}
	for _, k := range []string{"", strings.Repeat("k", 256), "tab\there", "caf\u00e9", "nbsp\u00a0"} {
		r := e.Do("POST", "/v1/companies", map[string]any{"name": "Bad key"}, "Idempotency-Key", k)
		e.Expect(r, 400, "invalid_request")
	}
	// The header twice (the Go client cannot send a control character other than tab, so that
	// case is above).
	req, _ := http.NewRequest("POST", e.URL+"/v1/companies", strings.NewReader(`{"name":"Bad key"}`))
	req.Header.Set("Authorization", "Bearer "+e.Key)
	req.Header.Set("Content-Type", "application/json")
	req.Header["Idempotency-Key"] = []string{"twice-1", "twice-2"}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != 400 || !strings.Contains(string(raw), `"code":"invalid_request"`) || !strings.Contains(string(raw), res.Header.Get("X-Request-Id")) {
		t.Errorf("two Idempotency-Key headers: %d %s", res.StatusCode, raw)
	}
	if n := idemKeyRows(t, e, kid, ""); n != 0 {
		t.Errorf("refused keys stored %d rows", n)
	}
	if n := idemNamed(t, e, "companies", "Bad key"); n != 0 {
		t.Errorf("requests with a refused key wrote %d records", n)
	}
	longest := strings.Repeat("k", 254) + "~"
	for _, k := range []string{longest, `"quoted key"`, "with spaces inside", "!#$%&'()*+,-./:;<=>?@[\\]^_`{|}~"} {
		r := e.Do("POST", "/v1/companies", map[string]any{"name": "Good key " + k[:5]}, "Idempotency-Key", k)
		e.Expect(r, 201, "")
		if again := e.Do("POST", "/v1/companies", map[string]any{"name": "Good key " + k[:5]}, "Idempotency-Key", k); !isReplayOf(again, r) {
			t.Errorf("key %q: the repeat does not replay", k)
		}
	}
	if n := idemKeyRows(t, e, kid, longest); n != 1 {
		t.Errorf("the 255-character key is stored %d times", n)
	}
}

// I10 (PostgreSQL; SQLite is a local file): the database is unreachable when a keyed write arrives, or
// goes away in the middle of it. Either way the answer is 503 with Retry-After, nothing is written, and
// once the database is back a retry with the same key runs once, without waiting for the claim's lease.
func TestIdempotencyDatabaseOutage(t *testing.T) {
	direct := servertest.DatabaseURL(t, servertest.Postgres)
	u, _ := url.Parse(direct)
	proxy := servertest.NewProxy(t, u.Host)
	u.Host = proxy.Addr()
	e := servertest.Start(t, servertest.Postgres, servertest.Options{DB: u.String()})
	kid := keyID(t, e)
	restore := func() time.Duration {
		proxy.Start(t)
		d, ok := servertest.WaitFor(15*time.Second, func() bool { return e.Do("GET", "/v1/me", nil).Status == 200 })
		if !ok {
			t.Fatal("the service did not recover within 15 s of the database returning")
		}
		return d
	}

	// Down before the request.
	proxy.Stop()
	r := e.Do("POST", "/v1/companies", map[string]any{"name": "Outage before"}, "Idempotency-Key", "i10-before")
	if r.Status != 503 || r.Header.Get("Retry-After") == "" {
		t.Errorf("database down: %d %s (Retry-After %q), want 503 with Retry-After", r.Status, r.Raw, r.Header.Get("Retry-After"))
	}
	restore()
	if n := idemKeyRows(t, e, kid, "i10-before"); n != 0 {
		t.Errorf("the refused request consumed its key (%d rows)", n)
	}
	first := e.Do("POST", "/v1/companies", map[string]any{"name": "Outage before"}, "Idempotency-Key", "i10-before")
	e.Expect(first, 201, "")
	if first.Header.Get("Idempotent-Replayed") != "" || idemNamed(t, e, "companies", "Outage before") != 1 {
		t.Errorf("retry after recovery: %s", first.Raw)
	}

	// Down in the middle of the write: a trigger holds the insert for a second, during which the
	// connection is cut. The key was claimed before; the server cannot release it until the database
	// is back.
	conn, err := pgx.Connect(context.Background(), direct)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(context.Background(), `CREATE FUNCTION idem_slow() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF NEW.name = 'Outage during' THEN PERFORM pg_sleep(1); END IF;
  RETURN NEW;
END $$`); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(context.Background(), "CREATE TRIGGER idem_slow BEFORE INSERT ON rec_companies FOR EACH ROW EXECUTE FUNCTION idem_slow()"); err != nil {
		t.Fatal(err)
	}
	done := make(chan *servertest.Response)
	go func() {
		done <- e.Do("POST", "/v1/companies", map[string]any{"name": "Outage during"}, "Idempotency-Key", "i10-during")
	}()
	time.Sleep(400 * time.Millisecond)
	proxy.Stop()
	r = <-done
	if r.Status != 503 || r.Header.Get("Retry-After") == "" {
		t.Errorf("database lost mid-write: %d %s, want 503 with Retry-After", r.Status, r.Raw)
	}
	time.Sleep(300 * time.Millisecond)
	recovery := restore()
	if n := idemNamed(t, e, "companies", "Outage during"); n != 0 {
		t.Errorf("the cut write left %d records", n)
	}
	var retry *servertest.Response
	waited, ok := servertest.WaitFor(5*time.Second, func() bool {
		retry = e.Do("POST", "/v1/companies", map[string]any{"name": "Outage during"}, "Idempotency-Key", "i10-during")
		return retry.Status != 409
	})
	if !ok || retry.Status != 201 || retry.Header.Get("Idempotent-Replayed") != "" {
		t.Errorf("retry after the database came back: %d %s after %v; want 201 within 5 s, not after the %v lease", retry.Status, retry.Raw, waited.Round(time.Millisecond), idempotency.Lease)
	}
	if n := idemNamed(t, e, "companies", "Outage during"); n != 1 {
		t.Errorf("%d records after the retry, want 1", n)
	}
	t.Logf("database back after %v; the cut write's key was free %v later", recovery.Round(time.Millisecond), waited.Round(time.Millisecond))
}

// I11: a replay is an answer like any other: the key is authenticated and authorized first, with the
// member's and the workspace's current state, and the stored body passes the current field rules. A
// revoked or expired key gets 401, a member who lost write access or API access 403, a workspace on a
// plan without API access 403 plan_upgrade_required — never the stored 201; once access returns, the
// stored answer replays again (it was neither lost nor replaced).
func idemAuthBeforeReplay(t *testing.T, e *servertest.Env, b servertest.Backend) {
	dir := e.Server.Backend().Directory
	ctx := context.Background()
	body := map[string]any{"name": "Replay guarded", "annual_revenue": 7654321}
	type caller struct{ member, keyID, secret string }
	newCaller := func(email string) caller {
		m := e.NewMember(email, "admin", "")
		k, secret, err := dir.CreateKey(ctx, m, auth.KeyOptions{Access: "write", ExpiresIn: 30 * 24 * time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		return caller{m, k.ID, secret}
	}
	// refusedUntil retries with c until the answer is want (a server may remember a key for up to
	// auth.PrincipalMaxAge), then checks that a replay was never among the answers after the
	// change was visible to a plain request.
	check := func(name string, c caller, first *servertest.Response, status int, code string) {
		t.Helper()
		if _, ok := servertest.WaitFor(3*time.Second, func() bool { return e.DoKey(c.secret, "GET", "/v1/companies?page_size=1", nil).Status == status }); !ok {
			t.Fatalf("%s: a plain request is not refused with %d within 3 s", name, status)
		}
		r := e.DoKey(c.secret, "POST", "/v1/companies", body, "Idempotency-Key", "i11-"+c.member)
		if r.Status != status || (code != "" && r.Code() != code) || r.Header.Get("Idempotent-Replayed") != "" || strings.Contains(string(r.Raw), first.Data()["id"].(string)) {
			t.Errorf("%s: retry answered %d %s, want %d %s and not the stored answer", name, r.Status, r.Raw, status, code)
		}
	}
	replays := func(name string, c caller, first *servertest.Response) {
		t.Helper()
		var r *servertest.Response
		if _, ok := servertest.WaitFor(3*time.Second, func() bool {
			r = e.DoKey(c.secret, "POST", "/v1/companies", body, "Idempotency-Key", "i11-"+c.member)
			return r.Status != 401 && r.Status != 403
		}); !ok || !isReplayOf(r, first) {
			t.Errorf("%s: after access returned: %d %s, want the stored answer", name, r.Status, r.Raw)
		}
	}
	start := func(c caller) *servertest.Response {
		t.Helper()
		first := e.DoKey(c.secret, "POST", "/v1/companies", body, "Idempotency-Key", "i11-"+c.member)
		e.Expect(first, 201, "")
		if r := e.DoKey(c.secret, "POST", "/v1/companies", body, "Idempotency-Key", "i11-"+c.member); !isReplayOf(r, first) {
			t.Fatalf("no replay to begin with: %s", r.Raw)
		}
		return first
	}

	c := newCaller("revoked@i11.example")
	first := start(c)
	if err := dir.RevokeKey(ctx, c.keyID); err != nil {
		t.Fatal(err)
	}
	check("revoked key", c, first, 401, "")

	c = newCaller("expired@i11.example")
	first = start(c)
	idemExec(t, e, "UPDATE api_keys SET expires_at = ? WHERE id = ?", time.Now().Add(-time.Second), c.keyID)
	check("expired key", c, first, 401, "")

	c = newCaller("deactivated@i11.example")
	first = start(c)
	if err := dir.Deactivate(ctx, c.member); err != nil {
		t.Fatal(err)
	}
	check("member deactivated", c, first, 401, "")

	for _, role := range []string{"viewer", "no_api"} {
		c = newCaller(role + "@i11.example")
		first = start(c)
		if err := dir.SetRole(ctx, c.member, role); err != nil {
			t.Fatal(err)
		}
		if role == "viewer" {
			// viewer still reads: the plain probe is a write without a key.
			if _, ok := servertest.WaitFor(3*time.Second, func() bool {
				return e.DoKey(c.secret, "POST", "/v1/companies", map[string]any{"name": "probe"}).Status == 403
			}); !ok {
				t.Fatal("role viewer: a write is not refused within 3 s")
			}
			r := e.DoKey(c.secret, "POST", "/v1/companies", body, "Idempotency-Key", "i11-"+c.member)
			if r.Status != 403 || r.Header.Get("Idempotent-Replayed") != "" {
				t.Errorf("role viewer: retry answered %d %s, want 403", r.Status, r.Raw)
			}
		} else {
			check("role "+role, c, first, 403, "")
		}
		if err := dir.SetRole(ctx, c.member, "admin"); err != nil {
			t.Fatal(err)
		}
		replays("role "+role+" then admin again", c, first)
	}

	// The field rules of the current role apply to the replay: annual_revenue is masked for
	// members.
	c = newCaller("masked@i11.example")
	first = start(c)
	if !strings.Contains(string(first.Raw), "7654321") {
		t.Fatalf("admin does not see the revenue: %s", first.Raw)
	}
	if err := dir.SetRole(ctx, c.member, "member"); err != nil {
		t.Fatal(err)
	}
	var masked *servertest.Response
	if _, ok := servertest.WaitFor(3*time.Second, func() bool {
		masked = e.DoKey(c.secret, "POST", "/v1/companies", body, "Idempotency-Key", "i11-"+c.member)
		return !strings.Contains(string(masked.Raw), "7654321")
	}); !ok || masked.Header.Get("Idempotent-Replayed") != "true" || masked.Status != 201 {
		t.Errorf("replay after the field became masked: %d %s", masked.Status, masked.Raw)
	}

	// The plan loses API access.
	ws, member, secret := e.NewWorkspace("growth", "admin", "write")
	pc := caller{member: member, secret: secret}
	first = start(pc)
	if err := dir.SetPlan(ctx, ws, "free"); err != nil {
		t.Fatal(err)
	}
	check("plan free", pc, first, 403, "plan_upgrade_required")
	if err := dir.SetPlan(ctx, ws, "growth"); err != nil {
		t.Fatal(err)
	}
	replays("plan growth again", pc, first)
}

package server_test

// Idempotency-Key scenarios I6 and I10 of the reliability note: a keyed write that fails after its claim
// (rolled back, or its database gone) frees the key for a retry that runs once.

import (
	"context"
	"fmt"
	"net/url"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/workspace-records/records/runtime/idempotency"
	"github.com/workspace-records/records/runtime/server/servertest"
)

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
// held — by the write's transaction-scoped lock, no row is stored until it commits — and a concurrent
// retry is told 409 idempotency_key_in_use, never run alongside. A Before hook's
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
		// The doomed write has claimed its key and sleeps in its trigger for 1.5 s: the key is
		// claimed (an advisory lock held by the write's transaction), not yet released.
		if _, ok := servertest.WaitFor(10*time.Second, func() bool {
			return idemCount(t, e, "SELECT count(*) FROM pg_stat_activity WHERE wait_event = 'PgSleep' AND datname = current_database()") > 0
		}); !ok {
			t.Fatal("the doomed write did not reach its fault within 10 s")
		}
		r := e.Do("POST", "/v1/companies", body, "Idempotency-Key", "i6-key")
		if r.Status != 409 || r.Code() != "idempotency_key_in_use" {
			t.Errorf("retry while the failing write runs: %d %s, want 409 idempotency_key_in_use", r.Status, r.Raw)
		}
		if n := idemKeyRows(t, e, kid, "i6-key"); n != 0 {
			t.Errorf("%d rows of the key while its write runs, want 0: a claim is stored only with its response", n)
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

// I10 (PostgreSQL; SQLite is a local file): the database is unreachable when a keyed write arrives, or
// goes away in the middle of it. Either way the answer is 503 with Retry-After, nothing is written, and
// once the database is back a retry with the same key runs once, without waiting for the claim's lease.
func TestIdempotencyDatabaseOutage(t *testing.T) {
	t.Parallel()
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
	// Cut while the insert is in its trigger's sleep (seen in pg_stat_activity).
	inSleep := func() bool {
		var n int
		err := conn.QueryRow(context.Background(), "SELECT count(*) FROM pg_stat_activity WHERE wait_event = 'PgSleep' AND datname = current_database()").Scan(&n)
		return err == nil && n > 0
	}
	if _, ok := servertest.WaitFor(10*time.Second, inSleep); !ok {
		t.Fatal("the write did not reach its trigger's sleep within 10 s")
	}
	proxy.Stop()
	r = <-done
	if r.Status != 503 || r.Header.Get("Retry-After") == "" {
		t.Errorf("database lost mid-write: %d %s, want 503 with Retry-After", r.Status, r.Raw)
	}
	time.Sleep(300 * time.Millisecond) // the outage goes on a moment after the answer (not a wait for an event)
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

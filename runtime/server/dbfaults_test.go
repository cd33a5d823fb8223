package server_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/workspace-records/records/runtime/customfields"
	"github.com/workspace-records/records/runtime/server/servertest"
)

// The servers under fault answer within faultTimeout (their request_timeout), short so that waiting
// for it keeps these tests short. An answer may come at most faultMargin later: the 250 ms a failed
// write may spend releasing its Idempotency-Key when the database does not answer, plus scheduling on a
// busy machine. A statement cancelled at the deadline, with no key to release, answers within
// cancelMargin of it.
const (
	faultTimeout = 2 * time.Second
	faultMargin  = 750 * time.Millisecond
	cancelMargin = 300 * time.Millisecond
	faultApp     = "records-under-fault" // application_name of the servers' connections
)

// faultsLong is the long form (make faults-test): outages of 30 s and twice the clients.
func faultsLong() bool { return os.Getenv("RECORDS_FAULTS_LONG") != "" }

func outage() time.Duration {
	if faultsLong() {
		return 30 * time.Second
	}
	return 1500 * time.Millisecond
}

// TestDatabaseFaults takes PostgreSQL away in every way a test can do for real, under reads and writes
// from several clients (research note D1–D4): stopped and started again, black-holed by the network,
// crashed mid-transaction, turned read-only as after a failover, and slowed down. Throughout, every
// answer is a 2xx or a 503 with Retry-After in the error envelope (never a 500, never a connection cut
// without an answer) and comes within the request deadline plus a small margin; the service recovers by
// itself; and every acknowledged write is there exactly once with its custom value and its audit entry,
// while nothing is half-written.
func TestDatabaseFaults(t *testing.T) {
	// Two groups, each with its own PostgreSQL cluster and server, run side by side; the scenarios of a
	// group run one after the other on its one server, each in a workspace of its own, so that the
	// server also shows it recovers from one fault after another without a restart.
	t.Run("direct", func(t *testing.T) {
		t.Parallel()
		pg := servertest.NewPGCluster(t)
		base := newFaultEnv(t, pg, false)

		// stopped takes the database down with stop under load, for the outage, and starts it again.
		stopped := func(t *testing.T, stop func()) {
			fe := base.scenario(t)
			l := startLoad(fe)
			l.waitWrites(t, 20)
			stop()
			down := time.Now()
			time.Sleep(outage())
			pg.Start()
			l.recovered(t, down, time.Now())
			l.finish(t, faultTimeout+faultMargin)
			fe.noStuckSessions(t)
			fe.verify(t, l)
		}
		// pg_ctl stop -m fast: sessions ended, connections closed.
		t.Run("D1_stop_restart", func(t *testing.T) { stopped(t, pg.Stop) })
		// pg_ctl stop -m immediate: backends killed mid-transaction, crash recovery on start.
		t.Run("D2_crash_mid_transaction", func(t *testing.T) { stopped(t, pg.Kill) })

		t.Run("D3_read_only", func(t *testing.T) { testReadOnlyDatabase(t, base.scenario(t)) })
		t.Run("D4_statement_cancelled", func(t *testing.T) { testStatementCancelled(t, base.scenario(t)) })
	})

	t.Run("network", func(t *testing.T) {
		t.Parallel()
		pg := servertest.NewPGCluster(t)
		base := newFaultEnv(t, pg, true)

		t.Run("D1_black_hole", func(t *testing.T) {
			fe := base.scenario(t)
			l := startLoad(fe)
			l.waitWrites(t, 20)
			fe.proxy.BlackHole() // nothing answers, nothing fails: every wait ends at a deadline
			down := time.Now()
			time.Sleep(max(outage(), faultTimeout+time.Second))
			fe.proxy.Heal()
			l.recovered(t, down, time.Now())
			l.finish(t, faultTimeout+faultMargin)
			if l.count("503") == 0 {
				t.Error("no request saw the black hole")
			}
			fe.noStuckSessions(t)
			fe.verify(t, l)
		})

		t.Run("D4_slow_network", func(t *testing.T) {
			fe := base.scenario(t)
			fe.proxy.SetLatency(servertest.BothWays, 20*time.Millisecond)
			l := startLoad(fe)
			l.waitWrites(t, 10)
			slowOK := l.count("2xx")
			// Every round trip now takes longer than a request may: each request runs into its deadline.
			fe.proxy.SetLatency(servertest.BothWays, faultTimeout)
			down := time.Now()
			time.Sleep(max(outage(), faultTimeout+time.Second))
			fe.proxy.Heal()
			l.recovered(t, down, time.Now())
			l.finish(t, faultTimeout+faultMargin)
			if slowOK == 0 {
				t.Error("nothing succeeded at 20 ms of latency each way")
			}
			if l.count("503") == 0 {
				t.Error("no request ran into its deadline at 2 s of latency each way")
			}
			fe.noStuckSessions(t)
			fe.verify(t, l)
		})
	})
}

// faultEnv is a server over a database of the private cluster, directly or through a proxy, with an
// integer custom field "score" on companies.
type faultEnv struct {
	*servertest.Env
	pg     *servertest.PGCluster
	db     string            // database name
	direct string            // the database's URL, as the superuser, not through the proxy
	proxy  *servertest.Proxy // nil when the server connects directly
	score  string            // definition id of companies.score
	client *http.Client
}

func newFaultEnv(t *testing.T, pg *servertest.PGCluster, withProxy bool) *faultEnv {
	t.Helper()
	db := "faults_" + strings.ReplaceAll(uuid.NewString()[:8], "-", "")
	direct := pg.NewDatabase(t, db, url.Values{"sslmode": {"disable"}})
	serverURL := direct
	fe := &faultEnv{pg: pg, db: db, direct: direct}
	if withProxy {
		fe.proxy = servertest.NewProxy(t, fmt.Sprintf("127.0.0.1:%d", pg.Port()))
		u, _ := url.Parse(direct)
		u.Host = fe.proxy.Addr()
		serverURL = u.String()
	}
	u, _ := url.Parse(serverURL)
	q := u.Query()
	q.Set("application_name", faultApp)
	u.RawQuery = q.Encode()
	fe.Env = servertest.Start(t, servertest.Postgres, servertest.Options{DB: u.String(), RequestTimeout: faultTimeout})
	fe.Contract() // before any request from several goroutines (Env.Try)
	// Longer than any answer may take: a request the server never answers is a failure, not a wait.
	fe.client = &http.Client{Timeout: 4 * faultTimeout, Transport: &http.Transport{MaxIdleConnsPerHost: 32}}
	t.Cleanup(fe.client.CloseIdleConnections)
	return fe
}

// scenario returns the env for one scenario of test t: the same server, a workspace of its own with an
// admin key and the custom field.
func (fe *faultEnv) scenario(t *testing.T) *faultEnv {
	t.Helper()
	env := *fe.Env
	env.T = t
	env.Workspace, env.Member, env.Key = env.NewWorkspace("growth", "admin", "write")
	d, err := env.Server.Backend().Custom.Create(context.Background(), env.Workspace, customfields.Def{Resource: "companies", Key: "score", Type: "integer"})
	if err != nil {
		t.Fatal(err)
	}
	sc := *fe
	sc.Env, sc.score = &env, d.ID
	return &sc
}

// sql runs fn on a connection of its own to the database (or, with db "", to the cluster's postgres
// database), as the superuser and outside any proxy.
func (fe *faultEnv) sql(t *testing.T, db string, fn func(ctx context.Context, c *pgx.Conn) error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	target := fe.direct
	if db == "" {
		target = fe.pg.URL()
	}
	c, err := pgx.Connect(ctx, target)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	defer c.Close(ctx)
	if err := fn(ctx, c); err != nil {
		t.Fatal(err)
	}
}

// appSessions counts the server's sessions in the given states (pg_stat_activity), or, with wait
// "Lock", those waiting on a lock.
func (fe *faultEnv) appSessions(t *testing.T, cond string) int {
	t.Helper()
	var n int
	fe.sql(t, "", func(ctx context.Context, c *pgx.Conn) error {
		return c.QueryRow(ctx, "SELECT count(*) FROM pg_stat_activity WHERE datname = $1 AND application_name = $2 AND "+cond, fe.db, faultApp).Scan(&n)
	})
	return n
}

// noStuckSessions checks that, once the load has stopped, none of the server's sessions is left running
// a statement or holding a transaction open (and with it, row locks) for more than a second.
func (fe *faultEnv) noStuckSessions(t *testing.T) {
	t.Helper()
	took, ok := servertest.WaitFor(5*time.Second, func() bool {
		return fe.appSessions(t, "(state = 'active' OR state LIKE 'idle in transaction%')") == 0
	})
	if !ok {
		t.Errorf("sessions of the server still busy %v after the load stopped", took)
	}
}

// logicalWrite is one company a writer means to create, retried with its Idempotency-Key until it is
// acknowledged.
type logicalWrite struct {
	key, name string
	score     int
	id        string // set once acknowledged (201)
	abandoned bool   // the key stayed claimed (409 idempotency_key_in_use): outcome unknown
}

// load drives a faultEnv with writers (creates with an Idempotency-Key, retried on 503), an updater
// (PATCH of a description and the custom score together) and readers (lists and gets), and records
// every answer.
type load struct {
	fe   *faultEnv
	stop chan struct{}
	wg   sync.WaitGroup

	mu          sync.Mutex
	counts      map[string]int // "2xx", "503", "409", "METHOD status"...
	transport   []string       // requests that got no answer
	unexpected  []string       // answers that are neither 2xx nor 503 (nor 409 in_use on a retried create)
	slowest     time.Duration
	slowestReq  string
	lastWriteOK time.Time
	writes      []*logicalWrite
	ids         []string          // acknowledged company ids
	updates     map[string]string // request id of each PATCH -> "ok" or its status
}

// newLoad returns a load with no clients running: a test drives it by hand (attempt, do).
func newLoad(fe *faultEnv) *load {
	return &load{fe: fe, stop: make(chan struct{}), counts: map[string]int{}, updates: map[string]string{}}
}

// create acknowledges one create by hand, the database being up.
func (l *load) create(t *testing.T, name string, score int) string {
	t.Helper()
	lw := &logicalWrite{key: uuid.NewString(), name: name, score: score}
	l.writes = append(l.writes, lw)
	if !l.attempt(lw) || lw.id == "" {
		t.Fatalf("create %s failed", name)
	}
	return lw.id
}

func startLoad(fe *faultEnv) *load {
	l := newLoad(fe)
	writers, readers := 3, 2
	if faultsLong() {
		writers, readers = 6, 4
	}
	for w := range writers {
		l.wg.Go(func() { l.writer(w) })
	}
	l.wg.Go(l.updater)
	for range readers {
		l.wg.Go(l.reader)
	}
	return l
}

func (l *load) stopped() bool {
	select {
	case <-l.stop:
		return true
	default:
		return false
	}
}

// do sends one request and records its answer; nil when there was none.
func (l *load) do(method, path string, body any, header ...string) *servertest.Response {
	start := time.Now()
	res, err := l.fe.Try(l.fe.client, l.fe.Key, method, path, body, header...)
	took := time.Since(start)
	l.mu.Lock()
	defer l.mu.Unlock()
	if took > l.slowest {
		l.slowest, l.slowestReq = took, method+" "+path
	}
	if err != nil {
		l.transport = append(l.transport, err.Error())
		return nil
	}
	switch {
	case res.Status < 300:
		l.counts["2xx"]++
		if method != "GET" {
			l.lastWriteOK = time.Now()
		}
	case res.Status == 503:
		l.counts["503"]++
		if ra, err := strconv.Atoi(res.Header.Get("Retry-After")); err != nil || ra < 1 {
			l.unexpected = append(l.unexpected, fmt.Sprintf("%s %s: 503 with Retry-After %q", method, path, res.Header.Get("Retry-After")))
		}
	case res.Status == 409 && res.Code() == "idempotency_key_in_use" && method == "POST":
		l.counts["409"]++
	default:
		l.unexpected = append(l.unexpected, fmt.Sprintf("%s %s: %d %.300s", method, path, res.Status, res.Raw))
	}
	l.counts[fmt.Sprintf("%s %d", method, res.Status)]++
	return res
}

func (l *load) writer(w int) {
	for n := 0; !l.stopped(); n++ {
		lw := &logicalWrite{key: uuid.NewString(), name: fmt.Sprintf("load %d-%d", w, n), score: w*1_000_000 + n}
		l.mu.Lock()
		l.writes = append(l.writes, lw)
		l.mu.Unlock()
		for !l.stopped() && !l.attempt(lw) {
			time.Sleep(20 * time.Millisecond)
		}
	}
}

// attempt sends lw once; true when its outcome is settled (acknowledged or abandoned).
func (l *load) attempt(lw *logicalWrite) bool {
	res := l.do("POST", "/v1/companies", map[string]any{"name": lw.name, "description": fmt.Sprintf("v%d", lw.score), "cf__score": lw.score},
		"Idempotency-Key", lw.key)
	switch {
	case res == nil:
		return false
	case res.Status == 201:
		id, _ := res.Data()["id"].(string)
		l.mu.Lock()
		lw.id = id
		l.ids = append(l.ids, id)
		l.mu.Unlock()
		return true
	case res.Status == 409:
		l.mu.Lock()
		lw.abandoned = true
		l.mu.Unlock()
		return true
	}
	return false
}

func (l *load) pick() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.ids) == 0 {
		return ""
	}
	return l.ids[rand.IntN(len(l.ids))]
}

func (l *load) updater() {
	for n := 1; !l.stopped(); n++ {
		id := l.pick()
		if id == "" {
			time.Sleep(10 * time.Millisecond)
			continue
		}
		score := -n // creates use scores >= 0
		res := l.do("PATCH", "/v1/companies/"+id, map[string]any{"description": fmt.Sprintf("v%d", score), "cf__score": score})
		if res == nil {
			continue
		}
		l.mu.Lock()
		rid := res.Header.Get("X-Request-Id")
		if res.Status == 200 {
			l.updates[rid] = "ok"
		} else {
			l.updates[rid] = strconv.Itoa(res.Status)
		}
		l.mu.Unlock()
	}
}

func (l *load) reader() {
	for i := 0; !l.stopped(); i++ {
		if id := l.pick(); id != "" && i%2 == 0 {
			l.do("GET", "/v1/companies/"+id, nil)
		} else {
			l.do("GET", "/v1/companies?page_size=5", nil)
		}
	}
}

func (l *load) count(k string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.counts[k]
}

// waitWrites waits until n creates were acknowledged.
func (l *load) waitWrites(t *testing.T, n int) {
	t.Helper()
	if _, ok := servertest.WaitFor(10*time.Second, func() bool {
		l.mu.Lock()
		defer l.mu.Unlock()
		return len(l.ids) >= n
	}); !ok {
		t.Fatalf("fewer than %d writes acknowledged before the fault", n)
	}
}

// recovered waits for a write to succeed after the fault ended at back (it began at down), keeps the
// load going a little longer, and reports the recovery time.
func (l *load) recovered(t *testing.T, down, back time.Time) {
	t.Helper()
	took, ok := servertest.WaitFor(15*time.Second, func() bool {
		l.mu.Lock()
		defer l.mu.Unlock()
		return l.lastWriteOK.After(back)
	})
	if !ok {
		t.Errorf("no write succeeded within %v of the database coming back: not recovered without a restart", took)
	}
	time.Sleep(500 * time.Millisecond)
	t.Logf("fault lasted %v; first write acknowledged %v after it ended", back.Sub(down).Round(time.Millisecond), took.Round(time.Millisecond))
}

// finish stops the load, settles the writes still pending (the database is back: a retry with the same
// key either replays or writes once), and checks every answer.
func (l *load) finish(t *testing.T, bound time.Duration) {
	t.Helper()
	close(l.stop)
	l.wg.Wait()
	for _, lw := range l.writes {
		for i := 0; i < 20 && lw.id == "" && !lw.abandoned && !l.attempt(lw); i++ {
			time.Sleep(50 * time.Millisecond)
		}
	}
	for i, s := range l.transport {
		if i == 5 {
			t.Errorf("... %d requests without an answer in all", len(l.transport))
			break
		}
		t.Errorf("no answer: %s", s)
	}
	for i, s := range l.unexpected {
		if i == 5 {
			t.Errorf("... %d unexpected answers in all", len(l.unexpected))
			break
		}
		t.Errorf("unexpected answer: %s", s)
	}
	if l.slowest > bound {
		t.Errorf("slowest answer %v (%s), over the deadline %v + margin %v", l.slowest, l.slowestReq, faultTimeout, bound-faultTimeout)
	}
	abandoned := 0
	for _, lw := range l.writes {
		if lw.abandoned {
			abandoned++
		}
	}
	t.Logf("%d answers: %d 2xx, %d 503 (all with Retry-After), %d 409 in_use; %d creates acknowledged, %d abandoned; %d answerless; slowest %v (%s)",
		l.count("2xx")+l.count("503")+l.count("409")+len(l.unexpected), l.count("2xx"), l.count("503"), l.count("409"), len(l.ids), abandoned,
		len(l.transport), l.slowest.Round(time.Millisecond), l.slowestReq)
}

// verify reads the database directly: each create acknowledged is there exactly once, each abandoned at
// most once, nothing else; every company has its custom value in both stores (the record's JSON and the
// value table) agreeing with the description written in the same request, and exactly one create entry
// in the audit trail; every acknowledged PATCH has its audit entry; no audit entry or custom value
// belongs to a missing record.
// It returns how many PATCHes answered 503 were committed all the same.
func (fe *faultEnv) verify(t *testing.T, l *load) (committed503 int) {
	t.Helper()
	fe.sql(t, fe.db, func(ctx context.Context, c *pgx.Conn) error {
		byName := map[string][]string{}
		rows, err := c.Query(ctx, `SELECT c.name, c.id::text, c.description, c.custom_fields->>$2, v.n::text
FROM rec_companies c LEFT JOIN custom_values v ON v.workspace_id = c.workspace_id AND v.record_id = c.id AND v.field_id = $3
WHERE c.workspace_id = $1`, fe.Workspace, fe.score, fe.score)
		if err != nil {
			return err
		}
		halves := 0
		for rows.Next() {
			var name, id string
			var desc, inJSON, inTable *string
			if err := rows.Scan(&name, &id, &desc, &inJSON, &inTable); err != nil {
				return err
			}
			byName[name] = append(byName[name], id)
			if desc == nil || inJSON == nil || inTable == nil || *desc != "v"+*inJSON || *inJSON != *inTable {
				halves++
				if halves <= 5 {
					t.Errorf("company %s half-written: description %v, score %v in the record, %v in the value table", id, deref(desc), deref(inJSON), deref(inTable))
				}
			}
		}
		if err := rows.Err(); err != nil {
			return err
		}
		present, ambiguous := 0, 0
		for _, lw := range l.writes {
			got := byName[lw.name]
			delete(byName, lw.name)
			switch {
			case lw.id != "" && (len(got) != 1 || got[0] != lw.id):
				t.Errorf("acknowledged write %s (%s) stored as %v", lw.name, lw.id, got)
			case lw.id == "" && len(got) > 1:
				t.Errorf("write %s stored %d times", lw.name, len(got))
			case lw.id == "" && len(got) == 1:
				ambiguous++
			}
			present += len(got)
		}
		for name, ids := range byName {
			t.Errorf("company %q (%v) written by no one", name, ids)
		}
		var noCreate, orphanAudit, orphanValues, running int
		for q, dst := range map[string]*int{
			`SELECT count(*) FROM rec_companies c WHERE c.workspace_id = $1 AND (SELECT count(*) FROM audit_log a
  WHERE a.workspace_id = c.workspace_id AND a.record_id = c.id AND a.action = 'create') <> 1`: &noCreate,
			`SELECT count(*) FROM audit_log a WHERE a.workspace_id = $1 AND NOT EXISTS (SELECT 1 FROM rec_companies c WHERE c.workspace_id = a.workspace_id AND c.id = a.record_id)`:     &orphanAudit,
			`SELECT count(*) FROM custom_values v WHERE v.workspace_id = $1 AND NOT EXISTS (SELECT 1 FROM rec_companies c WHERE c.workspace_id = v.workspace_id AND c.id = v.record_id)`: &orphanValues,
			`SELECT count(*) FROM idempotency_keys WHERE workspace_id = $1 AND status = 'running'`:                                                                                       &running,
		} {
			if err := c.QueryRow(ctx, q, fe.Workspace).Scan(dst); err != nil {
				return fmt.Errorf("%s: %w", q, err)
			}
		}
		if noCreate+orphanAudit+orphanValues > 0 {
			t.Errorf("%d companies without exactly one create entry, %d audit entries and %d custom values of missing companies", noCreate, orphanAudit, orphanValues)
		}
		audited := map[string]bool{}
		arows, err := c.Query(ctx, "SELECT request_id FROM audit_log WHERE workspace_id = $1 AND action = 'update' AND request_id IS NOT NULL", fe.Workspace)
		if err != nil {
			return err
		}
		for arows.Next() {
			var rid string
			if err := arows.Scan(&rid); err != nil {
				return err
			}
			audited[rid] = true
		}
		if err := arows.Err(); err != nil {
			return err
		}
		okUpdates := 0
		for rid, outcome := range l.updates {
			switch {
			case outcome == "ok" && !audited[rid]:
				t.Errorf("acknowledged PATCH %s has no audit entry", rid)
			case outcome == "ok":
				okUpdates++
			case audited[rid]:
				committed503++ // answered 503, but its commit went through before the connection broke
			}
		}
		t.Logf("database: %d companies (%d with an unacknowledged but committed create), %d PATCHes acknowledged and audited, %d answered 503 yet committed, %d half-written, %d idempotency keys left running",
			present, ambiguous, okUpdates, committed503, halves, running)
		return nil
	})
	return committed503
}

func deref(p *string) string {
	if p == nil {
		return "<null>"
	}
	return *p
}

// D3: the database turns read-only under the server, as after a failover that left it talking to a
// standby (SQLSTATE 25006 on every write). Writes answer 503, never 500; when the database takes writes
// again, the server recovers without a restart, although its pooled sessions were opened read-only.
func testReadOnlyDatabase(t *testing.T, fe *faultEnv) {
	l := newLoad(fe)
	id := l.create(t, "Before", 0)
	fe.sql(t, "", func(ctx context.Context, c *pgx.Conn) error {
		if _, err := c.Exec(ctx, "ALTER DATABASE "+fe.db+" SET default_transaction_read_only = on"); err != nil {
			return err
		}
		// The failover: every session ends; the server's next ones are opened read-only.
		_, err := c.Exec(ctx, "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND application_name = $2", fe.db, faultApp)
		return err
	})
	var reads []int
	for i := range 12 {
		lw := &logicalWrite{key: uuid.NewString(), name: fmt.Sprintf("read-only %d", i), score: 100 + i}
		l.writes = append(l.writes, lw)
		if l.attempt(lw) {
			t.Errorf("create %d acknowledged by a read-only database", i)
		}
		if res := l.do("PATCH", "/v1/companies/"+id, map[string]any{"description": "v-1", "cf__score": -1}); res != nil && res.Status != 503 {
			t.Errorf("PATCH on a read-only database: %d %s", res.Status, res.Raw)
		}
		if res := l.do("GET", "/v1/companies/"+id, nil); res != nil {
			reads = append(reads, res.Status)
		}
	}
	writes503 := l.count("503")
	fe.sql(t, "", func(ctx context.Context, c *pgx.Conn) error {
		_, err := c.Exec(ctx, "ALTER DATABASE "+fe.db+" RESET default_transaction_read_only")
		return err
	})
	// No restart and no session ended from outside: the server itself must drop the read-only sessions.
	back := time.Now()
	streak, failed := 0, 0
	for streak < 20 && time.Since(back) < 10*time.Second {
		lw := &logicalWrite{key: uuid.NewString(), name: fmt.Sprintf("after %d", len(l.writes)), score: 1000 + len(l.writes)}
		l.writes = append(l.writes, lw)
		for !l.attempt(lw) && time.Since(back) < 10*time.Second {
			failed++
			streak = 0
			time.Sleep(10 * time.Millisecond)
		}
		streak++
	}
	took := time.Since(back)
	if streak < 20 {
		t.Errorf("writes still failing %v after the database took writes again (%d failed attempts)", took, failed)
	}
	t.Logf("read-only: %d write answers 503; reads answered %v; after RESET, %d writes failed before 20 in a row succeeded, %v in all",
		writes503, reads, failed, took.Round(time.Millisecond))
	l.finish(t, faultTimeout+faultMargin)
	fe.noStuckSessions(t)
	fe.verify(t, l)
}

// D4: a statement that cannot finish (it waits on a lock the test holds) meets the request deadline:
// the answer is a 503 within the deadline plus a small margin, and the statement is cancelled on the
// server, not left waiting there with its connection slot.
func testStatementCancelled(t *testing.T, fe *faultEnv) {
	l := newLoad(fe)
	id := l.create(t, "Locked", 0)
	ctx := context.Background()
	holder, err := pgx.Connect(ctx, fe.direct)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Close(ctx)
	tx, err := holder.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)

	blocked := func(what string, lock string, reqs [][2]string, args ...any) {
		t.Helper()
		if _, err := tx.Exec(ctx, lock, args...); err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		var mu sync.Mutex
		var took []time.Duration
		for _, r := range reqs {
			wg.Go(func() {
				start := time.Now()
				var body any
				if r[0] == "PATCH" {
					body = map[string]any{"description": "v-1", "cf__score": -1}
				}
				res := l.do(r[0], r[1], body)
				d := time.Since(start)
				mu.Lock()
				took = append(took, d)
				mu.Unlock()
				if res != nil && res.Status != 503 {
					t.Errorf("%s %s behind a %s: %d %s", r[0], r[1], what, res.Status, res.Raw)
				}
				if res != nil && r[0] == "PATCH" {
					mu.Lock()
					l.updates[res.Header.Get("X-Request-Id")] = strconv.Itoa(res.Status)
					mu.Unlock()
				}
			})
		}
		// While they wait, the server's statements are on the server, waiting for the lock.
		waiting := 0
		if _, ok := servertest.WaitFor(faultTimeout/2, func() bool {
			waiting = fe.appSessions(t, "wait_event_type = 'Lock'")
			return waiting == len(reqs)
		}); !ok {
			t.Errorf("behind a %s: %d of %d statements waiting on the server", what, waiting, len(reqs))
		}
		wg.Wait()
		gone, ok := servertest.WaitFor(time.Second, func() bool { return fe.appSessions(t, "wait_event_type = 'Lock'") == 0 })
		if !ok {
			t.Errorf("behind a %s: %d statements still waiting on the server %v after their requests answered 503: not cancelled",
				what, fe.appSessions(t, "wait_event_type = 'Lock'"), gone)
		}
		slices.Sort(took)
		t.Logf("behind a %s: %d requests with %d statements waiting on the server; answered 503 in %v..%v; statements gone from pg_stat_activity %v after the last answer",
			what, len(reqs), waiting, took[0].Round(time.Millisecond), took[len(took)-1].Round(time.Millisecond), gone.Round(time.Millisecond))
	}
	patch := [2]string{"PATCH", "/v1/companies/" + id}
	blocked("row lock", "SELECT 1 FROM rec_companies WHERE id = $1 FOR UPDATE", [][2]string{patch, patch, patch, patch}, id)
	get := [2]string{"GET", "/v1/companies/" + id}
	list := [2]string{"GET", "/v1/companies?page_size=5"}
	blocked("table lock", "LOCK TABLE rec_companies IN ACCESS EXCLUSIVE MODE", [][2]string{get, list, get, list, patch})
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	fe.Expect(fe.Do("PATCH", "/v1/companies/"+id, map[string]any{"description": "v7", "cf__score": 7}), 200, "")
	l.finish(t, faultTimeout+cancelMargin)
	if committed := fe.verify(t, l); committed != 0 {
		t.Errorf("%d PATCHes answered 503 at their deadline were written all the same", committed)
	}
}

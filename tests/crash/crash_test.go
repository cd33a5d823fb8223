package crash_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	mrand "math/rand/v2"
	"net/http"
	"net/http/httptrace"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/workspace-records/records/internal/proc"
	"github.com/workspace-records/records/runtime/idempotency"
	"github.com/workspace-records/records/runtime/server/servertest"
	"github.com/workspace-records/records/runtime/store"
)

var long = flag.Bool("crash.long", os.Getenv("CRASH_LONG") == "1", "run the long form: 200 kill points on PostgreSQL, 20 on SQLite (also CRASH_LONG=1)")

// inUseBound is how long after the kill of the server holding a claim a retry may still be told 409
// idempotency_key_in_use: the server counts as dead DeadAfter after its last heartbeat, which came at
// most a heartbeat before the kill; the rest is slack for a loaded machine.
const inUseBound = idempotency.DeadAfter + idempotency.HeartbeatInterval + 2*time.Second

// scale is how much one run does.
type scale struct {
	kills              int           // SIGKILLs
	workers            int           // concurrent clients
	minDelay, maxDelay time.Duration // random time the process serves before each kill
	park               bool          // a chain behind an abandoned claim is parked, the worker goes on with another
}

func scaleFor(b servertest.Backend) scale {
	s := scale{kills: 20, workers: 4, minDelay: 20 * time.Millisecond, maxDelay: 300 * time.Millisecond}
	if b == servertest.SQLite {
		s.kills = 4
	}
	if *long {
		s.kills, s.park, s.workers = 200, true, 6
		if b == servertest.SQLite {
			s.kills = 20
		}
	}
	return s
}

// TestCrash kills recordsd with SIGKILL at random moments while clients stream idempotent creates,
// updates and archives, restarts it, retries every request that had no definitive answer with its
// Idempotency-Key until it has one, and then checks the database: every acknowledged write is there
// exactly once, every retried request had exactly one effect, nothing is duplicated.
func TestCrash(t *testing.T) {
	for _, b := range []servertest.Backend{servertest.Postgres, servertest.SQLite} {
		t.Run(string(b), func(t *testing.T) {
			t.Parallel() // each backend's recordsd, database and clients are its own
			crashRun(t, b, scaleFor(b))
		})
	}
}

// op is one write of a chain, sent with its own Idempotency-Key until it has a definitive answer.
type op struct {
	kind string // create, update or archive
	n    int    // the update's number: it sets employee_count n and description "update n"
	key  string
	body map[string]any

	attempts    int // requests sent
	unanswered  int // attempts that got no HTTP answer (the process died, or was not up yet)
	unavailable int // 503 answers
	inUse       int // 409 idempotency_key_in_use answers: a claim left by a killed process
	inUseSince  time.Time
	takeover    time.Duration // from the first 409 to the answer, once the dead server's claim was taken over
	deadFor     time.Duration // the longest a claim's server had been dead when a retry got 409

	status   int // the definitive answer
	replayed bool
	data     map[string]any
	failed   bool
}

// chain is one record's life: a create, one to three updates, and an archive for every other chain.
type chain struct {
	worker, n int
	name      string
	id        string // from the create's answer
	ops       []*op
	next      int
	wake      time.Time // a parked chain (long form) retries no earlier
}

type crash struct {
	t        *testing.T
	b        servertest.Backend
	sc       scale
	db       string
	st       store.Store // the test's own connection to the database, for lease ends and checks
	ws, key  string
	keyID    string
	runID    string
	proc     *proc.Process
	url      string
	client   *http.Client
	contract *servertest.Contract
	stop     chan struct{} // closed: workers start no new chain

	mu     sync.Mutex
	chains []*chain

	killMu sync.Mutex
	killed map[int]time.Time // when each killed process (by pid) was killed

	expect map[string]map[string]int // record id -> audit action -> rows, from check

	inflight atomic.Int64
	// atServer counts the requests written to the server whose answer has not begun to arrive.
	atServer atomic.Int64
	// gen is even while a process serves (the kth started: 2k) and odd from just before its kill until
	// the next one serves. An attempt written to the server that got no answer was cut by a kill: cut
	// counts them by the gen they failed at (2k+1: by the kth kill).
	gen      atomic.Int64
	cutMu    sync.Mutex
	cut      map[int64]int
	aborted  atomic.Bool // the test failed: workers give up at once
	sent     atomic.Int64
	statuses sync.Map // status -> *atomic.Int64
}

func crashRun(t *testing.T, b servertest.Backend, sc scale) {
	start := time.Now()
	c := &crash{t: t, b: b, sc: sc, db: servertest.DatabaseURL(t, b), runID: randomHex(3), stop: make(chan struct{}), killed: map[int]time.Time{}, cut: map[int64]int{}}
	c.proc = newProcess(t, func(addr string) []string {
		c.url = "http://" + addr
		return []string{"serve", "--addr", addr, "--db", c.db, "--definitions", servertest.DefinitionsDir(), "--plugins", servertest.ShippedPlugins(t), "--log-level", "warn"}
	})
	t.Cleanup(func() {
		if c.proc.Running() {
			c.proc.Signal(syscall.SIGTERM)
		}
		if t.Failed() {
			t.Logf("recordsd log:\n%s", c.proc.Log.Tail())
		}
	})
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = 2 * sc.workers
	// Longer than the server's request deadline (10 s): an attempt without an answer means the process
	// died, never that the client gave up on a request still running.
	c.client = &http.Client{Timeout: 30 * time.Second, Transport: tr}
	t.Cleanup(tr.CloseIdleConnections)

	// recordsd migrates the new database as it starts; the workspace, its member and key are made with
	// recordsctl meanwhile.
	if err := c.proc.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	c.ws = ctl(t, c.db, "workspace", "create", "--name", "Crash "+c.runID, "--plan", "growth")["id"].(string)
	ctl(t, c.db, "workspace", "set-limits", c.ws, "--key-per-minute", "100000000", "--key-per-hour", "100000000", "--workspace-per-minute", "100000000")
	member := ctl(t, c.db, "member", "create", "--workspace", c.ws, "--email", "crash@crash.example", "--role", "admin")["id"].(string)
	k := ctl(t, c.db, "key", "create", "--member", member, "--access", "write", "--expires-in", "30d")
	c.keyID, c.key = k["id"].(string), k["secret"].(string)
	st, err := store.Open(context.Background(), c.db)
	if err != nil {
		t.Fatal(err)
	}
	c.st = st
	t.Cleanup(func() { st.Close() })
	c.loadContract()
	setup := time.Since(start)
	start = time.Now()

	var wg sync.WaitGroup
	for w := range sc.workers {
		wg.Go(func() { c.worker(w) })
	}
	// Let the clients get going, then kill at random moments.
	time.Sleep(200 * time.Millisecond)
	var restarts []time.Duration
	midRequest, inflightAtKill, orphans := 0, 0, 0
	leftUnnumbered := map[string]bool{} // events a killed process committed and did not number
	for range sc.kills {
		time.Sleep(sc.minDelay + time.Duration(mrand.Int64N(int64(sc.maxDelay-sc.minDelay))))
		if !c.freezeMidRequest(10 * time.Second) {
			t.Logf("%s: no request was waiting for its answer within 10 s; killing anyway", b)
		}
		plugins := c.proc.Children()
		n := c.inflight.Load()
		pid := c.proc.Pid()
		c.gen.Add(1) // odd: the requests it cuts fail from now on
		c.proc.Signal(syscall.SIGKILL)
		c.killMu.Lock()
		c.killed[pid] = time.Now()
		c.killMu.Unlock()
		if n > 0 {
			midRequest++
			inflightAtKill += int(n)
		}
		for _, pr := range plugins {
			for deadline := time.Now().Add(5 * time.Second); !pr.Gone() && time.Now().Before(deadline); {
				time.Sleep(10 * time.Millisecond)
			}
			if !pr.Gone() {
				orphans++
			}
		}
		// What the dead process committed but had not numbered waits for a live server's sweep (or
		// numbering).
		c.noteUnnumbered(leftUnnumbered)
		t0 := time.Now()
		err := c.proc.Start(context.Background())
		for retry := 0; err != nil && retry < 3; retry++ {
			// As a supervisor would: start it again when it could not start (the database did not
			// answer its connect timeout on a loaded machine) or was killed by a signal this test did
			// not send; say so. A recordsd that cannot start three times fails the test.
			t.Logf("recordsd did not start: %v; starting it again", err)
			time.Sleep(time.Second)
			err = c.proc.Start(context.Background())
		}
		if err != nil {
			c.aborted.Store(true)
			close(c.stop)
			wg.Wait()
			t.Fatalf("restart: %v", err)
		}
		c.gen.Add(1) // even: the new process serves
		restarts = append(restarts, time.Since(t0))
		if k := len(restarts); k%50 == 0 && k < sc.kills {
			t.Logf("%s: %d of %d kill points, %v", b, k, sc.kills, time.Since(start).Round(time.Second))
		}
	}
	killing := time.Since(start)
	close(c.stop)
	wg.Wait()
	if orphans > 0 {
		t.Errorf("%d plugin processes outlived their killed recordsd by 5 s", orphans)
	}
	records, dup := c.check()
	if b == servertest.SQLite {
		c.integrity()
	}
	c.checkFeed(leftUnnumbered)
	c.report(setup, killing, time.Since(start), restarts, midRequest, inflightAtKill, records, dup)
	if cutKills, _ := c.cuts(); cutKills == 0 {
		t.Errorf("no kill cut a request in flight (%d kills): the test did not kill mid-request", sc.kills)
	}
	if code := c.proc.Signal(syscall.SIGTERM); code != 0 {
		t.Errorf("recordsd exited %d after SIGTERM, want 0", code)
	}
}

func (c *crash) loadContract() {
	res, err := c.client.Get(c.url + "/v1/openapi.json")
	if err != nil {
		c.t.Fatal(err)
	}
	doc, _ := io.ReadAll(res.Body)
	res.Body.Close()
	doc = bytes.Replace(doc, []byte(`"url":"`+c.url+`"`), []byte(`"url":"http://server.test"`), 1)
	if c.contract, err = servertest.ContractFor(doc); err != nil {
		c.t.Fatal(err)
	}
}

// worker runs chains one after another until the test stops it; in the long form a chain that waits for
// an abandoned claim's lease is parked and resumed later, so that the load goes on meanwhile.
func (c *crash) worker(w int) {
	var parked []*chain
	for n := 0; ; {
		var ch *chain
		now := time.Now()
		for i, p := range parked {
			if !now.Before(p.wake) {
				ch = p
				parked = slices.Delete(parked, i, i+1)
				break
			}
		}
		if ch == nil {
			select {
			case <-c.stop:
				if len(parked) == 0 {
					return
				}
				time.Sleep(50 * time.Millisecond)
				continue
			default:
			}
			ch = c.newChain(w, n)
			n++
		}
		if c.runChain(ch) {
			parked = append(parked, ch)
		}
	}
}

func (c *crash) newChain(w, n int) *chain {
	ch := &chain{worker: w, n: n, name: fmt.Sprintf("Crash %s w%d-%d", c.runID, w, n)}
	key := func(j int) string { return fmt.Sprintf("crash-%s-w%d-%d-%d", c.runID, w, n, j) }
	ch.ops = append(ch.ops, &op{kind: "create", key: key(0), body: map[string]any{"name": ch.name, "employee_count": 0, "industry": "software"}})
	for j := 1; j <= 1+mrand.IntN(3); j++ {
		ch.ops = append(ch.ops, &op{kind: "update", n: j, key: key(j), body: map[string]any{"employee_count": j, "description": fmt.Sprintf("update %d", j)}})
	}
	if n%2 == 1 {
		ch.ops = append(ch.ops, &op{kind: "archive", key: key(len(ch.ops)), body: map[string]any{"reason": "chain done"}})
	}
	c.mu.Lock()
	c.chains = append(c.chains, ch)
	c.mu.Unlock()
	return ch
}

// runChain sends the chain's operations in order, each until it has a definitive answer. It returns
// true when the chain must wait for a lease (long form).
func (c *crash) runChain(ch *chain) (parked bool) {
	for ch.next < len(ch.ops) {
		o := ch.ops[ch.next]
		if c.runOp(ch, o) {
			ch.wake = time.Now().Add(2 * time.Second)
			return true
		}
		if o.failed {
			return false
		}
		if o.kind == "create" {
			ch.id, _ = o.data["id"].(string)
		}
		ch.next++
	}
	return false
}

// deadline bounds how long one operation may go without a definitive answer.
func (c *crash) deadline() time.Duration { return time.Minute }

// runOp sends o until it has a definitive answer; it returns true when o is parked behind a lease.
func (c *crash) runOp(ch *chain, o *op) (parked bool) {
	method, path, want := "POST", "/v1/companies", 201
	switch o.kind {
	case "update":
		method, path, want = "PATCH", "/v1/companies/"+ch.id, 200
	case "archive":
		method, path, want = "DELETE", "/v1/companies/"+ch.id, 200
	}
	first := time.Now()
	for {
		if c.aborted.Load() {
			o.failed = true
			return false
		}
		if time.Since(first) > c.deadline() {
			c.t.Errorf("%s %s: no definitive answer within %v (%d attempts)", o.kind, o.key, c.deadline(), o.attempts)
			o.failed = true
			return false
		}
		status, hdr, body, err := c.send(method, path, o)
		switch {
		case err != nil:
			o.unanswered++
			time.Sleep(20 * time.Millisecond)
		case status == 503:
			o.unavailable++
			time.Sleep(50 * time.Millisecond)
		case status == 409 && errCode(body) == "idempotency_key_in_use":
			o.inUse++
			if o.unanswered == 0 && o.unavailable == 0 {
				c.t.Errorf("%s %s: 409 idempotency_key_in_use though no earlier attempt was left without an answer", o.kind, o.key)
			}
			if o.inUseSince.IsZero() {
				o.inUseSince = time.Now()
			}
			// The process that claimed the key is dead (every earlier attempt went unanswered): the
			// retry may be refused only until that process counts as dead, a few seconds, never for
			// the claim's lease. (A retry that took the claim over may itself be killed and leave a
			// new claim, of a process killed later.)
			c.checkInUse(o)
			if c.sc.park {
				return true
			}
			time.Sleep(100 * time.Millisecond)
		case status == want:
			o.status, o.replayed, o.data = status, hdr.Get("Idempotent-Replayed") == "true", dataOf(body)
			if !o.inUseSince.IsZero() {
				o.takeover = time.Since(o.inUseSince)
			}
			c.checkAnswer(ch, o)
			return false
		default:
			c.t.Errorf("%s %s: %d %.300s", o.kind, o.key, status, body)
			o.failed = true
			return false
		}
	}
}

// send makes one attempt; err is a transport failure (no HTTP answer).
func (c *crash) send(method, path string, o *op) (int, http.Header, []byte, error) {
	data, _ := json.Marshal(o.body)
	req, err := http.NewRequest(method, c.url+path, bytes.NewReader(data))
	if err != nil {
		return 0, nil, nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+c.key)
	req.Header.Set("Idempotency-Key", o.key)
	// atServer: written to a server, its answer not begun; written: written at least once (the
	// transport may send it again on a new connection).
	var atServer, written atomic.Bool
	left := func() {
		if atServer.CompareAndSwap(true, false) {
			c.atServer.Add(-1)
		}
	}
	req = req.WithContext(httptrace.WithClientTrace(req.Context(), &httptrace.ClientTrace{
		WroteRequest: func(httptrace.WroteRequestInfo) {
			written.Store(true)
			if atServer.CompareAndSwap(false, true) {
				c.atServer.Add(1)
			}
		},
		GotFirstResponseByte: left,
	}))
	defer left()
	o.attempts++
	c.sent.Add(1)
	c.inflight.Add(1)
	defer c.inflight.Add(-1)
	res, err := c.client.Do(req)
	if err != nil {
		c.noteCut(written.Load())
		return 0, nil, nil, err
	}
	body, err := io.ReadAll(res.Body)
	res.Body.Close()
	if err != nil {
		c.noteCut(true)
		return 0, nil, nil, err
	}
	c.count(res.StatusCode)
	c.checkEnvelope(req, data, res, body)
	return res.StatusCode, res.Header, body, nil
}

// freezeMidRequest arranges for the next kill to land mid-request: once a request has been written to
// the server and its answer has not begun (the clients send one after another, so at once but for a
// moment between two), it stops the process (SIGSTOP), waits for answers already on their way to
// arrive, and returns true, the process still stopped, if a request is still waiting for its answer:
// it will get none. Otherwise the process goes on (SIGCONT) and it tries again, until wait has passed.
func (c *crash) freezeMidRequest(wait time.Duration) bool {
	pid := c.proc.Pid()
	for deadline := time.Now().Add(wait); time.Now().Before(deadline); {
		if c.atServer.Load() == 0 {
			time.Sleep(time.Millisecond)
			continue
		}
		if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
			c.t.Errorf("SIGSTOP recordsd: %v", err)
			return false
		}
		time.Sleep(100 * time.Millisecond) // a loaded machine's client reads what was sent before the stop
		if c.atServer.Load() > 0 {
			return true
		}
		if err := syscall.Kill(pid, syscall.SIGCONT); err != nil {
			c.t.Errorf("SIGCONT recordsd: %v", err)
			return false
		}
	}
	return false
}

// noteCut counts an attempt that got no answer as cut by the kill under way (or the last one), when it
// was written to a server: an attempt that found no server listening was not cut.
func (c *crash) noteCut(written bool) {
	if !written {
		return
	}
	gen := c.gen.Load()
	c.cutMu.Lock()
	c.cut[gen]++
	c.cutMu.Unlock()
}

// cuts returns how many kills cut requests in flight, and how many requests they cut.
func (c *crash) cuts() (kills, requests int) {
	c.cutMu.Lock()
	defer c.cutMu.Unlock()
	for _, n := range c.cut {
		kills++
		requests += n
	}
	return kills, requests
}

func (c *crash) count(status int) {
	v, _ := c.statuses.LoadOrStore(status, new(atomic.Int64))
	v.(*atomic.Int64).Add(1)
}

// checkEnvelope applies the rules every answer keeps: X-Request-Id, the error envelope on errors, no
// 5xx but 503 service_unavailable with Retry-After, and the OpenAPI document.
func (c *crash) checkEnvelope(req *http.Request, sent []byte, res *http.Response, body []byte) {
	where := fmt.Sprintf("%s %s (%s): %d", req.Method, req.URL.Path, req.Header.Get("Idempotency-Key"), res.StatusCode)
	if res.Header.Get("X-Request-Id") == "" {
		c.t.Errorf("%s: no X-Request-Id", where)
	}
	if res.StatusCode >= 500 && (res.StatusCode != 503 || errCode(body) != "service_unavailable" || res.Header.Get("Retry-After") == "") {
		c.t.Errorf("%s: %.300s", where, body)
	}
	if res.StatusCode >= 400 {
		var env struct {
			Error struct {
				Code      string `json:"code"`
				RequestID string `json:"request_id"`
			} `json:"error"`
		}
		if err := json.Unmarshal(body, &env); err != nil || env.Error.Code == "" || env.Error.RequestID != res.Header.Get("X-Request-Id") {
			c.t.Errorf("%s: not the error envelope: %.300s", where, body)
		}
	}
	if _, problems := c.contract.CheckResponse(req, res, body); len(problems) > 0 {
		c.t.Errorf("%s: breaks the OpenAPI document: %v", where, problems)
	}
}

// checkAnswer checks a definitive answer against its request: a create names the record, an update
// shows its own values (a replay shows the first execution's), an archive shows the record archived.
func (c *crash) checkAnswer(ch *chain, o *op) {
	d := o.data
	switch o.kind {
	case "create":
		if d["name"] != ch.name || d["id"] == nil {
			c.t.Errorf("create %s answered %v", o.key, d)
		}
	case "update":
		if d["id"] != ch.id || fmt.Sprint(d["employee_count"]) != fmt.Sprint(o.n) || d["description"] != fmt.Sprintf("update %d", o.n) {
			c.t.Errorf("update %s (n=%d) answered %v", o.key, o.n, d)
		}
	case "archive":
		if d["id"] != ch.id || d["archived"] != true {
			c.t.Errorf("archive %s answered %v", o.key, d)
		}
	}
}

// checkInUse checks a 409 idempotency_key_in_use answer to o: the claim belongs to a process this test
// killed (server_instances names its pid), no longer ago than inUseBound.
func (c *crash) checkInUse(o *op) {
	var pid int64
	found, err := store.QueryOne(context.Background(), c.st, c.st.Dialect().Bind(`SELECT i.pid FROM idempotency_keys k JOIN server_instances i ON i.id = k.owner
WHERE k.api_key_id = ? AND k.idem_key = ? AND k.status = 'running'`, c.keyID, o.key), func(row []any) error {
		pid = store.Int(row[0])
		return nil
	})
	if err != nil {
		c.t.Errorf("%s %s: read the claim: %v", o.kind, o.key, err)
		return
	}
	if !found {
		// The claim is gone since the answer, or names no server instance any more: nothing held it.
		return
	}
	c.killMu.Lock()
	at, ok := c.killed[int(pid)]
	c.killMu.Unlock()
	if !ok {
		c.t.Errorf("%s %s: 409 for a claim of process %d, which was not killed, though every earlier attempt went unanswered", o.kind, o.key, pid)
		return
	}
	dead := time.Since(at)
	o.deadFor = max(o.deadFor, dead)
	if dead > inUseBound {
		c.t.Errorf("%s %s: 409 idempotency_key_in_use %v after the process holding the claim was killed, want none past %v", o.kind, o.key, dead.Round(time.Millisecond), inUseBound)
	}
}

func errCode(body []byte) string {
	var env struct {
		Error struct{ Code string } `json:"error"`
	}
	_ = json.Unmarshal(body, &env)
	return env.Error.Code
}

func dataOf(body []byte) map[string]any {
	var doc struct {
		Data map[string]any `json:"data"`
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	_ = dec.Decode(&doc)
	return doc.Data
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

package solo_test

// The load of TestDatabaseFaults: writers, an updater and readers driving a faultEnv, every answer recorded.

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/workspace-records/records/runtime/server/servertest"
)

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
	time.Sleep(500 * time.Millisecond) // pacing: the load runs on over the recovered database
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

package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	mrand "math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/workspace-records/records/runtime/store"
)

// The soak (`go run ./tools/bench soak`, make soak): recordsd on PostgreSQL with Redis, driven by several
// clients at once for a long time — reads (list pages, cursor walks, gets, POST /query, custom-field
// filters), creates and updates (some through the deal-rules plugin), idempotent retries (the same
// Idempotency-Key resent, sometimes concurrently) and bursts from a key whose workspace allows few
// requests a minute. It reports requests by status, p50/p99 per kind, recordsd's RSS and goroutines
// after the warm-up and at the end, and checks at the end, directly in the database, that every write
// the API acknowledged is there, once, with its last acknowledged value. It fails (exit 1) on any 5xx
// other than 503, any answer a client did not expect, an unanswered request, a lost or duplicated
// acknowledged write, a replay that differs from the first answer, more admitted burst requests than
// the limit allows, or memory or goroutines beyond the flatness bound.

type soakOptions struct {
	options
	redis      string
	warmup     time.Duration
	duration   time.Duration
	readers    int
	writers    int
	think      time.Duration
	burstLimit int
	burstEvery time.Duration
	rssFactor  float64
	rssSlackMB float64
	goSlack    int
}

func parseSoakFlags(args []string) (soakOptions, error) {
	fs := flag.NewFlagSet("bench soak", flag.ContinueOnError)
	admin := os.Getenv("RECORDS_TEST_POSTGRES")
	if admin == "" {
		admin = "postgres://postgres@127.0.0.1:5432/postgres"
	}
	redis := os.Getenv("RECORDS_TEST_REDIS")
	if redis == "" {
		redis = "redis://127.0.0.1:6379/0"
	}
	var o soakOptions
	fs.StringVar(&o.postgres, "postgres", admin, "PostgreSQL server where the soak creates its database")
	fs.StringVar(&o.redis, "redis", redis, "Redis recordsd keeps its rate-limit state in")
	fs.StringVar(&o.bin, "bin", "bin", "directory with recordsd and recordsctl")
	fs.StringVar(&o.plugins, "plugins", "plugins/bin", "plugins directory")
	fs.StringVar(&o.defs, "definitions", "definitions", "definitions directory")
	fs.StringVar(&o.out, "out", "", "also write the report (Markdown) to this file")
	fs.BoolVar(&o.keep, "keep", false, "keep the database after the run")
	fs.DurationVar(&o.warmup, "warmup", time.Minute, "traffic before the start sample (not in the figures)")
	fs.DurationVar(&o.duration, "duration", 10*time.Minute, "measured traffic after the warm-up")
	fs.IntVar(&o.readers, "readers", 3, "reading clients")
	fs.IntVar(&o.writers, "writers", 2, "writing clients (plus one idempotent retrier and one burst client)")
	fs.DurationVar(&o.think, "think", 20*time.Millisecond, "pause of each client between its requests")
	fs.IntVar(&o.burstLimit, "burst-limit", 60, "per-minute key limit of the burst client's workspace")
	fs.DurationVar(&o.burstEvery, "burst-every", 10*time.Second, "time between bursts")
	fs.Float64Var(&o.rssFactor, "rss-factor", 1.25, "flatness: end RSS at most this times the start RSS …")
	fs.Float64Var(&o.rssSlackMB, "rss-slack", 16, "… plus this many MB")
	fs.IntVar(&o.goSlack, "goroutine-slack", 10, "flatness: end goroutines at most start plus this")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if o.duration <= 0 || o.warmup < 0 || o.readers < 1 || o.writers < 1 || o.burstLimit < 1 {
		return o, errors.New("need a positive -duration, -readers, -writers and -burst-limit")
	}
	return o, nil
}

func runSoak(ctx context.Context, o soakOptions) error {
	for _, name := range []string{o.bin + "/recordsd", o.bin + "/recordsctl"} {
		if _, err := os.Stat(name); err != nil {
			return fmt.Errorf("%s missing: run make build plugins first", name)
		}
	}
	b := &bench{o: o.options, backend: "postgres", rep: &report{backend: "postgres"}}
	drop, err := b.createDatabase(ctx)
	if err != nil {
		return err
	}
	defer drop()
	s, err := setupSoak(ctx, o, b)
	if err != nil {
		return err
	}
	secret := make([]byte, 32)
	rand.Read(secret)
	api, err := startRecordsd(ctx, o.options, b.dsn, hex.EncodeToString(secret), "--redis", o.redis, "--log-level", "warn")
	if err != nil {
		return err
	}
	defer api.stop()
	s.base = "http://" + api.addr
	fmt.Fprintf(os.Stderr, "soak: recordsd on %s (PostgreSQL, Redis), warm-up %s, then %s\n", api.addr, o.warmup, o.duration)

	s.phase(ctx, o.warmup)
	if ctx.Err() != nil {
		return ctx.Err()
	}
	start := s.sample(api)
	warm := s.stats.reset() // the figures are of the measured phase; failures of the warm-up still count
	fmt.Fprintf(os.Stderr, "soak: start sample %.1f MB, %d goroutines\n", start.rssMB, start.goroutines)
	t0 := time.Now()
	stopPeaks := s.watch(api)
	s.phase(ctx, o.duration)
	peak := stopPeaks()
	elapsed := time.Since(t0)
	if ctx.Err() != nil {
		return ctx.Err()
	}
	end := s.sample(api)
	fmt.Fprintf(os.Stderr, "soak: end sample %.1f MB, %d goroutines\n", end.rssMB, end.goroutines)

	raw, err := openDB(ctx, b.suDSN, 2) // the superuser: row-level security would hide every row
	if err != nil {
		return err
	}
	defer raw.close()
	v, err := s.verify(ctx, raw)
	if err != nil {
		return err
	}
	res := soakResult{
		duration: elapsed, start: start, end: end, peakRSS: peak, kinds: s.stats.snapshot(), warm: warm,
		verify: v, burst: s.burst.result(o.burstLimit), idemViolations: s.idemViolations.Load(),
		missingRequestID: s.missingID.Load(), serverErrors: errorLines(api.Log.String()),
	}
	text, ok := res.render(o)
	fmt.Print(text)
	if o.out != "" {
		if err := os.WriteFile(o.out, []byte(text), 0o644); err != nil {
			return fmt.Errorf("write %s: %w", o.out, err)
		}
	}
	if !ok {
		return errors.New("the soak failed its criteria (see FAIL lines)")
	}
	return nil
}

// soak is the state of one run: the clients' shared ledger of acknowledged writes and the figures.
type soak struct {
	o              soakOptions
	base           string
	key            string // write key of the main workspace
	burstKey       string // key of the workspace with the low per-minute limit
	workspace      string
	field          string // filter key of the companies custom field (cfv:<id>)
	stats          *soakStats
	ledger         *ledger
	burst          *burstStats
	clients        []soakClient
	idemViolations atomic.Int64
	missingID      atomic.Int64
}

// soakClient is one client's loop; run returns when ctx ends. Its state survives between phases.
type soakClient interface {
	run(ctx context.Context)
}

func setupSoak(ctx context.Context, o soakOptions, b *bench) (*soak, error) {
	s := &soak{o: o, stats: newSoakStats(), ledger: newLedger(), burst: &burstStats{}}
	const high = "1000000000000"
	ws, err := ctl(ctx, b.o, b.dsn, "workspace", "create", "--name", "Soak", "--plan", "enterprise")
	if err != nil {
		return nil, err
	}
	s.workspace = ws["id"].(string)
	if _, err := ctl(ctx, b.o, b.dsn, "workspace", "set-limits", s.workspace, "--key-per-minute", high,
		"--key-per-hour", high, "--workspace-per-minute", high, "--monthly-quota", high); err != nil {
		return nil, err
	}
	m, err := ctl(ctx, b.o, b.dsn, "member", "create", "--workspace", s.workspace, "--email", "soak@example.com", "--role", "admin")
	if err != nil {
		return nil, err
	}
	k, err := ctl(ctx, b.o, b.dsn, "key", "create", "--member", m["id"].(string), "--access", "write")
	if err != nil {
		return nil, err
	}
	s.key = k["secret"].(string)
	f, err := ctl(ctx, b.o, b.dsn, "field", "create", "--workspace", s.workspace, "--resource", "companies", "--key", "tier", "--type", "integer")
	if err != nil {
		return nil, err
	}
	s.field = "cfv:" + f["id"].(string)
	// The burst client's workspace: a low per-minute key limit, nothing else in the way.
	bw, err := ctl(ctx, b.o, b.dsn, "workspace", "create", "--name", "Soak bursts", "--plan", "pro")
	if err != nil {
		return nil, err
	}
	if _, err := ctl(ctx, b.o, b.dsn, "workspace", "set-limits", bw["id"].(string), "--key-per-minute", strconv.Itoa(o.burstLimit),
		"--key-per-hour", high, "--workspace-per-minute", high, "--monthly-quota", high); err != nil {
		return nil, err
	}
	bm, err := ctl(ctx, b.o, b.dsn, "member", "create", "--workspace", bw["id"].(string), "--email", "burst@example.com", "--role", "admin")
	if err != nil {
		return nil, err
	}
	bk, err := ctl(ctx, b.o, b.dsn, "key", "create", "--member", bm["id"].(string), "--access", "read")
	if err != nil {
		return nil, err
	}
	s.burstKey = bk["secret"].(string)
	for i := range o.writers {
		s.clients = append(s.clients, &writer{s: s, rnd: mrand.New(mrand.NewPCG(uint64(i)+100, 7)), client: httpClient(2)})
	}
	s.clients = append(s.clients, &retrier{s: s, rnd: mrand.New(mrand.NewPCG(200, 7)), client: httpClient(4)})
	for i := range o.readers {
		s.clients = append(s.clients, &reader{s: s, rnd: mrand.New(mrand.NewPCG(uint64(i)+300, 7)), client: httpClient(2)})
	}
	s.clients = append(s.clients, &burster{s: s, client: httpClient(burstConc)})
	return s, nil
}

// phase runs every client for d.
func (s *soak) phase(ctx context.Context, d time.Duration) {
	if d <= 0 {
		return
	}
	pctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	var wg sync.WaitGroup
	for _, c := range s.clients {
		wg.Go(func() { c.run(pctx) })
	}
	wg.Wait()
}

// sample measures recordsd at rest: no request in flight, the clients' idle connections closed.
func (s *soak) sample(api *proc) sample {
	for _, c := range s.clients {
		if h, ok := c.(interface{ httpClient() *http.Client }); ok {
			h.httpClient().CloseIdleConnections()
		}
	}
	time.Sleep(time.Second)
	return sample{api.rssMB(), api.goroutines()}
}

// watch samples recordsd's RSS every 10 s until the returned function is called, which returns the peak.
func (s *soak) watch(api *proc) func() float64 {
	done := make(chan struct{})
	var peak float64
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTicker(10 * time.Second)
		defer t.Stop()
		for {
			peak = max(peak, api.rssMB())
			select {
			case <-done:
				return
			case <-t.C:
			}
		}
	})
	return func() float64 { close(done); wg.Wait(); return peak }
}

// answer is one request's outcome.
type answer struct {
	status int
	header http.Header
	body   []byte
	took   time.Duration
	err    error // no answer
}

func (a answer) code() string {
	var env struct {
		Error struct {
			Code string `json:"code"`
		} `json:"error"`
	}
	json.Unmarshal(a.body, &env)
	return env.Error.Code
}

func (a answer) id() string {
	var env struct {
		Data struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	json.Unmarshal(a.body, &env)
	return env.Data.ID
}

// send makes one request and records it under kind; want lists the statuses the client expects (503
// is always tolerated and counted).
func (s *soak) send(ctx context.Context, c *http.Client, kind, key, method, path string, body []byte, idem string, want ...int) answer {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	// A request runs to its answer even when the phase ends meanwhile: a client stops between requests,
	// so every write it sent is answered (acknowledged or not) and no request is cut off.
	req, err := http.NewRequestWithContext(context.WithoutCancel(ctx), method, s.base+path, rd)
	if err != nil {
		return answer{err: err}
	}
	req.Header.Set("Authorization", "Bearer "+key)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if idem != "" {
		req.Header.Set("Idempotency-Key", idem)
	}
	t0 := time.Now()
	res, err := c.Do(req)
	if err != nil {
		s.stats.transport(kind, err)
		return answer{err: err}
	}
	data, err := io.ReadAll(res.Body)
	res.Body.Close()
	a := answer{status: res.StatusCode, header: res.Header, body: data, took: time.Since(t0)}
	if err != nil {
		s.stats.transport(kind, err)
		return answer{err: err}
	}
	if res.Header.Get("X-Request-Id") == "" {
		s.missingID.Add(1)
	}
	s.stats.record(kind, a, slices.Contains(want, a.status) || a.status == 503, method+" "+path)
	return a
}

func pause(ctx context.Context, d time.Duration) {
	if d <= 0 {
		return
	}
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}

func newKey() string { return store.NewID() }

// writer creates companies and deals and updates the companies it created (only it does: the last
// value it saw acknowledged is the one the database must hold).
type writer struct {
	s      *soak
	rnd    *mrand.Rand
	client *http.Client
	mine   []string
}

func (w *writer) httpClient() *http.Client { return w.client }

func (w *writer) run(ctx context.Context) {
	s := w.s
	for ctx.Err() == nil {
		pause(ctx, s.o.think)
		n := w.rnd.IntN(1_000_000)
		idem := ""
		if w.rnd.IntN(2) == 0 {
			idem = newKey()
		}
		switch r := w.rnd.IntN(10); {
		case r < 4 || len(w.mine) == 0:
			name := "soak-" + store.NewID()
			body, _ := json.Marshal(map[string]any{"name": name, "employee_count": n, "industry": "software", "cf__tier": n % 10})
			a := s.send(ctx, w.client, "create", s.key, "POST", "/v1/companies", body, idem, 201)
			if a.status == 201 {
				if id := a.id(); id != "" {
					s.ledger.created(id, name, int64(n))
					w.mine = append(w.mine, id)
				}
			}
		case r < 5:
			name := "soak-deal-" + store.NewID()
			body, _ := json.Marshal(map[string]any{"name": name, "amount": n, "currency": "EUR"})
			a := s.send(ctx, w.client, "create_deal", s.key, "POST", "/v1/deals", body, idem, 201)
			if a.status == 201 {
				s.ledger.createdDeal(a.id(), name)
			}
		default:
			id := w.mine[w.rnd.IntN(len(w.mine))]
			body := []byte(`{"employee_count":` + strconv.Itoa(n) + `}`)
			s.ledger.attempt(id, int64(n))
			a := s.send(ctx, w.client, "update", s.key, "PATCH", "/v1/companies/"+id, body, idem, 200)
			if a.status == 200 {
				s.ledger.updated(id, int64(n))
			}
		}
	}
}

// retrier sends writes with an Idempotency-Key and sends them again — after the answer, or twice at
// once — checking every replay is the first answer; a 409 (still running) or a 503 is retried with the
// same key until it is answered.
type retrier struct {
	s      *soak
	rnd    *mrand.Rand
	client *http.Client
	mine   []string
}

func (r *retrier) httpClient() *http.Client { return r.client }

func (r *retrier) run(ctx context.Context) {
	s := r.s
	for ctx.Err() == nil {
		pause(ctx, s.o.think)
		n := r.rnd.IntN(1_000_000)
		key := newKey()
		concurrent := r.rnd.IntN(3) == 0
		if len(r.mine) == 0 || r.rnd.IntN(2) == 0 {
			name := "soak-idem-" + store.NewID()
			body, _ := json.Marshal(map[string]any{"name": name, "employee_count": n})
			first, ok := r.idempotent(ctx, "idem_create", "POST", "/v1/companies", body, key, 201, concurrent)
			if !ok {
				continue
			}
			id := first.id()
			if id == "" {
				s.idemViolations.Add(1)
				continue
			}
			s.ledger.created(id, name, int64(n))
			r.mine = append(r.mine, id)
			continue
		}
		id := r.mine[r.rnd.IntN(len(r.mine))]
		s.ledger.attempt(id, int64(n))
		body := []byte(`{"employee_count":` + strconv.Itoa(n) + `}`)
		if _, ok := r.idempotent(ctx, "idem_update", "PATCH", "/v1/companies/"+id, body, key, 200, concurrent); ok {
			s.ledger.updated(id, int64(n))
		}
	}
}

// idempotent sends a write with key (twice at once when concurrent) until it is answered, then once
// more, and checks that every answer after the first is its replay. It returns the first answer.
func (r *retrier) idempotent(ctx context.Context, kind, method, path string, body []byte, key string, want int, concurrent bool) (answer, bool) {
	s := r.s
	var answers []answer
	n := 1
	if concurrent {
		n = 2
	}
	for try := 0; try < 50 && ctx.Err() == nil; try++ {
		got := make([]answer, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() { got[i] = s.send(ctx, r.client, kind, s.key, method, path, body, key, want, 409) })
		}
		wg.Wait()
		settled := false
		for _, a := range got {
			if a.err != nil {
				continue
			}
			if a.status == 409 && a.code() != "idempotency_key_in_use" {
				s.idemViolations.Add(1)
			}
			if a.status == want {
				answers = append(answers, a)
				settled = true
			}
		}
		if settled {
			break
		}
		n = 1
		pause(ctx, 50*time.Millisecond)
	}
	if len(answers) == 0 {
		return answer{}, false
	}
	// Once more, after the answer: a replay.
	for try := 0; try < 50 && ctx.Err() == nil; try++ {
		a := s.send(ctx, r.client, "idem_retry", s.key, method, path, body, key, want)
		if a.err == nil && a.status == want {
			answers = append(answers, a)
			break
		}
		pause(ctx, 50*time.Millisecond)
	}
	first := answers[0]
	replays := 0
	for _, a := range answers[1:] {
		if a.header.Get("Idempotent-Replayed") == "true" {
			replays++
		}
		if a.id() != first.id() {
			s.idemViolations.Add(1)
		}
	}
	// Of the answers, at most one is the original; the rest say they are replays.
	if first.header.Get("Idempotent-Replayed") == "true" {
		replays++
	}
	if replays < len(answers)-1 {
		s.idemViolations.Add(1)
	}
	return first, true
}

// reader reads: list pages, cursor walks, gets of acknowledged records (which must exist), POST /query
// with a filter, lists filtered on the custom field, and deals.
type reader struct {
	s      *soak
	rnd    *mrand.Rand
	client *http.Client
}

func (r *reader) httpClient() *http.Client { return r.client }

func (r *reader) run(ctx context.Context) {
	s := r.s
	for ctx.Err() == nil {
		pause(ctx, s.o.think)
		switch k := r.rnd.IntN(10); {
		case k < 2:
			s.send(ctx, r.client, "list", s.key, "GET", fmt.Sprintf("/v1/companies?page_size=25&page=%d&sort=name&order=asc", 1+r.rnd.IntN(5)), nil, "", 200)
		case k < 4:
			next := "start"
			for page := 0; page < 3 && next != ""; page++ {
				a := s.send(ctx, r.client, "cursor", s.key, "GET", "/v1/companies?page_size=50&sort=employee_count&order=asc&cursor="+url.QueryEscape(next), nil, "", 200)
				var list struct {
					Meta struct {
						Next *string `json:"next_cursor"`
					} `json:"meta"`
				}
				if a.status != 200 || json.Unmarshal(a.body, &list) != nil || list.Meta.Next == nil {
					break
				}
				next = *list.Meta.Next
			}
		case k < 7:
			if id, ok := s.ledger.pick(r.rnd); ok {
				s.send(ctx, r.client, "get", s.key, "GET", "/v1/companies/"+id, nil, "", 200)
			}
		case k < 8:
			body := []byte(fmt.Sprintf(`{"filters":[{"field":"employee_count","op":"gte","value":%d}],"page_size":10}`, r.rnd.IntN(1_000_000)))
			s.send(ctx, r.client, "query", s.key, "POST", "/v1/companies/query", body, "", 200)
		case k < 9:
			filter := url.QueryEscape(fmt.Sprintf(`[{"field":%q,"op":"eq","value":%d}]`, s.field, r.rnd.IntN(10)))
			s.send(ctx, r.client, "filter_custom", s.key, "GET", "/v1/companies?page_size=10&filter="+filter, nil, "", 200)
		default:
			s.send(ctx, r.client, "list_deals", s.key, "GET", "/v1/deals?page_size=10", nil, "", 200)
		}
	}
}

// burster sends bursts of twice the per-minute limit with the low-limit key, burstConc at a time.
type burster struct {
	s      *soak
	client *http.Client
}

const burstConc = 8

func (b *burster) httpClient() *http.Client { return b.client }

func (b *burster) run(ctx context.Context) {
	s := b.s
	for ctx.Err() == nil {
		n := 2 * s.o.burstLimit
		jobs := make(chan struct{}, n)
		for range n {
			jobs <- struct{}{}
		}
		close(jobs)
		var wg sync.WaitGroup
		for range burstConc {
			wg.Go(func() {
				for range jobs {
					if ctx.Err() != nil {
						return
					}
					a := s.send(ctx, b.client, "burst", s.burstKey, "GET", "/v1/companies?page_size=1", nil, "", 200, 429)
					s.burst.add(a)
				}
			})
		}
		wg.Wait()
		pause(ctx, s.o.burstEvery)
	}
}

// burstStats counts the burst client's admissions since its first request.
type burstStats struct {
	mu         sync.Mutex
	first      time.Time
	last       time.Time
	admitted   int
	refused    int
	badRefusal int // 429 without rate_limited or an integer Retry-After ≥ 1
}

func (b *burstStats) add(a answer) {
	if a.err != nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	now := time.Now()
	if b.first.IsZero() {
		b.first = now
	}
	b.last = now
	switch a.status {
	case 200:
		b.admitted++
	case 429:
		b.refused++
		ra, err := strconv.Atoi(a.header.Get("Retry-After"))
		if a.code() != "rate_limited" || err != nil || ra < 1 {
			b.badRefusal++
		}
	}
}

type burstResult struct {
	admitted, refused, bound, badRefusal int
	span                                 time.Duration
}

// result compares the admissions with what GCRA allows over the span of the bursts: limit at once,
// then limit per minute (one more for the rounding of the last interval).
func (b *burstStats) result(limit int) burstResult {
	b.mu.Lock()
	defer b.mu.Unlock()
	span := b.last.Sub(b.first)
	bound := limit + int(span.Seconds()*float64(limit)/60) + 1
	return burstResult{admitted: b.admitted, refused: b.refused, bound: bound, badRefusal: b.badRefusal, span: span}
}

// ledger remembers every acknowledged write.
type ledger struct {
	mu        sync.Mutex
	companies map[string]*ackRecord
	ids       []string
	deals     map[string]string // id → name
}

// ackRecord is an acknowledged company: its name, the last acknowledged employee_count, and the values
// of updates sent after it that were not acknowledged (any of which the database may hold).
type ackRecord struct {
	name  string
	want  int64
	maybe []int64
}

func newLedger() *ledger {
	return &ledger{companies: map[string]*ackRecord{}, deals: map[string]string{}}
}

func (l *ledger) created(id, name string, n int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.companies[id] = &ackRecord{name: name, want: n}
	l.ids = append(l.ids, id)
}

func (l *ledger) createdDeal(id, name string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.deals[id] = name
}

// attempt notes an update about to be sent; updated notes its acknowledgement.
func (l *ledger) attempt(id string, n int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	r := l.companies[id]
	r.maybe = append(r.maybe, n)
}

func (l *ledger) updated(id string, n int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	r := l.companies[id]
	r.want, r.maybe = n, nil
}

func (l *ledger) pick(rnd *mrand.Rand) (string, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.ids) == 0 {
		return "", false
	}
	return l.ids[rnd.IntN(len(l.ids))], true
}

type verifyResult struct {
	companies, deals, updated       int
	missing, duplicated, wrongValue int
	uncertain                       int // records whose last update was never answered
	firstProblem                    string
}

// verify reads the main workspace's companies and deals straight from the database and checks the
// ledger against them.
func (s *soak) verify(ctx context.Context, raw *db) (verifyResult, error) {
	type row struct {
		name  string
		count int64
		null  bool
	}
	rows := map[string]row{}
	names := map[string]int{}
	err := raw.query(ctx, `SELECT "id", "name", "employee_count" FROM "rec_companies" WHERE "workspace_id" = $1`, []any{s.workspace},
		func(_ []string, v []any) error {
			r := row{name: fmt.Sprint(v[1]), null: v[2] == nil}
			if !r.null {
				r.count, _ = strconv.ParseInt(fmt.Sprint(v[2]), 10, 64)
			}
			rows[fmt.Sprint(jsonValue("id", v[0]))] = r
			names[r.name]++
			return nil
		})
	if err != nil {
		return verifyResult{}, fmt.Errorf("read companies: %w", err)
	}
	dealNames := map[string]int{}
	dealIDs := map[string]string{}
	err = raw.query(ctx, `SELECT "id", "name" FROM "rec_deals" WHERE "workspace_id" = $1`, []any{s.workspace},
		func(_ []string, v []any) error {
			dealIDs[fmt.Sprint(jsonValue("id", v[0]))] = fmt.Sprint(v[1])
			dealNames[fmt.Sprint(v[1])]++
			return nil
		})
	if err != nil {
		return verifyResult{}, fmt.Errorf("read deals: %w", err)
	}
	var v verifyResult
	problem := func(format string, args ...any) {
		if v.firstProblem == "" {
			v.firstProblem = fmt.Sprintf(format, args...)
		}
	}
	s.ledger.mu.Lock()
	defer s.ledger.mu.Unlock()
	for id, want := range s.ledger.companies {
		v.companies++
		got, ok := rows[id]
		switch {
		case !ok || got.name != want.name:
			v.missing++
			problem("company %s (%s) acknowledged, not in the database", id, want.name)
			continue
		case names[want.name] != 1:
			v.duplicated++
			problem("company %s stored %d times", want.name, names[want.name])
		}
		if len(want.maybe) > 0 {
			v.uncertain++
		}
		if got.null || (got.count != want.want && !slices.Contains(want.maybe, got.count)) {
			v.wrongValue++
			problem("company %s holds employee_count %d (null %v), last acknowledged %d", id, got.count, got.null, want.want)
		}
	}
	for id, name := range s.ledger.deals {
		v.deals++
		if dealIDs[id] != name {
			v.missing++
			problem("deal %s (%s) acknowledged, not in the database", id, name)
		} else if dealNames[name] != 1 {
			v.duplicated++
			problem("deal %s stored %d times", name, dealNames[name])
		}
	}
	return v, nil
}

// errorLines returns recordsd's log lines at error level.
func errorLines(log string) []string {
	var out []string
	for _, line := range strings.Split(log, "\n") {
		if strings.Contains(line, `"level":"ERROR"`) {
			out = append(out, line)
		}
	}
	return out
}

// soakStats are the figures by kind of request.
type soakStats struct {
	mu    sync.Mutex
	kinds map[string]*kindStats
}

type kindStats struct {
	status     map[int]int
	lat        []time.Duration
	transport  int
	unexpected int
	example    string // the first unexpected answer or transport error
}

func newSoakStats() *soakStats { return &soakStats{kinds: map[string]*kindStats{}} }

func (s *soakStats) kind(name string) *kindStats {
	k := s.kinds[name]
	if k == nil {
		k = &kindStats{status: map[int]int{}}
		s.kinds[name] = k
	}
	return k
}

func (s *soakStats) record(kind string, a answer, expected bool, what string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := s.kind(kind)
	k.status[a.status]++
	k.lat = append(k.lat, a.took)
	if !expected {
		k.unexpected++
		if k.example == "" {
			body := a.body
			if len(body) > 300 {
				body = body[:300]
			}
			k.example = fmt.Sprintf("%s: %d %s", what, a.status, body)
		}
	}
}

func (s *soakStats) transport(kind string, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := s.kind(kind)
	k.transport++
	if k.example == "" {
		k.example = err.Error()
	}
}

// reset starts the figures afresh and returns those until now.
func (s *soakStats) reset() []kindFigures {
	old := s.snapshot()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.kinds = map[string]*kindStats{}
	return old
}

// kindFigures are one kind's figures for the report.
type kindFigures struct {
	name                  string
	n                     int
	status                map[int]int
	p50, p99              time.Duration
	transport, unexpected int
	example               string
}

func (s *soakStats) snapshot() []kindFigures {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []kindFigures
	for name, k := range s.kinds {
		lat := slices.Clone(k.lat)
		slices.Sort(lat)
		f := kindFigures{name: name, n: len(lat), status: copyCounts(k.status), transport: k.transport, unexpected: k.unexpected, example: k.example}
		if len(lat) > 0 {
			f.p50 = lat[len(lat)/2]
			f.p99 = lat[min(len(lat)-1, len(lat)*99/100)]
		}
		out = append(out, f)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out
}

func copyCounts(m map[int]int) map[int]int {
	out := make(map[int]int, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// soakResult is everything the report and the verdict need.
type soakResult struct {
	duration         time.Duration
	start, end       sample
	peakRSS          float64
	kinds            []kindFigures
	warm             []kindFigures // the warm-up's, for its failures
	verify           verifyResult
	burst            burstResult
	idemViolations   int64
	missingRequestID int64
	serverErrors     []string
}

// render writes the report and returns whether every criterion held.
func (r soakResult) render(o soakOptions) (string, bool) {
	var b strings.Builder
	fmt.Fprintf(&b, "## Soak: %s of mixed traffic after a %s warm-up (PostgreSQL, Redis)\n\n", r.duration.Round(time.Second), o.warmup)
	fmt.Fprintf(&b, "%d readers, %d writers, 1 idempotent retrier, 1 burst client (key limit %d/min, bursts of %d every %s); %s pause between a client's requests.\n\n",
		o.readers, o.writers, o.burstLimit, 2*o.burstLimit, o.burstEvery, o.think)
	b.WriteString("| kind | requests | by status | p50 | p99 | unexpected | unanswered |\n|---|---:|---|---:|---:|---:|---:|\n")
	total := map[int]int{}
	requests := 0
	for _, k := range r.kinds {
		codes := make([]int, 0, len(k.status))
		for c, n := range k.status {
			codes = append(codes, c)
			total[c] += n
		}
		sort.Ints(codes)
		parts := make([]string, len(codes))
		for i, c := range codes {
			parts[i] = fmt.Sprintf("%d: %d", c, k.status[c])
		}
		requests += k.n
		fmt.Fprintf(&b, "| %s | %d | %s | %s | %s | %d | %d |\n", k.name, k.n, strings.Join(parts, ", "), ms(k.p50), ms(k.p99), k.unexpected, k.transport)
	}
	codes := make([]int, 0, len(total))
	for c := range total {
		codes = append(codes, c)
	}
	sort.Ints(codes)
	parts := make([]string, len(codes))
	for i, c := range codes {
		parts[i] = fmt.Sprintf("%d: %d", c, total[c])
	}
	fmt.Fprintf(&b, "| **all** | %d | %s | | | | |\n\n", requests, strings.Join(parts, ", "))
	fmt.Fprintf(&b, "Throughput %.0f requests/s. recordsd at rest: start %.1f MB RSS, %d goroutines; end %.1f MB, %d goroutines; peak RSS while serving %.1f MB.\n\n",
		float64(requests)/r.duration.Seconds(), r.start.rssMB, r.start.goroutines, r.end.rssMB, r.end.goroutines, r.peakRSS)
	fmt.Fprintf(&b, "Acknowledged writes checked in the database: %d companies (%d with an unanswered last update), %d deals.\n\n",
		r.verify.companies, r.verify.uncertain, r.verify.deals)

	ok := true
	check := func(pass bool, format string, args ...any) {
		verdict := "PASS"
		if !pass {
			verdict, ok = "FAIL", false
		}
		fmt.Fprintf(&b, "- %s %s\n", verdict, fmt.Sprintf(format, args...))
	}
	fivexx, unexpected, transport := 0, 0, 0
	example := ""
	for _, k := range slices.Concat(r.kinds, r.warm) {
		for c, n := range k.status {
			if c >= 500 && c != 503 {
				fivexx += n
			}
		}
		unexpected += k.unexpected
		transport += k.transport
		if example == "" && k.example != "" {
			example = k.name + ": " + k.example
		}
	}
	check(fivexx == 0, "no 5xx other than 503, warm-up included: %d (503 while measured: %d)", fivexx, total[503])
	check(unexpected == 0 && transport == 0, "every request answered as its client expected, warm-up included: %d unexpected, %d unanswered%s", unexpected, transport, firstOf(example))
	check(r.missingRequestID == 0, "X-Request-Id on every response: %d without", r.missingRequestID)
	check(r.verify.missing == 0 && r.verify.duplicated == 0 && r.verify.wrongValue == 0,
		"every acknowledged write in the database once, with its last acknowledged value: %d missing, %d duplicated, %d wrong%s",
		r.verify.missing, r.verify.duplicated, r.verify.wrongValue, firstOf(r.verify.firstProblem))
	check(r.idemViolations == 0, "idempotent retries replay the first answer (same record, Idempotent-Replayed: true; 409 only idempotency_key_in_use): %d violations", r.idemViolations)
	check(r.burst.refused > 0 && r.burst.admitted <= r.burst.bound && r.burst.badRefusal == 0,
		"bursts limited: %d admitted of at most %d over %s, %d refused (429 rate_limited with an integer Retry-After ≥ 1: %d did not)",
		r.burst.admitted, r.burst.bound, r.burst.span.Round(time.Second), r.burst.refused, r.burst.badRefusal)
	rssBound := o.rssFactor*r.start.rssMB + o.rssSlackMB
	check(r.start.rssMB > 0 && r.end.rssMB <= rssBound, "RSS flat: end %.1f MB ≤ %.2f × start %.1f MB + %.0f MB = %.1f MB", r.end.rssMB, o.rssFactor, r.start.rssMB, o.rssSlackMB, rssBound)
	check(r.start.goroutines > 0 && r.end.goroutines <= r.start.goroutines+o.goSlack, "goroutines flat: end %d ≤ start %d + %d", r.end.goroutines, r.start.goroutines, o.goSlack)
	fmt.Fprintf(&b, "\nrecordsd logged %d lines at error level.\n", len(r.serverErrors))
	for _, line := range r.serverErrors[:min(len(r.serverErrors), 5)] {
		if len(line) > 400 {
			line = line[:400] + "…"
		}
		fmt.Fprintf(&b, "\n    %s", line)
	}
	if len(r.serverErrors) > 0 {
		b.WriteString("\n")
	}
	return b.String(), ok
}

func firstOf(s string) string {
	if s == "" {
		return ""
	}
	return " (first: " + s + ")"
}

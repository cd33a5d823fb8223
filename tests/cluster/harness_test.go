package cluster_test

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
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"

	"github.com/workspace-records/records/internal/proc"
	"github.com/workspace-records/records/runtime/limits"
	"github.com/workspace-records/records/runtime/server/servertest"
)

var long = flag.Bool("cluster.long", os.Getenv("CLUSTER_LONG") == "1", "run the long form: larger limits, repeated rounds, several kill points (also CLUSTER_LONG=1)")

// binDir holds recordsd and recordsctl built from the working tree for this test binary.
var binDir string

func TestMain(m *testing.M) {
	os.Exit(servertest.RunWithBinaries(m, proc.RunTests, &binDir, "recordsd", "recordsctl"))
}

// scale is how much each scenario does: the short form for make test, the long form for make cluster-test.
type scale struct {
	rateN      int // per-minute limit of the rate-limit scenarios (3N requests are sent)
	quota      int // monthly quota of the quota scenario
	quotaRate  int // requests per second per replica in the quota stream
	concurrent int // identical idempotent POSTs sent at once
	rounds     int // rounds of each propagation scenario
	kills      int // kill points in the crash scenario
}

func currentScale() scale {
	if *long {
		return scale{rateN: 100, quota: 300, quotaRate: 40, concurrent: 100, rounds: 5, kills: 6}
	}
	return scale{rateN: 20, quota: 60, quotaRate: 20, concurrent: 30, rounds: 1, kills: 1}
}

// ctl runs recordsctl --json against the cluster's database.
type ctl struct{ db string }

func (c ctl) run(args ...string) (map[string]any, error) {
	return proc.JSON(context.Background(), filepath.Join(binDir, "recordsctl"), append([]string{"--db", poolOf4(c.db), "--definitions", servertest.DefinitionsDir(), "--json"}, args...)...)
}

// poolOf4 is db with pools of 4 connections (PostgreSQL; a SQLite file as it is): make test runs the
// cluster scenarios side by side with other packages, and ten replicas at 8 (the default on 2
// processors) took most of PostgreSQL's default 100 connections.
func poolOf4(db string) string {
	if strings.HasPrefix(db, "sqlite:") {
		return db
	}
	return db + "&pool_max_conns=4"
}

// must runs recordsctl and fails the test on an error.
func (c ctl) must(t testing.TB, args ...string) map[string]any {
	t.Helper()
	out, err := c.run(args...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// replica is one recordsd process. It keeps its address across restarts, as a load balancer's target does.
type replica struct {
	*proc.Process
	index int
	addr  string
}

func (r *replica) url() string { return "http://" + r.addr }

// startOnFreePort starts the replica, on another free port when its own was taken by another process
// between FreeAddrs and the replica's listen (it then exits: address already in use): make test's other
// packages open and close loopback ports all the time.
func (r *replica) startOnFreePort() error {
	for try := 1; ; try++ {
		err := r.Start(context.Background())
		if err == nil || try == 3 || !strings.Contains(err.Error(), "address already in use") {
			return err
		}
		addrs, ferr := proc.FreeAddrs(1)
		if ferr != nil {
			return errors.Join(err, ferr)
		}
		for i, a := range r.Args {
			if a == r.addr {
				r.Args[i] = addrs[0]
			}
		}
		r.addr, r.Probe = addrs[0], "http://"+addrs[0]+"/v1"
	}
}

// cluster is the replicas, the database and Redis they share, and a client that spreads requests.
type cluster struct {
	db       string // the app role's URL of the shared database
	redis    string
	ctl      ctl
	replicas []*replica
	scale    scale
	runID    string
	client   *http.Client
	contract *servertest.Contract
	pool     *pgxpool.Pool
	rr       atomic.Uint64
}

// startCluster creates and migrates a database and starts n replicas sharing it and Redis; env is added
// to each replica's environment (settings such as RECORDS_WEBHOOK_LEASE=3s).
func startCluster(t *testing.T, n int, env ...string) *cluster {
	t.Helper()
	return startClusterOn(t, n, redisURL(t, os.Getenv("RECORDS_TEST_REDIS")), env...)
}

// startClusterBackend is startCluster on backend b: on SQLite the replicas share one database file.
func startClusterBackend(t *testing.T, b servertest.Backend, n int, env ...string) *cluster {
	t.Helper()
	return startClusterWith(t, b, n, redisURL(t, os.Getenv("RECORDS_TEST_REDIS")), env...)
}

// redisTimeout is the replicas' --redis-timeout: the default 250 ms (limits.DefaultRedisTimeout) under
// RECORDS_TIMING=strict; 2 s in make test (servertest.Budget). A loaded machine's own scheduling counts
// against it: with lint and the race build beside make test, every replica missed 250 ms during a burst,
// and once 1 s as make test's packages all started, and fell back to its own limits (the documented
// fail-open), which leaves nothing exact to check. The outage scenario (R8) still tells a request that
// gave up on Redis from one that waited out its 5 s pause.
var redisTimeout = servertest.Budget(limits.DefaultRedisTimeout, 2*time.Second)

// startClusterOn is startCluster with the replicas' Redis at redisAt (redisURL's answer).
func startClusterOn(t *testing.T, n int, redisAt string, env ...string) *cluster {
	t.Helper()
	return startClusterWith(t, servertest.Postgres, n, redisAt, env...)
}

func startClusterWith(t *testing.T, b servertest.Backend, n int, redisAt string, env ...string) *cluster {
	t.Helper()
	c := &cluster{scale: currentScale(), runID: randomHex(4)}
	c.redis = redisAt
	c.db = servertest.DatabaseURL(t, b)
	c.ctl = ctl{db: c.db}
	t0 := time.Now()
	c.ctl.must(t, "migrate")
	t.Logf("%s database migrated in %v; Redis %s; scale %+v", b, time.Since(t0).Round(time.Millisecond), c.redis, c.scale)
	if b == servertest.Postgres {
		pool, err := pgxpool.New(context.Background(), c.db)
		if err != nil {
			t.Fatal(err)
		}
		c.pool = pool
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = 64
	c.client = &http.Client{Timeout: 15 * time.Second, Transport: tr}
	plugins := servertest.ShippedPlugins(t)
	addrs, err := proc.FreeAddrs(n)
	if err != nil {
		t.Fatal(err)
	}
	for i, addr := range addrs {
		c.replicas = append(c.replicas, &replica{index: i, addr: addr, Process: &proc.Process{
			Name: fmt.Sprintf("replica %d", i), Path: filepath.Join(binDir, "recordsd"), Probe: "http://" + addr + "/v1", Log: &proc.Buffer{}, Env: env,
			Args: []string{"serve", "--addr", addr, "--db", poolOf4(c.db), "--definitions", servertest.DefinitionsDir(), "--plugins", plugins, "--redis", c.redis, "--redis-timeout", redisTimeout.String(), "--log-level", "warn"}}})
	}
	t.Cleanup(func() {
		for _, r := range c.replicas {
			if r.Running() {
				r.Signal(syscall.SIGTERM)
			}
		}
		tr.CloseIdleConnections()
		if c.pool != nil {
			c.pool.Close()
		}
		if t.Failed() {
			for _, r := range c.replicas {
				t.Logf("replica %d log:\n%s", r.index, r.Log.Tail())
			}
		}
	})
	t0 = time.Now()
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i, r := range c.replicas {
		wg.Go(func() { errs[i] = r.startOnFreePort() })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d replicas serving in %v: %s", n, time.Since(t0).Round(time.Millisecond), c.addrs())
	c.contract = c.loadContract(t)
	return c
}

func (c *cluster) addrs() string {
	var s []string
	for _, r := range c.replicas {
		s = append(s, r.addr)
	}
	return strings.Join(s, ", ")
}

// loadContract reads the OpenAPI document from every replica: the same definitions must give the same
// document (apart from the address each names), and responses are checked against it.
func (c *cluster) loadContract(t *testing.T) *servertest.Contract {
	t.Helper()
	var first []byte
	for _, r := range c.replicas {
		res, err := c.client.Get(r.url() + "/v1/openapi.json")
		if err != nil {
			t.Fatal(err)
		}
		doc, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != 200 {
			t.Fatalf("replica %d: GET /v1/openapi.json: %d", r.index, res.StatusCode)
		}
		doc = bytes.Replace(doc, []byte(`"url":"`+r.url()+`"`), []byte(`"url":"http://server.test"`), 1)
		if first == nil {
			first = doc
		} else if !bytes.Equal(doc, first) {
			t.Errorf("replica %d serves another OpenAPI document than replica 0: the replicas do not share their definitions", r.index)
		}
	}
	contract, err := servertest.ContractFor(first)
	if err != nil {
		t.Fatal(err)
	}
	return contract
}

// next picks the replica for a round-robin request.
func (c *cluster) next() int { return int(c.rr.Add(1)-1) % len(c.replicas) }

// response is one API answer.
type response struct {
	Replica    int
	Status     int
	Header     http.Header
	Body       map[string]any
	Raw        []byte
	Sent, Done time.Time
}

func (r *response) data() map[string]any { d, _ := r.Body["data"].(map[string]any); return d }

func (r *response) list() []any { l, _ := r.Body["data"].([]any); return l }

func (r *response) errField(name string) string {
	e, _ := r.Body["error"].(map[string]any)
	s, _ := e[name].(string)
	return s
}

func (r *response) code() string { return r.errField("code") }

func (r *response) String() string {
	return fmt.Sprintf("replica %d: %d %.400s", r.Replica, r.Status, r.Raw)
}

// call sends one request with key to replica i. body is nil, a string sent as is, or a value to encode.
// The answer is checked against the envelope rules and the OpenAPI document (problems are reported on
// t, which may be used from any goroutine); the error is a transport failure only.
func (c *cluster) call(t testing.TB, i int, key, method, path string, body any, header ...string) (*response, error) {
	var sent []byte
	switch b := body.(type) {
	case nil:
	case string:
		sent = []byte(b)
	default:
		data, err := json.Marshal(b)
		if err != nil {
			return nil, err
		}
		sent = data
	}
	var rd io.Reader
	if sent != nil {
		rd = bytes.NewReader(sent)
	}
	req, err := http.NewRequest(method, c.replicas[i].url()+path, rd)
	if err != nil {
		return nil, err
	}
	if sent != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	for j := 0; j+1 < len(header); j += 2 {
		req.Header.Set(header[j], header[j+1])
	}
	out := &response{Replica: i, Sent: time.Now()}
	res, err := c.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("replica %d: %s %s: %w", i, method, path, err)
	}
	out.Raw, err = io.ReadAll(res.Body)
	res.Body.Close()
	out.Done = time.Now()
	if err != nil {
		return nil, fmt.Errorf("replica %d: %s %s: read body: %w", i, method, path, err)
	}
	out.Status, out.Header = res.StatusCode, res.Header
	if len(out.Raw) > 0 {
		dec := json.NewDecoder(bytes.NewReader(out.Raw))
		dec.UseNumber()
		if err := dec.Decode(&out.Body); err != nil {
			t.Errorf("replica %d: %s %s: %d with a body that is not a JSON object: %.300q", i, method, path, res.StatusCode, out.Raw)
		}
	}
	checkEnvelope(t, method, path, out)
	c.checkContract(t, req, sent, res, out)
	return out, nil
}

// do is call for the test goroutine: a transport failure fails the test.
func (c *cluster) do(t testing.TB, i int, key, method, path string, body any, header ...string) *response {
	t.Helper()
	r, err := c.call(t, i, key, method, path, body, header...)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func (c *cluster) checkContract(t testing.TB, req *http.Request, sent []byte, res *http.Response, out *response) {
	undocumented, problems := c.contract.CheckResponse(req, res, out.Raw)
	if undocumented {
		if out.Status != 404 && out.Status != 405 {
			t.Errorf("replica %d: %s %s: %d for a path or method the OpenAPI document does not have", out.Replica, req.Method, req.URL.RequestURI(), out.Status)
		}
		return
	}
	for _, p := range problems {
		t.Errorf("replica %d: %s %s: %d response breaks the OpenAPI document: %s\n%.400s", out.Replica, req.Method, req.URL.RequestURI(), out.Status, p, out.Raw)
	}
	if out.Status < 300 {
		for _, p := range c.contract.CheckRequest(req, sent) {
			t.Errorf("replica %d: %s %s: accepted a request the OpenAPI document refuses: %s", out.Replica, req.Method, req.URL.RequestURI(), p)
		}
	}
}

// checkEnvelope applies the rules of SPEC.md that hold for every answer: X-Request-Id, no CORS headers,
// the error envelope with the same request id, WWW-Authenticate on 401, Retry-After and X-RateLimit-Reset
// on 429, the usage headers on 2xx data responses, no 5xx but 503 service_unavailable.
func checkEnvelope(t testing.TB, method, path string, r *response) {
	where := fmt.Sprintf("replica %d: %s %s: %d", r.Replica, method, path, r.Status)
	id := r.Header.Get("X-Request-Id")
	if id == "" {
		t.Errorf("%s: no X-Request-Id", where)
	}
	for k := range r.Header {
		if strings.HasPrefix(strings.ToLower(k), "access-control-") {
			t.Errorf("%s: CORS header %s", where, k)
		}
	}
	if r.Status >= 500 && (r.Status != 503 || r.code() != "service_unavailable") {
		t.Errorf("%s: %.400s", where, r.Raw)
	}
	if r.Status < 400 {
		if r.Status < 300 && strings.HasPrefix(path, "/v1/") && !strings.HasPrefix(path, "/v1/openapi.json") {
			for _, h := range []string{"X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Reset", "X-Quota-Reset"} {
				if _, err := strconv.ParseInt(r.Header.Get(h), 10, 64); err != nil {
					t.Errorf("%s: %s is %q, want an integer", where, h, r.Header.Get(h))
				}
			}
		}
		return
	}
	env, ok := r.Body["error"].(map[string]any)
	if !ok || len(r.Body) != 1 {
		t.Errorf("%s: without the error envelope: %.400s", where, r.Raw)
		return
	}
	for _, k := range []string{"type", "code", "message", "request_id"} {
		if s, _ := env[k].(string); s == "" {
			t.Errorf("%s: error.%s missing: %.400s", where, k, r.Raw)
		}
	}
	if env["request_id"] != id {
		t.Errorf("%s: error.request_id %v differs from X-Request-Id %s", where, env["request_id"], id)
	}
	switch r.Status {
	case 401:
		if r.Header.Get("WWW-Authenticate") == "" {
			t.Errorf("%s: 401 without WWW-Authenticate", where)
		}
	case 429:
		if r.errField("type") != "rate_limit_error" {
			t.Errorf("%s: error.type %q, want rate_limit_error", where, r.errField("type"))
		}
		if n, err := strconv.Atoi(r.Header.Get("Retry-After")); err != nil || n < 1 {
			t.Errorf("%s: Retry-After %q, want whole seconds >= 1", where, r.Header.Get("Retry-After"))
		}
		if _, err := strconv.Atoi(r.Header.Get("X-RateLimit-Reset")); err != nil {
			t.Errorf("%s: X-RateLimit-Reset %q, want whole seconds", where, r.Header.Get("X-RateLimit-Reset"))
		}
	}
}

// tenant is a workspace with an admin member and a write key.
type tenant struct {
	ws, member, key, keyID string
}

// lifted are rate limits no scenario reaches unless it sets its own.
var lifted = []string{"--key-per-minute", "1000000", "--key-per-hour", "1000000", "--workspace-per-minute", "1000000"}

// newTenant creates a workspace on plan growth with limits (after lifted ones), an admin and a write key.
func (c *cluster) newTenant(t testing.TB, name string, limits ...string) tenant {
	t.Helper()
	var tn tenant
	tn.ws = c.ctl.must(t, "workspace", "create", "--name", name+" "+c.runID, "--plan", "growth")["id"].(string)
	c.ctl.must(t, append(append([]string{"workspace", "set-limits", tn.ws}, lifted...), limits...)...)
	tn.member = c.ctl.must(t, "member", "create", "--workspace", tn.ws, "--email", "admin@"+strings.ReplaceAll(name, " ", "-")+".example", "--role", "admin")["id"].(string)
	tn.keyID, tn.key = c.newKey(t, tn.member, "write")
	return tn
}

func (c *cluster) newKey(t testing.TB, member, access string) (id, secret string) {
	t.Helper()
	k := c.ctl.must(t, "key", "create", "--member", member, "--access", access, "--expires-in", "30d")
	return k["id"].(string), k["secret"].(string)
}

// waitAll polls probe on every replica at once, every 10 ms, until it holds or limit passes since from,
// and returns each replica's delay from from (-1: not within limit).
func (c *cluster) waitAll(from time.Time, limit time.Duration, probe func(i int) bool) []time.Duration {
	out := make([]time.Duration, len(c.replicas))
	var wg sync.WaitGroup
	for i := range c.replicas {
		wg.Go(func() {
			for {
				if probe(i) {
					out[i] = time.Since(from)
					return
				}
				if time.Since(from) > limit {
					out[i] = -1
					return
				}
				time.Sleep(10 * time.Millisecond)
			}
		})
	}
	wg.Wait()
	return out
}

// delays formats per-replica delays and fails t for any replica that did not get there within limit.
func checkDelays(t testing.TB, what string, d []time.Duration, limit time.Duration) string {
	t.Helper()
	var parts []string
	for i, v := range d {
		if v < 0 {
			t.Errorf("%s: replica %d not within %v", what, i, limit)
			parts = append(parts, fmt.Sprintf("r%d >%v", i, limit))
			continue
		}
		parts = append(parts, fmt.Sprintf("r%d %v", i, v.Round(time.Millisecond)))
	}
	return strings.Join(parts, ", ")
}

// filterQuery is the query string of a list filtered on field op value.
func filterQuery(field, op string, value any) string {
	f, _ := json.Marshal([]map[string]any{{"field": field, "op": op, "value": value}})
	return "filter=" + url.QueryEscape(string(f))
}

// redisURL is base (RECORDS_TEST_REDIS, or a test's own redis-server; default redis://127.0.0.1:6379/0)
// with a database number from 1 to 15 chosen for this run. The rate limiter's keys are named by key and
// workspace ids, which are new UUIDs in every run, so runs never share a key even in one database; the
// database is not flushed, since another test binary may be using it at the same time.
func redisURL(t testing.TB, base string) string {
	t.Helper()
	if base == "" {
		base = "redis://127.0.0.1:6379/0"
	}
	u, err := url.Parse(base)
	if err != nil {
		t.Fatalf("RECORDS_TEST_REDIS: %v", err)
	}
	u.Path = fmt.Sprintf("/%d", 1+mrand.IntN(15))
	opt, err := redis.ParseURL(u.String())
	if err != nil {
		t.Fatalf("RECORDS_TEST_REDIS: %v", err)
	}
	client := redis.NewClient(opt)
	defer client.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := client.Ping(ctx).Err(); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("Redis is required when CI=true: %v", err)
		}
		t.Skipf("Redis not reachable (%v); set RECORDS_TEST_REDIS", err)
	}
	return u.String()
}

// redisKeys returns which of keys exist in the cluster's Redis database.
func (c *cluster) redisKeys(t testing.TB, keys ...string) []string {
	t.Helper()
	opt, _ := redis.ParseURL(c.redis)
	client := redis.NewClient(opt)
	defer client.Close()
	var found []string
	for _, k := range keys {
		n, err := client.Exists(context.Background(), k).Result()
		if err != nil {
			t.Fatalf("redis: %v", err)
		}
		if n == 1 {
			found = append(found, k)
		}
	}
	return found
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// percentile returns the p-th percentile (0..100) of sorted durations.
func percentile(sorted []time.Duration, p int) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := (len(sorted) - 1) * p / 100
	return sorted[i]
}

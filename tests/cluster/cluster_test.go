package cluster_test

import (
	"context"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/workspace-records/records/runtime/server"
	"github.com/workspace-records/records/runtime/server/servertest"
)

// propagation is the bound DESIGN.md §4 and the README give for a change made with recordsctl to reach
// every replica.
const propagation = 2 * time.Second

// propagationBound is what the propagation checks allow (the delays measured are logged): the bound
// under RECORDS_TIMING=strict (make timing-check), 15 s in make test (servertest.Budget). Measured:
// 0.3–1.6 s alone; over 3 s with a second make test beside this one (load 52). A change that never
// arrives still fails.
var propagationBound = servertest.Budget(propagation, 15*time.Second)

// Three replicas over one PostgreSQL and one Redis behave as one service.
func TestCluster(t *testing.T) {
	t.Parallel() // its replicas, database, Redis keys and ports are its own
	if testing.Short() {
		t.Skip("starts three recordsd processes; not in -short")
	}
	start := time.Now()
	c := startCluster(t, 3)
	t.Run("rate_limit_per_key", c.testKeyRateLimit)
	t.Run("rate_limit_per_workspace", c.testWorkspaceRateLimit)
	t.Run("quota", c.testQuota)
	t.Run("idempotency", c.testIdempotency)
	t.Run("cursor", c.testCursor)
	t.Run("revocation", c.testRevocation)
	t.Run("custom_field", c.testCustomField)
	t.Run("data_model", c.testDataModel)
	t.Run("role_change", c.testRoleChange)
	t.Run("quota_while_draining", c.testDrainingQuota)
	t.Run("replica_killed", c.testKill)
	t.Logf("cluster test (%s form) took %v", map[bool]string{false: "short", true: "long"}[*long], time.Since(start).Round(time.Millisecond))
}

// burst sends n requests at once (released together), request i going where route says, and returns
// the answers in order and the time from release to the last answer.
func (c *cluster) burst(t *testing.T, n int, route func(i int) (replica int, key string)) ([]*response, time.Duration) {
	out := make([]*response, n)
	release := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		replica, key := route(i)
		wg.Go(func() {
			<-release
			r, err := c.call(t, replica, key, "GET", "/v1/me", nil)
			if err != nil {
				t.Error(err)
				return
			}
			out[i] = r
		})
	}
	t0 := time.Now()
	close(release)
	wg.Wait()
	return out, time.Since(t0)
}

// gcraBound is how many of a burst lasting elapsed a fresh GCRA window of limit per minute may admit:
// limit at once, then one more every minute/limit (README, Rate limits).
func gcraBound(limit int, elapsed time.Duration) int {
	return limit + int(elapsed/(time.Minute/time.Duration(limit)))
}

// A per-key limit of N per minute holds across the replicas: of 3N requests spread round-robin, N
// succeed (plus what GCRA refills while the burst lasts: nothing at N=20), the rest are 429
// rate_limited with Retry-After; the window lives in Redis.
func (c *cluster) testKeyRateLimit(t *testing.T) {
	n := c.scale.rateN
	tn := c.newTenant(t, "key rate", "--key-per-minute", strconv.Itoa(n))
	out, elapsed := c.burst(t, 3*n, func(i int) (int, string) { return i % len(c.replicas), tn.key })
	ok, limited := c.tally(t, out, n, "rate_limited")
	bound := gcraBound(n, elapsed)
	t.Logf("limit %d/min per key: %d × 200, %d × 429 of %d requests over 3 replicas %v in %v (bound %d..%d)",
		n, ok, limited, 3*n, perReplica(out, 200), elapsed.Round(time.Millisecond), n, bound)
	if ok < n || ok > bound {
		t.Errorf("%d requests admitted, want %d..%d: the per-key limit is not global%s", ok, n, bound, c.fallbackNote())
	}
	key := "records:rl:k:" + tn.keyID + ":m"
	if got := c.redisKeys(t, key); len(got) != 1 {
		t.Errorf("Redis has no %s: the replicas did not share the limiter", key)
	}
}

// A per-workspace limit of N per minute holds across replicas and keys: two keys, 3N requests spread
// over both and over the replicas, N succeed.
func (c *cluster) testWorkspaceRateLimit(t *testing.T) {
	n := c.scale.rateN
	tn := c.newTenant(t, "workspace rate", "--workspace-per-minute", strconv.Itoa(n))
	other := c.ctl.must(t, "member", "create", "--workspace", tn.ws, "--email", "second@workspace-rate.example", "--role", "admin")["id"].(string)
	_, key2 := c.newKey(t, other, "read")
	keys := []string{tn.key, key2}
	out, elapsed := c.burst(t, 3*n, func(i int) (int, string) { return i % len(c.replicas), keys[i%2] })
	ok, limited := c.tally(t, out, n, "rate_limited")
	var perKey [2]int
	for i, r := range out {
		if r != nil && r.Status == 200 {
			perKey[i%2]++
		}
	}
	bound := gcraBound(n, elapsed)
	t.Logf("limit %d/min per workspace, 2 keys: %d × 200 (%d + %d), %d × 429 over 3 replicas %v in %v (bound %d..%d)",
		n, ok, perKey[0], perKey[1], limited, perReplica(out, 200), elapsed.Round(time.Millisecond), n, bound)
	if ok < n || ok > bound {
		t.Errorf("%d requests admitted, want %d..%d: the workspace limit is not global%s", ok, n, bound, c.fallbackNote())
	}
	key := "records:rl:w:" + tn.ws + ":m"
	if got := c.redisKeys(t, key); len(got) != 1 {
		t.Errorf("Redis has no %s: the replicas did not share the limiter", key)
	}
}

// tally counts 200s and 429s with code, checks that nothing else came back and that the headers name
// the limit.
func (c *cluster) tally(t *testing.T, out []*response, limit int, code string) (ok, refused int) {
	t.Helper()
	for _, r := range out {
		if r == nil {
			continue
		}
		switch {
		case r.Status == 200:
			ok++
			if rem, _ := strconv.Atoi(r.Header.Get("X-RateLimit-Remaining")); rem < 0 || rem >= limit {
				t.Errorf("%v: X-RateLimit-Remaining %q outside 0..%d", r.Replica, r.Header.Get("X-RateLimit-Remaining"), limit-1)
			}
		case r.Status == 429 && r.code() == code:
			refused++
			if r.Header.Get("X-RateLimit-Limit") != strconv.Itoa(limit) || r.Header.Get("X-RateLimit-Remaining") != "0" {
				t.Errorf("%v: 429 with X-RateLimit-Limit %q Remaining %q, want %d and 0", r, r.Header.Get("X-RateLimit-Limit"), r.Header.Get("X-RateLimit-Remaining"), limit)
			}
		default:
			t.Errorf("unexpected answer %v", r)
		}
	}
	return ok, refused
}

// fallbackNote says which replicas logged that Redis did not answer in time, so that they judged
// requests with their own in-process limiter (the documented fail-open of runtime/limits.Redis).
func (c *cluster) fallbackNote() string {
	var which []string
	for _, r := range c.replicas {
		if strings.Contains(r.Log.Tail(), "Redis unavailable") {
			which = append(which, strconv.Itoa(r.index))
		}
	}
	if len(which) == 0 {
		return ""
	}
	return " (replicas " + strings.Join(which, ", ") + " logged that Redis did not answer within its timeout and fell back to per-server limits)"
}

func perReplica(out []*response, status int) []int {
	counts := make([]int, 3)
	for _, r := range out {
		if r != nil && r.Status == status && r.Replica < len(counts) {
			counts[r.Replica]++
		}
	}
	return counts
}

// The monthly quota is exact across replicas: with Redis, every replica admits through one atomic
// counter, so exactly the quota is accepted however the requests are spread, every replica refuses from
// then on, and the stored count (each replica adds its count to the database once a second,
// server.QuotaFlushInterval) is exact. Only a replica that logged Redis as unavailable judges from the
// database count meanwhile; then the weaker bound of that fallback applies: a replica accepts only
// while its own count plus what the others had accepted two flush intervals earlier is under the quota.
func (c *cluster) testQuota(t *testing.T) {
	q := c.scale.quota
	tn := c.newTenant(t, "quota", "--monthly-quota", strconv.Itoa(q))
	type obs struct {
		r  *response
		ok bool
	}
	// One sequential sender per replica at quotaRate requests per second, until the quota has been
	// reached and every replica has had time to learn it.
	pace := time.Second / time.Duration(c.scale.quotaRate)
	total := 3 * c.scale.quotaRate
	dur := time.Duration(float64(time.Second)*float64(q)/float64(total)) + 2*server.QuotaFlushInterval + 1500*time.Millisecond
	streams := make([][]obs, len(c.replicas))
	start := time.Now()
	var wg sync.WaitGroup
	for i := range c.replicas {
		wg.Go(func() {
			for tick := start; time.Since(start) < dur; tick = tick.Add(pace) {
				time.Sleep(time.Until(tick))
				r, err := c.call(t, i, tn.key, "GET", "/v1/me", nil)
				if err != nil {
					t.Error(err)
					return
				}
				switch {
				case r.Status == 200:
					streams[i] = append(streams[i], obs{r, true})
				case r.Status == 429 && r.code() == "quota_exceeded":
					streams[i] = append(streams[i], obs{r, false})
					checkQuotaRefusal(t, r, q)
				default:
					t.Errorf("unexpected answer %v", r)
				}
			}
		})
	}
	wg.Wait()
	var accepted []*response
	own := make([]int, len(c.replicas))
	for i, s := range streams {
		for _, o := range s {
			if o.ok {
				accepted = append(accepted, o.r)
				own[i]++
			}
		}
	}
	sort.Slice(accepted, func(a, b int) bool { return accepted[a].Done.Before(accepted[b].Done) })
	if len(accepted) < q {
		t.Fatalf("%d requests accepted, want at least the quota %d", len(accepted), q)
	}
	fellBack := c.fallbackNote()
	if fellBack == "" && len(accepted) != q {
		t.Errorf("%d requests accepted for a quota of %d with Redis answering throughout; want exactly %d", len(accepted), q, q)
	}
	// The fallback's bound, which the exact count above implies: a replica accepts only while its own
	// count plus the others' flushed counts is under the quota. What another replica accepted is in the
	// database within one flush interval and read by this replica within the next one; half a second more
	// covers the flushes' own time.
	lag := 2*server.QuotaFlushInterval + 500*time.Millisecond
	for i, s := range streams {
		mine := 0
		for _, o := range s {
			if !o.ok {
				continue
			}
			others := 0
			for _, a := range accepted {
				if a.Replica != i && a.Done.Before(o.r.Sent.Add(-lag)) {
					others++
				}
			}
			if mine+others >= q {
				t.Errorf("replica %d accepted a request at %v with %d of its own and %d of the others' accepted more than %v earlier: beyond the quota %d",
					i, o.r.Sent.Sub(start).Round(time.Millisecond), mine, others, lag, q)
			}
			mine++
		}
		if mine > q {
			t.Errorf("replica %d alone accepted %d, more than the quota %d", i, mine, q)
		}
	}
	reached, last := accepted[q-1].Done, accepted[len(accepted)-1].Done
	converge := last.Sub(reached)
	t.Logf("quota %d at %d req/s over 3 replicas: %d accepted (overshoot %d; without Redis at most %d at this rate: what the 2 other replicas accept in %v; per replica %v), last acceptance %v after the quota was reached%s",
		q, total, len(accepted), len(accepted)-q, int(2*float64(c.scale.quotaRate)*lag.Seconds()), lag, own, converge.Round(time.Millisecond), fellBack)
	if converge > lag {
		t.Errorf("a replica accepted %v after the quota was reached, want at most %v", converge, lag)
	}
	// Now every replica refuses, with the spec's error.
	for i := range c.replicas {
		r := c.do(t, i, tn.key, "GET", "/v1/me", nil)
		if r.Status != 429 || r.code() != "quota_exceeded" {
			t.Errorf("after the stream, %v; want 429 quota_exceeded", r)
		}
		checkQuotaRefusal(t, r, q)
	}
	// Refusals are not counted: once every replica has flushed, the stored count is what was accepted.
	var stored int64
	deadline := time.Now().Add(3 * server.QuotaFlushInterval)
	for {
		err := c.pool.QueryRow(context.Background(), "SELECT coalesce(sum(count), 0) FROM usage_counters WHERE workspace_id = $1", tn.ws).Scan(&stored)
		if err != nil {
			t.Fatal(err)
		}
		if stored == int64(len(accepted)) || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if stored != int64(len(accepted)) {
		t.Errorf("usage_counters holds %d, want the %d accepted requests", stored, len(accepted))
	}
}

func checkQuotaRefusal(t *testing.T, r *response, q int) {
	if r.Header.Get("X-Quota-Limit") != strconv.Itoa(q) || r.Header.Get("X-Quota-Remaining") != "0" {
		t.Errorf("%v: X-Quota-Limit %q Remaining %q, want %d and 0", r, r.Header.Get("X-Quota-Limit"), r.Header.Get("X-Quota-Remaining"), q)
	}
	// Retry-After points to the start of next month, as X-Quota-Reset does.
	ra, _ := strconv.Atoi(r.Header.Get("Retry-After"))
	reset, _ := strconv.Atoi(r.Header.Get("X-Quota-Reset"))
	if ra < 1 || ra > 31*24*3600 || abs(ra-reset) > 1 {
		t.Errorf("%v: Retry-After %q and X-Quota-Reset %q, want the seconds to the end of the month", r, r.Header.Get("Retry-After"), r.Header.Get("X-Quota-Reset"))
	}
}

func abs(n int) int { return max(n, -n) }

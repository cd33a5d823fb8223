package cluster_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/workspace-records/records/runtime/idempotency"
	"github.com/workspace-records/records/runtime/server"
	"github.com/workspace-records/records/runtime/server/servertest"
)

// propagation is the bound DESIGN.md §4 and the README give for a change made with recordsctl to reach
// every replica.
const propagation = 2 * time.Second

// Three replicas over one PostgreSQL and one Redis behave as one service.
func TestCluster(t *testing.T) {
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

// One Idempotency-Key, one record, whichever replicas the repeats reach: sequential repeats on the other
// replicas replay the first response byte for byte with Idempotent-Replayed: true; concurrent identical
// requests across the replicas make one record, the others replaying it or being told it is in use.
func (c *cluster) testIdempotency(t *testing.T) {
	tn := c.newTenant(t, "idempotency")
	name := "Idempotent sequential " + c.runID
	key := "seq-" + c.runID
	first := c.do(t, 0, tn.key, "POST", "/v1/companies", map[string]any{"name": name, "industry": "software"}, "Idempotency-Key", key)
	if first.Status != 201 || first.Header.Get("Idempotent-Replayed") != "" {
		t.Fatalf("first request: %v (Idempotent-Replayed %q)", first, first.Header.Get("Idempotent-Replayed"))
	}
	for i := 1; i < len(c.replicas); i++ {
		// The same JSON with members reordered and spaced differently is the same request.
		r := c.do(t, i, tn.key, "POST", "/v1/companies", `{ "industry" : "software", "name" : "`+name+`" }`, "Idempotency-Key", key)
		c.checkReplay(t, r, first)
	}
	if r := c.do(t, 2, tn.key, "POST", "/v1/companies", map[string]any{"name": name + " changed"}, "Idempotency-Key", key); r.Status != 422 || r.code() != "idempotency_key_reused" {
		t.Errorf("same key, other body: %v; want 422 idempotency_key_reused", r)
	}
	if n := c.countNamed(t, tn, name); n != 1 {
		t.Errorf("%d records named %q, want 1", n, name)
	}

	// Concurrent: the same request released at once on every replica.
	m := c.scale.concurrent
	name = "Idempotent concurrent " + c.runID
	key = "conc-" + c.runID
	body := map[string]any{"name": name}
	out := make([]*response, m)
	release := make(chan struct{})
	var wg sync.WaitGroup
	for i := range m {
		wg.Go(func() {
			<-release
			r, err := c.call(t, i%len(c.replicas), tn.key, "POST", "/v1/companies", body, "Idempotency-Key", key)
			if err != nil {
				t.Error(err)
				return
			}
			out[i] = r
		})
	}
	close(release)
	wg.Wait()
	var fresh *response
	var replays, inUse int
	for _, r := range out {
		switch {
		case r == nil:
		case r.Status == 201 && r.Header.Get("Idempotent-Replayed") == "":
			if fresh != nil {
				t.Errorf("two fresh 201s for one key: %v and %v", fresh, r)
			}
			fresh = r
		case r.Status == 201 && r.Header.Get("Idempotent-Replayed") == "true":
			replays++
		case r.Status == 409 && r.code() == "idempotency_key_in_use":
			inUse++
		default:
			t.Errorf("unexpected answer %v", r)
		}
	}
	if fresh == nil {
		t.Fatalf("no fresh 201 among %d concurrent requests", m)
	}
	for _, r := range out {
		if r != nil && r.Header.Get("Idempotent-Replayed") == "true" {
			c.checkReplay(t, r, fresh)
		}
	}
	for i := range c.replicas {
		c.checkReplay(t, c.do(t, i, tn.key, "POST", "/v1/companies", body, "Idempotency-Key", key), fresh)
	}
	t.Logf("%d concurrent identical POSTs over 3 replicas: 1 × 201 (replica %d), %d × 201 replayed, %d × 409 idempotency_key_in_use", m, fresh.Replica, replays, inUse)
	if n := c.countNamed(t, tn, name); n != 1 {
		t.Errorf("%d records named %q, want 1", n, name)
	}
}

// checkReplay asserts r replays first: 201, Idempotent-Replayed: true, the same body bytes and Location,
// its own request id.
func (c *cluster) checkReplay(t *testing.T, r, first *response) {
	t.Helper()
	if r.Status != first.Status || r.Header.Get("Idempotent-Replayed") != "true" || string(r.Raw) != string(first.Raw) || r.Header.Get("Location") != first.Header.Get("Location") {
		t.Errorf("not a replay of replica %d's answer: %v (Idempotent-Replayed %q, Location %q)\nfirst: %v", first.Replica, r, r.Header.Get("Idempotent-Replayed"), r.Header.Get("Location"), first)
	}
	if r.Header.Get("X-Request-Id") == first.Header.Get("X-Request-Id") {
		t.Errorf("replay carries the first request's X-Request-Id")
	}
}

// countNamed counts a tenant's companies named name through the API (round-robin).
func (c *cluster) countNamed(t *testing.T, tn tenant, name string) int {
	t.Helper()
	r := c.do(t, c.next(), tn.key, "GET", "/v1/companies?page_size=100&"+filterQuery("name", "eq", name), nil)
	if r.Status != 200 {
		t.Fatalf("list: %v", r)
	}
	return len(r.list())
}

// A cursor made by one replica continues on the others: the signing secret is shared (stored in the
// database, or RECORDS_CURSOR_SECRET set alike everywhere).
func (c *cluster) testCursor(t *testing.T) {
	tn := c.newTenant(t, "cursor")
	var want []string
	for i := range 5 {
		r := c.do(t, i%len(c.replicas), tn.key, "POST", "/v1/companies", map[string]any{"name": fmt.Sprintf("Cursor %d", i)})
		if r.Status != 201 {
			t.Fatalf("create: %v", r)
		}
		want = append(want, r.data()["id"].(string))
	}
	var got []string
	cursor := "start"
	for page := 0; cursor != ""; page++ {
		r := c.do(t, page%len(c.replicas), tn.key, "GET", "/v1/companies?page_size=2&sort=name&order=asc&cursor="+cursor, nil)
		if r.Status != 200 {
			t.Fatalf("page %d on replica %d: %v", page, page%len(c.replicas), r)
		}
		for _, it := range r.list() {
			got = append(got, it.(map[string]any)["id"].(string))
		}
		cursor, _ = r.Body["meta"].(map[string]any)["next_cursor"].(string)
		if page > 5 {
			t.Fatal("the walk does not end")
		}
	}
	if !slices.Equal(got, want) {
		t.Errorf("walk over the replicas gave %v, want %v", got, want)
	}
}

// A key revoked with recordsctl is refused by every replica within 2 s, though each had just accepted
// (and may remember) it.
func (c *cluster) testRevocation(t *testing.T) {
	tn := c.newTenant(t, "revocation")
	var all []time.Duration
	for round := range c.scale.rounds {
		id, secret := c.newKey(t, tn.member, "read")
		for i := range c.replicas {
			if r := c.do(t, i, secret, "GET", "/v1/me", nil); r.Status != 200 {
				t.Fatalf("before revocation: %v", r)
			}
		}
		c.ctl.must(t, "key", "revoke", id)
		d := c.waitAll(time.Now(), propagation, func(i int) bool {
			r, err := c.call(t, i, secret, "GET", "/v1/me", nil)
			return err == nil && r.Status == 401 && r.code() == "invalid_api_key"
		})
		t.Logf("round %d: key revoked; refused after %s", round, checkDelays(t, "revocation", d, propagation))
		all = append(all, d...)
	}
	logSpread(t, "revocation", all)
}

// A custom field created with recordsctl is in every replica's catalog within 2 s, and at that moment
// writable and filterable (by its filter_key) there.
func (c *cluster) testCustomField(t *testing.T) {
	tn := c.newTenant(t, "custom field")
	var all []time.Duration
	for round := range c.scale.rounds {
		key := fmt.Sprintf("tier%d", round)
		// Every replica holds a snapshot of the workspace's fields without it.
		for i := range c.replicas {
			if r := c.do(t, i, tn.key, "GET", "/v1/resources/companies", nil); r.Status != 200 || customField(r, key) != nil {
				t.Fatalf("catalog before: %v", r)
			}
		}
		created := c.ctl.must(t, "field", "create", "--workspace", tn.ws, "--resource", "companies", "--key", key, "--type", "select", "--options", "gold,silver")
		filterKey, _ := created["filter_key"].(string)
		d := c.waitAll(time.Now(), propagation, func(i int) bool {
			r, err := c.call(t, i, tn.key, "GET", "/v1/resources/companies", nil)
			return err == nil && r.Status == 200 && customField(r, key) != nil
		})
		t.Logf("round %d: field %s created; in the catalog after %s", round, key, checkDelays(t, "custom field", d, propagation))
		all = append(all, d...)
		for i := range c.replicas {
			name := fmt.Sprintf("Custom %s on %d %s", key, i, c.runID)
			w := c.do(t, i, tn.key, "POST", "/v1/companies", map[string]any{"name": name, "cf__" + key: "gold"})
			if w.Status != 201 {
				t.Errorf("replica %d lists %s but refuses it: %v", i, key, w)
				continue
			}
			q := c.do(t, i, tn.key, "POST", "/v1/companies/query", map[string]any{"page_size": 100,
				"filters": []any{map[string]any{"field": filterKey, "op": "eq", "value": "gold"}, map[string]any{"field": "name", "op": "eq", "value": name}}})
			if q.Status != 200 || len(q.list()) != 1 {
				t.Errorf("replica %d: filter on %s: %v", i, filterKey, q)
			}
		}
	}
	logSpread(t, "custom field", all)
}

// customField returns the catalog's custom field with key, if listed.
func customField(r *response, key string) map[string]any {
	list, _ := r.data()["custom_fields"].([]any)
	for _, it := range list {
		if f, _ := it.(map[string]any); f != nil && f["key"] == key {
			return f
		}
	}
	return nil
}

// A data model created with recordsctl is usable on every replica within 2 s; a field added to it later
// is in every replica's catalog within 2 s, writable and filterable.
func (c *cluster) testDataModel(t *testing.T) {
	tn := c.newTenant(t, "data model")
	dir := t.TempDir()
	var created, updated []time.Duration
	for round := range c.scale.rounds {
		file := filepath.Join(dir, fmt.Sprintf("fields%d.yaml", round))
		os.WriteFile(file, []byte("category: {type: string, options: [software, hardware]}\n"), 0o644)
		id := c.ctl.must(t, "model", "create", "--workspace", tn.ws, "--name", fmt.Sprintf("Vendors %d", round), "--fields-file", file)["id"].(string)
		catalog := "/v1/resources/data_model_records?model_id=" + id
		d := c.waitAll(time.Now(), propagation, func(i int) bool {
			r, err := c.call(t, i, tn.key, "GET", catalog, nil)
			return err == nil && r.Status == 200 && customField(r, "category") != nil
		})
		t.Logf("round %d: model created; usable after %s", round, checkDelays(t, "data model", d, propagation))
		created = append(created, d...)
		for i := range c.replicas {
			w := c.do(t, i, tn.key, "POST", "/v1/data_model_records?model_id="+id, map[string]any{"name": fmt.Sprintf("Vendor %d", i), "cf__category": "hardware"})
			if w.Status != 201 {
				t.Errorf("replica %d: model record: %v", i, w)
			}
		}
		// Every replica has the model's fields cached; a field is added.
		os.WriteFile(file, []byte("category: {type: string, options: [software, hardware]}\nrating: {type: integer}\n"), 0o644)
		c.ctl.must(t, "model", "update", id, "--fields-file", file)
		d = c.waitAll(time.Now(), propagation, func(i int) bool {
			r, err := c.call(t, i, tn.key, "GET", catalog, nil)
			return err == nil && r.Status == 200 && customField(r, "rating") != nil
		})
		t.Logf("round %d: model field added; in the catalog after %s", round, checkDelays(t, "data model field", d, propagation))
		updated = append(updated, d...)
		r := c.do(t, 0, tn.key, "GET", catalog, nil)
		filterKey, _ := customField(r, "rating")["filter_key"].(string)
		for i := range c.replicas {
			name := fmt.Sprintf("Rated %d-%d", round, i)
			w := c.do(t, i, tn.key, "POST", "/v1/data_model_records?model_id="+id, map[string]any{"name": name, "cf__rating": 4 + i})
			if w.Status != 201 {
				t.Errorf("replica %d lists rating but refuses it: %v", i, w)
				continue
			}
			q := c.do(t, i, tn.key, "POST", "/v1/data_model_records/query", map[string]any{"model_id": id,
				"filters": []any{map[string]any{"field": filterKey, "op": "eq", "value": 4 + i}}})
			if q.Status != 200 || len(q.list()) != 1 {
				t.Errorf("replica %d: filter on %s: %v", i, filterKey, q)
			}
		}
	}
	logSpread(t, "data model created", created)
	logSpread(t, "data model field added", updated)
}

// A member moved to a role with less access, and a workspace role narrowed, are enforced by every
// replica within 2 s.
func (c *cluster) testRoleChange(t *testing.T) {
	tn := c.newTenant(t, "roles")
	dir := t.TempDir()
	var all []time.Duration
	forbidden := func(i int, key string) bool {
		r, err := c.call(t, i, key, "GET", "/v1/automations?page_size=1", nil)
		return err == nil && r.Status == 403 && r.code() == "forbidden"
	}
	for round := range c.scale.rounds {
		// member set-role: admin → viewer (viewer reads no automations and writes nothing).
		member := c.ctl.must(t, "member", "create", "--workspace", tn.ws, "--email", fmt.Sprintf("moved%d@roles.example", round), "--role", "admin")["id"].(string)
		_, key := c.newKey(t, member, "write")
		for i := range c.replicas {
			if r := c.do(t, i, key, "GET", "/v1/automations?page_size=1", nil); r.Status != 200 {
				t.Fatalf("as admin: %v", r)
			}
		}
		c.ctl.must(t, "member", "set-role", member, "--role", "viewer")
		d := c.waitAll(time.Now(), propagation, func(i int) bool { return forbidden(i, key) })
		t.Logf("round %d: member set-role viewer; enforced after %s", round, checkDelays(t, "set-role", d, propagation))
		all = append(all, d...)
		for i := range c.replicas {
			if r := c.do(t, i, key, "POST", "/v1/companies", map[string]any{"name": "Not as viewer"}); r.Status != 403 || r.code() != "forbidden" {
				t.Errorf("viewer writes: %v; want 403 forbidden", r)
			}
		}

		// role update: a workspace role loses automations and its write access to companies.
		role := fmt.Sprintf("auditor%d", round)
		file := filepath.Join(dir, role+".yaml")
		os.WriteFile(file, []byte("version: 1\nroles:\n  "+role+":\n    label: Auditor\n    permissions: [api.access]\n    resources: {companies: write, automations: read}\n"), 0o644)
		c.ctl.must(t, "role", "create", "--workspace", tn.ws, "--file", file)
		auditor := c.ctl.must(t, "member", "create", "--workspace", tn.ws, "--email", role+"@roles.example", "--role", role)["id"].(string)
		_, akey := c.newKey(t, auditor, "write")
		for i := range c.replicas {
			if r := c.do(t, i, akey, "GET", "/v1/automations?page_size=1", nil); r.Status != 200 {
				t.Fatalf("as %s: %v", role, r)
			}
		}
		os.WriteFile(file, []byte("version: 1\nroles:\n  "+role+":\n    label: Auditor\n    permissions: [api.access]\n    resources: {companies: read}\n"), 0o644)
		c.ctl.must(t, "role", "update", "--workspace", tn.ws, "--file", file)
		d = c.waitAll(time.Now(), propagation, func(i int) bool { return forbidden(i, akey) })
		t.Logf("round %d: role %s narrowed; enforced after %s", round, role, checkDelays(t, "role update", d, propagation))
		all = append(all, d...)
		for i := range c.replicas {
			if r := c.do(t, i, akey, "POST", "/v1/companies", map[string]any{"name": "Not as auditor"}); r.Status != 403 || r.code() != "forbidden" {
				t.Errorf("narrowed role writes: %v; want 403 forbidden", r)
			}
		}
	}
	logSpread(t, "role change", all)
}

// logSpread logs min, median and max of propagation delays.
func logSpread(t *testing.T, what string, d []time.Duration) {
	var ok []time.Duration
	for _, v := range d {
		if v >= 0 {
			ok = append(ok, v)
		}
	}
	if len(ok) == 0 {
		return
	}
	slices.Sort(ok)
	t.Logf("%s delays over %d replica observations: min %v, median %v, max %v", what, len(ok),
		ok[0].Round(time.Millisecond), percentile(ok, 50).Round(time.Millisecond), ok[len(ok)-1].Round(time.Millisecond))
}

// write is one idempotent create of the crash scenario.
type write struct {
	round   int
	term    bool // the round stopped its replica with SIGTERM
	n       int
	key     string
	name    string
	replica int
	resp    *response // nil when no answer came back
	err     error
}

func (w *write) acked() bool { return w.resp != nil && w.resp.Status == 201 }

// A replica killed with SIGKILL while idempotent writes stream through all three loses nothing: every
// write acknowledged with a 2xx is stored; retrying the unacknowledged ones with their Idempotency-Key
// makes exactly one record each (a replay when the write had committed, a takeover once an abandoned
// claim's lease has passed); the plugins die with the replica; the restarted replica serves again. The
// long form repeats it at several kill points, on each replica, alternating SIGKILL and SIGTERM.
func (c *cluster) testKill(t *testing.T) {
	tn := c.newTenant(t, "crash")
	var all []*write
	for round := range c.scale.kills {
		victim := c.replicas[(round+1)%len(c.replicas)]
		sig := syscall.SIGKILL
		if round%2 == 1 {
			sig = syscall.SIGTERM
		}
		all = append(all, c.killRound(t, tn, round, victim, sig)...)
	}
	c.settle(t, tn, all)
}

// killRound streams writes through every replica, stops victim with sig partway, restarts it and
// streams on, and returns every write with its outcome.
func (c *cluster) killRound(t *testing.T, tn tenant, round int, victim *replica, sig syscall.Signal) []*write {
	const workers = 6
	var (
		mu     sync.Mutex
		writes []*write
		stop   = make(chan struct{})
		wg     sync.WaitGroup
		seq    int
	)
	for range workers {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				mu.Lock()
				w := &write{round: round, term: sig == syscall.SIGTERM, n: seq, replica: seq % len(c.replicas)}
				seq++
				writes = append(writes, w)
				mu.Unlock()
				w.key = fmt.Sprintf("crash-%s-%d-%d", c.runID, round, w.n)
				w.name = fmt.Sprintf("Crash %s %d-%d", c.runID, round, w.n)
				w.resp, w.err = c.call(t, w.replica, tn.key, "POST", "/v1/companies", map[string]any{"name": w.name}, "Idempotency-Key", w.key)
				if w.err != nil {
					time.Sleep(5 * time.Millisecond) // the replica is down; don't spin
				}
			}
		})
	}
	time.Sleep(time.Duration(400+100*(round%5)) * time.Millisecond)
	plugins := victim.Children()
	killedAt := time.Now()
	code := victim.Signal(sig)
	down := time.Since(killedAt)
	if sig == syscall.SIGTERM && code != 0 {
		t.Errorf("round %d: replica %d exited %d after SIGTERM, want 0 (graceful shutdown)", round, victim.index, code)
	}
	if sig == syscall.SIGKILL {
		for _, pr := range plugins {
			for deadline := time.Now().Add(5 * time.Second); !pr.Gone() && time.Now().Before(deadline); {
				time.Sleep(20 * time.Millisecond)
			}
			if !pr.Gone() {
				t.Errorf("round %d: plugin process %d outlived its killed replica by 5 s", round, pr.Pid)
			}
		}
	}
	t0 := time.Now()
	if err := victim.Start(context.Background()); err != nil {
		close(stop)
		wg.Wait()
		t.Fatalf("restart: %v", err)
	}
	restart := time.Since(t0)
	time.Sleep(500 * time.Millisecond)
	close(stop)
	wg.Wait()
	if r := c.do(t, victim.index, tn.key, "GET", "/v1/me", nil); r.Status != 200 {
		t.Errorf("restarted replica %d: %v", victim.index, r)
	}
	acked, failed := 0, 0
	for _, w := range writes {
		if w.acked() {
			acked++
		} else {
			failed++
			if w.resp != nil && w.resp.Status != 503 {
				t.Errorf("round %d: write %d on replica %d: %v", round, w.n, w.replica, w.resp)
			}
		}
	}
	name := map[syscall.Signal]string{syscall.SIGKILL: "SIGKILL", syscall.SIGTERM: "SIGTERM"}[sig]
	t.Logf("round %d: %s to replica %d (%d plugin processes) after %d writes; stopped in %v, serving again %v later; %d writes acknowledged, %d without an answer",
		round, name, victim.index, len(plugins), len(writes), down.Round(time.Millisecond), restart.Round(time.Millisecond), acked, failed)
	return writes
}

// settle checks the database against the writes, retries the unacknowledged ones and checks again.
func (c *cluster) settle(t *testing.T, tn tenant, writes []*write) {
	stored := c.storedNames(t, tn)
	committedUnacked := 0
	for _, w := range writes {
		ids := stored[w.name]
		if len(ids) > 1 {
			t.Errorf("write %s stored %d times", w.key, len(ids))
		}
		switch {
		case w.acked():
			if id, _ := w.resp.data()["id"].(string); len(ids) != 1 || ids[0] != id {
				t.Errorf("acknowledged write %s (record %s) is stored as %v", w.key, id, ids)
			}
		case len(ids) == 1:
			committedUnacked++
			if w.term {
				t.Errorf("round %d: %s committed but its answer was lost, though its replica shut down gracefully", w.round, w.key)
			}
		}
	}
	// Retry every unacknowledged write with its key, round-robin over the replicas.
	var retried, replayed, stuck []*write
	for _, w := range writes {
		if w.acked() {
			continue
		}
		r := c.do(t, c.next(), tn.key, "POST", "/v1/companies", map[string]any{"name": w.name}, "Idempotency-Key", w.key)
		switch {
		case r.Status == 201 && r.Header.Get("Idempotent-Replayed") == "true":
			replayed = append(replayed, w)
			if ids := stored[w.name]; len(ids) != 1 || r.data()["id"] != ids[0] {
				t.Errorf("retry of %s replays record %v, stored: %v", w.key, r.data()["id"], ids)
			}
		case r.Status == 201:
			retried = append(retried, w)
			if len(stored[w.name]) != 0 {
				t.Errorf("retry of %s wrote again though the first write is stored", w.key)
			}
		case r.Status == 409 && r.code() == "idempotency_key_in_use":
			stuck = append(stuck, w)
		default:
			t.Errorf("retry of %s: %v", w.key, r)
		}
	}
	// A claim left by a killed replica blocks its key until its lease ends (idempotency.Lease). The
	// write behind it never committed. The long form waits for the lease; the short form ends it early
	// in the database, which is what the passing of the lease does.
	if len(stuck) > 0 {
		var keys []string
		for _, w := range stuck {
			keys = append(keys, w.key)
			if w.term {
				t.Errorf("round %d: %s left claimed, though its replica shut down gracefully", w.round, w.key)
			}
			if len(stored[w.name]) != 0 {
				t.Errorf("%s is claimed by a dead request but its write is stored", w.key)
			}
		}
		var running int
		if err := c.pool.QueryRow(context.Background(), "SELECT count(*) FROM idempotency_keys WHERE api_key_id = $1 AND idem_key = ANY($2) AND status = 'running'", tn.keyID, keys).Scan(&running); err != nil {
			t.Fatal(err)
		}
		if running != len(stuck) {
			t.Errorf("%d of the %d keys answering 409 are running claims", running, len(stuck))
		}
		t0 := time.Now()
		if !c.scale.realLease {
			if _, err := c.pool.Exec(context.Background(), "UPDATE idempotency_keys SET locked_until = now() - interval '1 second' WHERE api_key_id = $1 AND idem_key = ANY($2) AND status = 'running'", tn.keyID, keys); err != nil {
				t.Fatal(err)
			}
		}
		for _, w := range stuck {
			for {
				r := c.do(t, c.next(), tn.key, "POST", "/v1/companies", map[string]any{"name": w.name}, "Idempotency-Key", w.key)
				if r.Status == 201 && r.Header.Get("Idempotent-Replayed") == "" {
					retried = append(retried, w)
					break
				}
				if r.Status != 409 || time.Since(t0) > idempotency.Lease+10*time.Second {
					t.Errorf("retry of abandoned %s: %v", w.key, r)
					break
				}
				time.Sleep(time.Second)
			}
		}
		how := "lease ended in the database"
		if c.scale.realLease {
			how = "waited for the lease"
		}
		t.Logf("%d abandoned claims (killed mid-request) taken over after %v (%s)", len(stuck), time.Since(t0).Round(time.Millisecond), how)
	}
	// Now every write is stored exactly once.
	stored = c.storedNames(t, tn)
	for _, w := range writes {
		if n := len(stored[w.name]); n != 1 {
			t.Errorf("write %s stored %d times after retries", w.key, n)
		}
	}
	if len(stored) != len(writes) {
		t.Errorf("%d records for %d writes", len(stored), len(writes))
	}
	acked := len(writes) - len(replayed) - len(retried) // taken-over claims are among the retried
	t.Logf("%d writes: %d acknowledged and stored; of the rest, %d had committed (retry replayed them), %d had not (retry wrote them once), %d of those behind an abandoned claim; %d records in all",
		len(writes), acked, len(replayed), len(retried), len(stuck), len(stored))
	if committedUnacked != len(replayed) {
		t.Errorf("%d unacknowledged writes were stored but %d retries replayed", committedUnacked, len(replayed))
	}
}

// storedNames reads the tenant's crash-scenario companies from the database: name → ids. The session is
// scoped to the workspace, as recordsd's are, since row-level security hides every other row.
func (c *cluster) storedNames(t *testing.T, tn tenant) map[string][]string {
	t.Helper()
	ctx := context.Background()
	tx, err := c.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, "SELECT set_config('records.workspace_id', $1, true)", tn.ws); err != nil {
		t.Fatal(err)
	}
	rows, err := tx.Query(ctx, "SELECT name, id::text FROM rec_companies WHERE workspace_id = $1 AND name LIKE $2", tn.ws, "Crash "+c.runID+" %")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[string][]string{}
	for rows.Next() {
		var name, id string
		if err := rows.Scan(&name, &id); err != nil {
			t.Fatal(err)
		}
		out[name] = append(out[name], id)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// A replica draining after SIGTERM (--drain-delay) still serves, and still shares its quota counts: what
// it accepts while draining is known to the others within two flush intervals.
func (c *cluster) testDrainingQuota(t *testing.T) {
	const q, whileDraining = 20, 9
	tn := c.newTenant(t, "draining", "--monthly-quota", strconv.Itoa(q))
	r := c.replicas[len(c.replicas)-1]
	plain := r.Args
	r.Signal(syscall.SIGTERM)
	r.Args = append(append([]string{}, plain...), "--drain-delay", "5s")
	if err := r.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	stopped := make(chan int, 1)
	go func() { stopped <- r.Signal(syscall.SIGTERM) }()
	defer func() {
		if code := <-stopped; code != 0 {
			t.Errorf("drained replica exited with %d", code)
		}
		r.Args = plain
		if err := r.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
	}()
	client := &http.Client{Timeout: time.Second}
	if _, ok := servertest.WaitFor(2*time.Second, func() bool {
		res, err := client.Get(r.url() + "/readyz")
		if err != nil {
			return false
		}
		res.Body.Close()
		return res.StatusCode == 503
	}); !ok {
		t.Fatal("the replica did not turn not-ready after SIGTERM")
	}
	for range whileDraining {
		if res := c.do(t, r.index, tn.key, "GET", "/v1/me", nil); res.Status != 200 {
			t.Fatalf("draining replica: %v", res)
		}
	}
	time.Sleep(2*server.QuotaFlushInterval + 500*time.Millisecond)
	accepted := 0
	for range q {
		res := c.do(t, 0, tn.key, "GET", "/v1/me", nil)
		switch {
		case res.Status == 200:
			accepted++
		case res.Status == 429 && res.code() == "quota_exceeded":
		default:
			t.Fatalf("replica 0: %v", res)
		}
	}
	if accepted != q-whileDraining {
		t.Errorf("replica 0 accepted %d after the draining replica accepted %d of a quota of %d, want %d", accepted, whileDraining, q, q-whileDraining)
	}
}

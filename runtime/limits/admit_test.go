package limits

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/workspace-records/records/runtime/store"
)

// roundTrips is a go-redis hook that records every round trip to Redis: the command's name, or the
// names of a pipeline's commands joined by "+".
type roundTrips struct {
	mu    sync.Mutex
	trips []string
}

func (h *roundTrips) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *roundTrips) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		h.note(cmd.Name())
		return next(ctx, cmd)
	}
}

func (h *roundTrips) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		names := make([]string, len(cmds))
		for i, c := range cmds {
			names[i] = c.Name()
		}
		h.note(strings.Join(names, "+"))
		return next(ctx, cmds)
	}
}

func (h *roundTrips) note(name string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.trips = append(h.trips, name)
}

// take returns the round trips since the last take.
func (h *roundTrips) take() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := h.trips
	h.trips = nil
	return out
}

// quotaStore opens a SQLite database holding the table the quota counts in (migrate creates it in a
// real database), with total requests of "ws" stored for period.
func quotaStore(t *testing.T, period string, total int64) store.Store {
	t.Helper()
	ctx := context.Background()
	st, err := store.OpenSQLite(ctx, filepath.Join(t.TempDir(), "quota.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	d := st.Dialect()
	if _, err := st.Exec(ctx, d.Bind(`CREATE TABLE usage_counters (workspace_id TEXT NOT NULL, period TEXT NOT NULL,
count INTEGER NOT NULL, PRIMARY KEY (workspace_id, period))`)); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Exec(ctx, d.Bind("INSERT INTO usage_counters (workspace_id, period, count) VALUES (?, ?, ?)", "ws", period, total)); err != nil {
		t.Fatal(err)
	}
	return st
}

// admitter is a Redis limiter and its quota (Redis.NewQuota) over the test Redis, with a fresh prefix,
// the database of quotaStore, and a hook recording the round trips. Both scripts are loaded (a first
// call of a script unknown to Redis costs a second round trip, EVAL after EVALSHA's NOSCRIPT).
func admitter(t *testing.T, now time.Time, stored int64) (*Redis, *Quota, *roundTrips) {
	t.Helper()
	c := testRedis(t)
	period, _ := Period(now)
	r := NewRedis(c, prefix(), slog.New(slog.NewTextHandler(io.Discard, nil)))
	r.SetTimeout(5 * time.Second)
	q := r.NewQuota(quotaStore(t, period, stored), prefix())
	ctx := context.Background()
	for _, s := range []*redis.Script{admitScript, quotaScript} {
		if err := s.Load(ctx, c).Err(); err != nil {
			t.Fatal(err)
		}
	}
	h := &roundTrips{}
	c.AddHook(h)
	return r, q, h
}

// counter is the Redis count of "ws" for now's month (-1: no counter).
func counter(t *testing.T, q *Quota, now time.Time) int64 {
	t.Helper()
	period, _ := Period(now)
	n, err := q.rdb.HGet(context.Background(), q.key(quotaKey{"ws", period}), "n").Int64()
	if errors.Is(err, redis.Nil) {
		return -1
	}
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// settled checks that no take of "ws" is left under way and nothing accepted without Redis is waiting.
func settled(t *testing.T, q *Quota, now time.Time) {
	t.Helper()
	period, _ := Period(now)
	q.mu.Lock()
	defer q.mu.Unlock()
	if u := q.use[quotaKey{"ws", period}]; u != nil && (u.inflight != 0 || u.syncing || u.local != 0) {
		t.Errorf("usage left inflight %d, syncing %v, local %d; want 0, false, 0", u.inflight, u.syncing, u.local)
	}
}

// With Redis, one admission (rate windows and quota) is one round trip to Redis, one EVALSHA, whether
// it is admitted, refused by the quota or refused by a window; the answers are those of Allow and Take.
func TestAdmitOneRoundTrip(t *testing.T) {
	now := time.Now()
	r, q, trips := admitter(t, now, 0)
	createCounter(t, q, now)
	trips.take()
	ctx := context.Background()
	limit := int64(3)
	w := []Window{{Key: "k:m", Limit: 4, Period: time.Minute}, {Key: "k:h", Limit: 100, Period: time.Hour}, {Key: "w:m", Limit: 100, Period: time.Minute}}
	for i, want := range []struct {
		rate, quota bool
		used, rem   int64
	}{{true, true, 1, 3}, {true, true, 2, 2}, {true, true, 3, 1}, {true, false, 3, 0}, {false, false, 0, 0}} {
		d, used, ok, err := Admit(ctx, r, q, now, w, "ws", 1, &limit)
		if err != nil || d.Allowed != want.rate || ok != want.quota || used != want.used || d.Limit != 4 || d.Remaining != want.rem {
			t.Errorf("admission %d: %+v used %d quota %v err %v; want rate %v, quota %v, used %d, remaining %d of 4",
				i+1, d, used, ok, err, want.rate, want.quota, want.used, want.rem)
		}
		if got := trips.take(); !slices.Equal(got, []string{"evalsha"}) {
			t.Errorf("admission %d: round trips %v, want one EVALSHA", i+1, got)
		}
	}
	if got := counter(t, q, now); got != 3 {
		t.Errorf("the Redis counter holds %d, want 3", got)
	}
	if r.Fallbacks() != 0 || q.Fallbacks() != 0 {
		t.Errorf("fallbacks: rate %d, quota %d; want none", r.Fallbacks(), q.Fallbacks())
	}
	settled(t, q, now)
}

// A request the windows refuse is not counted in the quota: the Redis counter and this server's count
// stay as they were, and requests accepted without Redis still wait for a call that reaches the counter.
func TestAdmitRateRefusedLeavesQuota(t *testing.T) {
	now := time.Now()
	r, q, _ := admitter(t, now, 0)
	createCounter(t, q, now)
	ctx := context.Background()
	limit := int64(100)
	w := []Window{{Key: "k:m", Limit: 2, Period: time.Minute}}
	for range 2 {
		if d, _, ok, err := Admit(ctx, r, q, now, w, "ws", 1, &limit); err != nil || !d.Allowed || !ok {
			t.Fatalf("admission under the limits: %+v %v %v", d, ok, err)
		}
	}
	period, _ := Period(now)
	u := q.entry(quotaKey{"ws", period})
	q.mu.Lock()
	u.local = 5 // accepted during an outage, offered by the next call
	q.mu.Unlock()
	d, used, ok, err := Admit(ctx, r, q, now, w, "ws", 1, &limit)
	if err != nil || d.Allowed || ok || used != 0 || d.Limit != 2 || d.Remaining != 0 || d.RetryAfter <= 0 || d.RetryAfter != d.Reset {
		t.Fatalf("third admission: %+v used %d quota %v err %v; want refused by the window (2 per minute), quota not consulted", d, used, ok, err)
	}
	if got := counter(t, q, now); got != 2 {
		t.Errorf("the Redis counter holds %d after a refused request, want 2", got)
	}
	q.mu.Lock()
	pending, local, syncing, inflight := u.pending, u.local, u.syncing, u.inflight
	q.mu.Unlock()
	if pending != 2 || local != 5 || syncing || inflight != 0 {
		t.Errorf("pending %d, local %d, syncing %v, inflight %d; want 2, 5 (still to offer), false, 0", pending, local, syncing, inflight)
	}
}

// A request the quota refuses has passed the windows and keeps its units there; the quota counts
// nothing (all n or none).
func TestAdmitQuotaRefusedConsumesRate(t *testing.T) {
	now := time.Now()
	r, q, _ := admitter(t, now, 0)
	createCounter(t, q, now)
	ctx := context.Background()
	limit := int64(4)
	w := []Window{{Key: "k:m", Limit: 10, Period: time.Minute, Cost: 3}}
	for i, want := range []struct {
		quota     bool
		used, rem int64
	}{{true, 3, 7}, {false, 3, 4}, {false, 3, 1}} {
		d, used, ok, err := Admit(ctx, r, q, now, w, "ws", 3, &limit)
		if err != nil || !d.Allowed || ok != want.quota || used != want.used || d.Remaining != want.rem {
			t.Errorf("admission %d of 3 units: %+v used %d quota %v err %v; want allowed with %d remaining, quota %v at %d",
				i+1, d, used, ok, err, want.rem, want.quota, want.used)
		}
	}
	if got := counter(t, q, now); got != 3 {
		t.Errorf("the Redis counter holds %d, want 3", got)
	}
	if d, err := r.Allow(ctx, now, []Window{{Key: "k:m", Limit: 10, Period: time.Minute}}); err != nil || !d.Allowed || d.Remaining != 0 {
		t.Errorf("the window after 9 units and one more: %+v %v, want allowed with 0 remaining", d, err)
	}
	settled(t, q, now)
}

// A month's counter missing in Redis is seeded from the database total (a second round trip, only
// then) and the request taken from it.
func TestAdmitSeedsMissingCounter(t *testing.T) {
	now := time.Now()
	r, q, trips := admitter(t, now, 40)
	ctx := context.Background()
	limit := int64(41)
	w := []Window{{Key: "k:m", Limit: 10, Period: time.Minute}}
	d, used, ok, err := Admit(ctx, r, q, now, w, "ws", 1, &limit)
	if err != nil || !d.Allowed || !ok || used != 41 {
		t.Fatalf("first admission: %+v used %d quota %v err %v; want admitted at 41 (40 in the database)", d, used, ok, err)
	}
	if got := trips.take(); !slices.Equal(got, []string{"evalsha", "evalsha"}) {
		t.Errorf("round trips %v, want two EVALSHA (admission, then the seed)", got)
	}
	if got := counter(t, q, now); got != 41 {
		t.Errorf("the Redis counter holds %d, want 41", got)
	}
	trips.take() // the HGET of counter
	d, used, ok, err = Admit(ctx, r, q, now, w, "ws", 1, &limit)
	if err != nil || !d.Allowed || ok || used != 41 || d.Remaining != 8 {
		t.Errorf("second admission: %+v used %d quota %v err %v; want refused by the quota at 41, the window consumed", d, used, ok, err)
	}
	if got := trips.take(); !slices.Equal(got, []string{"evalsha"}) {
		t.Errorf("round trips %v, want one EVALSHA", got)
	}
	if r.Fallbacks() != 0 || q.Fallbacks() != 0 {
		t.Errorf("fallbacks: rate %d, quota %d; want none", r.Fallbacks(), q.Fallbacks())
	}
	settled(t, q, now)
}

// With Redis unreachable, both fall back, each counting its fallbacks: the windows in process, and the
// quota from the database count only for requests the windows allow; after three failures the breaker
// stops asking Redis and the answers are the same.
func TestAdmitFallsBackWithoutRedis(t *testing.T) {
	c, err := ParseRedisURL("redis://127.0.0.1:1/0")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	now := time.Now()
	period, _ := Period(now)
	r := NewRedis(c, prefix(), slog.New(slog.NewTextHandler(io.Discard, nil)))
	q := r.NewQuota(quotaStore(t, period, 1), prefix())
	ctx := context.Background()
	limit := int64(4)
	w := []Window{{Key: "k:m", Limit: 5, Period: time.Minute}}
	for i, want := range []struct {
		rate, quota bool
		used        int64
	}{{true, true, 2}, {true, true, 3}, {true, true, 4}, {true, false, 4}, {true, false, 4}, {false, false, 0}} {
		d, used, ok, err := Admit(ctx, r, q, now, w, "ws", 1, &limit)
		if err != nil || d.Allowed != want.rate || ok != want.quota || used != want.used {
			t.Errorf("admission %d: %+v used %d quota %v err %v; want rate %v, quota %v at %d", i+1, d, used, ok, err, want.rate, want.quota, want.used)
		}
	}
	if r.Fallbacks() != 6 || q.Fallbacks() != 5 {
		t.Errorf("fallbacks: rate %d, quota %d; want 6 and 5 (the refused request never reached the quota)", r.Fallbacks(), q.Fallbacks())
	}
	if !r.br.open.Load() {
		t.Error("the breaker is closed after six failed requests")
	}
	u := q.entry(quotaKey{"ws", period})
	q.mu.Lock()
	defer q.mu.Unlock()
	if u.pending != 3 || u.local != 3 || u.inflight != 0 || u.syncing {
		t.Errorf("pending %d, local %d, inflight %d, syncing %v; want 3, 3 (to hand to Redis when it is back), 0, false", u.pending, u.local, u.inflight, u.syncing)
	}
}

// A caller that went away during the call: the windows fall back in process (as Allow), the quota
// answers the context's error (as Take) without counting, and the breaker records no failure of Redis.
func TestAdmitCanceled(t *testing.T) {
	now := time.Now()
	r, q, _ := admitter(t, now, 0)
	createCounter(t, q, now)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	limit := int64(10)
	d, used, ok, err := Admit(ctx, r, q, now, []Window{{Key: "k:m", Limit: 5, Period: time.Minute}}, "ws", 1, &limit)
	if !errors.Is(err, context.Canceled) || !d.Allowed || ok || used != 0 {
		t.Errorf("canceled admission: %+v used %d quota %v err %v; want allowed in process and the context's error", d, used, ok, err)
	}
	if r.Fallbacks() != 1 || q.Fallbacks() != 0 || r.br.fails.Load() != 0 {
		t.Errorf("fallbacks: rate %d, quota %d; breaker failures %d; want 1, 0, 0", r.Fallbacks(), q.Fallbacks(), r.br.fails.Load())
	}
	if got := counter(t, q, now); got != 0 {
		t.Errorf("the Redis counter holds %d, want 0", got)
	}
	settled(t, q, now)
}

// Two servers admitting through one Redis at once: of 4N concurrent requests against windows of N and
// a quota of N-10, exactly N pass the windows and exactly N-10 are counted.
func TestAdmitExactAcrossServers(t *testing.T) {
	now := time.Now()
	a, qa, _ := admitter(t, now, 0)
	createCounter(t, qa, now)
	b := NewRedis(testRedis(t), a.prefix, a.br.log)
	b.SetTimeout(5 * time.Second)
	qb := b.NewQuota(qa.st, qa.prefix)
	const n = 40
	limit := int64(n - 10)
	w := []Window{{Key: "k:m", Limit: n, Period: time.Minute}, {Key: "k:h", Limit: 1000, Period: time.Hour}, {Key: "w:m", Limit: 1000, Period: time.Minute}}
	var mu sync.Mutex
	var rate, counted int
	var wg sync.WaitGroup
	for i := range 4 * n {
		r, q := a, qa
		if i%2 == 1 {
			r, q = b, qb
		}
		wg.Go(func() {
			d, _, ok, err := Admit(context.Background(), r, q, time.Now(), w, "ws", 1, &limit)
			if err != nil {
				t.Error(err)
			}
			mu.Lock()
			defer mu.Unlock()
			if d.Allowed {
				rate++
			}
			if ok {
				counted++
			}
		})
	}
	wg.Wait()
	if rate != n || counted != n-10 {
		t.Errorf("%d passed the windows and %d were counted, want %d and %d", rate, counted, n, n-10)
	}
	if got := counter(t, qa, now); got != n-10 {
		t.Errorf("the Redis counter holds %d, want %d", got, n-10)
	}
	if fa, fb := a.Fallbacks()+qa.Fallbacks(), b.Fallbacks()+qb.Fallbacks(); fa+fb != 0 {
		t.Errorf("%d fallbacks", fa+fb)
	}
}

// The cost of admitting a request through Redis (three windows and the quota, always admitted): Admit's
// one call against Allow then Take, the two calls it replaces.
func BenchmarkAdmit(b *testing.B) {
	now := time.Now()
	c := testRedis(b)
	r := NewRedis(c, prefix(), slog.New(slog.NewTextHandler(io.Discard, nil)))
	q := r.NewQuota(nil, prefix())
	createCounter(b, q, now)
	ctx := context.Background()
	w := []Window{{Key: "k:m", Limit: 1 << 40, Period: time.Minute}, {Key: "k:h", Limit: 1 << 40, Period: time.Hour}, {Key: "w:m", Limit: 1 << 40, Period: time.Minute}}
	b.Run("one call", func(b *testing.B) {
		for b.Loop() {
			if d, _, ok, err := Admit(ctx, r, q, now, w, "ws", 1, nil); err != nil || !d.Allowed || !ok {
				b.Fatal(d, ok, err)
			}
		}
	})
	b.Run("two calls", func(b *testing.B) {
		for b.Loop() {
			d, err := r.Allow(ctx, now, w)
			if err != nil || !d.Allowed {
				b.Fatal(d, err)
			}
			if _, ok, err := q.Take(ctx, "ws", 1, nil, now); err != nil || !ok {
				b.Fatal(ok, err)
			}
		}
	})
}

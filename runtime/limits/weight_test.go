package limits

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// bothLimiters are the in-process limiter and the Redis one (over the real Redis), which must agree.
func bothLimiters(t *testing.T) map[string]func() Limiter {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	return map[string]func() Limiter{
		"local": func() Limiter { return NewLocal() },
		"redis": func() Limiter {
			r := NewRedis(testRedis(t), prefix(), log)
			r.Timeout = 5 * time.Second
			return r
		},
	}
}

// near reports whether got is want or up to slack less: the Redis limiter reads Redis's clock, which
// moves on between calls, so its times shrink a little; the local one is given a fixed now.
func near(got, want, slack time.Duration) bool { return got <= want && got >= want-slack }

// A weighted request takes all its units from every window or nothing: a limit of 10 admits 3+3+3,
// refuses 3 (reporting the 1 left and when 3 fit) and then admits 1; a refusal by one window consumes
// nothing from the others; a cost above the limit is refused with the whole period; a cost equal to
// the limit fits a fresh window exactly (even where period/limit is not a whole number of µs); cost 0
// counts 1.
func TestWeightedWindows(t *testing.T) {
	for name, newLimiter := range bothLimiters(t) {
		t.Run(name, func(t *testing.T) {
			l := newLimiter()
			ctx := context.Background()
			now := time.Now()
			slack := time.Duration(0)
			if name == "redis" {
				slack = 2 * time.Second // Redis's clock moves on between calls
			}
			w := func(key string, limit, cost int64) Window {
				return Window{Key: key, Limit: limit, Period: time.Minute, Cost: cost}
			}
			// A limit of 10 per minute: one unit every 6 s.
			for i, want := range []int64{7, 4, 1} {
				d, err := l.Allow(ctx, now, []Window{w("a", 10, 3)})
				if err != nil || !d.Allowed || d.Limit != 10 || d.Remaining != want {
					t.Fatalf("3 units, call %d: %+v %v, want allowed with %d remaining", i+1, d, err, want)
				}
				if !near(d.Reset, time.Duration(3*(i+1))*6*time.Second, slack) {
					t.Errorf("3 units, call %d: reset %v, want %v (until all %d units are back)", i+1, d.Reset, time.Duration(3*(i+1))*6*time.Second, 3*(i+1))
				}
			}
			// 1 unit left: 3 fit when 2 more are back, in 12 s.
			d, err := l.Allow(ctx, now, []Window{w("a", 10, 3)})
			if err != nil || d.Allowed || d.Limit != 10 || d.Remaining != 1 || d.Reset != d.RetryAfter || !near(d.RetryAfter, 12*time.Second, slack) {
				t.Fatalf("3 units with 1 left: %+v %v, want refused, remaining 1, retry after = reset = 12 s", d, err)
			}
			// The refusal consumed nothing: the 1 left is still there, and then none.
			if d, _ := l.Allow(ctx, now, []Window{w("a", 10, 1)}); !d.Allowed || d.Remaining != 0 {
				t.Fatalf("1 unit with 1 left: %+v, want allowed with 0 remaining", d)
			}
			if d, _ := l.Allow(ctx, now, []Window{w("a", 10, 0)}); d.Allowed || d.Remaining != 0 || !near(d.RetryAfter, 6*time.Second, slack) {
				t.Fatalf("cost 0 (one unit) with none left: %+v, want refused, retry after 6 s", d)
			}

			// Two windows: b (5) refuses what a2 (10) would take; a2 keeps all it had.
			two := []Window{w("a2", 10, 4), w("b", 5, 4)}
			if d, _ := l.Allow(ctx, now, two); !d.Allowed || d.Limit != 5 || d.Remaining != 1 {
				t.Fatalf("4 units of 10 and 5: %+v, want allowed, the 5 window with 1 remaining", d)
			}
			two[0].Cost, two[1].Cost = 2, 2
			if d, _ := l.Allow(ctx, now, two); d.Allowed || d.Limit != 5 || d.Remaining != 1 {
				t.Fatalf("2 more units: %+v, want refused by the 5 window with 1 remaining", d)
			}
			if d, _ := l.Allow(ctx, now, []Window{w("a2", 10, 6)}); !d.Allowed || d.Remaining != 0 {
				t.Fatalf("6 units of a2 after 4: %+v, want allowed with 0 remaining (the refusal took nothing)", d)
			}

			// A cost above the limit never fits: refused with the whole period, consuming nothing.
			d, _ = l.Allow(ctx, now, []Window{w("c", 7, 8)})
			if d.Allowed || d.Limit != 7 || d.Remaining != 7 || d.RetryAfter != time.Minute || d.Reset != time.Minute {
				t.Fatalf("8 units of 7: %+v, want refused, remaining 7, retry after = reset = 1 min", d)
			}
			// A cost equal to the limit fits a fresh window exactly (60 s / 7 is no whole number of µs).
			d, _ = l.Allow(ctx, now, []Window{w("c", 7, 7)})
			if !d.Allowed || d.Remaining != 0 || !near(d.Reset, time.Minute, slack+time.Microsecond) { // the local interval is whole ns
				t.Fatalf("7 units of a fresh 7: %+v, want allowed, 0 remaining, reset 1 min", d)
			}
			if d, _ := l.Allow(ctx, now, []Window{w("c", 7, 1)}); d.Allowed {
				t.Fatalf("1 unit of a full 7: %+v, want refused", d)
			}
			for _, limit := range []int64{3, 49, 97, 1000, 7777} {
				key := fmt.Sprint("exact:", limit)
				if d, _ := l.Allow(ctx, now, []Window{{Key: key, Limit: limit, Period: time.Hour, Cost: limit}}); !d.Allowed || d.Remaining != 0 {
					t.Errorf("%d units of a fresh %d per hour: %+v, want allowed with 0 remaining", limit, limit, d)
				}
				if d, _ := l.Allow(ctx, now, []Window{{Key: key, Limit: limit, Period: time.Hour}}); d.Allowed {
					t.Errorf("1 more of a full %d per hour: %+v, want refused", limit, d)
				}
			}
		})
	}
}

// Weighted requests under concurrency: 3N goroutines taking 2 units each against a fresh limit of 2N
// (with two looser windows) admit exactly N; against 2N+1, exactly N, and the one unit left then goes
// to a request of 1. The Redis limiter is shared by two servers.
func TestWeightedExactUnderConcurrency(t *testing.T) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	for name, newLimiters := range map[string]func() []Limiter{
		"local": func() []Limiter { return []Limiter{NewLocal()} },
		"redis": func() []Limiter {
			p := prefix()
			a, b := NewRedis(testRedis(t), p, log), NewRedis(testRedis(t), p, log)
			a.Timeout, b.Timeout = 5*time.Second, 5*time.Second
			return []Limiter{a, b}
		},
	} {
		for _, extra := range []int64{0, 1} {
			t.Run(fmt.Sprintf("%s/limit_2N+%d", name, extra), func(t *testing.T) {
				ls := newLimiters()
				const n = 40
				// An hour, so that no unit comes back while the goroutines run (one every 45 s).
				windows := []Window{
					{Key: "k:h", Limit: 2*n + extra, Period: time.Hour, Cost: 2},
					{Key: "k:m", Limit: 1000, Period: time.Minute, Cost: 2},
					{Key: "w:m", Limit: 1000, Period: time.Minute, Cost: 2},
				}
				var ok atomic.Int64
				var wg sync.WaitGroup
				for i := range 3 * n {
					wg.Go(func() {
						d, err := ls[i%len(ls)].Allow(context.Background(), time.Now(), windows)
						if err != nil {
							t.Error(err)
						}
						if d.Allowed {
							ok.Add(1)
						}
					})
				}
				wg.Wait()
				if ok.Load() != n {
					t.Fatalf("limit %d, %d requests of 2 units: %d allowed, want %d", 2*n+extra, 3*n, ok.Load(), n)
				}
				for i := range windows {
					windows[i].Cost = 1
				}
				d, _ := ls[0].Allow(context.Background(), time.Now(), windows)
				if d.Allowed != (extra == 1) {
					t.Errorf("a request of 1 unit with %d left: %+v", extra, d)
				}
			})
		}
	}
}

// Quota.Take with a count, judged in process (the database mode; usage loaded as if read from the
// database) and through Redis (the counter created beforehand, so that no database is read): a limit
// of 10 admits 3+3+3, refuses 3 without counting it, admits 1, and refuses 1.
func TestQuotaTakeCount(t *testing.T) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	now := time.Date(2031, 3, 15, 12, 0, 0, 0, time.UTC)
	period, _ := Period(now)
	for name, newQuota := range map[string]func() *Quota{
		"database": func() *Quota {
			q := NewQuota(nil)
			q.entry(quotaKey{"ws", period}).loaded = true
			return q
		},
		"redis": func() *Quota {
			q := NewRedisQuota(nil, testRedis(t), prefix(), log)
			q.Timeout = 5 * time.Second
			createCounter(t, q, now)
			return q
		},
	} {
		t.Run(name, func(t *testing.T) {
			q := newQuota()
			limit := int64(10)
			for i, step := range []struct {
				n    int64
				ok   bool
				used int64
			}{{3, true, 3}, {3, true, 6}, {3, true, 9}, {3, false, 9}, {1, true, 10}, {1, false, 10}, {0, false, 10}} {
				used, ok, err := q.Take(context.Background(), "ws", step.n, &limit, now)
				if err != nil || ok != step.ok || used != step.used {
					t.Fatalf("step %d, Take(%d) = %d %v %v, want %d %v", i+1, step.n, used, ok, err, step.used, step.ok)
				}
			}
			if got := q.Used("ws", now); got != 10 {
				t.Errorf("Used = %d, want 10", got)
			}
			if q.Fallbacks() != 0 {
				t.Errorf("%d fallbacks", q.Fallbacks())
			}
			if q.rdb != nil {
				if got, err := q.rdb.HGet(context.Background(), q.prefix+"ws:"+period, "n").Int64(); err != nil || got != 10 {
					t.Errorf("the Redis counter holds %d (%v), want 10", got, err)
				}
			}
			// Uncapped: every count is taken.
			if used, ok, err := q.Take(context.Background(), "ws", 5, nil, now); err != nil || !ok || used != 15 {
				t.Errorf("uncapped Take(5) = %d %v %v, want 15 true", used, ok, err)
			}
		})
	}
}

// createCounter makes the Redis counter of "ws" for now's month at 0, as a seed would.
func createCounter(t testing.TB, q *Quota, now time.Time) {
	t.Helper()
	period, _ := Period(now)
	if _, err := q.run(context.Background(), quotaKey{"ws", period}, quotaCall{op: "add", seed: 0}, now); err != nil {
		t.Fatal(err)
	}
}

// Quota.Take with a count under concurrency: 3N goroutines taking 2 each against a limit of 2N admit
// exactly N, each seeing a distinct even usage, and the count is 2N (through Redis, over two counters
// sharing it, as two servers).
func TestQuotaTakeCountExactUnderConcurrency(t *testing.T) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	now := time.Now()
	period, _ := Period(now)
	for name, newQuotas := range map[string]func() []*Quota{
		"database": func() []*Quota {
			q := NewQuota(nil)
			q.entry(quotaKey{"ws", period}).loaded = true
			return []*Quota{q}
		},
		"redis": func() []*Quota {
			p, c := prefix(), testRedis(t)
			a, b := NewRedisQuota(nil, c, p, log), NewRedisQuota(nil, c, p, log)
			a.Timeout, b.Timeout = 5*time.Second, 5*time.Second
			createCounter(t, a, now)
			return []*Quota{a, b}
		},
	} {
		t.Run(name, func(t *testing.T) {
			qs := newQuotas()
			const n = 50
			limit := int64(2 * n)
			var mu sync.Mutex
			seen := map[int64]bool{}
			var wg sync.WaitGroup
			for i := range 3 * n {
				wg.Go(func() {
					used, ok, err := qs[i%len(qs)].Take(context.Background(), "ws", 2, &limit, now)
					if err != nil {
						t.Error(err)
						return
					}
					if ok {
						mu.Lock()
						if seen[used] || used%2 != 0 || used < 2 || used > 2*n {
							t.Errorf("admitted at usage %d (seen before: %v)", used, seen[used])
						}
						seen[used] = true
						mu.Unlock()
					}
				})
			}
			wg.Wait()
			if len(seen) != n {
				t.Errorf("%d of %d requests of 2 admitted against %d, want %d", len(seen), 3*n, limit, n)
			}
			var total int64
			for _, q := range qs {
				if q.Fallbacks() != 0 {
					t.Errorf("%d fallbacks", q.Fallbacks())
				}
				q.mu.Lock()
				total += q.use[quotaKey{"ws", period}].pending
				q.mu.Unlock()
			}
			if total != 2*n {
				t.Errorf("pending over the counters: %d, want %d", total, 2*n)
			}
			if qs[0].rdb != nil {
				if got, err := qs[0].rdb.HGet(context.Background(), qs[0].prefix+"ws:"+period, "n").Int64(); err != nil || got != 2*n {
					t.Errorf("the Redis counter holds %d (%v), want %d", got, err, 2*n)
				}
			}
		})
	}
}

// With Redis unreachable, weighted requests fall back with their cost: the rate limiter's in-process
// windows and the quota's own count take all n or nothing, counting calls still under way in Redis.
func TestWeightedFallback(t *testing.T) {
	c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", DialTimeout: 50 * time.Millisecond, MaxRetries: -1})
	defer c.Close()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	l := NewRedis(c, prefix(), log)
	for i, step := range []struct {
		cost    int64
		allowed bool
	}{{2, true}, {2, false}, {1, true}, {1, false}} {
		d, err := l.Allow(context.Background(), time.Now(), []Window{{Key: "k", Limit: 3, Period: time.Hour, Cost: step.cost}})
		if err != nil || d.Allowed != step.allowed {
			t.Fatalf("step %d (cost %d): %+v %v, want allowed %v", i+1, step.cost, d, err, step.allowed)
		}
	}
	if l.Fallbacks() != 4 {
		t.Errorf("Fallbacks() = %d, want 4", l.Fallbacks())
	}

	q := NewRedisQuota(nil, c, prefix(), log)
	now := time.Now()
	period, _ := Period(now)
	u := q.entry(quotaKey{"ws", period})
	u.loaded, u.pending, u.inflight = true, 6, 2
	limit := int64(10)
	if used, ok, err := q.Take(context.Background(), "ws", 3, &limit, now); err != nil || ok || used != 8 {
		t.Errorf("6 admitted and 2 under way, limit 10: Take(3) = %d %v %v, want refused at 8", used, ok, err)
	}
	if used, ok, err := q.Take(context.Background(), "ws", 2, &limit, now); err != nil || !ok || used != 10 {
		t.Errorf("then Take(2) = %d %v %v, want admitted at 10", used, ok, err)
	}
	if u.pending != 8 || u.local != 2 {
		t.Errorf("pending %d, local %d; want 8 and 2 (the 2 to hand to Redis when it is back)", u.pending, u.local)
	}
}

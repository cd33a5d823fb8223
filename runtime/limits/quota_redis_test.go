package limits

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// A refused request reports the window that refused it, and of several the one that admits again
// last, with Reset equal to RetryAfter; the in-process limiter and the Redis script agree.
func TestRefusalNamesTheBlockingWindow(t *testing.T) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	limiters := map[string]func() Limiter{
		"local": func() Limiter { return NewLocal() },
		"redis": func() Limiter {
			r := NewRedis(testRedis(t), prefix(), log)
			r.Timeout = 2 * time.Second
			return r
		},
	}
	for name, newLimiter := range limiters {
		t.Run(name, func(t *testing.T) {
			l := newLimiter()
			now := time.Now()
			// The hour window (40) is tighter than the minute windows: it refuses the 41st request.
			w := []Window{{Key: "k:m", Limit: 100, Period: time.Minute}, {Key: "k:h", Limit: 40, Period: time.Hour}, {Key: "w:m", Limit: 50, Period: time.Minute}}
			for i := range 40 {
				d, err := l.Allow(context.Background(), now, w)
				if err != nil || !d.Allowed || d.Limit != 40 || d.Remaining != int64(39-i) {
					t.Fatalf("request %d: %+v %v, want the hour window with %d remaining", i+1, d, err, 39-i)
				}
			}
			d, _ := l.Allow(context.Background(), now, w)
			if d.Allowed || d.Limit != 40 || d.Remaining != 0 || d.RetryAfter != d.Reset || d.RetryAfter < 89*time.Second || d.RetryAfter > 90*time.Second {
				t.Errorf("refusal by the hour window: %+v, want limit 40, remaining 0, retry after = reset = 90 s", d)
			}
			// Both windows refuse: the hour one admits again last and is the one reported.
			w = []Window{{Key: "k2:m", Limit: 2, Period: time.Minute}, {Key: "k2:h", Limit: 2, Period: time.Hour}}
			for range 2 {
				if d, _ := l.Allow(context.Background(), now, w); !d.Allowed {
					t.Fatalf("refused early: %+v", d)
				}
			}
			d, _ = l.Allow(context.Background(), now, w)
			if d.Allowed || d.Remaining != 0 || d.RetryAfter != d.Reset || d.RetryAfter < 1799*time.Second || d.RetryAfter > 1800*time.Second {
				t.Errorf("refusal by both windows: %+v, want retry after = reset = 30 min (the hour window)", d)
			}
		})
	}
}

// The quota script: a missing counter is reported until a seed is given; takes stop at the limit and a
// refusal adds nothing; requests accepted without Redis are added only to the counter (epoch) they were
// accepted under; a raise never lowers the count; the counter expires a day after its month.
func TestQuotaScript(t *testing.T) {
	q := NewRedisQuota(nil, testRedis(t), prefix(), slog.New(slog.NewTextHandler(io.Discard, nil)))
	q.Timeout = 2 * time.Second
	ctx := context.Background()
	now := time.Date(2031, 1, 15, 12, 0, 0, 0, time.UTC)
	k := quotaKey{"ws", "2031-01"}
	limit := int64(7)
	call := func(c quotaCall) quotaReply {
		t.Helper()
		res, err := q.run(ctx, k, c, now)
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	if res := call(quotaCall{op: "take", limit: &limit, seed: -1}); res.status != statusMissing {
		t.Fatalf("missing counter: %+v", res)
	}
	seeded := call(quotaCall{op: "take", limit: &limit, seed: 5})
	if seeded.status != 1 || seeded.count != 6 || len(seeded.epoch) != 16 {
		t.Fatalf("seed 5 and take: %+v, want taken at 6 with an epoch", seeded)
	}
	if res := call(quotaCall{op: "take", limit: &limit, seed: 100}); res.status != 1 || res.count != 7 || res.epoch != seeded.epoch {
		t.Fatalf("a second seed must not replace the counter: %+v", res)
	}
	for range 3 {
		if res := call(quotaCall{op: "take", limit: &limit, seed: -1}); res.status != 0 || res.count != 7 {
			t.Fatalf("at the limit: %+v, want refused at 7", res)
		}
	}
	if res := call(quotaCall{op: "add", add: 3, epoch: "other", seed: -1}); res.added || res.count != 7 {
		t.Errorf("add under another epoch: %+v, want nothing added", res)
	}
	if res := call(quotaCall{op: "add", add: 3, epoch: seeded.epoch, seed: -1}); !res.added || res.count != 10 {
		t.Errorf("add under the counter's epoch: %+v, want 10", res)
	}
	if res := call(quotaCall{op: "raise", raise: 8, seed: -1}); res.count != 10 {
		t.Errorf("raise to 8: %+v, want 10 kept", res)
	}
	if res := call(quotaCall{op: "raise", raise: 12, seed: -1}); res.count != 12 {
		t.Errorf("raise to 12: %+v, want 12", res)
	}
	limit = 20
	if res := call(quotaCall{op: "take", limit: &limit, seed: -1}); res.status != 1 || res.count != 13 {
		t.Errorf("take after a raised limit: %+v, want 13", res)
	}
	if res := call(quotaCall{op: "take", seed: -1}); res.status != 1 || res.count != 14 {
		t.Errorf("uncapped take: %+v, want 14", res)
	}
	exp, err := q.rdb.ExpireTime(ctx, q.prefix+"ws:2031-01").Result()
	if want := time.Date(2031, 2, 2, 0, 0, 0, 0, time.UTC).Unix(); err != nil || int64(exp.Seconds()) != want {
		t.Errorf("counter expires at %v (%v), want %d: a day after the month ends", exp, err, want)
	}
}

// When Redis fails, a server judges from its own count; requests whose Redis call is still under way
// count as admitted, so that the switch to local judgement cannot admit past the limit (a request
// admitted by Redis is added to pending only when its answer arrives).
func TestQuotaFallbackCountsCallsUnderWay(t *testing.T) {
	c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", DialTimeout: 50 * time.Millisecond, MaxRetries: -1})
	defer c.Close()
	q := NewRedisQuota(nil, c, prefix(), slog.New(slog.NewTextHandler(io.Discard, nil)))
	now := time.Now()
	period, _ := Period(now)
	u := q.entry(quotaKey{"ws", period})
	u.loaded, u.pending, u.inflight = true, 9, 1
	limit := int64(10)
	if used, ok, err := q.Take(context.Background(), "ws", 1, &limit, now); err != nil || ok || used != 10 {
		t.Errorf("9 admitted and 1 under way in Redis, limit 10: Take = %d %v %v, want refused at 10", used, ok, err)
	}
	u.inflight = 0
	if used, ok, err := q.Take(context.Background(), "ws", 1, &limit, now); err != nil || !ok || used != 10 {
		t.Errorf("9 admitted, none under way: Take = %d %v %v, want the 10th admitted", used, ok, err)
	}
	if q.Fallbacks() != 2 {
		t.Errorf("Fallbacks() = %d, want 2", q.Fallbacks())
	}
}

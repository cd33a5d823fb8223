// Package limits enforces request rate limits with GCRA (the generic cell rate algorithm): a window of
// Limit requests per Period lets Limit requests through at once and then one every Period/Limit. All the
// windows of a request are checked and consumed together, atomically, so a request refused by one window
// consumes nothing from the others, and N concurrent requests against a fresh limit of N get exactly N
// through.
package limits

import (
	"context"
	"hash/fnv"
	"sync"
	"time"
)

// Window is one limit: at most Limit requests per Period for Key.
type Window struct {
	Key    string
	Limit  int64
	Period time.Duration
}

// Decision is the outcome of a check.
type Decision struct {
	Allowed bool
	// The window the X-RateLimit-* headers report. Allowed: the tightest window (least remaining).
	// Refused: the refusing window that admits again last, with Remaining 0 and Reset = RetryAfter. Limit
	// is 0 when no window applies.
	Limit     int64
	Remaining int64
	Reset     time.Duration // allowed: until the window is fully replenished; refused: RetryAfter
	// RetryAfter is how long a refused request should wait.
	RetryAfter time.Duration
}

// Limiter checks and consumes windows.
type Limiter interface {
	Allow(ctx context.Context, now time.Time, windows []Window) (Decision, error)
}

// gcra computes one window's outcome given its theoretical arrival time (tat, 0 for none).
func gcra(w Window, tat int64, now int64) (allowed bool, newTAT int64, remaining int64, reset, retry time.Duration) {
	// A limit above one request per nanosecond is treated as one per nanosecond (never a zero interval).
	interval := max(int64(w.Period)/w.Limit, 1)
	if tat < now {
		tat = now
	}
	newTAT = tat + interval
	if newTAT-now > int64(w.Period) {
		// Refused: the next request fits when tat-now drops to period-interval.
		retry = time.Duration(tat + interval - int64(w.Period) - now)
		remaining = 0
		reset = time.Duration(tat - now)
		return false, tat, 0, reset, retry
	}
	remaining = (int64(w.Period) - (newTAT - now)) / interval
	return true, newTAT, remaining, time.Duration(newTAT - now), 0
}

// combine applies GCRA to every window: allowed only if all allow. An allowed request reports the
// tightest window; a refused one the refusing window that admits again last, so that Retry-After and
// X-RateLimit-Reset name the same moment and the limit that sets it.
func combine(windows []Window, tats []int64, now int64) (Decision, []int64) {
	d := Decision{Allowed: true, Remaining: -1}
	next := make([]int64, len(windows))
	var retryLimit int64
	for i, w := range windows {
		ok, nt, rem, reset, retry := gcra(w, tats[i], now)
		next[i] = nt
		if !ok {
			d.Allowed = false
			if retry > d.RetryAfter || retryLimit == 0 {
				d.RetryAfter, retryLimit = retry, w.Limit
			}
		}
		if d.Remaining < 0 || rem < d.Remaining || (rem == d.Remaining && reset > d.Reset) {
			d.Limit, d.Remaining, d.Reset = w.Limit, rem, reset
		}
	}
	if !d.Allowed {
		d.Limit, d.Remaining, d.Reset = retryLimit, 0, d.RetryAfter
	}
	if d.Remaining < 0 {
		d.Remaining = 0
	}
	return d, next
}

// Local is an in-process Limiter for a single server.
type Local struct {
	shards [64]shard
}

type shard struct {
	mu        sync.Mutex
	tats      map[string]int64
	sweepNext int // size at which to sweep next
}

// NewLocal returns an empty in-process limiter.
func NewLocal() *Local {
	l := &Local{}
	for i := range l.shards {
		l.shards[i].tats = map[string]int64{}
		l.shards[i].sweepNext = sweepAt
	}
	return l
}

// Allow implements Limiter. Windows of one request are locked in shard order, so concurrent requests
// sharing windows cannot interleave between check and consume.
func (l *Local) Allow(_ context.Context, now time.Time, windows []Window) (Decision, error) {
	if len(windows) == 0 {
		return Decision{Allowed: true}, nil
	}
	var held [64]bool
	for _, w := range windows {
		held[l.index(w.Key)] = true
	}
	for i := range held {
		if held[i] {
			l.shards[i].mu.Lock()
			defer l.shards[i].mu.Unlock()
		}
	}
	ts := now.UnixNano()
	tats := make([]int64, len(windows))
	for i, w := range windows {
		tats[i] = l.shards[l.index(w.Key)].tats[w.Key]
	}
	d, next := combine(windows, tats, ts)
	if d.Allowed {
		for i, w := range windows {
			l.shards[l.index(w.Key)].tats[w.Key] = next[i]
		}
	}
	for i := range held {
		if held[i] && len(l.shards[i].tats) > l.shards[i].sweepNext {
			l.shards[i].sweep(ts)
		}
	}
	return d, nil
}

// sweepAt is the shard size above which replenished windows are dropped.
const sweepAt = 4096

// sweep drops windows whose theoretical arrival time has passed: they are fully replenished, and an
// absent window behaves the same. The next sweep waits until the shard doubles, so sweeping stays
// amortised O(1) per request even when nothing can be dropped yet. Caller MUST hold s.mu.
func (s *shard) sweep(now int64) {
	for k, tat := range s.tats {
		if tat <= now {
			delete(s.tats, k)
		}
	}
	s.sweepNext = max(sweepAt, 2*len(s.tats))
}

func (l *Local) index(key string) int {
	h := fnv.New32a()
	h.Write([]byte(key))
	return int(h.Sum32() % uint32(len(l.shards)))
}

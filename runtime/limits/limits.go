// Package limits enforces request rate limits with GCRA (the generic cell rate algorithm): a window of
// Limit requests per Period lets Limit requests through at once and then one every Period/Limit. All the
// windows of a request are checked and consumed together, atomically, so a request refused by one window
// consumes nothing from the others, and N concurrent requests against a fresh limit of N get exactly N
// through. A request may weigh more than one (Window.Cost; no route weighs one now, a batch counts one): it is allowed only
// if all its units fit in every window, and then consumes them all; refused, it consumes nothing.
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
	// Cost is how many requests this one counts as in the window (a batch of N items costs N); 0 (and
	// anything below 1) counts as 1. A cost above Limit never fits: such a request is refused with
	// RetryAfter = Period (waiting does not help; callers bound their batches below their limits).
	Cost int64
}

// cost is w's cost, at least 1.
func (w Window) cost() int64 { return max(w.Cost, 1) }

// Decision is the outcome of a check.
type Decision struct {
	Allowed bool
	// The window the X-RateLimit-* headers report. Allowed: the tightest window (least remaining, after
	// this request). Refused: the refusing window that admits again last, with Reset = RetryAfter and
	// Remaining what that window would admit now (0 for a request of cost 1; a refused request of cost
	// n may find fewer than n left). Limit is 0 when no window applies.
	Limit     int64
	Remaining int64
	Reset     time.Duration // allowed: until the window is fully replenished; refused: RetryAfter
	// RetryAfter is how long a refused request should wait until all its units fit (Period when its
	// cost exceeds a window's Limit: it never fits).
	RetryAfter time.Duration
}

// Limiter checks and consumes windows.
type Limiter interface {
	Allow(ctx context.Context, now time.Time, windows []Window) (Decision, error)
}

// gcra computes one window's outcome given its theoretical arrival time (tat, 0 for none) for a request
// of w.cost() units. In units: the window admits avail = (Period-(tat-now))/interval now; the request
// is allowed when its cost fits in avail, and then pushes tat by cost intervals.
func gcra(w Window, tat int64, now int64) (allowed bool, newTAT int64, remaining int64, reset, retry time.Duration) {
	// A limit above one request per nanosecond is treated as one per nanosecond (never a zero interval).
	interval := max(int64(w.Period)/w.Limit, 1)
	if tat < now {
		tat = now
	}
	n := w.cost()
	avail := max((int64(w.Period)-(tat-now))/interval, 0) // below 0 only when the clock went back
	if n > w.Limit {
		// Never fits, however long it waits: refused with the whole period (see Window.Cost).
		return false, tat, avail, w.Period, w.Period
	}
	if n > avail {
		// Refused: the request fits when tat-now drops to period - n*interval.
		retry = time.Duration(tat + n*interval - int64(w.Period) - now)
		return false, tat, avail, time.Duration(tat - now), retry
	}
	newTAT = tat + n*interval
	return true, newTAT, avail - n, time.Duration(newTAT - now), 0
}

// combine applies GCRA to every window: allowed only if all allow. An allowed request reports the
// tightest window; a refused one the refusing window that admits again last, so that Retry-After and
// X-RateLimit-Reset name the same moment and the limit that sets it.
func combine(windows []Window, tats []int64, now int64) (Decision, []int64) {
	d := Decision{Allowed: true, Remaining: -1}
	next := make([]int64, len(windows))
	var retryLimit, retryRem int64
	for i, w := range windows {
		ok, nt, rem, reset, retry := gcra(w, tats[i], now)
		next[i] = nt
		if !ok {
			d.Allowed = false
			if retry > d.RetryAfter || retryLimit == 0 {
				d.RetryAfter, retryLimit, retryRem = retry, w.Limit, rem
			}
		}
		if d.Remaining < 0 || rem < d.Remaining || (rem == d.Remaining && reset > d.Reset) {
			d.Limit, d.Remaining, d.Reset = w.Limit, rem, reset
		}
	}
	if !d.Allowed {
		d.Limit, d.Remaining, d.Reset = retryLimit, retryRem, d.RetryAfter
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

package limits

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/workspace-records/records/runtime/store"
)

// Quota counts each workspace's requests per calendar month (UTC) durably in the database. Counting is
// batched: a server adds its pending requests to the stored total once per Flush (every second in
// recordsd, and at shutdown) and learns other servers' usage at the same time. A crash loses at most the
// pending count of that interval.
//
// Without Redis (NewQuota) admission is judged from that count: exact on one server; with several, the
// worst-case overshoot of a monthly quota is what the other servers accept in two flush intervals.
//
// With Redis (NewRedisQuota) admission is exact across servers: the month's count is also kept in Redis,
// where one script per call adds the call's requests only while the count stays within the limit
// (quotaScript; a refused call adds nothing), and the database count is kept as before, for
// persistence. A quota made by Redis.NewQuota takes in the same script call as the rate windows (Admit):
// one round trip to Redis per request, where Allow then Take made two. The two counts meet in three
// places:
//
//   - A month's counter that is missing in Redis (its first request of the month, or Redis lost its
//     data) is seeded by the server that finds it with the database total plus that server's unflushed
//     count, so a Redis restart does not reset the month.
//   - When Redis fails, requests are judged from this server's view (the database total at its last
//     flush plus what it accepted since, or the last Redis count plus what it accepted without Redis,
//     whichever is higher), as without Redis, and the outage is logged once. When Redis answers again,
//     what the server accepted meanwhile is added to the counter, if the counter is still the one it
//     knew (its epoch, a random tag set when the counter is seeded): exact.
//   - When that cannot be decided (the counter was seeded again meanwhile, or the server had never seen
//     it), the server instead raises the counter to the database total after its next flush (never
//     lowering it): nothing is counted twice, and what is missing is at most what the servers accepted
//     in one flush interval.
type Quota struct {
	st  store.Store
	mu  sync.Mutex
	use map[quotaKey]*usage

	// With Redis.
	rdb     redis.UniversalClient
	prefix  string
	Timeout time.Duration // of one Redis call (DefaultRedisTimeout)
	br      *breaker
	falls   atomic.Uint64
	// flushMu is held by Flush and while a Redis counter is seeded, so that a seed sees every count of
	// this server exactly once: in the database total or in pending, not in both.
	flushMu sync.Mutex
}

type quotaKey struct {
	workspace string
	period    string // YYYY-MM
}

type usage struct {
	stored  int64 // the database total when last read or written
	pending int64 // accepted here since
	loaded  bool
	// With Redis.
	seen     int64  // the count Redis last answered
	epoch    string // the counter's epoch Redis last answered
	local    int64  // accepted here without Redis, not yet added to the counter of epoch
	syncing  bool   // a call is offering local to the counter (only one at a time, so none is added twice)
	inflight int64  // requests (units) of calls to Redis under way: admitted or not, not in pending yet
	raise    bool   // raise the counter to the database total after the next flush
}

// NewQuota returns a quota counter over st.
func NewQuota(st store.Store) *Quota { return &Quota{st: st, use: map[quotaKey]*usage{}} }

// NewRedisQuota returns a quota counter over st that admits through Redis (keys prefix+workspace+":"+month).
func NewRedisQuota(st store.Store, client redis.UniversalClient, prefix string, log *slog.Logger) *Quota {
	q := NewQuota(st)
	q.rdb, q.prefix, q.Timeout = client, prefix, DefaultRedisTimeout
	q.br = newBreaker(client, log, "monthly quota", "judging from the database count")
	return q
}

// Fallbacks is how many requests were judged from the database count because Redis failed or was not
// asked (0 without Redis).
func (q *Quota) Fallbacks() uint64 { return q.falls.Load() }

// Period returns the quota period (YYYY-MM, UTC) of t and how long until it ends.
func Period(t time.Time) (string, time.Duration) {
	t = t.UTC()
	next := time.Date(t.Year(), t.Month()+1, 1, 0, 0, 0, 0, time.UTC)
	return t.Format("2006-01"), next.Sub(t)
}

// Take counts n requests of workspace against limit (nil: uncapped, still counted), all or none: it
// admits them only while the month's usage plus n stays within the limit, and refuses without counting
// anything otherwise. n below 1 counts as 1. It returns the usage including these requests when
// admitted, and the usage as it stands when refused.
func (q *Quota) Take(ctx context.Context, workspace string, n int64, limit *int64, now time.Time) (used int64, allowed bool, err error) {
	n = max(n, 1)
	period, _ := Period(now)
	k := quotaKey{workspace, period}
	u := q.entry(k)
	if q.rdb != nil {
		if q.br.try() {
			t := q.startTake(k, u, n, limit)
			res, err := q.run(ctx, k, t.call(), now)
			return q.settle(ctx, t, res, err, now)
		}
		q.falls.Add(1)
	}
	return q.takeLocal(ctx, k, u, n, limit)
}

func (q *Quota) entry(k quotaKey) *usage {
	q.mu.Lock()
	defer q.mu.Unlock()
	u := q.use[k]
	if u == nil {
		u = &usage{}
		q.use[k] = u
	}
	return u
}

// takeLocal judges from this server's view: the database total at the last flush plus what it accepted
// since, or (with Redis) the last count Redis answered plus what it accepted without Redis since,
// whichever is higher.
func (q *Quota) takeLocal(ctx context.Context, k quotaKey, u *usage, n int64, limit *int64) (int64, bool, error) {
	q.mu.Lock()
	loaded := u.loaded
	q.mu.Unlock()
	if !loaded {
		stored, err := q.read(ctx, k)
		if err != nil {
			return 0, false, err
		}
		q.mu.Lock()
		if !u.loaded {
			u.stored, u.loaded = stored, true
		}
		q.mu.Unlock()
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	// Requests under way in Redis may be admitted there: count them, so that the switch to local
	// judgement never admits past the limit (it may refuse a little early instead).
	total := max(u.stored+u.pending, u.seen+u.local) + u.inflight
	if limit != nil && total+n > *limit {
		return total, false, nil
	}
	u.pending += n
	if q.rdb != nil {
		u.local += n
	}
	return total + n, true, nil
}

// Used returns the month's usage of workspace as this server knows it.
func (q *Quota) Used(workspace string, now time.Time) int64 {
	period, _ := Period(now)
	q.mu.Lock()
	defer q.mu.Unlock()
	if u := q.use[quotaKey{workspace, period}]; u != nil {
		return max(u.stored+u.pending, u.seen+u.local)
	}
	return 0
}

func (q *Quota) read(ctx context.Context, k quotaKey) (int64, error) {
	var n int64
	_, err := store.QueryOne(ctx, q.st, q.st.Dialect().Bind("SELECT count FROM usage_counters WHERE workspace_id = ? AND period = ?", k.workspace, k.period), func(row []any) error {
		n = store.Int(row[0])
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("read quota usage: %w", err)
	}
	return n, nil
}

// Flush adds pending counts to the stored totals and refreshes every known total, so usage accepted by
// other servers is seen. Entries of past months are dropped once flushed.
func (q *Quota) Flush(ctx context.Context, now time.Time) error {
	q.flushMu.Lock()
	defer q.flushMu.Unlock()
	current, _ := Period(now)
	q.mu.Lock()
	type item struct {
		k       quotaKey
		pending int64
	}
	items := make([]item, 0, len(q.use))
	for k, u := range q.use {
		items = append(items, item{k, u.pending})
	}
	q.mu.Unlock()
	d := q.st.Dialect()
	totals := make(map[quotaKey]int64, len(items))
	for _, it := range items {
		var total int64
		var err error
		if it.pending > 0 {
			// A writing statement that returns rows: run it in a transaction, which on SQLite is the writer.
			err = q.st.Tx(ctx, func(tx store.Querier) error {
				_, err := store.QueryOne(ctx, tx, d.Bind(`INSERT INTO usage_counters (workspace_id, period, count) VALUES (?, ?, ?)
ON CONFLICT (workspace_id, period) DO UPDATE SET count = usage_counters.count + excluded.count RETURNING count`, it.k.workspace, it.k.period, it.pending), func(row []any) error {
					total = store.Int(row[0])
					return nil
				})
				return err
			})
		} else {
			total, err = q.read(ctx, it.k)
		}
		if err != nil {
			return fmt.Errorf("flush quota usage: %w", err)
		}
		totals[it.k] = total
		q.mu.Lock()
		if u := q.use[it.k]; u != nil {
			u.pending -= it.pending
			u.stored, u.loaded = total, true
			if it.k.period != current && u.pending == 0 {
				delete(q.use, it.k)
			}
		}
		q.mu.Unlock()
	}
	if q.rdb != nil {
		q.reconcile(ctx, totals, now)
	}
	return nil
}

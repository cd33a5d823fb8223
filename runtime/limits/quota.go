package limits

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/workspace-records/records/runtime/store"
)

// Quota counts each workspace's requests per calendar month (UTC) durably in the database. Counting is
// batched: a server adds its pending requests to the stored total once per Flush (every second in
// recordsd, and at shutdown) and learns other servers' usage at the same time. The worst-case overshoot of
// a monthly quota is therefore what the other servers accept in one flush interval; a crash loses at most
// the pending count of that interval.
type Quota struct {
	st  store.Store
	mu  sync.Mutex
	use map[quotaKey]*usage
}

type quotaKey struct {
	workspace string
	period    string // YYYY-MM
}

type usage struct {
	stored  int64 // the database total when last read or written
	pending int64 // accepted here since
	loaded  bool
}

// NewQuota returns a quota counter over st.
func NewQuota(st store.Store) *Quota { return &Quota{st: st, use: map[quotaKey]*usage{}} }

// Period returns the quota period (YYYY-MM, UTC) of t and how long until it ends.
func Period(t time.Time) (string, time.Duration) {
	t = t.UTC()
	next := time.Date(t.Year(), t.Month()+1, 1, 0, 0, 0, 0, time.UTC)
	return t.Format("2006-01"), next.Sub(t)
}

// Take counts one request of workspace against limit (nil: uncapped, still counted). It refuses without
// counting once the month's usage has reached the limit. It returns the usage including this request.
func (q *Quota) Take(ctx context.Context, workspace string, limit *int64, now time.Time) (used int64, allowed bool, err error) {
	period, _ := Period(now)
	k := quotaKey{workspace, period}
	q.mu.Lock()
	u := q.use[k]
	if u == nil {
		u = &usage{}
		q.use[k] = u
	}
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
	total := u.stored + u.pending
	if limit != nil && total >= *limit {
		return total, false, nil
	}
	u.pending++
	return total + 1, true, nil
}

// Used returns the month's usage of workspace as this server knows it.
func (q *Quota) Used(workspace string, now time.Time) int64 {
	period, _ := Period(now)
	q.mu.Lock()
	defer q.mu.Unlock()
	if u := q.use[quotaKey{workspace, period}]; u != nil {
		return u.stored + u.pending
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
	return nil
}

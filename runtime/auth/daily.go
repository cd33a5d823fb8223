package auth

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/workspace-records/records/runtime/store"
)

// dayKey names one key's count of one UTC day (days since the Unix epoch: no formatting per request).
type dayKey struct {
	key string
	day int64
}

// dayCount is what this server answered a key on one day and has not written yet.
type dayCount struct {
	workspace          string
	requests, refusals int64
}

// Count records that this server answered a request of key k at now; refused says the answer was a
// refusal (403 or 429). It writes nothing: FlushUsage adds the counts to key_usage_daily once per
// interval, so counting costs a request no database round trip.
func (d *Directory) Count(k *Key, refused bool, now time.Time) {
	dk := dayKey{key: k.ID, day: now.Unix() / 86400}
	d.useMu.Lock()
	defer d.useMu.Unlock()
	if d.daily == nil {
		d.daily = map[dayKey]*dayCount{}
	}
	c := d.daily[dk]
	if c == nil {
		c = &dayCount{workspace: k.Workspace}
		d.daily[dk] = c
	}
	c.requests++
	if refused {
		c.refusals++
	}
}

// upsertDaily adds one key's counts of one day to key_usage_daily: servers add up, whatever their order.
const upsertDaily = `INSERT INTO key_usage_daily (workspace_id, key_id, day, requests, refusals) VALUES (?, ?, ?, ?, ?)
ON CONFLICT (workspace_id, key_id, day) DO UPDATE SET requests = key_usage_daily.requests + excluded.requests, refusals = key_usage_daily.refusals + excluded.refusals`

// flushDaily writes the counts Count recorded since the last flush, one upsert per key and day under
// the key's workspace scope. Counts it could not write are kept for the next flush.
func (d *Directory) flushDaily(ctx context.Context) error {
	d.useMu.Lock()
	batch := d.daily
	d.daily = nil
	d.useMu.Unlock()
	var errs []error
	for dk, c := range batch {
		_, err := d.st.Exec(store.WithWorkspace(ctx, c.workspace), d.d.Bind(upsertDaily, c.workspace, dk.key, time.Unix(dk.day*86400, 0).UTC().Format(time.DateOnly), c.requests, c.refusals))
		if err == nil {
			continue
		}
		errs = append(errs, err)
		d.useMu.Lock()
		if d.daily == nil {
			d.daily = map[dayKey]*dayCount{}
		}
		if cur := d.daily[dk]; cur != nil {
			cur.requests += c.requests
			cur.refusals += c.refusals
		} else {
			d.daily[dk] = c
		}
		d.useMu.Unlock()
	}
	if len(errs) > 0 {
		return fmt.Errorf("write daily key usage: %d of %d counts failed: %w", len(errs), len(batch), errors.Join(errs...))
	}
	return nil
}

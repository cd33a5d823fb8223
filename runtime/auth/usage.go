package auth

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// keyUse is the latest use of a key this server has seen and not yet written.
type keyUse struct {
	workspace string
	at        time.Time
	addr      string // the client address; "" when it could not be told
}

// Touch records that key k was used now from client address addr ("" when unknown). It writes nothing:
// FlushUsage writes the latest use of each key once per interval, so a request costs no database write.
func (d *Directory) Touch(k *Key, addr string, now time.Time) {
	d.useMu.Lock()
	defer d.useMu.Unlock()
	if u, ok := d.uses[k.ID]; ok && !now.After(u.at) {
		return
	}
	d.uses[k.ID] = keyUse{workspace: k.Workspace, at: now.UTC().Truncate(time.Microsecond), addr: addr}
}

// LastUse returns when and from where k was last used as far as this server knows: what was stored
// when k was read (k.LastUsedAt, k.LastUsedIP) or, if later, a use seen here and not yet written.
func (d *Directory) LastUse(k *Key) (*time.Time, *string) {
	at, addr := k.LastUsedAt, k.LastUsedIP
	d.useMu.Lock()
	u, ok := d.uses[k.ID]
	d.useMu.Unlock()
	if ok && (at == nil || u.at.After(*at)) {
		at = &u.at
		addr = nil
		if u.addr != "" {
			addr = &u.addr
		}
	}
	return at, addr
}

// FlushUsage writes the uses Touch recorded since the last flush: one statement per key, which sets
// last_used_at and last_used_ip only when the use is later than the stored one, so that servers flushing
// in any order never move a key's last use backwards. It returns how many keys it wrote. Uses it could
// not write are kept for the next flush. It also adds the requests and refusals Count recorded to
// key_usage_daily (flushDaily).
func (d *Directory) FlushUsage(ctx context.Context) (int, error) {
	dailyErr := d.flushDaily(ctx)
	d.useMu.Lock()
	batch := d.uses
	d.uses = make(map[string]keyUse, len(batch))
	d.useMu.Unlock()
	written := 0
	var errs []error
	for id, u := range batch {
		var addr any
		if u.addr != "" {
			addr = u.addr
		}
		_, err := d.st.Exec(ctx, d.d.Bind("UPDATE api_keys SET last_used_at = ?, last_used_ip = ? WHERE workspace_id = ? AND id = ? AND (last_used_at IS NULL OR last_used_at < ?)",
			u.at, addr, u.workspace, id, u.at))
		if err != nil {
			errs = append(errs, err)
			d.useMu.Lock()
			if cur, ok := d.uses[id]; !ok || u.at.After(cur.at) {
				d.uses[id] = u
			}
			d.useMu.Unlock()
			continue
		}
		written++
	}
	if len(errs) > 0 {
		return written, errors.Join(fmt.Errorf("write key usage: %d of %d keys failed: %w", len(errs), len(batch), errors.Join(errs...)), dailyErr)
	}
	return written, dailyErr
}

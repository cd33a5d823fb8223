package auth

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/workspace-records/records/engine/model"
	"github.com/workspace-records/records/runtime/store"
)

// NotificationKeyExpiring is the kind of the notification an expiry reminder leaves for a key's owner.
const NotificationKeyExpiring = "key_expiring"

// MaxDeliveredNotifications is how many unread notifications GET /v1/me shows, newest first.
const MaxDeliveredNotifications = 20

// Notification is a message to a member kept in the notifications outbox: written once (one per key and
// reminder threshold), shown to its owner, and kept until read. DeliveredAt is when it was first shown to
// its owner (GET /v1/me with any of their keys); ReadAt when it was marked read (recordsctl notification
// read).
type Notification struct {
	ID          string     `json:"id"`
	Workspace   string     `json:"workspace_id"`
	Member      string     `json:"member_id"`
	Kind        string     `json:"kind"`
	KeyID       string     `json:"key_id"`
	KeyHint     string     `json:"key_hint"`
	ExpiresAt   time.Time  `json:"expires_at"`
	DaysBefore  int        `json:"days_before"`
	CreatedAt   time.Time  `json:"created_at"`
	DeliveredAt *time.Time `json:"delivered_at"`
	ReadAt      *time.Time `json:"read_at"`
}

// NotificationFilter narrows Notifications.
type NotificationFilter struct {
	Member string // "" for every member
	Unread bool   // only those not marked read
	Limit  int    // at most this many (0: 1000)
}

// writeNotification stores n in the outbox inside q's transaction. A notification with the same kind,
// key and threshold is never written twice: the unique dedupe key makes a second write a no-op.
func (d *Directory) writeNotification(ctx context.Context, q store.Querier, n Notification) error {
	dedupe := fmt.Sprintf("%s:%s:%d", n.Kind, n.KeyID, n.DaysBefore)
	_, err := q.Exec(ctx, d.d.Bind(`INSERT INTO notifications (workspace_id, id, member_id, kind, key_id, key_hint, expires_at, days_before, dedupe, created_at)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (workspace_id, dedupe) DO NOTHING`,
		n.Workspace, n.ID, n.Member, n.Kind, n.KeyID, n.KeyHint, n.ExpiresAt, int64(n.DaysBefore), dedupe, n.CreatedAt))
	if err != nil {
		return fmt.Errorf("write notification: %w", err)
	}
	if d.Notified != nil {
		return d.Notified(ctx, q, n)
	}
	return nil
}

const notificationColumns = "id, workspace_id, member_id, kind, key_id, key_hint, expires_at, days_before, created_at, delivered_at, read_at"

func scanNotification(row []any) (Notification, error) {
	n := Notification{ID: store.UUIDText(row[0]), Workspace: store.UUIDText(row[1]), Member: store.UUIDText(row[2]), Kind: store.Text(row[3]),
		KeyID: store.UUIDText(row[4]), KeyHint: store.Text(row[5]), DaysBefore: int(store.Int(row[7]))}
	var err error
	if n.ExpiresAt, err = store.Time(row[6]); err != nil {
		return n, err
	}
	if n.CreatedAt, err = store.Time(row[8]); err != nil {
		return n, err
	}
	for i, dst := range []**time.Time{&n.DeliveredAt, &n.ReadAt} {
		if row[9+i] != nil {
			t, err := store.Time(row[9+i])
			if err != nil {
				return n, err
			}
			*dst = &t
		}
	}
	return n, nil
}

// Notifications lists the notifications of a workspace, newest first.
func (d *Directory) Notifications(ctx context.Context, workspace string, f NotificationFilter) ([]Notification, error) {
	where, args := []string{"workspace_id = ?"}, []any{strings.ToLower(workspace)}
	if f.Member != "" {
		where, args = append(where, "member_id = ?"), append(args, strings.ToLower(f.Member))
	}
	if f.Unread {
		where = append(where, "read_at IS NULL")
	}
	limit := f.Limit
	if limit <= 0 || limit > 1000 {
		limit = 1000
	}
	out := []Notification{}
	err := d.st.Query(ctx, d.d.Bind(fmt.Sprintf("SELECT %s FROM notifications WHERE %s ORDER BY created_at DESC, id DESC LIMIT %d", notificationColumns, strings.Join(where, " AND "), limit), args...), func(row []any) error {
		n, err := scanNotification(row)
		if err != nil {
			return err
		}
		out = append(out, n)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list notifications: %w", err)
	}
	return out, nil
}

// DeliverNotifications returns member's unread notifications, newest first (at most
// MaxDeliveredNotifications), and records the first time each was shown to them.
func (d *Directory) DeliverNotifications(ctx context.Context, workspace, member string) ([]Notification, error) {
	list, err := d.Notifications(ctx, workspace, NotificationFilter{Member: member, Unread: true, Limit: MaxDeliveredNotifications})
	if err != nil {
		return nil, err
	}
	var fresh []any
	for _, n := range list {
		if n.DeliveredAt == nil {
			fresh = append(fresh, n.ID)
		}
	}
	if len(fresh) == 0 {
		return list, nil
	}
	now := d.ts()
	ph := strings.TrimSuffix(strings.Repeat("?, ", len(fresh)), ", ")
	args := append([]any{now, strings.ToLower(workspace)}, fresh...)
	if _, err := d.st.Exec(ctx, d.d.Bind("UPDATE notifications SET delivered_at = ? WHERE workspace_id = ? AND delivered_at IS NULL AND id IN ("+ph+")", args...)); err != nil {
		return nil, fmt.Errorf("deliver notifications: %w", err)
	}
	for i := range list {
		if list[i].DeliveredAt == nil {
			list[i].DeliveredAt = &now
		}
	}
	return list, nil
}

// MarkNotificationRead marks notification id read (once: marking it again keeps the first time) and
// returns it.
func (d *Directory) MarkNotificationRead(ctx context.Context, id string) (*Notification, error) {
	id = strings.ToLower(id)
	if !model.IsUUID(id) {
		return nil, fmt.Errorf("notification %s: %w", id, ErrNotFound)
	}
	var out *Notification
	err := d.st.Tx(ctx, func(q store.Querier) error {
		if _, err := q.Exec(ctx, d.d.Bind("UPDATE notifications SET read_at = COALESCE(read_at, ?) WHERE id = ?", d.ts(), id)); err != nil {
			return err
		}
		_, err := store.QueryOne(ctx, q, d.d.Bind("SELECT "+notificationColumns+" FROM notifications WHERE id = ?", id), func(row []any) error {
			n, err := scanNotification(row)
			out = &n
			return err
		})
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("mark notification read: %w", err)
	}
	if out == nil {
		return nil, fmt.Errorf("notification %s: %w", id, ErrNotFound)
	}
	return out, nil
}

// Package notices keeps what the server tells a member outside a request: the notifications outbox
// (shown on GET /v1/me, listed and marked read with recordsctl) and the key expiry reminders that write
// into it (scheduled when a key is created, sent by every server's reminder loop).
package notices

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/workspace-records/records/engine/model"
	"github.com/workspace-records/records/engine/sqlgen"
	"github.com/workspace-records/records/runtime/store"
)

// ErrNotFound is a notification or member that does not exist.
var ErrNotFound = errors.New("not found")

// Service keeps the notifications outbox and the key expiry reminders of a database.
type Service struct {
	st  store.Store
	d   sqlgen.Dialect
	now func() time.Time
	// Notified, when set, runs inside the transaction that writes a member's notification (a key
	// expiry reminder): the server records it in the change feed there. Set it before serving.
	Notified func(ctx context.Context, q store.Querier, n Notification) error
}

// New returns the service over st; now is its clock (nil: time.Now).
func New(st store.Store, now func() time.Time) *Service {
	if now == nil {
		now = time.Now
	}
	return &Service{st: st, d: st.Dialect(), now: now}
}

func (s *Service) ts() time.Time { return s.now().UTC().Truncate(time.Microsecond) }

// MemberWorkspace returns the workspace of member, read inside q; found is false when there is no such
// member (runtime/auth reads it the same way).
func MemberWorkspace(ctx context.Context, q store.Querier, d sqlgen.Dialect, member string) (ws string, found bool, err error) {
	found, err = store.QueryOne(ctx, q, d.Bind("SELECT workspace_id FROM members WHERE id = ?", member), func(row []any) error {
		ws = store.UUIDText(row[0])
		return nil
	})
	return ws, found, err
}

// memberWorkspace is MemberWorkspace with a missing member ErrNotFound.
func (s *Service) memberWorkspace(ctx context.Context, q store.Querier, member string) (string, error) {
	ws, found, err := MemberWorkspace(ctx, q, s.d, member)
	if err == nil && !found {
		err = fmt.Errorf("member %s: %w", member, ErrNotFound)
	}
	return ws, err
}

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

// Filter narrows List.
type Filter struct {
	Member string // "" for every member
	Unread bool   // only those not marked read
	Limit  int    // at most this many (0: 1000)
}

// writeNotification stores n in the outbox inside q's transaction. A notification with the same kind,
// key and threshold is never written twice: the unique dedupe key makes a second write a no-op.
func (s *Service) write(ctx context.Context, q store.Querier, n Notification) error {
	dedupe := fmt.Sprintf("%s:%s:%d", n.Kind, n.KeyID, n.DaysBefore)
	_, err := q.Exec(ctx, s.d.Bind(`INSERT INTO notifications (workspace_id, id, member_id, kind, key_id, key_hint, expires_at, days_before, dedupe, created_at)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (workspace_id, dedupe) DO NOTHING`,
		n.Workspace, n.ID, n.Member, n.Kind, n.KeyID, n.KeyHint, n.ExpiresAt, int64(n.DaysBefore), dedupe, n.CreatedAt))
	if err != nil {
		return fmt.Errorf("write notification: %w", err)
	}
	if s.Notified != nil {
		return s.Notified(ctx, q, n)
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

// List lists the notifications of a workspace, newest first.
func (s *Service) List(ctx context.Context, workspace string, f Filter) ([]Notification, error) {
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
	err := s.st.Query(ctx, s.d.Bind(fmt.Sprintf("SELECT %s FROM notifications WHERE %s ORDER BY created_at DESC, id DESC LIMIT %d", notificationColumns, strings.Join(where, " AND "), limit), args...), func(row []any) error {
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

// Deliver returns member's unread notifications, newest first (at most
// MaxDeliveredNotifications), and records the first time each was shown to them.
func (s *Service) Deliver(ctx context.Context, workspace, member string) ([]Notification, error) {
	list, err := s.List(ctx, workspace, Filter{Member: member, Unread: true, Limit: MaxDeliveredNotifications})
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
	now := s.ts()
	ph := strings.TrimSuffix(strings.Repeat("?, ", len(fresh)), ", ")
	args := append([]any{now, strings.ToLower(workspace)}, fresh...)
	if _, err := s.st.Exec(ctx, s.d.Bind("UPDATE notifications SET delivered_at = ? WHERE workspace_id = ? AND delivered_at IS NULL AND id IN ("+ph+")", args...)); err != nil {
		return nil, fmt.Errorf("deliver notifications: %w", err)
	}
	for i := range list {
		if list[i].DeliveredAt == nil {
			list[i].DeliveredAt = &now
		}
	}
	return list, nil
}

// MarkRead marks notification id read (once: marking it again keeps the first time) and
// returns it.
func (s *Service) MarkRead(ctx context.Context, id string) (*Notification, error) {
	id = strings.ToLower(id)
	if !model.IsUUID(id) {
		return nil, fmt.Errorf("notification %s: %w", id, ErrNotFound)
	}
	var out *Notification
	err := s.st.Tx(ctx, func(q store.Querier) error {
		if _, err := q.Exec(ctx, s.d.Bind("UPDATE notifications SET read_at = COALESCE(read_at, ?) WHERE id = ?", s.ts(), id)); err != nil {
			return err
		}
		_, err := store.QueryOne(ctx, q, s.d.Bind("SELECT "+notificationColumns+" FROM notifications WHERE id = ?", id), func(row []any) error {
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

// ReminderDays are how many days before expiry a key's owner is reminded.
var ReminderDays = []int{14, 3}

// Reminder states.
const (
	ReminderScheduled = "scheduled"
	ReminderSent      = "sent"
	ReminderSkipped   = "skipped"   // the owner opted out, or it would have fallen before the key existed
	ReminderCancelled = "cancelled" // the key was revoked or expired first
)

// Reminder is one scheduled expiry reminder.
type Reminder struct {
	ID          string     `json:"id"`
	KeyID       string     `json:"key_id"`
	MemberID    string     `json:"member_id"`
	DaysBefore  int        `json:"days_before"`
	DueAt       time.Time  `json:"due_at"`
	Status      string     `json:"status"`
	Detail      string     `json:"detail,omitempty"`
	ProcessedAt *time.Time `json:"processed_at"`
}

// NewKey is what scheduling a new key's reminders needs of it.
type NewKey struct {
	Workspace, ID, Member string
	CreatedAt, ExpiresAt  time.Time
}

// ScheduleReminders records the reminders of a new key inside q, the transaction that creates it
// (runtime/auth). One that would fall before the key was created is recorded as skipped, so an
// operator sees why it never comes.
func ScheduleReminders(ctx context.Context, q store.Querier, d sqlgen.Dialect, k NewKey) error {
	for _, days := range ReminderDays {
		due := k.ExpiresAt.Add(-time.Duration(days) * 24 * time.Hour)
		status, detail := ReminderScheduled, ""
		var processed any
		if !due.After(k.CreatedAt) {
			status, detail, processed = ReminderSkipped, "falls before the key was created", k.CreatedAt
		}
		if _, err := q.Exec(ctx, d.Bind("INSERT INTO key_reminders (workspace_id, id, key_id, member_id, days_before, due_at, status, detail, processed_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
			k.Workspace, store.NewID(), k.ID, k.Member, int64(days), due, status, detail, processed)); err != nil {
			return fmt.Errorf("schedule reminder: %w", err)
		}
	}
	return nil
}

// SetKeyExpiryReminders records whether member wants key expiry reminders.
func (s *Service) SetKeyExpiryReminders(ctx context.Context, member string, on bool) error {
	member = strings.ToLower(member)
	return s.st.Tx(ctx, func(q store.Querier) error {
		workspace, err := s.memberWorkspace(ctx, q, member)
		if err != nil {
			return fmt.Errorf("set preferences: %w", err)
		}
		_, err = q.Exec(ctx, s.d.Bind(`INSERT INTO member_preferences (workspace_id, member_id, key_expiry_reminders, updated_at) VALUES (?, ?, ?, ?)
ON CONFLICT (workspace_id, member_id) DO UPDATE SET key_expiry_reminders = excluded.key_expiry_reminders, updated_at = excluded.updated_at`, workspace, member, on, s.ts()))
		if err != nil {
			return fmt.Errorf("set preferences: %w", err)
		}
		return nil
	})
}

// Reminders lists the reminders of a workspace by due time.
func (s *Service) Reminders(ctx context.Context, workspace string) ([]Reminder, error) {
	out := []Reminder{}
	err := s.st.Query(ctx, s.d.Bind("SELECT id, key_id, member_id, days_before, due_at, status, detail, processed_at FROM key_reminders WHERE workspace_id = ? ORDER BY due_at, id", strings.ToLower(workspace)), func(row []any) error {
		r := Reminder{ID: store.UUIDText(row[0]), KeyID: store.UUIDText(row[1]), MemberID: store.UUIDText(row[2]), Status: store.Text(row[5]), Detail: store.Text(row[6])}
		r.DaysBefore = int(store.Int(row[3]))
		var err error
		if r.DueAt, err = store.Time(row[4]); err != nil {
			return err
		}
		if row[7] != nil {
			t, err := store.Time(row[7])
			if err != nil {
				return err
			}
			r.ProcessedAt = &t
		}
		out = append(out, r)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list reminders: %w", err)
	}
	return out, nil
}

// SendDueReminders processes every scheduled reminder due at now: cancelled if the key is revoked or
// expired, skipped if the owner turned reminders off (the preference is read at send time), otherwise
// sent: a key_expiring notification for the key's owner is written to the notifications outbox in the
// same transaction that marks the reminder sent. It is safe to run on several servers at once: each
// reminder is claimed by a conditional update, and the outbox holds at most one notification per key
// and threshold. It returns how many notifications it wrote.
func (s *Service) SendDueReminders(ctx context.Context, now time.Time) (int, error) {
	type due struct {
		r        Reminder
		ws       string
		hint     string
		revoked  bool
		expires  time.Time
		optedOut bool
	}
	var list []due
	err := s.st.Query(ctx, s.d.Bind(`SELECT r.id, r.key_id, r.member_id, r.days_before, r.due_at, r.workspace_id, k.hint, k.revoked_at, k.expires_at, p.key_expiry_reminders
FROM key_reminders r JOIN api_keys k ON k.workspace_id = r.workspace_id AND k.id = r.key_id
LEFT JOIN member_preferences p ON p.workspace_id = r.workspace_id AND p.member_id = r.member_id
WHERE r.status = ? AND r.due_at <= ? ORDER BY r.due_at LIMIT 500`, ReminderScheduled, now.UTC()), func(row []any) error {
		x := due{r: Reminder{ID: store.UUIDText(row[0]), KeyID: store.UUIDText(row[1]), MemberID: store.UUIDText(row[2])}, ws: store.UUIDText(row[5]), hint: store.Text(row[6]), revoked: row[7] != nil}
		x.r.DaysBefore = int(store.Int(row[3]))
		var err error
		if x.r.DueAt, err = store.Time(row[4]); err != nil {
			return err
		}
		if x.expires, err = store.Time(row[8]); err != nil {
			return err
		}
		x.optedOut = row[9] != nil && !store.Bool(row[9])
		list = append(list, x)
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("due reminders: %w", err)
	}
	sent := 0
	at := now.UTC().Truncate(time.Microsecond)
	for _, x := range list {
		status, detail := ReminderSent, ""
		switch {
		case x.revoked:
			status, detail = ReminderCancelled, "key revoked"
		case !now.Before(x.expires):
			status, detail = ReminderCancelled, "key expired"
		case x.optedOut:
			status, detail = ReminderSkipped, "owner turned key expiry reminders off"
		}
		wrote := false
		// In the workspace's scope: the notification is recorded in the change feed too (Notified).
		err := s.st.Tx(store.WithWorkspace(ctx, x.ws), func(q store.Querier) error {
			n, err := q.Exec(ctx, s.d.Bind("UPDATE key_reminders SET status = ?, detail = ?, processed_at = ? WHERE workspace_id = ? AND id = ? AND status = ?", status, detail, at, x.ws, x.r.ID, ReminderScheduled))
			if err != nil {
				return fmt.Errorf("claim reminder: %w", err)
			}
			if n == 0 || status != ReminderSent {
				return nil // another server claimed it, or nothing to deliver
			}
			wrote = true
			return s.write(ctx, q, Notification{ID: store.NewID(), Workspace: x.ws, Member: x.r.MemberID, Kind: NotificationKeyExpiring,
				KeyID: x.r.KeyID, KeyHint: x.hint, ExpiresAt: x.expires, DaysBefore: x.r.DaysBefore, CreatedAt: at})
		})
		if err != nil {
			return sent, err
		}
		if wrote {
			sent++
		}
	}
	return sent, nil
}

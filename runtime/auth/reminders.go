package auth

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/workspace-records/records/runtime/store"
)

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

// scheduleReminders records the reminders of a new key. One that would fall before the key was created
// is recorded as skipped, so an operator sees why it never comes.
func (d *Directory) scheduleReminders(ctx context.Context, q store.Querier, k *Key) error {
	for _, days := range ReminderDays {
		due := k.ExpiresAt.Add(-time.Duration(days) * 24 * time.Hour)
		status, detail := ReminderScheduled, ""
		var processed any
		if !due.After(k.CreatedAt) {
			status, detail, processed = ReminderSkipped, "falls before the key was created", k.CreatedAt
		}
		if _, err := q.Exec(ctx, d.d.Bind("INSERT INTO key_reminders (workspace_id, id, key_id, member_id, days_before, due_at, status, detail, processed_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
			k.Workspace, store.NewID(), k.ID, k.Member, int64(days), due, status, detail, processed)); err != nil {
			return fmt.Errorf("schedule reminder: %w", err)
		}
	}
	return nil
}

// SetKeyExpiryReminders records whether member wants key expiry reminders.
func (d *Directory) SetKeyExpiryReminders(ctx context.Context, member string, on bool) error {
	member = strings.ToLower(member)
	return d.st.Tx(ctx, func(q store.Querier) error {
		workspace, err := d.memberWorkspace(ctx, q, member)
		if err != nil {
			return fmt.Errorf("set preferences: %w", err)
		}
		_, err = q.Exec(ctx, d.d.Bind(`INSERT INTO member_preferences (workspace_id, member_id, key_expiry_reminders, updated_at) VALUES (?, ?, ?, ?)
ON CONFLICT (workspace_id, member_id) DO UPDATE SET key_expiry_reminders = excluded.key_expiry_reminders, updated_at = excluded.updated_at`, workspace, member, on, d.ts()))
		if err != nil {
			return fmt.Errorf("set preferences: %w", err)
		}
		return nil
	})
}

// Reminders lists the reminders of a workspace by due time.
func (d *Directory) Reminders(ctx context.Context, workspace string) ([]Reminder, error) {
	out := []Reminder{}
	err := d.st.Query(ctx, d.d.Bind("SELECT id, key_id, member_id, days_before, due_at, status, detail, processed_at FROM key_reminders WHERE workspace_id = ? ORDER BY due_at, id", strings.ToLower(workspace)), func(row []any) error {
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
func (d *Directory) SendDueReminders(ctx context.Context, now time.Time) (int, error) {
	type due struct {
		r        Reminder
		ws       string
		hint     string
		revoked  bool
		expires  time.Time
		optedOut bool
	}
	var list []due
	err := d.st.Query(ctx, d.d.Bind(`SELECT r.id, r.key_id, r.member_id, r.days_before, r.due_at, r.workspace_id, k.hint, k.revoked_at, k.expires_at, p.key_expiry_reminders
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
		err := d.st.Tx(store.WithWorkspace(ctx, x.ws), func(q store.Querier) error {
			n, err := q.Exec(ctx, d.d.Bind("UPDATE key_reminders SET status = ?, detail = ?, processed_at = ? WHERE workspace_id = ? AND id = ? AND status = ?", status, detail, at, x.ws, x.r.ID, ReminderScheduled))
			if err != nil {
				return fmt.Errorf("claim reminder: %w", err)
			}
			if n == 0 || status != ReminderSent {
				return nil // another server claimed it, or nothing to deliver
			}
			wrote = true
			return d.writeNotification(ctx, q, Notification{ID: store.NewID(), Workspace: x.ws, Member: x.r.MemberID, Kind: NotificationKeyExpiring,
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

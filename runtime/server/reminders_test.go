package server_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/workspace-records/records/runtime/auth"
	"github.com/workspace-records/records/runtime/notices"
	"github.com/workspace-records/records/runtime/server/servertest"
)

// TestKeyExpiryReminders: reminders are scheduled 14 and 3 days before expiry (one falling before the
// key existed is skipped), and when one falls due its owner gets a key_expiring notification in the
// outbox — unless the owner opted out or the key was revoked or expired first. Several servers sending
// the due reminders at once write each notification once.
func TestKeyExpiryReminders(t *testing.T) {
	t.Parallel()
	for _, b := range servertest.Backends {
		t.Run(string(b), func(t *testing.T) {
			t.Parallel()
			// A server of its own: its reminder sweep covers every workspace's keys.
			e := servertest.Start(t, b, servertest.Options{Private: true})
			ctx := context.Background()
			be := e.Server.Backend()
			dir := be.Directory
			ann, bob := e.NewMember("ann@x.example", "admin", ""), e.NewMember("bob@x.example", "admin", "")
			long, _, _ := dir.CreateKey(ctx, ann, auth.KeyOptions{Access: "read", ExpiresIn: 30 * 24 * time.Hour})
			short, _, _ := dir.CreateKey(ctx, ann, auth.KeyOptions{Access: "read", ExpiresIn: 10 * 24 * time.Hour})
			optOut, _, _ := dir.CreateKey(ctx, bob, auth.KeyOptions{Access: "read", ExpiresIn: 30 * 24 * time.Hour})
			revoked, _, _ := dir.CreateKey(ctx, ann, auth.KeyOptions{Access: "read", ExpiresIn: 30 * 24 * time.Hour})
			if err := be.Notices.SetKeyExpiryReminders(ctx, bob, false); err != nil {
				t.Fatal(err)
			}
			dir.RevokeKey(ctx, revoked.ID)

			state := func() map[string]map[int]string {
				list, err := be.Notices.Reminders(ctx, e.Workspace)
				if err != nil {
					t.Fatal(err)
				}
				out := map[string]map[int]string{}
				for _, r := range list {
					if out[r.KeyID] == nil {
						out[r.KeyID] = map[int]string{}
					}
					out[r.KeyID][r.DaysBefore] = r.Status
				}
				return out
			}
			outbox := func(member string) []notices.Notification {
				list, err := be.Notices.List(ctx, e.Workspace, notices.Filter{Member: member})
				if err != nil {
					t.Fatal(err)
				}
				return list
			}
			s := state()
			if s[short.ID][14] != notices.ReminderSkipped || s[short.ID][3] != notices.ReminderScheduled {
				t.Errorf("10-day key: %v (the 14-day reminder falls before creation)", s[short.ID])
			}
			// Nothing is due yet.
			if n, _ := be.Notices.SendDueReminders(ctx, time.Now()); n != 0 || len(outbox("")) != 0 {
				t.Errorf("sent %d reminders early", n)
			}
			// Three servers send the 14-day reminders of the 30-day keys at once.
			at := time.Now().Add(17 * 24 * time.Hour)
			var wg sync.WaitGroup
			var mu sync.Mutex
			total := 0
			for range 3 {
				replica := notices.New(be.Store, nil)
				wg.Go(func() {
					n, err := replica.SendDueReminders(ctx, at)
					if err != nil {
						t.Error(err)
					}
					mu.Lock()
					total += n
					mu.Unlock()
				})
			}
			wg.Wait()
			if total != 2 {
				t.Errorf("three servers wrote %d notifications, want 2 (ann's 30-day key and the test's own admin key)", total)
			}
			if n, _ := be.Notices.SendDueReminders(ctx, at); n != 0 {
				t.Errorf("a later pass wrote %d", n)
			}
			s = state()
			if s[long.ID][14] != notices.ReminderSent || s[optOut.ID][14] != notices.ReminderSkipped || s[revoked.ID][14] != notices.ReminderCancelled {
				t.Errorf("after day 17: long %v, opted out %v, revoked %v", s[long.ID], s[optOut.ID], s[revoked.ID])
			}
			if s[short.ID][3] != notices.ReminderCancelled {
				t.Errorf("reminder of a key expired before it was due: %v", s[short.ID])
			}
			if got := outbox(bob); len(got) != 0 {
				t.Errorf("bob, who opted out, has notifications: %+v", got)
			}
			got := outbox(ann)
			if len(got) != 1 {
				t.Fatalf("ann's outbox: %+v, want one notification", got)
			}
			n := got[0]
			if n.Kind != notices.NotificationKeyExpiring || n.KeyID != long.ID || n.KeyHint != long.Hint || !n.ExpiresAt.Equal(long.ExpiresAt) || n.DaysBefore != 14 ||
				n.Member != ann || n.DeliveredAt != nil || n.ReadAt != nil {
				t.Errorf("ann's notification: %+v; key %+v", n, long)
			}
			// The 3-day reminder is a second notification, not a repeat of the first.
			if n, _ := be.Notices.SendDueReminders(ctx, long.ExpiresAt.Add(-2*24*time.Hour)); n < 1 || len(outbox(ann)) != 2 {
				t.Errorf("3-day reminder: wrote %d, ann has %d notifications; want 2", n, len(outbox(ann)))
			}
		})
	}
}

// TestNotificationsInMe: GET /v1/me shows the key owner's unread notifications (of any of their keys,
// never another member's), records when they were first shown, and stops showing one once it is marked
// read.
func TestNotificationsInMe(t *testing.T) {
	t.Parallel()
	for _, b := range servertest.Backends {
		t.Run(string(b), func(t *testing.T) {
			t.Parallel()
			// A server of its own: its reminder sweep covers every workspace's keys.
			e := servertest.Start(t, b, servertest.Options{Private: true})
			ctx := context.Background()
			be := e.Server.Backend()
			dir := be.Directory
			ann, bob := e.NewMember("ann@me.example", "member", ""), e.NewMember("bob@me.example", "member", "")
			expiring, _, err := dir.CreateKey(ctx, ann, auth.KeyOptions{Access: "read", ExpiresIn: 20 * 24 * time.Hour})
			if err != nil {
				t.Fatal(err)
			}
			annKey := e.NewKey(ann, auth.KeyOptions{Access: "read", ExpiresIn: 300 * 24 * time.Hour})
			bobKey := e.NewKey(bob, auth.KeyOptions{Access: "read", ExpiresIn: 300 * 24 * time.Hour})
			notes := func(key string) []map[string]any {
				t.Helper()
				me := e.DoKey(key, "GET", "/v1/me", nil)
				e.Expect(me, 200, "")
				items, _ := me.Data()["notifications"].([]any)
				out := make([]map[string]any, len(items))
				for i, it := range items {
					out[i], _ = it.(map[string]any)
				}
				return out
			}
			if got := notes(annKey); len(got) != 0 {
				t.Fatalf("notifications before any reminder: %v", got)
			}
			if _, err := be.Notices.SendDueReminders(ctx, time.Now().Add(7*24*time.Hour)); err != nil {
				t.Fatal(err)
			}
			before := time.Now()
			got := notes(annKey)
			if len(got) != 1 || got[0]["kind"] != "key_expiring" || got[0]["key_id"] != expiring.ID || got[0]["key_hint"] != expiring.Hint || fmt.Sprint(got[0]["days_before"]) != "14" || got[0]["delivered_at"] == nil {
				t.Fatalf("ann's notifications: %v", got)
			}
			if other := notes(bobKey); len(other) != 0 {
				t.Errorf("bob sees notifications of ann's keys: %v", other)
			}
			list, err := be.Notices.List(ctx, e.Workspace, notices.Filter{Member: ann})
			if err != nil || len(list) != 1 || list[0].DeliveredAt == nil || list[0].DeliveredAt.Before(before.Add(-time.Second)) {
				t.Fatalf("stored after GET /v1/me: %+v, %v; want delivered_at set", list, err)
			}
			first := *list[0].DeliveredAt
			notes(annKey)
			if list, _ := be.Notices.List(ctx, e.Workspace, notices.Filter{Member: ann}); !list[0].DeliveredAt.Equal(first) {
				t.Errorf("delivered_at moved from %v to %v on a second GET /v1/me", first, list[0].DeliveredAt)
			}
			read, err := be.Notices.MarkRead(ctx, list[0].ID)
			if err != nil || read.ReadAt == nil {
				t.Fatalf("mark read: %+v, %v", read, err)
			}
			if got := notes(annKey); len(got) != 0 {
				t.Errorf("a read notification is still shown: %v", got)
			}
			if unread, _ := be.Notices.List(ctx, e.Workspace, notices.Filter{Unread: true}); len(unread) != 0 {
				t.Errorf("unread after marking read: %+v", unread)
			}
			if _, err := be.Notices.MarkRead(ctx, "not-a-uuid"); err == nil {
				t.Error("marking an unknown notification read succeeded")
			}
		})
	}
}

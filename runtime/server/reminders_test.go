package server_test

import (
	"context"
	"testing"
	"time"

	"github.com/workspace-records/records/runtime/auth"
	"github.com/workspace-records/records/runtime/server/servertest"
)

func TestKeyExpiryReminders(t *testing.T) {
	for _, b := range servertest.Backends {
		t.Run(string(b), func(t *testing.T) {
			t.Parallel()
			e := servertest.Start(t, b, servertest.Options{})
			ctx := context.Background()
			dir := e.Server.Backend().Directory
			ann, bob := e.NewMember("ann@x.example", "admin", ""), e.NewMember("bob@x.example", "admin", "")
			long, _, _ := dir.CreateKey(ctx, ann, auth.KeyOptions{Access: "read", ExpiresIn: 30 * 24 * time.Hour})
			short, _, _ := dir.CreateKey(ctx, ann, auth.KeyOptions{Access: "read", ExpiresIn: 10 * 24 * time.Hour})
			optOut, _, _ := dir.CreateKey(ctx, bob, auth.KeyOptions{Access: "read", ExpiresIn: 30 * 24 * time.Hour})
			revoked, _, _ := dir.CreateKey(ctx, ann, auth.KeyOptions{Access: "read", ExpiresIn: 30 * 24 * time.Hour})
			if err := dir.SetKeyExpiryReminders(ctx, bob, false); err != nil {
				t.Fatal(err)
			}
			dir.RevokeKey(ctx, revoked.ID)

			state := func() map[string]map[int]string {
				list, err := dir.Reminders(ctx, e.Workspace)
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
			s := state()
			if s[short.ID][14] != auth.ReminderSkipped || s[short.ID][3] != auth.ReminderScheduled {
				t.Errorf("10-day key: %v (the 14-day reminder falls before creation)", s[short.ID])
			}
			var delivered []auth.Reminder
			notify := func(r auth.Reminder, email string) error {
				if email == "bob@x.example" {
					t.Errorf("reminder sent to bob, who opted out")
				}
				if email == "ann@x.example" {
					delivered = append(delivered, r)
				}
				return nil
			}
			// Nothing is due yet.
			if n, _ := dir.SendDueReminders(ctx, time.Now(), notify); n != 0 {
				t.Errorf("sent %d reminders early", n)
			}
			at := time.Now().Add(17 * 24 * time.Hour) // the 14-day reminders of the 30-day keys are due
			n, err := dir.SendDueReminders(ctx, at, notify)
			if err != nil || n != 2 {
				t.Fatalf("sent %d, %v; want 2 (ann's 30-day key and the test's own admin key)", n, err)
			}
			// A second server running the same pass sends nothing twice.
			if n, _ := dir.SendDueReminders(ctx, at, notify); n != 0 {
				t.Errorf("second pass sent %d", n)
			}
			s = state()
			if s[long.ID][14] != auth.ReminderSent || s[optOut.ID][14] != auth.ReminderSkipped || s[revoked.ID][14] != auth.ReminderCancelled {
				t.Errorf("after day 16: long %v, opted out %v, revoked %v", s[long.ID], s[optOut.ID], s[revoked.ID])
			}
			if s[short.ID][3] != auth.ReminderCancelled {
				t.Errorf("reminder of a key expired before it was due: %v", s[short.ID])
			}
			if len(delivered) != 1 || delivered[0].KeyID != long.ID || delivered[0].DaysBefore != 14 {
				t.Errorf("delivered %+v", delivered)
			}
		})
	}
}

package auth_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/workspace-records/records/runtime/auth"
	"github.com/workspace-records/records/runtime/members"
	"github.com/workspace-records/records/runtime/server/servertest"
	"github.com/workspace-records/records/runtime/store"
)

// Count and FlushUsage: two Directories over one database (two servers) count in memory and add their
// counts per key and day with upserts, so the stored counts are their sums; a flush with nothing counted
// writes nothing. RevokeWorkspaceKey refuses a key of another workspace (ErrNotFound, the key untouched)
// and runs its callback in the revoking transaction: an error there rolls the revocation back.
func TestDailyCountsAndWorkspaceRevocation(t *testing.T) {
	for _, b := range servertest.Backends {
		t.Run(string(b), func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			be := servertest.OpenBackend(t, b)
			one, two := be.Directory, auth.NewDirectory(be.Store, be.Current().Catalog, nil)
			keyOf := func(name string) *auth.Key {
				ws, err := be.Members.CreateWorkspace(ctx, name, "growth")
				if err != nil {
					t.Fatal(err)
				}
				m, err := be.Members.CreateMember(ctx, ws.ID, members.MemberProfile{Email: "a@" + name + ".example", Role: "admin"})
				if err != nil {
					t.Fatal(err)
				}
				k, _, err := one.CreateKey(ctx, m.ID, auth.KeyOptions{Access: "read", ExpiresIn: time.Hour})
				if err != nil {
					t.Fatal(err)
				}
				return k
			}
			ka, kb := keyOf("countone"), keyOf("counttwo")
			day1 := time.Date(2026, 5, 1, 23, 59, 59, 0, time.UTC)
			day2 := day1.Add(2 * time.Second)
			for i := range 5 {
				one.Count(ka, i == 0, day1)
				two.Count(ka, i < 2, day1)
			}
			two.Count(ka, false, day2)
			one.Count(kb, true, day2)
			for _, d := range []*auth.Directory{one, two, one} {
				if _, err := d.FlushUsage(ctx); err != nil {
					t.Fatal(err)
				}
			}
			stored := func(k *auth.Key) map[string][2]int64 {
				out := map[string][2]int64{}
				err := be.Store.Query(store.WithWorkspace(ctx, k.Workspace), be.Store.Dialect().Bind("SELECT day, requests, refusals FROM key_usage_daily WHERE workspace_id = ? AND key_id = ?", k.Workspace, k.ID),
					func(row []any) error {
						out[store.Text(row[0])] = [2]int64{store.Int(row[1]), store.Int(row[2])}
						return nil
					})
				if err != nil {
					t.Fatal(err)
				}
				return out
			}
			if got := stored(ka); len(got) != 2 || got["2026-05-01"] != [2]int64{10, 3} || got["2026-05-02"] != [2]int64{1, 0} {
				t.Errorf("key A's days: %v; want 2026-05-01 10 requests 3 refusals, 2026-05-02 1 request", got)
			}
			if got := stored(kb); len(got) != 1 || got["2026-05-02"] != [2]int64{1, 1} {
				t.Errorf("key B's days: %v", got)
			}

			// Revocation scoped to a workspace.
			if _, err := one.RevokeWorkspaceKey(ctx, ka.Workspace, kb.ID, nil); !errors.Is(err, auth.ErrNotFound) {
				t.Errorf("revoking B's key as A's workspace: %v, want ErrNotFound", err)
			}
			boom := errors.New("audit failed")
			if _, err := one.RevokeWorkspaceKey(ctx, kb.Workspace, kb.ID, func(context.Context, store.Querier, auth.Key, auth.Key) error { return boom }); !errors.Is(err, boom) {
				t.Errorf("a failing callback: %v", err)
			}
			if k, err := one.WorkspaceKey(ctx, kb.Workspace, kb.ID); err != nil || k.RevokedAt != nil {
				t.Errorf("B's key after the refused and the rolled-back revocations: %+v, %v", k, err)
			}
			k, err := one.RevokeWorkspaceKey(ctx, kb.Workspace, kb.ID, func(_ context.Context, _ store.Querier, before, after auth.Key) error {
				if before.RevokedAt != nil || after.RevokedAt == nil {
					t.Errorf("callback: before %v, after %v", before.RevokedAt, after.RevokedAt)
				}
				return nil
			})
			if err != nil || k.RevokedAt == nil || auth.KeyState(&k, time.Now()) != "revoked" {
				t.Errorf("revoked: %+v, %v", k, err)
			}
		})
	}
}

package customfields_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/workspace-records/records/runtime/customfields"
	"github.com/workspace-records/records/runtime/server/servertest"
)

// The snapshot cache on both backends: the first requests of a workspace not cached wait for one read
// of its definitions, not one each; a snapshot no request used for IdleAfter is dropped (and read again
// when a request needs it), while one in use stays.
func TestSnapshotCache(t *testing.T) {
	for _, b := range servertest.Backends {
		t.Run(string(b), func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			be := servertest.OpenBackend(t, b)
			var workspaces []string
			for _, name := range []string{"Burst", "Idle", "Busy", "Late"} {
				ws, err := be.Members.CreateWorkspace(ctx, name, "growth")
				if err != nil {
					t.Fatal(err)
				}
				workspaces = append(workspaces, ws.ID)
			}
			burst, idle, busy, late := workspaces[0], workspaces[1], workspaces[2], workspaces[3]
			if _, err := be.Current().Custom.Create(ctx, burst, customfields.Def{Resource: "companies", Key: "tier", Type: "select", Options: []string{"gold", "silver"}}); err != nil {
				t.Fatal(err)
			}
			var clock atomic.Int64
			clock.Store(time.Now().UnixNano())
			customfields.SetClock(be.Current().Custom, func() time.Time { return time.Unix(0, clock.Load()) })
			advance := func(d time.Duration) { clock.Add(int64(d)) }
			reg := be.Current().Custom

			// 32 requests of a workspace not cached, released together: one read.
			loads := reg.Loads.Load()
			const n = 32
			got := make([]*customfields.Snapshot, n)
			var wg sync.WaitGroup
			start := make(chan struct{})
			for i := range n {
				wg.Go(func() {
					<-start
					s, err := reg.For(ctx, burst)
					if err != nil {
						t.Error(err)
					}
					got[i] = s
				})
			}
			close(start)
			wg.Wait()
			if d := reg.Loads.Load() - loads; d != 1 {
				t.Errorf("%d concurrent first requests read the definitions %d times, want once", n, d)
			}
			for _, s := range got {
				if _, ok := s.Resource("companies").ByKey("tier"); s != got[0] || !ok {
					t.Fatalf("the requests did not share one snapshot with the field: %v", got)
				}
			}

			// idle and busy are cached; busy is used again after 6 minutes, idle is not.
			for _, ws := range []string{idle, busy} {
				if _, err := reg.For(ctx, ws); err != nil {
					t.Fatal(err)
				}
			}
			advance(6 * time.Minute)
			if _, err := reg.For(ctx, busy); err != nil { // older than MaxAge: read again, used now
				t.Fatal(err)
			}
			advance(5 * time.Minute)                      // idle unused for 11 minutes, busy for 5
			if _, err := reg.For(ctx, late); err != nil { // a new entry sweeps
				t.Fatal(err)
			}
			if customfields.Cached(reg, idle) {
				t.Errorf("a snapshot unused for 11 minutes (IdleAfter %v) is still cached", customfields.IdleAfter)
			}
			for _, ws := range []string{busy, late, burst} {
				if ws == burst {
					continue // unused for 11 minutes too: dropped as well
				}
				if !customfields.Cached(reg, ws) {
					t.Errorf("a snapshot used within IdleAfter was dropped (%s)", ws)
				}
			}
			if customfields.Cached(reg, burst) {
				t.Error("the burst's snapshot, unused for 11 minutes, is still cached")
			}
			// A dropped workspace is read again on its next request.
			loads = reg.Loads.Load()
			if _, err := reg.For(ctx, idle); err != nil {
				t.Fatal(err)
			}
			if reg.Loads.Load() != loads+1 || !customfields.Cached(reg, idle) {
				t.Error("the dropped snapshot was not read again")
			}
		})
	}
}

package server_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/workspace-records/records/runtime/events"
	"github.com/workspace-records/records/runtime/server/servertest"
	"github.com/workspace-records/records/runtime/store"
)

// Writers commit events while four sequencers (the server's own and three more, as replicas) number
// them at once: every event gets exactly one number, the numbers are 1..N without a gap, and the events
// of one transaction keep their order. Then the retention deletes what is older than it.
func TestEventNumberingConcurrent(t *testing.T) {
	t.Parallel()
	for _, b := range servertest.Backends {
		t.Run(string(b), func(t *testing.T) {
			t.Parallel()
			// A server of its own: its sweep numbers every workspace's events.
			e := servertest.Start(t, b, servertest.Options{Private: true})
			st := e.Server.Backend().Store
			ctx := store.WithWorkspace(context.Background(), e.Workspace)
			const writers, txs, perTx = 4, 15, 5
			stop := make(chan struct{})
			var numbering sync.WaitGroup
			for range 3 {
				s := events.NewSequencer(st, events.NewHub())
				numbering.Go(func() {
					for {
						select {
						case <-stop:
							return
						default:
						}
						if _, err := s.Stamp(context.Background(), e.Workspace); err != nil {
							t.Error(err)
							return
						}
						time.Sleep(time.Millisecond) // replicas at their busiest, not a loop that starves the suite
					}
				})
			}
			var writing sync.WaitGroup
			for w := range writers {
				writing.Go(func() {
					for i := range txs {
						evs := make([]events.Event, perTx)
						for k := range evs {
							evs[k] = events.Event{Type: "companies.updated", Resource: "companies", Data: map[string]any{"w": w, "i": i, "k": k}}
						}
						err := st.Tx(ctx, func(q store.Querier) error {
							return events.Write(ctx, q, st.Dialect(), events.Actor{Workspace: e.Workspace}, time.Now().UTC(), evs)
						})
						if err != nil {
							t.Error(err)
							return
						}
					}
				})
			}
			writing.Wait()
			close(stop)
			numbering.Wait()
			last := events.NewSequencer(st, events.NewHub())
			if _, err := last.Stamp(context.Background(), e.Workspace); err != nil {
				t.Fatal(err)
			}
			all, err := events.Read(context.Background(), st, e.Workspace, events.Filter{Limit: 10000})
			if err != nil {
				t.Fatal(err)
			}
			if len(all) != writers*txs*perTx {
				t.Fatalf("%d numbered events, want %d", len(all), writers*txs*perTx)
			}
			lastK := map[string]int{}
			for i, ev := range all {
				if ev.Seq != int64(i+1) {
					t.Fatalf("event %d has sequence %d", i, ev.Seq)
				}
				tx := fmt.Sprint(ev.Data["w"], "/", ev.Data["i"])
				k := 0
				fmt.Sscan(fmt.Sprint(ev.Data["k"]), &k)
				if prev, ok := lastK[tx]; ok && k != prev+1 {
					t.Errorf("transaction %s: event %d follows %d", tx, k, prev)
				}
				lastK[tx] = k
			}
			if n, err := events.Latest(context.Background(), st, e.Workspace); err != nil || n != int64(len(all)) {
				t.Errorf("latest %d %v", n, err)
			}

			// Retention: a sweep two hours later with a retention of one hour deletes them all.
			last.Retention, last.Now = time.Hour, func() time.Time { return time.Now().Add(2 * time.Hour) }
			if err := last.SweepOnce(context.Background(), true); err != nil {
				t.Fatal(err)
			}
			left, _ := events.Read(context.Background(), st, e.Workspace, events.Filter{Limit: 10})
			if len(left) != 0 {
				t.Errorf("%d events left past the retention", len(left))
			}
		})
	}
}

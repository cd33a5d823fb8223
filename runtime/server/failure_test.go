package server_test

import (
	"fmt"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/workspace-records/records/runtime/server/servertest"
)

// PostgreSQL goes away under write load: requests answer 503 with the envelope (never a 500, never a
// hang), the service recovers by itself when the database returns, and every acknowledged write is there.
func TestDatabaseOutage(t *testing.T) {
	t.Parallel()
	direct := servertest.DatabaseURL(t, servertest.Postgres)
	u, _ := url.Parse(direct)
	proxy := servertest.NewProxy(t, u.Host)
	u.Host = proxy.Addr()
	e := servertest.Start(t, servertest.Postgres, servertest.Options{DB: u.String()})
	// The contract every answer is checked against is built on first use (seconds of CPU, once per
	// test process): build it now, not inside the load's first 15 s.
	e.Contract()

	var mu sync.Mutex
	var acknowledged []string
	var unavailable, slowest atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				start := time.Now()
				res := e.Do("POST", "/v1/companies", map[string]any{"name": fmt.Sprintf("Load %d-%d", w, i)})
				if d := time.Since(start); int64(d) > slowest.Load() {
					slowest.Store(int64(d))
				}
				switch res.Status {
				case 201:
					mu.Lock()
					acknowledged = append(acknowledged, res.Data()["id"].(string))
					mu.Unlock()
				case 503:
					unavailable.Add(1)
					if res.Header.Get("Retry-After") == "" {
						t.Errorf("503 without Retry-After")
					}
				default:
					t.Errorf("status %d during the outage test: %s", res.Status, res.Raw)
				}
			}
		}(w)
	}
	acked := func() int {
		mu.Lock()
		defer mu.Unlock()
		return len(acknowledged)
	}
	// The load is under way (a write acknowledged) before the database goes.
	if _, ok := servertest.WaitFor(15*time.Second, func() bool { return acked() > 0 }); !ok {
		t.Fatal("no write acknowledged within 15 s before the outage")
	}
	proxy.Stop()
	// The outage lasts 1.5 s (the point of the test), and until a request has met it.
	time.Sleep(1500 * time.Millisecond)
	servertest.WaitFor(15*time.Second, func() bool { return unavailable.Load() > 0 })
	proxy.Start(t)
	deadline := time.Now().Add(15 * time.Second)
	for e.Do("GET", "/v1/me", nil).Status != 200 {
		if time.Now().After(deadline) {
			t.Fatal("the service did not recover within 15 s of the database returning")
		}
		time.Sleep(100 * time.Millisecond)
	}
	before := acked()
	servertest.WaitFor(15*time.Second, func() bool { return acked() > before })
	close(stop)
	wg.Wait()
	if unavailable.Load() == 0 {
		t.Error("no request saw the outage")
	}
	if len(acknowledged) <= before {
		t.Error("no write succeeded after recovery")
	}
	// The bound is the request deadline (10 s) with a margin for a loaded machine: a hang has none.
	if d := time.Duration(slowest.Load()); d > 15*time.Second {
		t.Errorf("a request took %v: not bounded", d)
	}
	for _, id := range acknowledged {
		e.Expect(e.Do("GET", "/v1/companies/"+id, nil), 200, "")
	}
	t.Logf("%d writes acknowledged, %d answered 503, slowest request %v", len(acknowledged), unavailable.Load(), time.Duration(slowest.Load()))
}

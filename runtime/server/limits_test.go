package server_test

import (
	"context"
	"encoding/json"
	"strconv"
	"sync"
	"testing"

	"github.com/workspace-records/records/runtime/auth"
	"github.com/workspace-records/records/runtime/server/servertest"
)

func setLimits(t *testing.T, e *servertest.Env, ws string, l auth.Limits) {
	t.Helper()
	if err := e.Server.Backend().Members.SetLimits(context.Background(), ws, l); err != nil {
		t.Fatal(err)
	}
}

func n(v int64) *int64 { return &v }

// With a limit of N per hour, 4N concurrent requests get exactly N through; the rest are 429s. (Per
// hour, not per minute: a minute's window of 25 refills a request every 2.4 s, which 100 requests under
// -race on a loaded machine can outlast.)
func TestRateLimitExact(t *testing.T) {
	t.Parallel()
	for _, b := range servertest.Backends {
		t.Run(string(b), func(t *testing.T) {
			t.Parallel()
			e := servertest.Start(t, b, servertest.Options{})
			const limit = 25
			setLimits(t, e, e.Workspace, auth.Limits{KeyPerMinute: n(1000), KeyPerHour: n(limit), WorkspacePerMinute: n(500)})
			var mu sync.Mutex
			codes := map[int]int{}
			var wg sync.WaitGroup
			for i := 0; i < 4*limit; i++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					res := e.Do("GET", "/v1/tags?page_size=1", nil)
					mu.Lock()
					codes[res.Status]++
					mu.Unlock()
					switch res.Status {
					case 200:
						if res.Header.Get("X-RateLimit-Limit") != strconv.Itoa(limit) || res.Header.Get("X-RateLimit-Remaining") == "" || res.Header.Get("X-RateLimit-Reset") == "" {
							t.Errorf("200 without rate-limit headers: %v", res.Header)
						}
						for _, h := range []string{"X-Quota-Limit", "X-Quota-Remaining", "X-Quota-Reset"} {
							if res.Header.Get(h) == "" {
								t.Errorf("200 without %s", h)
							}
						}
					case 429:
						if res.Code() != "rate_limited" || res.Header.Get("Retry-After") == "" || res.Header.Get("X-RateLimit-Reset") == "" {
							t.Errorf("429: %s %v", res.Raw, res.Header)
						}
					}
				}()
			}
			wg.Wait()
			if codes[200] != limit || codes[429] != 3*limit {
				t.Errorf("statuses %v, want %d × 200 and %d × 429", codes, limit, 3*limit)
			}
			// Another key of the same workspace has its own key window.
			other := e.NewKey(e.Member, auth.KeyOptions{Access: "read"})
			e.Expect(e.DoKey(other, "GET", "/v1/me", nil), 200, "")
		})
	}
}

// The monthly quota refuses once used up, and usage survives a restart.
func TestQuota(t *testing.T) {
	t.Parallel()
	for _, b := range servertest.Backends {
		t.Run(string(b), func(t *testing.T) {
			t.Parallel()
			db := servertest.DatabaseURL(t, b)
			e := servertest.Start(t, b, servertest.Options{DB: db})
			setLimits(t, e, e.Workspace, auth.Limits{MonthlyQuota: n(10)})
			for i := 1; i <= 7; i++ {
				res := e.Do("GET", "/v1/tags", nil)
				e.Expect(res, 200, "")
				if got := res.Header.Get("X-Quota-Remaining"); got != strconv.Itoa(10-i) {
					t.Fatalf("request %d: X-Quota-Remaining %s", i, got)
				}
			}
			e.Server.Close() // flushes usage, as a graceful shutdown does

			e2 := servertest.Start(t, b, servertest.Options{DB: db})
			me := e2.DoKey(e.Key, "GET", "/v1/me", nil)
			e2.Expect(me, 200, "")
			quota := me.Data()["quota"].(map[string]any)
			if quota["used"] != json.Number("8") || quota["limit"] != json.Number("10") || quota["remaining"] != json.Number("2") {
				t.Errorf("after restart, /v1/me quota %v; want used 8 of 10", quota)
			}
			e2.Expect(e2.DoKey(e.Key, "GET", "/v1/tags", nil), 200, "")
			e2.Expect(e2.DoKey(e.Key, "GET", "/v1/tags", nil), 200, "")
			res := e2.DoKey(e.Key, "GET", "/v1/tags", nil)
			e2.Expect(res, 429, "quota_exceeded")
			if res.Header.Get("Retry-After") == "" || res.Header.Get("X-Quota-Remaining") != "0" {
				t.Errorf("quota refusal headers: %v", res.Header)
			}
			// An uncapped workspace reports no quota limit, only when it resets.
			_, _, uncapped := e2.NewWorkspace("enterprise", "admin", "read")
			u := e2.DoKey(uncapped, "GET", "/v1/tags", nil)
			if u.Header.Get("X-Quota-Limit") != "" || u.Header.Get("X-Quota-Remaining") != "" || u.Header.Get("X-Quota-Reset") == "" {
				t.Errorf("uncapped quota headers: %v", u.Header)
			}
		})
	}
}

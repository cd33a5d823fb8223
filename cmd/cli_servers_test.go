package cmd_test

// Several recordsd processes over one PostgreSQL (and Redis): what recordsctl or one server changes
// reaches every server.

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/workspace-records/records/runtime/limits"
	"github.com/workspace-records/records/runtime/server/servertest"
)

// Two recordsd processes on one PostgreSQL: a key revoked with recordsctl is refused by both within 2 s.
func TestRevocationReachesEveryServer(t *testing.T) {
	t.Parallel()
	c := migrated(t, servertest.Postgres)
	ws := c.run("workspace", "create", "--name", "Two servers", "--plan", "growth")["id"].(string)
	member := c.run("member", "create", "--workspace", ws, "--email", "ops@two.example", "--role", "admin")["id"].(string)
	key := c.run("key", "create", "--member", member, "--access", "read")
	secret := key["secret"].(string)
	a, _ := startServer(t, c)
	b, _ := startServer(t, c)
	status := func(base string) int {
		code, _ := mustCall(t, base, secret, "GET", "/v1/me", "")
		return code
	}
	if status(a) != 200 || status(b) != 200 {
		t.Fatal("key not accepted before revocation")
	}
	c.run("key", "revoke", key["id"].(string))
	revokedAt := time.Now()
	for _, base := range []string{a, b} {
		for status(base) != 401 {
			// The 2 s bound of DESIGN.md §4, with a margin for a loaded machine: both refused the key
			// 3-92 ms after recordsctl exited at a load average of 8-9 on 2 cores.
			if time.Since(revokedAt) > 3*time.Second {
				t.Fatalf("%s still accepts the revoked key after 3 s", base)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	t.Logf("refused by both servers %v after recordsctl exited", time.Since(revokedAt).Round(time.Millisecond))
}

// Two recordsd processes sharing Redis: with a limit of N per minute, 4N concurrent requests spread over
// both get exactly N successes.
func TestRateLimitAcrossServersWithRedis(t *testing.T) {
	t.Parallel()
	redisURL := os.Getenv("RECORDS_TEST_REDIS")
	if redisURL == "" {
		redisURL = "redis://127.0.0.1:6379/0"
	}
	if client, err := limits.ParseRedisURL(redisURL); err != nil {
		t.Fatal(err)
	} else if err := client.Ping(context.Background()).Err(); err != nil {
		client.Close()
		if os.Getenv("CI") == "true" {
			t.Fatalf("Redis is required when CI=true: %v", err)
		}
		t.Skipf("Redis not reachable: %v", err)
	} else {
		client.Close()
	}
	c := migrated(t, servertest.Postgres)
	ws := c.run("workspace", "create", "--name", "Shared limits", "--plan", "growth")["id"].(string)
	const n = 30
	c.run("workspace", "set-limits", ws, "--key-per-minute", "30", "--key-per-hour", "10000", "--workspace-per-minute", "10000")
	member := c.run("member", "create", "--workspace", ws, "--email", "ops@shared.example", "--role", "admin")["id"].(string)
	secret := c.run("key", "create", "--member", member, "--access", "read")["secret"].(string)
	// A Redis call past --redis-timeout is judged by the server alone (the limits' fallback, tested
	// elsewhere); this test is about the shared count, so a loaded machine must not trigger it.
	a, _ := startServer(t, c, "--redis", redisURL, "--redis-timeout", "3s")
	b, _ := startServer(t, c, "--redis", redisURL, "--redis-timeout", "3s")
	// Ready: the schemas each server compiles right after it starts serving are done, so the burst
	// below does not race that work for the processor (a Redis call past its timeout would be judged
	// by the server alone, as the limits' fallback is meant to).
	for _, base := range []string{a, b} {
		if _, ok := servertest.WaitFor(10*time.Second, func() bool {
			code, _, err := call(base, "", "GET", "/readyz", "")
			return err == nil && code == 200
		}); !ok {
			t.Fatalf("%s not ready within 10 s", base)
		}
	}
	var ok, limited atomic.Int64
	var wg sync.WaitGroup
	for i := 0; i < 4*n; i++ {
		base := a
		if i%2 == 1 {
			base = b
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			code, _, err := call(base, secret, "GET", "/v1/me", "")
			if err != nil {
				t.Error(err) // not Fatal: this is not the test goroutine
				return
			}
			switch code {
			case 200:
				ok.Add(1)
			case 429:
				limited.Add(1)
			default:
				t.Errorf("status %d", code)
			}
		}()
	}
	wg.Wait()
	if ok.Load() != n || limited.Load() != 3*n {
		t.Errorf("%d × 200 and %d × 429, want %d and %d", ok.Load(), limited.Load(), n, 3*n)
	}
}

// Two servers on one PostgreSQL: a custom field created with recordsctl is in both catalogs and writable
// on both within 2 seconds, with no restart.
func TestCustomFieldReachesEveryServer(t *testing.T) {
	t.Parallel()
	c := migrated(t, servertest.Postgres)
	ws := c.run("workspace", "create", "--name", "Live catalog", "--plan", "growth")["id"].(string)
	member := c.run("member", "create", "--workspace", ws, "--email", "ops@live.example", "--role", "admin")["id"].(string)
	secret := c.run("key", "create", "--member", member, "--access", "write")["secret"].(string)
	a, _ := startServer(t, c)
	b, _ := startServer(t, c)
	call := func(base, method, path, body string) (int, map[string]any) {
		return mustCall(t, base, secret, method, path, body)
	}
	// Both servers have served the catalog once, so they hold a snapshot without the field.
	for _, base := range []string{a, b} {
		if code, _ := call(base, "GET", "/v1/resources/deals", ""); code != 200 {
			t.Fatalf("catalog: %d", code)
		}
	}
	created := c.run("field", "create", "--workspace", ws, "--resource", "deals", "--key", "tier", "--type", "select", "--options", "gold,silver")
	if !strings.HasPrefix(created["filter_key"].(string), "cfv:") {
		t.Fatalf("field create printed %v", created)
	}
	start := time.Now()
	for _, base := range []string{a, b} {
		for {
			_, doc := call(base, "GET", "/v1/resources/deals", "")
			custom, _ := doc["data"].(map[string]any)["custom_fields"].([]any)
			if len(custom) == 1 {
				break
			}
			// The 2 s bound of DESIGN.md §4, with a margin for a loaded machine: both listed the field
			// 0.58-0.83 s after recordsctl exited at a load average of 8-13 on 2 cores.
			if time.Since(start) > 3*time.Second {
				t.Fatalf("%s does not list the new custom field after 3 s", base)
			}
			time.Sleep(50 * time.Millisecond)
		}
		t.Logf("%s lists the field %v after recordsctl exited", base, time.Since(start).Round(time.Millisecond))
		if code, out := call(base, "POST", "/v1/deals", `{"name":"Live","cf__tier":"gold"}`); code != 201 {
			t.Errorf("%s refuses the new custom field: %d %v", base, code, out)
		}
	}
}

// call sends one API request with key and decodes the JSON answer.
func call(base, key, method, path, body string) (int, map[string]any, error) {
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, base+path, rd)
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Authorization", "Bearer "+key)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer res.Body.Close()
	var out map[string]any
	data, err := io.ReadAll(res.Body)
	if err != nil {
		return 0, nil, err
	}
	if len(data) > 0 {
		if err := json.Unmarshal(data, &out); err != nil {
			return res.StatusCode, nil, fmt.Errorf("%s %s: answer is not JSON: %q", method, path, data)
		}
	}
	return res.StatusCode, out, nil
}

// mustCall is call for the test goroutine.
func mustCall(t *testing.T, base, key, method, path, body string) (int, map[string]any) {
	t.Helper()
	code, out, err := call(base, key, method, path, body)
	if err != nil {
		t.Fatal(err)
	}
	return code, out
}

package limits

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"io"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// testRedis connects to RECORDS_TEST_REDIS (default redis://127.0.0.1:6379/0). Without Redis the test
// is skipped, except with CI=true, where it fails.
func testRedis(t testing.TB) *redis.Client {
	t.Helper()
	url := os.Getenv("RECORDS_TEST_REDIS")
	if url == "" {
		url = "redis://127.0.0.1:6379/0"
	}
	c, err := ParseRedisURL(url)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := c.Ping(ctx).Err(); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("Redis is required when CI=true: %v", err)
		}
		t.Skipf("Redis not reachable: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func prefix() string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return "records-test:" + hex.EncodeToString(b) + ":"
}

// Two servers sharing Redis: 4N concurrent requests get exactly N through.
func TestRedisExactAcrossServers(t *testing.T) {
	p := prefix()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	a := NewRedis(testRedis(t), p, log)
	b := NewRedis(testRedis(t), p, log)
	a.Timeout, b.Timeout = 2*time.Second, 2*time.Second
	const n = 40
	windows := []Window{{Key: "k:min", Limit: n, Period: time.Minute}, {Key: "k:hour", Limit: 1000, Period: time.Hour}, {Key: "w:min", Limit: 1000, Period: time.Minute}}
	var ok atomic.Int64
	var wg sync.WaitGroup
	for i := 0; i < 4*n; i++ {
		l := a
		if i%2 == 1 {
			l = b
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			d, err := l.Allow(context.Background(), time.Now(), windows)
			if err != nil {
				t.Error(err)
			}
			if d.Allowed {
				ok.Add(1)
			}
		}()
	}
	wg.Wait()
	if ok.Load() != n {
		t.Fatalf("%d allowed, want %d", ok.Load(), n)
	}
	d, _ := a.Allow(context.Background(), time.Now(), windows)
	if d.Allowed || d.Limit != n || d.RetryAfter <= 0 || d.RetryAfter > time.Minute/n+time.Second {
		t.Errorf("refusal: %+v", d)
	}
}

// With Redis unreachable, each server still limits on its own.
func TestRedisFallback(t *testing.T) {
	c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", DialTimeout: 50 * time.Millisecond})
	defer c.Close()
	l := NewRedis(c, prefix(), slog.New(slog.NewTextHandler(io.Discard, nil)))
	w := []Window{{Key: "k", Limit: 2, Period: time.Minute}}
	for i, want := range []bool{true, true, false} {
		d, err := l.Allow(context.Background(), time.Now(), w)
		if err != nil || d.Allowed != want {
			t.Fatalf("request %d: %+v %v", i, d, err)
		}
	}
}

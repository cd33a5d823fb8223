package limits

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Exactness: 4N concurrent requests against a fresh limit of N get exactly N through.
func TestLocalExactUnderConcurrency(t *testing.T) {
	l := NewLocal()
	const n = 50
	now := time.Now()
	windows := []Window{{Key: "k:min", Limit: n, Period: time.Minute}, {Key: "k:hour", Limit: 1000, Period: time.Hour}, {Key: "w:min", Limit: 500, Period: time.Minute}}
	var ok atomic.Int64
	var wg sync.WaitGroup
	for i := 0; i < 4*n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			d, err := l.Allow(context.Background(), now, windows)
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
}

func TestLocalHeadersAndRecovery(t *testing.T) {
	l := NewLocal()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	w := []Window{{Key: "a", Limit: 3, Period: time.Minute}, {Key: "b", Limit: 100, Period: time.Hour}}
	for i, want := range []int64{2, 1, 0} {
		d, _ := l.Allow(context.Background(), now, w)
		if !d.Allowed || d.Limit != 3 || d.Remaining != want {
			t.Fatalf("request %d: %+v, want remaining %d of 3", i, d, want)
		}
	}
	// A refusal reports the window that refused, with Reset = RetryAfter: when it admits again.
	d, _ := l.Allow(context.Background(), now, w)
	if d.Allowed || d.RetryAfter != 20*time.Second || d.Reset != 20*time.Second || d.Limit != 3 || d.Remaining != 0 {
		t.Fatalf("refusal: %+v (want limit 3, remaining 0, retry after and reset 20s)", d)
	}
	// A refusal consumes nothing from the hour window.
	d, _ = l.Allow(context.Background(), now.Add(20*time.Second), w)
	if !d.Allowed {
		t.Fatalf("after 20s: %+v", d)
	}
	// Four requests were allowed in all: the hour window advanced by exactly four intervals of 36 s.
	if got := time.Duration(l.shards[l.index("b")].tats["b"] - now.UnixNano()); got != 4*36*time.Second {
		t.Errorf("hour window at %v, want 2m24s: a refused request consumed it", got)
	}
}

// Replenished windows are dropped as the limiter keeps growing: memory follows live keys, not history.
func TestSweepDropsReplenishedWindows(t *testing.T) {
	l := NewLocal()
	now := time.Now()
	first := 64 * sweepAt
	for i := 0; i < first; i++ {
		l.Allow(context.Background(), now, []Window{{Key: fmt.Sprint("old", i), Limit: 10, Period: time.Millisecond}})
	}
	later := now.Add(time.Second) // every "old" window is replenished by now
	for i := 0; i < 4*first; i++ {
		l.Allow(context.Background(), later, []Window{{Key: fmt.Sprint("new", i), Limit: 10, Period: time.Hour}})
	}
	old := 0
	for i := range l.shards {
		for k := range l.shards[i].tats {
			if strings.HasPrefix(k, "old") {
				old++
			}
		}
	}
	if old != 0 {
		t.Errorf("%d replenished windows still kept", old)
	}
}

// Huge limits (e.g. a workspace override) never divide by zero.
func TestHugeLimit(t *testing.T) {
	l := NewLocal()
	d, err := l.Allow(context.Background(), time.Now(), []Window{{Key: "k", Limit: 1 << 62, Period: time.Minute}})
	if err != nil || !d.Allowed {
		t.Fatalf("%+v %v", d, err)
	}
}

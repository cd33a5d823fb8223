package main

import (
	"context"
	"errors"
	"math/rand/v2"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// TestDrive checks the load generator on a worker of known latency: warm-up calls are not counted,
// throughput and percentiles follow the latency and concurrency, and errors are counted apart.
func TestDrive(t *testing.T) {
	var calls atomic.Int64
	r := drive(context.Background(), 4, 100*time.Millisecond, 400*time.Millisecond, func(context.Context, *rand.Rand) error {
		n := calls.Add(1)
		time.Sleep(2 * time.Millisecond)
		if n%10 == 0 {
			return errors.New("every tenth fails")
		}
		return nil
	})
	if r.N == 0 || int64(r.N+r.Errors) >= calls.Load() {
		t.Fatalf("measured %d ok + %d errors of %d calls: the warm-up must not count", r.N, r.Errors, calls.Load())
	}
	if r.Errors == 0 || r.FirstErr != "every tenth fails" {
		t.Errorf("errors %d (%q)", r.Errors, r.FirstErr)
	}
	if r.P50 < 2*time.Millisecond || r.P99 < r.P50 {
		t.Errorf("p50 %s p99 %s, want ≥ 2 ms and ordered", r.P50, r.P99)
	}
	// Four workers of ~2 ms each: at most 2,000 per second, and not far below it.
	if rate := r.Rate(); rate > 2000 || rate < 500 {
		t.Errorf("rate %.0f/s, want 500–2000", rate)
	}
	if r.Elapsed < 350*time.Millisecond || r.Elapsed > 600*time.Millisecond {
		t.Errorf("measured for %s, want about 400 ms", r.Elapsed)
	}
}

// TestTargets checks the verdicts on a made-up run: each target passes or misses on its own figures.
func TestTargets(t *testing.T) {
	res := func(rate float64, p50 time.Duration) result {
		return result{N: int(rate), Elapsed: time.Second, P50: p50}
	}
	pg := &report{backend: "postgres", rows: 1000, ready: []time.Duration{200 * time.Millisecond, 250 * time.Millisecond, 400 * time.Millisecond},
		rounds: []sample{{60, 70}, {61, 70}, {90, 70}}}
	pg.phases = []phase{
		{op: "get", c: 8, api: res(900, time.Millisecond), floor: res(1000, time.Millisecond), hasFloor: true, after: sample{50, 60}},
		{op: "get", c: 32, api: res(700, time.Millisecond), floor: res(1000, time.Millisecond), hasFloor: true, after: sample{160, 60}},
		{op: "first_page", c: 8, api: res(100, 10*time.Millisecond), floor: res(110, 9*time.Millisecond), hasFloor: true},
		{op: "deep_page", c: 8, api: res(95, 10*time.Millisecond), floor: res(100, 9*time.Millisecond), hasFloor: true},
		{op: "filter_declared", c: 1, api: res(100, 1*time.Millisecond)},
		{op: "filter_custom", c: 1, api: res(50, 3*time.Millisecond)},
		{op: "create", c: 8, api: res(300, time.Millisecond), raw: res(1000, time.Millisecond), hasRaw: true},
	}
	lite := &report{backend: "sqlite", rows: 1000, phases: []phase{{op: "get", c: 8, api: res(600, time.Millisecond)}}}
	got := map[string]bool{}
	for _, v := range targets([]*report{pg, lite}) {
		got[v.name] = v.ok
	}
	want := map[string]bool{
		"[postgres] GET by id ≥ 0.8× floor at c=8":                                       true,
		"[postgres] GET by id ≥ 0.8× floor at c=32":                                      false,
		"[postgres] first page ≥ 0.8× floor at c=8":                                      true,
		"[postgres] cursor page at depth 500 ≥ 0.9× first page at c=8 (throughput, p50)": true,
		"[postgres] custom-field filter p50 within 2× of the declared one at c=1":        false,
		"[postgres] create with validation and Idempotency-Key ≥ 0.5× raw insert at c=8": false,
		"[postgres] RSS under 150 MB after the c=32 phases":                              false,
		"[postgres] memory and goroutines flat over the closing rounds":                  false,
		"[postgres] start to serving under 300 ms (44 resources, 3 plugins)":             true,
		"SQLite get ≥ 0.8× PostgreSQL at c=8":                                            false,
	}
	for name, ok := range want {
		if g, found := got[name]; !found || g != ok {
			t.Errorf("%s: got %v (present %v), want %v", name, g, found, ok)
		}
	}
	text := render(options{duration: time.Second, warmup: time.Second, conc: []int{8, 32}}, []*report{pg, lite}, 2)
	for _, s := range []string{"| get | 8 | 900 |", "0.90×", "MISS [postgres] GET by id ≥ 0.8× floor at c=32: 0.70×"} {
		if !strings.Contains(text, s) {
			t.Errorf("report lacks %q", s)
		}
	}
}

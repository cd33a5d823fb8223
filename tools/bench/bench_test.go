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

// TestTargets checks the verdicts on a made-up run: each target passes or misses on its own figures,
// ratios taken as the median of the rounds.
func TestTargets(t *testing.T) {
	res := func(rate float64, p50 time.Duration) result {
		return result{N: int(rate), Elapsed: time.Second, P50: p50}
	}
	pg := &report{backend: "postgres", rows: 1000, ready: []time.Duration{200 * time.Millisecond, 250 * time.Millisecond, 400 * time.Millisecond},
		rounds: []sample{{60, 70}, {61, 70}, {90, 70}}, seed: time.Second / 10, pool: 8, tls: "off"}
	pg.phases = []phase{
		{op: "get", c: 8, api: res(950, time.Millisecond), floor: res(1000, time.Millisecond), hasFloor: true, vsFloor: []float64{0.5, 0.95, 0.97}, after: sample{50, 60}},
		{op: "get", c: 32, api: res(700, time.Millisecond), floor: res(1000, time.Millisecond), hasFloor: true, vsFloor: []float64{0.7, 0.99, 0.6}, after: sample{160, 60}},
		{op: "first_page", c: 8, api: res(100, 10*time.Millisecond), floor: res(110, 9*time.Millisecond), hasFloor: true, vsFloor: []float64{0.91},
			su: res(105, 9*time.Millisecond), hasSU: true, vsSU: []float64{0.8, 0.85, 0.99}},
		{op: "deep_page", c: 8, api: res(95, 10*time.Millisecond), floor: res(100, 9*time.Millisecond), hasFloor: true, vsFloor: []float64{0.95},
			su: res(96, 9*time.Millisecond), hasSU: true, vsSU: []float64{0.93, 0.99}},
		{op: "filter_declared", c: 1, api: res(100, 1*time.Millisecond)},
		{op: "filter_custom", c: 1, api: res(50, 3*time.Millisecond)},
		{op: "create", c: 8, api: res(300, time.Millisecond), raw: res(1000, time.Millisecond), hasRaw: true, vsRaw: []float64{0.3}},
		{op: "get", c: 8, config: " (Redis, 10 keys)", api: res(850, time.Millisecond), floor: res(1000, time.Millisecond), hasFloor: true, vsFloor: []float64{0.85, 0.86}},
	}
	lite := &report{backend: "sqlite", rows: 1000, seed: 2 * time.Second, phases: []phase{
		{op: "get", c: 8, api: res(1200, time.Millisecond), floor: res(1400, time.Millisecond), hasFloor: true, vsFloor: []float64{0.85}},
		{op: "get", c: 32, api: res(600, time.Millisecond), floor: res(1000, time.Millisecond), hasFloor: true, vsFloor: []float64{0.6}},
	}}
	got := map[string]bool{}
	for _, v := range targets([]*report{pg, lite}) {
		got[v.name] = v.ok
	}
	want := map[string]bool{
		"[postgres] get ≥ 0.9× the floor at c=8 (median of rounds)":                         true,
		"[postgres] get ≥ 0.9× the floor at c=32 (median of rounds)":                        false,
		"[postgres] first_page ≥ 0.9× the floor at c=8 (median of rounds)":                  true,
		"[postgres] first_page under row-level security within 10% of the superuser at c=8": false,
		"[postgres] deep_page under row-level security within 10% of the superuser at c=8":  true,
		"[postgres] GET (Redis, 10 keys) ≥ 0.8× the floor at c=8":                           true,
		"[postgres] cursor page at depth 500 ≥ 0.9× first page at c=8 (throughput, p50)":    true,
		"[postgres] custom-field filter p50 within 2× of the declared one at c=1":           false,
		"[postgres] create with validation and Idempotency-Key ≥ 0.5× raw insert at c=8":    false,
		"[postgres] RSS under 150 MB after the c=32 phases":                                 false,
		"[postgres] memory and goroutines flat over the closing rounds":                     false,
		"[postgres] start to serving under 300 ms (44 resources, 3 plugins)":                true,
		"[postgres] recordsctl seed ≥ 20,000 records/s":                                     false,
		"[sqlite] get ≥ 0.8× the floor at c=8 (median of rounds)":                           true,
		"[sqlite] get ≥ 0.8× the floor at c=32 (median of rounds)":                          false,
		"[sqlite] recordsctl seed ≥ 20,000 records/s":                                       false,
		"SQLite GET ≥ PostgreSQL GET at c=8":                                                true,
		"SQLite GET ≥ PostgreSQL GET at c=32":                                               false,
	}
	for name, ok := range want {
		if g, found := got[name]; !found || g != ok {
			t.Errorf("%s: got %v (present %v), want %v", name, g, found, ok)
		}
	}
	text := render(options{duration: time.Second, warmup: time.Second, conc: []int{8, 32}, repeats: 3}, []*report{pg, lite}, 2)
	for _, s := range []string{"| get | 8 | 950 |", "0.95× (0.50–0.97)", "| get (Redis, 10 keys) | 8 | 850 |",
		"| first_page | 8 | 100 | 10.00 ms | 105 | 9.00 ms | 0.85× (0.80–0.99) |",
		"MISS [postgres] get ≥ 0.9× the floor at c=32 (median of rounds): 0.70× (0.60–0.99)", "`records_bench_owner`"} {
		if !strings.Contains(text, s) {
			t.Errorf("report lacks %q", s)
		}
	}
}

// TestRatios: per-round ratios, their median and range.
func TestRatios(t *testing.T) {
	a := []result{{N: 90, Elapsed: time.Second}, {N: 50, Elapsed: time.Second}, {N: 100, Elapsed: time.Second}}
	b := []result{{N: 100, Elapsed: time.Second}, {N: 100, Elapsed: time.Second}, {N: 100, Elapsed: time.Second}}
	rs := ratios(a, b)
	if len(rs) != 3 || medianOf(rs) != 0.9 || spread(rs) != "0.90× (0.50–1.00)" {
		t.Errorf("ratios %v, median %v, spread %q", rs, medianOf(rs), spread(rs))
	}
	if ratios(a, nil) != nil || spread(nil) != "–" || medianOf([]float64{1, 2}) != 1.5 {
		t.Error("no rounds of the other target: no ratio")
	}
	c := combine([]result{{N: 10, Elapsed: time.Second, P50: 3, P99: 9}, {N: 30, Elapsed: time.Second, P50: 1, P99: 5, Errors: 1, FirstErr: "x"}, {N: 20, Elapsed: time.Second, P50: 2, P99: 7}})
	if c.N != 60 || c.Elapsed != 3*time.Second || c.P50 != 2 || c.P99 != 7 || c.Errors != 1 || c.FirstErr != "x" || c.Rate() != 20 {
		t.Errorf("combine: %+v", c)
	}
}

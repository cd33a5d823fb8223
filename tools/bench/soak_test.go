package main

import (
	"strings"
	"testing"
	"time"
)

// TestSoakVerdicts checks the soak's criteria on made-up results: a clean run passes, and each kind of
// failure — a 500 during the warm-up, an unexpected answer, an unanswered request, a lost, duplicated
// or stale write, a replay that is not one, too many or no refused burst requests, a 429 without its
// headers, memory or goroutine growth — fails with its own line.
func TestSoakVerdicts(t *testing.T) {
	o := soakOptions{readers: 3, writers: 2, burstLimit: 60, burstEvery: 10 * time.Second, warmup: time.Minute,
		think: 20 * time.Millisecond, rssFactor: 1.25, rssSlackMB: 16, goSlack: 10}
	clean := func() soakResult {
		return soakResult{
			duration: 10 * time.Minute, start: sample{60, 80}, end: sample{70, 85}, peakRSS: 75,
			kinds: []kindFigures{
				{name: "get", n: 1000, status: map[int]int{200: 1000}, p50: time.Millisecond, p99: 5 * time.Millisecond},
				{name: "burst", n: 600, status: map[int]int{200: 100, 429: 500}},
				{name: "create", n: 100, status: map[int]int{201: 99, 503: 1}},
			},
			verify: verifyResult{companies: 99, deals: 10},
			burst:  burstResult{admitted: 100, refused: 500, bound: 661, span: 10 * time.Minute},
		}
	}
	text, ok := clean().render(o)
	if !ok || strings.Contains(text, "FAIL") {
		t.Fatalf("a clean run fails:\n%s", text)
	}
	for _, want := range []string{"| get | 1000 | 200: 1000 | 1.00 ms | 5.00 ms | 0 | 0 |", "| **all** | 1700 | 200: 1100, 201: 99, 429: 500, 503: 1 |",
		"start 60.0 MB RSS, 80 goroutines; end 70.0 MB, 85 goroutines"} {
		if !strings.Contains(text, want) {
			t.Errorf("report lacks %q:\n%s", want, text)
		}
	}
	cases := map[string]func(r *soakResult){
		"FAIL no 5xx other than 503":                                             func(r *soakResult) { r.warm = []kindFigures{{name: "get", n: 1, status: map[int]int{500: 1}}} },
		"FAIL every request answered as its client expected":                     func(r *soakResult) { r.kinds[0].unexpected = 1 },
		"FAIL every request answered as its client":                              func(r *soakResult) { r.warm = []kindFigures{{name: "get", transport: 1}} },
		"FAIL X-Request-Id":                                                      func(r *soakResult) { r.missingRequestID = 1 },
		"FAIL every acknowledged write":                                          func(r *soakResult) { r.verify.missing = 1 },
		"FAIL every acknowledged write in the database once":                     func(r *soakResult) { r.verify.duplicated = 1 },
		"FAIL every acknowledged write in the":                                   func(r *soakResult) { r.verify.wrongValue = 1 },
		"FAIL idempotent retries":                                                func(r *soakResult) { r.idemViolations = 2 },
		"FAIL bursts limited: 662 admitted":                                      func(r *soakResult) { r.burst.admitted = 662 },
		"FAIL bursts limited: 100 admitted of at most 661 over 10m0s, 0 refused": func(r *soakResult) { r.burst.refused = 0 },
		"did not)":        func(r *soakResult) { r.burst.badRefusal = 1 },
		"FAIL RSS flat":   func(r *soakResult) { r.end.rssMB = 92 },
		"FAIL goroutines": func(r *soakResult) { r.end.goroutines = 91 },
	}
	for want, spoil := range cases {
		r := clean()
		spoil(&r)
		text, ok := r.render(o)
		if ok || !strings.Contains(text, want) || !strings.Contains(text, "FAIL") {
			t.Errorf("%s: passed (%v) or lacks the line:\n%s", want, ok, text)
		}
	}
}

// TestBurstBound: GCRA admits the limit at once, then the limit per minute.
func TestBurstBound(t *testing.T) {
	var b burstStats
	t0 := time.Now()
	b.first, b.last, b.admitted, b.refused = t0, t0.Add(30*time.Second), 91, 9
	r := b.result(60)
	if r.bound != 60+30+1 || r.admitted != 91 || r.refused != 9 || r.span != 30*time.Second {
		t.Errorf("result %+v, want a bound of 91 over 30 s", r)
	}
}

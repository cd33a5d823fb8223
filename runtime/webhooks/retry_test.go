package webhooks

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

func TestRetrySchedule(t *testing.T) {
	t.Parallel()
	s := RetrySchedule()
	if len(s) != MaxAttempts {
		t.Fatalf("%d delays, want %d", len(s), MaxAttempts)
	}
	var total time.Duration
	for i, d := range s {
		if i > 0 && d < s[i-1] {
			t.Errorf("delay %d (%s) is shorter than delay %d (%s)", i, d, i-1, s[i-1])
		}
		total += d
	}
	if s[0] != 0 {
		t.Errorf("the first attempt waits %s", s[0])
	}
	if total != NominalRetrySpan {
		t.Errorf("the schedule sums to %s, NominalRetrySpan is %s", total, NominalRetrySpan)
	}
	if total < 24*time.Hour || total > 30*time.Hour {
		t.Errorf("the schedule spans %s, want about a day", total)
	}
	s[1] = time.Hour
	if RetrySchedule()[1] != 5*time.Second {
		t.Error("RetrySchedule returns the package's array")
	}
}

func TestNextAttempt(t *testing.T) {
	t.Parallel()
	nominal := RetrySchedule()
	fixed := func(f float64) func() float64 { return func() float64 { return f } }
	for attempts := 1; attempts < MaxAttempts; attempts++ {
		n := nominal[attempts]
		lo, ok := NextAttempt(attempts, fixed(0))
		if !ok || lo != time.Duration(float64(n)*0.8) {
			t.Errorf("NextAttempt(%d, 0) = %s, %v; want %s", attempts, lo, ok, time.Duration(float64(n)*0.8))
		}
		mid, _ := NextAttempt(attempts, fixed(0.5))
		if mid != n {
			t.Errorf("NextAttempt(%d, 0.5) = %s, want the nominal %s", attempts, mid, n)
		}
		hi, _ := NextAttempt(attempts, fixed(0.999999))
		if hi >= time.Duration(float64(n)*1.2) || hi < time.Duration(float64(n)*1.19) {
			t.Errorf("NextAttempt(%d, ~1) = %s, want just under %s", attempts, hi, time.Duration(float64(n)*1.2))
		}
		for _, bad := range []float64{-1, 1, 7, math.NaN()} {
			if d, _ := NextAttempt(attempts, fixed(bad)); d != n {
				t.Errorf("NextAttempt(%d, %v) = %s, want the nominal %s", attempts, bad, d, n)
			}
		}
	}
	if d, ok := NextAttempt(0, nil); d != 0 || !ok {
		t.Errorf("NextAttempt(0) = %s, %v; want 0, true", d, ok)
	}
	if d, ok := NextAttempt(-3, nil); d != 0 || !ok {
		t.Errorf("NextAttempt(-3) = %s, %v; want 0, true", d, ok)
	}
	for _, attempts := range []int{MaxAttempts, MaxAttempts + 1, 1000} {
		if d, ok := NextAttempt(attempts, nil); ok || d != 0 {
			t.Errorf("NextAttempt(%d) = %s, %v; want exhausted", attempts, d, ok)
		}
	}
}

// TestNextAttemptJitterBounds draws many schedules from a seeded generator: every delay is within
// ±20% of nominal, the jitter is used (not constant), and a whole schedule spans 80%–120% of the span.
func TestNextAttemptJitterBounds(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(1, 2))
	nominal := RetrySchedule()
	for range 1000 {
		var total time.Duration
		attempts := 1
		for ; ; attempts++ {
			d, ok := NextAttempt(attempts, r.Float64)
			if !ok {
				break
			}
			n := nominal[attempts]
			if d < time.Duration(float64(n)*0.8) || d > time.Duration(float64(n)*1.2) {
				t.Fatalf("delay %d: %s outside ±20%% of %s", attempts, d, n)
			}
			total += d
		}
		if attempts != MaxAttempts {
			t.Fatalf("exhausted after %d attempts, want %d", attempts, MaxAttempts)
		}
		if total < NominalRetrySpan*8/10 || total > NominalRetrySpan*12/10 {
			t.Fatalf("a schedule spans %s", total)
		}
	}
	a, _ := NextAttempt(4, r.Float64)
	b, _ := NextAttempt(4, r.Float64)
	c, _ := NextAttempt(4, nil)
	d, _ := NextAttempt(4, nil)
	if a == b && c == d {
		t.Fatal("no jitter")
	}
}

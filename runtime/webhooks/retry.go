package webhooks

import (
	"math/rand/v2"
	"time"
)

// MaxAttempts is how many attempts a message gets: the first, at once, and seven retries.
const MaxAttempts = 8

// NominalRetrySpan is the nominal time from a message's first attempt to its last, the sum of the
// schedule of [NextAttempt] without jitter: 27 h 35 min 5 s. With jitter the last attempt comes between
// 80% and 120% of it.
const NominalRetrySpan = 27*time.Hour + 35*time.Minute + 5*time.Second

// Jitter is the fraction by which [NextAttempt] moves a delay either way, so that messages that failed
// together (an endpoint's outage) do not all come back at once.
const Jitter = 0.2

// schedule is the nominal delay before each attempt, the first at index 0: the example schedule of
// the Standard Webhooks specification (as Svix sends), cut after a day: immediately, 5 s, 5 min,
// 30 min, 2 h, 5 h, 10 h, 10 h.
var schedule = [MaxAttempts]time.Duration{
	0,
	5 * time.Second,
	5 * time.Minute,
	30 * time.Minute,
	2 * time.Hour,
	5 * time.Hour,
	10 * time.Hour,
	10 * time.Hour,
}

// RetrySchedule returns the nominal delays before each of the [MaxAttempts] attempts, the first (0:
// immediately) included, without jitter. They sum to [NominalRetrySpan].
func RetrySchedule() []time.Duration {
	return append([]time.Duration(nil), schedule[:]...)
}

// NextAttempt returns how long to wait before the next attempt of a message of which attempts have been
// made and failed, and false when none is left (attempts >= [MaxAttempts]): the message has failed for
// good. attempts <= 0 asks for the first attempt: 0, at once.
//
// The nominal delay (see [RetrySchedule]) is moved by up to ±[Jitter], uniformly: delay × (1 − Jitter +
// 2 × Jitter × rnd()). rnd returns a number in [0, 1) — (*math/rand/v2.Rand).Float64 or
// (*math/rand.Rand).Float64, or a fixed function in tests; nil uses math/rand/v2's Float64. A delay
// asked for by the endpoint (Attempt.RetryAfter) is the caller's to apply on top.
func NextAttempt(attempts int, rnd func() float64) (time.Duration, bool) {
	if attempts >= MaxAttempts {
		return 0, false
	}
	if attempts <= 0 {
		return 0, true
	}
	if rnd == nil {
		rnd = rand.Float64
	}
	f := rnd()
	if !(f >= 0 && f < 1) { // out of contract (NaN included): take the nominal delay
		f = 0.5
	}
	nominal := schedule[attempts]
	return time.Duration(float64(nominal) * (1 - Jitter + 2*Jitter*f)), true
}

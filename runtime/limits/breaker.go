package limits

import (
	"context"
	"errors"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// breaker tracks whether Redis answers. After openAfter failures in a row it opens: requests are judged
// locally at once, without asking Redis, and a background probe pings Redis every retry interval until
// it answers, which closes the breaker again. So when Redis stops answering (a black hole rather than a
// refused connection) only the requests already waiting pay the timeout, not every request of the
// outage; a single slow answer does not open it, so a hiccup costs only that request's exactness. It
// logs once when Redis is lost (at most once a minute) and once when it is back.
type breaker struct {
	what     string // which part falls back, for the log
	fallback string // what it does instead, for the log
	log      *slog.Logger
	client   redis.UniversalClient // pinged by the probe
	timeout  time.Duration         // of a probe's ping
	fails    atomic.Int32          // failures in a row
	probing  atomic.Bool
	down     atomic.Bool  // the outage was logged and the recovery not yet
	lastWarn atomic.Int64 // unix seconds of the last outage line
	falls    atomic.Uint64
}

const (
	// defaultRetry is how often an open breaker's probe pings Redis.
	defaultRetry = time.Second
	// openAfter is how many failures in a row open the breaker.
	openAfter = 3
)

// try reports whether Redis should be asked now; when not, the caller falls back (and counts it with
// fellBack).
func (b *breaker) try() bool { return b.fails.Load() < openAfter }

// fellBack counts a request judged locally without asking Redis.
func (b *breaker) fellBack() { b.falls.Add(1) }

// failed records a failed call, whose request then falls back.
func (b *breaker) failed(err error, retry time.Duration) {
	b.falls.Add(1)
	if b.fails.Add(1) >= openAfter && b.probing.CompareAndSwap(false, true) {
		go b.probe(retry)
	}
	now := time.Now().Unix()
	if last := b.lastWarn.Load(); !b.down.Load() && now-last >= 60 && b.lastWarn.CompareAndSwap(last, now) {
		b.down.Store(true)
		b.log.Warn(b.what+": Redis unavailable, "+b.fallback, "err", err)
	}
}

// probe pings Redis every retry until it answers (then closes the breaker) or the client is closed.
func (b *breaker) probe(retry time.Duration) {
	for {
		time.Sleep(retry)
		ctx, cancel := context.WithTimeout(context.Background(), b.timeout)
		err := b.client.Ping(ctx).Err()
		cancel()
		if err == nil || errors.Is(err, redis.ErrClosed) {
			// Done before closing, so that a failure right after starts a new probe.
			b.probing.Store(false)
			if err == nil {
				b.ok()
			}
			return
		}
	}
}

// ok records a successful call.
func (b *breaker) ok() {
	if b.fails.Load() != 0 {
		b.fails.Store(0)
	}
	if b.down.Load() && b.down.CompareAndSwap(true, false) {
		b.log.Info(b.what + ": Redis available again")
	}
}

// fallbacks is how many requests were judged locally because Redis failed or was not asked.
func (b *breaker) fallbacks() uint64 { return b.falls.Load() }

package limits

import (
	"context"
	"errors"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// breaker tracks whether Redis answers, for the parts that use it (the rate limiter and the quota share
// one when they share a client: Redis.NewQuota). openAfter failed calls in a row open it: requests are
// then judged locally at once, without asking Redis, and a background probe pings Redis every retry
// until it answers, which closes it again. So when Redis stops answering (a black hole rather than a
// refused connection) only the requests already waiting pay the timeout, while a single slow answer on a
// busy server costs only its own request's exactness. It logs once when Redis is lost (at most once a
// minute) and once when it is back.
type breaker struct {
	what     string // which part falls back, for the log
	fallback string // what it does instead, for the log
	log      *slog.Logger
	client   redis.UniversalClient // pinged by the probe
	timeout  time.Duration         // of a probe's ping
	retry    time.Duration         // between probes
	fails    atomic.Int32          // failed calls in a row
	open     atomic.Bool
	down     atomic.Bool  // the outage was logged and the recovery not yet
	lastWarn atomic.Int64 // unix seconds of the last outage line
}

const (
	// defaultRetry is how often an open breaker's probe pings Redis.
	defaultRetry = 200 * time.Millisecond
	// openAfter is how many failed calls in a row open the breaker.
	openAfter = 3
)

func newBreaker(client redis.UniversalClient, log *slog.Logger, what, fallback string) *breaker {
	return &breaker{what: what, fallback: fallback, log: log, client: client, timeout: DefaultRedisTimeout, retry: defaultRetry}
}

// try reports whether Redis should be asked now; when not, the caller falls back.
func (b *breaker) try() bool { return !b.open.Load() }

// failed records a failed call, whose request then falls back.
func (b *breaker) failed(err error) {
	if b.fails.Add(1) >= openAfter && b.open.CompareAndSwap(false, true) {
		go b.probe()
	}
	now := time.Now().Unix()
	if last := b.lastWarn.Load(); !b.down.Load() && now-last >= 60 && b.lastWarn.CompareAndSwap(last, now) {
		b.down.Store(true)
		b.log.Warn(b.what+": Redis unavailable, "+b.fallback, "err", err)
	}
}

// probe pings Redis every retry until it answers (then closes the breaker) or the client is closed.
func (b *breaker) probe() {
	for {
		time.Sleep(b.retry)
		ctx, cancel := context.WithTimeout(context.Background(), b.timeout)
		err := b.client.Ping(ctx).Err()
		cancel()
		if errors.Is(err, redis.ErrClosed) {
			return
		}
		if err == nil {
			b.ok()
			b.open.Store(false)
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

package httpapi

import (
	"context"
	"crypto/sha256"
	"net"
	"net/http"
	"net/netip"
	"sync"
	"time"

	"github.com/workspace-records/records/engine/apierr"
	"github.com/workspace-records/records/runtime/limits"
)

// maxRemembered bounds the blocked addresses and the good keys each; past it, expired entries and then
// arbitrary ones are dropped.
const maxRemembered = 100_000

// authFailures throttles the clients whose keys keep failing: every failed key costs a hashed, indexed
// lookup, so without a bound anyone could spend the database's time with random well-formed keys. The
// failures are counted in the rate limiter (Redis when configured, so every replica counts them); once
// an address has used up its window, this server refuses that address's keys until the window lets one
// through again, except keys that authenticated on this server within the hour, which are looked up as
// usual (a client sharing an address with a misbehaving one keeps working; a guesser cannot produce them).
type authFailures struct {
	limiter limits.Limiter
	limit   int64
	mu      sync.Mutex
	blocked map[netip.Prefix]time.Time // until when
	good    map[[32]byte]time.Time     // hashes of keys that authenticated here, and when
}

// goodFor is how long a key that authenticated keeps passing a blocked address.
const goodFor = time.Hour

// newAuthFailures lets perMinute failing keys a minute from one address (a burst of that many, then one
// every 60/perMinute s); nil, which bounds nothing, for perMinute <= 0.
func newAuthFailures(l limits.Limiter, perMinute int64) *authFailures {
	if l == nil || perMinute <= 0 {
		return nil
	}
	return &authFailures{limiter: l, limit: perMinute, blocked: map[netip.Prefix]time.Time{}, good: map[[32]byte]time.Time{}}
}

// source is the address a request's failures count against: the client IP (behind trusted proxies, as
// for IP allowlists), an IPv6 client by its /64, since one host commonly holds a whole /64.
func source(r *http.Request, proxies []netip.Prefix) netip.Prefix {
	addr, ok := clientIP(r, proxies)
	if !ok {
		host, _, _ := net.SplitHostPort(r.RemoteAddr)
		addr, _ = netip.ParseAddr(host)
		addr = addr.Unmap()
	}
	bits := 32
	if addr.Is6() {
		bits = 64
	}
	p, _ := addr.Prefix(bits)
	return p
}

// refused returns the error for secret from src while src is blocked and secret has not authenticated
// here lately, and nil otherwise.
func (a *authFailures) refused(src netip.Prefix, secret string, now time.Time) error {
	if a == nil {
		return nil
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	until, ok := a.blocked[src]
	if !ok {
		return nil
	}
	if !now.Before(until) {
		delete(a.blocked, src)
		return nil
	}
	if at, ok := a.good[sha256.Sum256([]byte(secret))]; ok && now.Sub(at) < goodFor {
		return nil
	}
	return tooManyFailures(until.Sub(now))
}

// succeeded remembers that secret authenticated.
func (a *authFailures) succeeded(secret string, now time.Time) {
	if a == nil {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.good) >= maxRemembered {
		for k, at := range a.good {
			if now.Sub(at) >= goodFor || len(a.good) >= maxRemembered {
				delete(a.good, k)
			}
		}
	}
	a.good[sha256.Sum256([]byte(secret))] = now
}

// failed counts one failed key from src. When it used up src's window, src's next keys are refused until
// the window lets one through again: for GCRA, one emission interval (a minute / the limit) after the
// last token, or the refusal's RetryAfter.
func (a *authFailures) failed(ctx context.Context, src netip.Prefix, now time.Time) {
	if a == nil {
		return
	}
	d, err := a.limiter.Allow(ctx, now, []limits.Window{{Key: "authfail:" + src.String(), Limit: a.limit, Period: time.Minute}})
	if err != nil {
		return // a limiter that cannot count blocks nobody
	}
	wait := d.RetryAfter
	if d.Allowed {
		if d.Remaining > 0 {
			return
		}
		wait = time.Minute / time.Duration(a.limit)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.blocked) >= maxRemembered {
		for k, until := range a.blocked {
			if !now.Before(until) || len(a.blocked) >= maxRemembered {
				delete(a.blocked, k)
			}
		}
	}
	a.blocked[src] = now.Add(wait)
}

func tooManyFailures(wait time.Duration) error {
	s := seconds(max(wait, time.Second))
	e := apierr.New(apierr.RateLimited, "Too many requests with keys that failed to authenticate from this address; retry after "+s+" s.")
	e.Header = http.Header{"Retry-After": {s}, "X-Ratelimit-Reset": {s}}
	return e
}

// isKeyFailure reports whether err is Authenticate refusing the key itself (401), as opposed to the
// database failing (503).
func isKeyFailure(err error) bool {
	ae, ok := apierr.As(err)
	return ok && ae.Status() == http.StatusUnauthorized
}

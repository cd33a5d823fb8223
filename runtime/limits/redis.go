package limits

import (
	"context"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/workspace-records/records/runtime/store"
)

// gcraScript applies GCRA to every window of a request atomically, on Redis's clock (so servers with
// skewed clocks agree). Times are microseconds, which Lua's doubles hold exactly. ARGV holds limit,
// period and cost of each window in turn. It consumes the windows only when all of them allow the
// request (its cost fits in each), and returns {allowed, limit, remaining, reset_us, retry_us}: of the
// tightest window when allowed, of the refusing window that frees last when refused (as combine; a cost
// above a limit is refused with retry = period, as gcra). What a window admits now is counted in whole
// units from integers, (period - ahead) * limit / period, so that a request of cost limit fits a fresh
// window exactly, whatever the rounding of period / limit.
var gcraScript = redis.NewScript(gcraBody)

const gcraBody = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local allowed = 1
local best_rem, best_limit, best_reset, retry, retry_limit, retry_rem = -1, 0, 0, 0, 0, 0
local tats = {}
for i = 1, #KEYS do
  local limit = tonumber(ARGV[3*i-2])
  local period = tonumber(ARGV[3*i-1])
  local cost = tonumber(ARGV[3*i])
  local tat = tonumber(redis.call('GET', KEYS[i]) or '0')
  if tat < now then tat = now end
  local ahead = tat - now
  local avail = math.floor((period - ahead) * limit / period)
  if avail < 0 then avail = 0 end
  local step = cost * period / limit
  local rem, reset, r
  local refused = true
  if cost > limit then
    r = period
    rem, reset = avail, period
  elseif cost > avail then
    r = math.max(ahead + step - period, 0)
    rem, reset = avail, ahead
  else
    refused = false
    rem, reset = avail - cost, ahead + step
  end
  if refused then
    allowed = 0
    if r > retry or retry_limit == 0 then retry, retry_limit, retry_rem = r, limit, avail end
  end
  tats[i] = tat + step
  if best_rem < 0 or rem < best_rem or (rem == best_rem and reset > best_reset) then
    best_rem, best_limit, best_reset = rem, limit, reset
  end
end
if allowed == 1 then
  for i = 1, #KEYS do
    redis.call('SET', KEYS[i], string.format('%.0f', tats[i]), 'PX', math.ceil(tonumber(ARGV[3*i-1]) / 1000) + 1000)
  end
end
if allowed == 0 then
  best_limit, best_rem, best_reset = retry_limit, retry_rem, retry
end
if best_rem < 0 then best_rem = 0 end
return {allowed, best_limit, best_rem, math.ceil(best_reset), math.ceil(retry)}
`

// admitScript admits a request in one call: gcraScript over the rate windows, then, only when they allow
// it, quotaScript's "take" on the monthly counter, atomically. KEYS are the windows' keys and then the
// counter; ARGV the windows' arguments (as gcraScript's) and then quotaScript's nine. It returns {rate}
// when the windows refuse (nothing consumed, the counter untouched) and {rate, quota} when they allow
// (their units consumed, whatever the quota answers), each the reply of its own script.
var admitScript = redis.NewScript("local function gcra(KEYS, ARGV)" + gcraBody + "end\n" +
	"local function quota(KEYS, ARGV)" + quotaBody + "end\n" + `
local nw = #KEYS - 1
local wkeys, wargv, qargv = {}, {}, {}
for i = 1, nw do wkeys[i] = KEYS[i] end
for i = 1, 3*nw do wargv[i] = ARGV[i] end
for i = 1, 9 do qargv[i] = ARGV[3*nw+i] end
local rate = gcra(wkeys, wargv)
if rate[1] ~= 1 then return {rate} end
return {rate, quota({KEYS[nw+1]}, qargv)}
`)

// DefaultRedisTimeout bounds one call to Redis by the limiter and the quota. It is not tighter because a
// busy server's own scheduling counts against it: at 100 ms, a burst of 200 requests on a loaded
// two-core machine made a replica fall back now and then, and every fallback costs exactness; while
// Redis does not answer at all, only the requests already waiting pay it (see breaker).
const DefaultRedisTimeout = 250 * time.Millisecond

// Redis is a Limiter shared by every server using the same Redis. When Redis fails or does not answer
// within Timeout, a request is judged by the server's own in-process limiter instead (fail open to
// per-server limits, so an outage of Redis never stops the API; each server then enforces the full
// limit on its own). After three failures in a row the server stops asking Redis and pings it in the
// background every 200 ms until it answers, so a Redis that no longer answers costs the timeout only to
// the requests already waiting for it. The outage is logged once (at most once a minute), and so is the
// recovery. With the quota of NewQuota, Admit judges a request's windows and quota in one call to Redis.
type Redis struct {
	client   redis.UniversalClient
	prefix   string
	fallback *Local
	Timeout  time.Duration
	br       *breaker
	falls    atomic.Uint64
}

// NewRedis returns a limiter over client, namespacing keys with prefix.
func NewRedis(client redis.UniversalClient, prefix string, log *slog.Logger) *Redis {
	return &Redis{client: client, prefix: prefix, fallback: NewLocal(), Timeout: DefaultRedisTimeout,
		br: newBreaker(client, log, "rate limiter", "using per-server limits")}
}

// NewQuota returns a quota counter over st that admits through this limiter's Redis (as NewRedisQuota)
// and shares its judgement of whether Redis answers: when the rate limiter finds Redis gone, the quota
// does not wait for it too. Call it before the limiter is used.
func (r *Redis) NewQuota(st store.Store, prefix string) *Quota {
	r.br.what, r.br.fallback = "rate limiter and monthly quota", "using per-server limits and the database's quota count"
	q := NewRedisQuota(st, r.client, prefix, r.br.log)
	q.br, q.Timeout = r.br, r.Timeout
	return q
}

// SetTimeout bounds each call to Redis (the limiter's, its quota's and the breaker's ping) by d instead
// of DefaultRedisTimeout. Call it before NewQuota and before the limiter is used.
func (r *Redis) SetTimeout(d time.Duration) {
	r.Timeout, r.br.timeout = d, d
}

// Fallbacks is how many requests this limiter judged in process because Redis failed or was not asked.
func (r *Redis) Fallbacks() uint64 { return r.falls.Load() }

// Allow implements Limiter.
func (r *Redis) Allow(ctx context.Context, now time.Time, windows []Window) (Decision, error) {
	if len(windows) == 0 {
		return Decision{Allowed: true}, nil
	}
	if !r.br.try() {
		r.falls.Add(1)
		return r.fallback.Allow(ctx, now, windows)
	}
	keys, args := r.windowArgs(windows, 0, 0)
	rctx, cancel := context.WithTimeout(ctx, r.Timeout)
	defer cancel()
	res, err := gcraScript.Run(rctx, r.client, keys, args...).Int64Slice()
	var d Decision
	if err == nil {
		d, err = rateDecision(res)
	}
	if err != nil {
		if ctx.Err() == nil { // a caller that went away says nothing about Redis
			r.br.failed(err)
		}
		r.falls.Add(1)
		return r.fallback.Allow(ctx, now, windows)
	}
	r.br.ok()
	return d, nil
}

// windowArgs returns gcraScript's KEYS and ARGV for windows, with room for extraKeys more keys and
// extraArgs more arguments.
func (r *Redis) windowArgs(windows []Window, extraKeys, extraArgs int) ([]string, []any) {
	keys := make([]string, len(windows), len(windows)+extraKeys)
	args := make([]any, 0, 3*len(windows)+extraArgs)
	for i, w := range windows {
		keys[i] = r.prefix + w.Key
		args = append(args, w.Limit, w.Period.Microseconds(), w.cost())
	}
	return keys, args
}

// rateDecision reads gcraScript's reply.
func rateDecision(res []int64) (Decision, error) {
	if len(res) != 5 {
		return Decision{}, fmt.Errorf("unexpected reply %v", res)
	}
	return Decision{
		Allowed:    res[0] == 1,
		Limit:      res[1],
		Remaining:  res[2],
		Reset:      time.Duration(res[3]) * time.Microsecond,
		RetryAfter: time.Duration(res[4]) * time.Microsecond,
	}, nil
}

// Admit applies windows with lim and, only when they allow the request, takes n requests (below 1: 1)
// of workspace's monthly quota with q against limit, as lim.Allow and then q.Take would: a request the
// windows refuse consumes nothing and is not counted in the quota (used is 0 and quotaOK false); one the
// quota refuses keeps the units it consumed in the windows. When lim is a *Redis and q was made by its
// NewQuota, both are judged in one call to Redis (admitScript) instead of two; when Redis fails there,
// each falls back as Allow and Take do (the windows in process, the quota from this server's count),
// each counting its Fallbacks. A missing quota counter is seeded by a second call, as in Take.
//
// err is the limiter's error when d is not Allowed (d is then the zero Decision), else the quota's.
func Admit(ctx context.Context, lim Limiter, q *Quota, now time.Time, windows []Window, workspace string, n int64, limit *int64) (d Decision, used int64, quotaOK bool, err error) {
	if r, ok := lim.(*Redis); ok && q.br == r.br && len(windows) > 0 && r.br.try() {
		return r.admit(ctx, q, now, windows, workspace, max(n, 1), limit)
	}
	if d, err = lim.Allow(ctx, now, windows); err != nil {
		return Decision{}, 0, false, err
	}
	if !d.Allowed {
		return d, 0, false, nil
	}
	used, quotaOK, err = q.Take(ctx, workspace, n, limit, now)
	return d, used, quotaOK, err
}

// admit is Admit in one call of admitScript, for q made by r.NewQuota.
func (r *Redis) admit(ctx context.Context, q *Quota, now time.Time, windows []Window, workspace string, n int64, limit *int64) (Decision, int64, bool, error) {
	period, _ := Period(now)
	k := quotaKey{workspace, period}
	t := q.startTake(k, q.entry(k), n, limit)
	d, res, err := r.runAdmit(ctx, windows, q.key(k), q.args(t.call(), now))
	if err != nil {
		// Both fall back: the windows first, and the quota only when they allow the request.
		r.falls.Add(1)
		d, _ = r.fallback.Allow(ctx, now, windows)
		if d.Allowed {
			// settle records the failure on the breaker they share, once.
			used, ok, err := q.settle(ctx, t, quotaReply{}, &redisError{err}, now)
			return d, used, ok, err
		}
		q.abandon(t)
		if ctx.Err() == nil { // a caller that went away says nothing about Redis
			r.br.failed(err)
		}
		return d, 0, false, nil
	}
	r.br.ok()
	if !d.Allowed {
		q.abandon(t)
		return d, 0, false, nil
	}
	used, ok, err := q.settle(ctx, t, res, nil, now)
	return d, used, ok, err
}

// runAdmit makes one call of admitScript: the windows' decision, and the quota's reply when they allow
// the request. Its errors are Redis's (or a malformed reply's).
func (r *Redis) runAdmit(ctx context.Context, windows []Window, counter string, quotaArgs []any) (Decision, quotaReply, error) {
	keys, args := r.windowArgs(windows, 1, len(quotaArgs))
	keys = append(keys, counter)
	args = append(args, quotaArgs...)
	rctx, cancel := context.WithTimeout(ctx, r.Timeout)
	defer cancel()
	res, err := admitScript.Run(rctx, r.client, keys, args...).Slice()
	if err != nil {
		return Decision{}, quotaReply{}, err
	}
	var rate []int64
	if len(res) == 1 || len(res) == 2 {
		rate = int64s(res[0])
	}
	d, err := rateDecision(rate)
	if err != nil || d.Allowed != (len(res) == 2) {
		return Decision{}, quotaReply{}, fmt.Errorf("unexpected reply %v", res)
	}
	if !d.Allowed {
		return d, quotaReply{}, nil
	}
	qres, _ := res[1].([]any)
	qr, err := parseQuotaReply(qres)
	return d, qr, err
}

// int64s is v as []int64 when it is a list of integers, else nil.
func int64s(v any) []int64 {
	list, _ := v.([]any)
	out := make([]int64, len(list))
	for i, x := range list {
		n, ok := x.(int64)
		if !ok {
			return nil
		}
		out[i] = n
	}
	return out
}

// ParseRedisURL opens a client for a redis:// URL. The client honours context deadlines (go-redis
// otherwise waits for its 3 s read timeout, so a Redis that stops answering would hold every request
// for up to 3 s instead of the limiter's Timeout) and retries neither a failed command nor a failed dial
// (go-redis dials up to five times 100 ms apart: a stopped Redis would cost a request the whole timeout
// where failing at once lets it fall back at once).
func ParseRedisURL(url string) (*redis.Client, error) {
	opt, err := redis.ParseURL(url)
	if err != nil {
		return nil, fmt.Errorf("redis url: %w", err)
	}
	opt.ContextTimeoutEnabled = true
	opt.MaxRetries, opt.DialerRetries = -1, 1
	return redis.NewClient(opt), nil
}

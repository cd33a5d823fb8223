package limits

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// quotaScript keeps one workspace's count of one month in a Redis hash {n: count, e: epoch}.
//
//	KEYS[1]  the counter
//	ARGV[1]  "take": count ARGV[9] requests if the count stays within the limit; "add": only add
//	         ARGV[3]; "raise": only raise the count to ARGV[8] if it is lower
//	ARGV[2]  the limit, -1 for uncapped
//	ARGV[3]  requests the server accepted without Redis, added only when ARGV[4] is the counter's epoch
//	ARGV[4]  the epoch the server knew when it accepted them
//	ARGV[5]  the seed for a missing counter, -1: none (the script then answers "missing")
//	ARGV[6]  the epoch of a seeded counter
//	ARGV[7]  when a seeded counter expires (unix seconds, after the month ends)
//	ARGV[8]  the database total to raise to
//	ARGV[9]  how many requests a "take" counts (all or none)
//
// It returns {status, count, epoch, added}: status 1 taken, 0 refused (count + ARGV[9] would exceed
// the limit; nothing is taken), 2 done ("add", "raise"), -1 missing; added is 1 when ARGV[3] was
// added. All of it runs atomically, so concurrent requests on any number of servers are admitted
// exactly up to the limit, and two servers seeding at once agree on one counter. Counts travel as
// strings (Lua numbers would print large ones in exponent form). admitScript runs the same body after
// the rate windows' script.
var quotaScript = redis.NewScript(quotaBody)

const quotaBody = `
local n = redis.call('HGET', KEYS[1], 'n')
local e
local added = 0
if not n then
  if tonumber(ARGV[5]) < 0 then return {-1, 0, '', 0} end
  redis.call('HSET', KEYS[1], 'n', ARGV[5], 'e', ARGV[6])
  redis.call('EXPIREAT', KEYS[1], ARGV[7])
  n, e = tonumber(ARGV[5]), ARGV[6]
else
  n = tonumber(n)
  e = redis.call('HGET', KEYS[1], 'e') or ''
  if tonumber(ARGV[3]) > 0 and e == ARGV[4] then
    n = redis.call('HINCRBY', KEYS[1], 'n', ARGV[3])
    added = 1
  end
end
if ARGV[1] == 'raise' then
  if n < tonumber(ARGV[8]) then
    redis.call('HSET', KEYS[1], 'n', ARGV[8])
    n = tonumber(ARGV[8])
  end
  return {2, n, e, added}
end
if ARGV[1] ~= 'take' then return {2, n, e, added} end
local limit = tonumber(ARGV[2])
local take = tonumber(ARGV[9])
if limit >= 0 and n + take > limit then return {0, n, e, added} end
return {1, redis.call('HINCRBY', KEYS[1], 'n', take), e, added}
`

// counterGrace keeps a month's counter this long after the month ends, for servers whose clocks lag.
const counterGrace = 24 * time.Hour

// redisError marks a failure of Redis (as opposed to the database), after which Take falls back.
type redisError struct{ err error }

func (e *redisError) Error() string { return "quota counter in Redis: " + e.err.Error() }
func (e *redisError) Unwrap() error { return e.err }

// quotaCall is one call of quotaScript.
type quotaCall struct {
	op    string // take, add, raise
	take  int64  // requests a take counts (below 1: 1)
	limit *int64
	add   int64
	epoch string
	seed  int64 // < 0: none
	raise int64
}

type quotaReply struct {
	status int64
	count  int64
	epoch  string
	added  bool
}

const statusMissing = -1

// key is k's counter in Redis.
func (q *Quota) key(k quotaKey) string { return q.prefix + k.workspace + ":" + k.period }

// args are quotaScript's ARGV for c.
func (q *Quota) args(c quotaCall, now time.Time) []any {
	lim := int64(-1)
	if c.limit != nil {
		lim = max(*c.limit, 0)
	}
	var newEpoch string
	if c.seed >= 0 {
		b := make([]byte, 8)
		_, _ = rand.Read(b)
		newEpoch = hex.EncodeToString(b)
	}
	_, left := Period(now)
	expireAt := now.Add(left + counterGrace).Unix()
	return []any{c.op, lim, c.add, c.epoch, c.seed, newEpoch, expireAt, c.raise, max(c.take, 1)}
}

// run makes call c of quotaScript on k's counter.
func (q *Quota) run(ctx context.Context, k quotaKey, c quotaCall, now time.Time) (quotaReply, error) {
	rctx, cancel := context.WithTimeout(ctx, q.Timeout)
	defer cancel()
	res, err := quotaScript.Run(rctx, q.rdb, []string{q.key(k)}, q.args(c, now)...).Slice()
	if err != nil {
		return quotaReply{}, &redisError{err}
	}
	out, err := parseQuotaReply(res)
	if err != nil {
		return quotaReply{}, &redisError{err}
	}
	return out, nil
}

// parseQuotaReply reads quotaScript's reply.
func parseQuotaReply(res []any) (quotaReply, error) {
	var out quotaReply
	var ok [4]bool
	var added int64
	if len(res) == 4 {
		out.status, ok[0] = res[0].(int64)
		out.count, ok[1] = res[1].(int64)
		out.epoch, ok[2] = res[2].(string)
		added, ok[3] = res[3].(int64)
	}
	if !ok[0] || !ok[1] || !ok[2] || !ok[3] {
		return quotaReply{}, fmt.Errorf("unexpected reply %v", res)
	}
	out.added = added == 1
	return out, nil
}

// pendingTake is a "take" of n requests under way in Redis: its requests count in u.inflight until it
// ends, and it offers add requests accepted without Redis to the counter of epoch (see usage.syncing).
type pendingTake struct {
	k     quotaKey
	u     *usage
	n     int64
	limit *int64
	add   int64
	epoch string
}

// startTake begins a take of n requests through k's Redis counter; settle or abandon MUST end it.
func (q *Quota) startTake(k quotaKey, u *usage, n int64, limit *int64) *pendingTake {
	q.mu.Lock()
	defer q.mu.Unlock()
	t := &pendingTake{k: k, u: u, n: n, limit: limit, epoch: u.epoch, add: q.startSync(u)}
	u.inflight += n
	return t
}

// call is t's call of quotaScript.
func (t *pendingTake) call() quotaCall {
	return quotaCall{op: "take", take: t.n, limit: t.limit, add: t.add, epoch: t.epoch, seed: -1}
}

// abandon ends t without its take having run: nothing was counted, and the requests it offered wait for
// the next call.
func (q *Quota) abandon(t *pendingTake) {
	q.mu.Lock()
	defer q.mu.Unlock()
	t.u.inflight -= t.n
	q.endSync(t.u, t.add, false)
}

// settle ends t with its call's answer (res, or err): it seeds a missing counter (a second call, only
// then), learns what Redis answered and returns Take's result. When Redis failed (a *redisError) it
// records the failure and judges from this server's view (takeLocal), unless ctx ended; errors of the
// database (reading the total for a seed) are returned as they are.
func (q *Quota) settle(ctx context.Context, t *pendingTake, res quotaReply, err error, now time.Time) (int64, bool, error) {
	if err == nil && res.status == statusMissing {
		// The counter is gone: add was not applied (and is dropped below: what it counts is in the
		// database total or in pending, which the seed holds).
		res, err = q.seed(ctx, t.k, t.u, t.n, t.limit, now)
	}
	used, allowed, err := q.finish(t, res, err)
	var re *redisError
	if !errors.As(err, &re) {
		if err == nil {
			q.br.ok()
		}
		return used, allowed, err
	}
	if ctx.Err() != nil {
		return 0, false, fmt.Errorf("count quota usage: %w", ctx.Err())
	}
	q.br.failed(re.err)
	q.falls.Add(1)
	return q.takeLocal(ctx, t.k, t.u, t.n, t.limit)
}

// finish does settle's bookkeeping of t's answer.
func (q *Quota) finish(t *pendingTake, res quotaReply, err error) (int64, bool, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	u := t.u
	u.inflight -= t.n
	if err != nil {
		q.endSync(u, t.add, false)
		return 0, false, err
	}
	q.endSync(u, t.add, true)
	q.learn(u, res, t.add)
	if res.status != 1 {
		return res.count, false, nil
	}
	u.pending += t.n
	return res.count, true, nil
}

// startSync returns how many requests accepted without Redis the caller should offer to the counter:
// all of u.local, unless another call is offering them already (then 0). Caller MUST hold q.mu.
func (q *Quota) startSync(u *usage) int64 {
	if u.syncing || u.local == 0 {
		return 0
	}
	u.syncing = true
	return u.local
}

// endSync ends a call that offered add: when it reached Redis, those requests are settled (added to the
// counter, or left to the raise); otherwise they wait for the next call. Caller MUST hold q.mu.
func (q *Quota) endSync(u *usage, add int64, reached bool) {
	if add == 0 {
		return
	}
	u.syncing = false
	if reached {
		u.local = max(u.local-add, 0)
	}
}

// learn notes what Redis answered about u's counter, after add requests accepted without Redis were
// offered to it. Caller MUST hold q.mu.
func (q *Quota) learn(u *usage, res quotaReply, add int64) {
	if (add > 0 && !res.added) || (u.epoch != "" && res.epoch != u.epoch) {
		// Another counter than the one this server knew: what it accepted under the old one, with or
		// without Redis, reaches it by the raise to the database total after the next flush.
		u.raise = true
		u.local = 0
	}
	u.epoch, u.seen = res.epoch, res.count
}

// seed creates k's missing counter from the database total plus this server's unflushed count, and
// takes the n requests. If another server seeded it first, its counter stands.
func (q *Quota) seed(ctx context.Context, k quotaKey, u *usage, n int64, limit *int64, now time.Time) (quotaReply, error) {
	q.flushMu.Lock()
	defer q.flushMu.Unlock()
	total, err := q.read(ctx, k)
	if err != nil {
		return quotaReply{}, err
	}
	q.mu.Lock()
	u.stored, u.loaded = total, true
	seed := total + u.pending
	q.mu.Unlock()
	return q.run(ctx, k, quotaCall{op: "take", take: n, limit: limit, seed: seed}, now)
}

// reconcile brings the Redis counters up to date after a flush that stored totals: it adds what this
// server accepted without Redis to counters it knew, and raises counters it could not decide about to
// the database total. So Redis is exact again within one flush of its return, even for workspaces that
// send no more requests here. Caller MUST hold q.flushMu.
func (q *Quota) reconcile(ctx context.Context, totals map[quotaKey]int64, now time.Time) {
	if !q.br.try() {
		return
	}
	type item struct {
		k     quotaKey
		u     *usage
		add   int64
		epoch string
		raise bool
	}
	var items []item
	q.mu.Lock()
	for k, u := range q.use {
		if (u.local > 0 && !u.syncing) || u.raise {
			items = append(items, item{k, u, q.startSync(u), u.epoch, u.raise})
			u.raise = false
		}
	}
	q.mu.Unlock()
	for i, it := range items {
		c := quotaCall{op: "add", add: it.add, epoch: it.epoch, seed: -1}
		if it.raise {
			if total, ok := totals[it.k]; ok {
				c.op, c.raise = "raise", total
			} else {
				// Counted after the flush began: raise after the next one.
				q.mu.Lock()
				it.u.raise = true
				q.mu.Unlock()
			}
		}
		res, err := q.run(ctx, it.k, c, now)
		if err != nil {
			q.mu.Lock()
			for _, rest := range items[i:] {
				q.endSync(rest.u, rest.add, false)
				rest.u.raise = rest.u.raise || rest.raise
			}
			q.mu.Unlock()
			if ctx.Err() == nil {
				q.br.failed(err)
			}
			return
		}
		q.br.ok()
		q.mu.Lock()
		q.endSync(it.u, it.add, true)
		if res.status != statusMissing {
			q.learn(it.u, res, it.add)
		} // else gone: the counts are in the database now, where the next seed reads them
		q.mu.Unlock()
	}
}

package httpapi

import (
	"context"
	"math"
	"net/http"
	"strconv"
	"time"

	"github.com/workspace-records/records/engine/apierr"
	"github.com/workspace-records/records/runtime/auth"
	"github.com/workspace-records/records/runtime/limits"
)

// usage is what admission measured for a request; GET /v1/me reports it.
type usage struct {
	rate       limits.Decision
	quotaUsed  int64
	quotaLimit *int64
	quotaReset time.Duration
}

const keyUsage ctxKey = 100

// windows lists the rate-limit windows of p: per key per minute and per hour, per workspace per minute.
func windows(p *auth.Principal) []limits.Window {
	var out []limits.Window
	add := func(key string, limit *int64, period time.Duration) {
		if limit != nil && *limit > 0 {
			out = append(out, limits.Window{Key: key, Limit: *limit, Period: period})
		}
	}
	add("k:"+p.Key.ID+":m", p.Limits.KeyPerMinute, time.Minute)
	add("k:"+p.Key.ID+":h", p.Limits.KeyPerHour, time.Hour)
	add("w:"+p.Workspace.ID+":m", p.Limits.WorkspacePerMinute, time.Minute)
	return out
}

func seconds(d time.Duration) string {
	return strconv.FormatInt(int64(math.Ceil(d.Seconds())), 10)
}

// SetClock makes admission read the time from now: which month a request counts in, when the quota
// resets, and the in-process rate limiter's time (Redis's rate limiter keeps Redis's clock). For tests
// of month boundaries; safe to call while serving.
func (h *Handler) SetClock(now func() time.Time) { h.clock.Store(&now) }

func (h *Handler) now() time.Time {
	if c := h.clock.Load(); c != nil {
		return (*c)()
	}
	return time.Now()
}

// admit applies the rate limits and the monthly quota to an authenticated request, setting the
// X-RateLimit-* and X-Quota-* headers. A request refused by a rate limit consumes nothing (no window,
// no quota); one refused by the quota has passed the rate limits and counts against them, but not
// against the quota.
func (h *Handler) admit(ctx context.Context, w http.ResponseWriter, p *auth.Principal) (context.Context, error) {
	now := h.now()
	d, used, reset, err := h.admitUnits(ctx, w, p, windows(p), 1, now)
	if err != nil {
		return ctx, err
	}
	return context.WithValue(ctx, keyUsage, &usage{rate: d, quotaUsed: used, quotaLimit: p.Limits.MonthlyQuota, quotaReset: reset}), nil
}

// admitMore counts n more units of p's monthly quota for a request admit has already admitted once (a
// batch of N items calls it with N-1 once it knows N): all n fit in what is left or none is counted (429
// quota_exceeded with Retry-After). The rate windows are not charged again: a batch is one request against
// them, as HubSpot counts it, so that batching buys throughput, while the quota counts the records a batch
// writes. The X-Quota-* headers are set again to the state after this call, and so is the usage GET
// /v1/me reports. n ≤ 0 does nothing.
func (h *Handler) admitMore(ctx context.Context, w http.ResponseWriter, p *auth.Principal, n int64) error {
	if n <= 0 {
		return nil
	}
	_, used, reset, err := h.admitUnits(ctx, w, p, nil, n, h.now())
	if err != nil {
		return err
	}
	if u, _ := ctx.Value(keyUsage).(*usage); u != nil {
		u.quotaUsed, u.quotaReset = used, reset
	}
	return nil
}

// admitUnits consumes windows (each for its Cost) and then, when they allow the request, n requests of
// p's monthly quota (limits.Admit: one call to Redis when both are there). It sets the X-RateLimit-*
// headers from the windows' decision and answers 429 rate_limited when they refuse; it sets the X-Quota-*
// headers when the quota was consulted and answers 429 quota_exceeded when it refuses. It returns the
// windows' decision (Allowed when they admitted the request, even if the quota refused it), the month's
// usage and the time until the quota resets.
func (h *Handler) admitUnits(ctx context.Context, w http.ResponseWriter, p *auth.Principal, windows []limits.Window, n int64, now time.Time) (limits.Decision, int64, time.Duration, error) {
	d, used, ok, err := limits.Admit(ctx, h.limiter, h.quota, now, windows, p.Workspace.ID, n, p.Limits.MonthlyQuota)
	if err != nil && !d.Allowed {
		return d, 0, 0, err // the limiter's
	}
	hdr := w.Header()
	if d.Limit > 0 {
		hdr.Set("X-RateLimit-Limit", strconv.FormatInt(d.Limit, 10))
		hdr.Set("X-RateLimit-Remaining", strconv.FormatInt(d.Remaining, 10))
		hdr.Set("X-RateLimit-Reset", seconds(d.Reset))
	}
	if !d.Allowed {
		e := apierr.New(apierr.RateLimited, "Too many requests; retry after "+seconds(d.RetryAfter)+" s.")
		e.Header = http.Header{"Retry-After": {seconds(d.RetryAfter)}}
		return d, 0, 0, e
	}
	if err != nil {
		return d, 0, 0, err // the quota's
	}
	_, reset := limits.Period(now)
	if p.Limits.MonthlyQuota != nil {
		hdr.Set("X-Quota-Limit", strconv.FormatInt(*p.Limits.MonthlyQuota, 10))
		hdr.Set("X-Quota-Remaining", strconv.FormatInt(max(*p.Limits.MonthlyQuota-used, 0), 10))
	}
	hdr.Set("X-Quota-Reset", seconds(reset))
	if !ok {
		msg := "The workspace has used its monthly request quota; it resets at the start of next month (UTC)."
		if n > 1 {
			msg = "This request counts as " + strconv.FormatInt(n, 10) + " against the workspace's monthly request quota, which has fewer left; it resets at the start of next month (UTC)."
		}
		e := apierr.New(apierr.QuotaExceeded, msg)
		e.Header = http.Header{"Retry-After": {seconds(reset)}}
		return d, used, reset, e
	}
	return d, used, reset, nil
}

func rateUsage(p *auth.Principal, u *usage) map[string]any {
	out := map[string]any{
		"key_per_minute": p.Limits.KeyPerMinute, "key_per_hour": p.Limits.KeyPerHour,
		"workspace_per_minute": p.Limits.WorkspacePerMinute,
		"limit":                nil, "remaining": nil, "reset": nil,
	}
	if u != nil && u.rate.Limit > 0 {
		out["limit"], out["remaining"], out["reset"] = u.rate.Limit, u.rate.Remaining, int64(math.Ceil(u.rate.Reset.Seconds()))
	}
	return out
}

func quotaUsage(u *usage) map[string]any {
	if u == nil {
		return map[string]any{}
	}
	out := map[string]any{"limit": u.quotaLimit, "used": u.quotaUsed, "remaining": nil, "reset": int64(math.Ceil(u.quotaReset.Seconds()))}
	if u.quotaLimit != nil {
		out["remaining"] = max(*u.quotaLimit-u.quotaUsed, 0)
	}
	return out
}

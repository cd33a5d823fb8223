package httpapi

import (
	"context"
	"errors"
	"net/http/httptest"
	"path/filepath"
	"testing"
	"time"

	"github.com/workspace-records/records/engine/apierr"
	"github.com/workspace-records/records/engine/spec"
	"github.com/workspace-records/records/runtime/auth"
	"github.com/workspace-records/records/runtime/limits"
	"github.com/workspace-records/records/runtime/store"
)

// admitMore takes n more units of the rate windows and the quota of a request admitted once, all or
// none, with admit's headers and 429s, and updates the usage GET /v1/me reports. Here: 10 per minute
// per key, a monthly quota of 12, the in-process limiter and the database quota (SQLite).
func TestAdmitMore(t *testing.T) {
	ctx := context.Background()
	st, err := store.OpenSQLite(ctx, filepath.Join(t.TempDir(), "admit.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	// The system table the quota counts in (migrate creates it in a real database).
	if _, err := st.Exec(ctx, st.Dialect().Bind(`CREATE TABLE usage_counters (workspace_id TEXT NOT NULL, period TEXT NOT NULL,
count INTEGER NOT NULL, PRIMARY KEY (workspace_id, period))`)); err != nil {
		t.Fatal(err)
	}
	h := &Handler{core: &core{limiter: limits.NewLocal(), quota: limits.NewQuota(st)}}
	now := time.Date(2031, 3, 15, 12, 0, 0, 0, time.UTC)
	h.SetClock(func() time.Time { return now })
	ten, twelve := int64(10), int64(12)
	p := &auth.Principal{Workspace: auth.Workspace{ID: "ws"}, Key: auth.Key{ID: "key1"}, Limits: spec.Limits{KeyPerMinute: &ten, MonthlyQuota: &twelve}}

	request := func(p *auth.Principal) (context.Context, *httptest.ResponseRecorder) {
		t.Helper()
		w := httptest.NewRecorder()
		rctx, err := h.admit(ctx, w, p)
		if err != nil {
			t.Fatalf("admit: %v", err)
		}
		return rctx, w
	}
	headers := func(w *httptest.ResponseRecorder, rate, quota string) {
		t.Helper()
		if got := w.Header().Get("X-RateLimit-Remaining"); got != rate {
			t.Errorf("X-RateLimit-Remaining %q, want %q", got, rate)
		}
		if got := w.Header().Get("X-Quota-Remaining"); got != quota {
			t.Errorf("X-Quota-Remaining %q, want %q", got, quota)
		}
	}
	refused := func(err error, code apierr.Code) *apierr.Error {
		t.Helper()
		var e *apierr.Error
		if !errors.As(err, &e) || e.Code != code || len(e.Header["Retry-After"]) != 1 {
			t.Fatalf("got %v, want %s with Retry-After", err, code)
		}
		return e
	}

	// A batch of 3: admitted once, then 2 more.
	rctx, w := request(p)
	headers(w, "9", "11")
	if err := h.admitMore(rctx, w, p, 2); err != nil {
		t.Fatal(err)
	}
	headers(w, "7", "9")
	u := rctx.Value(keyUsage).(*usage)
	if u.rate.Remaining != 7 || u.quotaUsed != 3 {
		t.Errorf("usage after admitMore: rate remaining %d, quota used %d; want 7 and 3", u.rate.Remaining, u.quotaUsed)
	}
	if err := h.admitMore(rctx, w, p, 0); err != nil {
		t.Fatal(err)
	}
	headers(w, "7", "9")

	// A batch of 9 with 6 left in the key's window: refused, nothing more taken (the 1 of admit stays).
	rctx, w = request(p)
	headers(w, "6", "8")
	e := refused(h.admitMore(rctx, w, p, 8), apierr.RateLimited)
	if e.Header["Retry-After"][0] != "12" || w.Header().Get("X-RateLimit-Reset") != "12" {
		t.Errorf("Retry-After %v X-RateLimit-Reset %q, want 12 (two more units at 6 s each)", e.Header["Retry-After"], w.Header().Get("X-RateLimit-Reset"))
	}
	if err := h.admitMore(rctx, w, p, 6); err != nil {
		t.Fatalf("the 6 left: %v", err)
	}
	headers(w, "0", "2")

	// Another key of the workspace, with its own window: a batch of 3 with 1 left in the quota.
	p2 := *p
	p2.Key.ID = "key2"
	rctx, w = request(&p2)
	headers(w, "9", "1")
	refused(h.admitMore(rctx, w, &p2, 2), apierr.QuotaExceeded)
	headers(w, "7", "1") // the rate units stay taken, as admit's
	if err := h.admitMore(rctx, w, &p2, 1); err != nil {
		t.Fatalf("the last one of the quota: %v", err)
	}
	headers(w, "6", "0")
	if got := h.quota.Used("ws", now); got != 12 {
		t.Errorf("quota used %d, want 12", got)
	}
	// A batch larger than the limit never fits: told to wait a whole period.
	p3 := &auth.Principal{Workspace: auth.Workspace{ID: "ws2"}, Key: auth.Key{ID: "key3"}, Limits: spec.Limits{KeyPerMinute: &ten}}
	rctx, w = request(p3)
	e = refused(h.admitMore(rctx, w, p3, 11), apierr.RateLimited)
	if e.Header["Retry-After"][0] != "60" {
		t.Errorf("Retry-After %v, want 60", e.Header["Retry-After"])
	}
}

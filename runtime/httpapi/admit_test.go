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

// admitMore counts n more units of the quota for a request admitted once, all or none, with admit's
// 429 and headers, and updates the usage GET /v1/me reports; the rate windows count the request once,
// whatever n. Here: 10 per minute per key, a monthly quota of 12, the in-process limiter and the database
// quota (SQLite).
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

	// A batch of 3: admitted once (one unit of the window), then 2 more of the quota.
	rctx, w := request(p)
	headers(w, "9", "11")
	if err := h.admitMore(rctx, w, p, 2); err != nil {
		t.Fatal(err)
	}
	headers(w, "9", "9")
	u := rctx.Value(keyUsage).(*usage)
	if u.rate.Remaining != 9 || u.quotaUsed != 3 {
		t.Errorf("usage after admitMore: rate remaining %d, quota used %d; want 9 and 3", u.rate.Remaining, u.quotaUsed)
	}
	if err := h.admitMore(rctx, w, p, 0); err != nil {
		t.Fatal(err)
	}
	headers(w, "9", "9")

	// A batch larger than the window's limit is one request against it: admitted.
	rctx, w = request(p)
	if err := h.admitMore(rctx, w, p, 7); err != nil {
		t.Fatalf("a batch of 8 with 8 left in the quota: %v", err)
	}
	headers(w, "8", "1")

	// A batch of 3 with 1 left in the quota: refused, nothing more counted (the 1 of admit stays).
	rctx, w = request(p)
	headers(w, "7", "0")
	var e *apierr.Error
	if err := h.admitMore(rctx, w, p, 2); !errors.As(err, &e) || e.Code != apierr.QuotaExceeded || len(e.Header["Retry-After"]) != 1 {
		t.Fatalf("got %v, want quota_exceeded with Retry-After", err)
	}
	if got := h.quota.Used("ws", now); got != 12 {
		t.Errorf("quota used %d, want 12", got)
	}
}

package servertest

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"
)

// The guard keeps the access lines of 5xx answers other than 503, through loggers derived with With.
func TestServerErrorsGuard(t *testing.T) {
	g := &serverErrors{Handler: slog.NewJSONHandler(io.Discard, nil), mu: &sync.Mutex{}, lines: &[]string{}, tolerated: &[]string{}, secrets: &[]string{}}
	log := slog.New(g).With("component", "http")
	for _, status := range []int{200, 404, 503, 500, 502} {
		level := slog.LevelInfo
		if status >= 500 {
			level = slog.LevelError
		}
		log.LogAttrs(context.Background(), level, "request", slog.String("request_id", "r"), slog.Int("status", status))
	}
	log.Error("not an access line", "status", 500)
	r := slog.NewRecord(time.Now(), slog.LevelError, "request", 0)
	r.AddAttrs(slog.Int("status", 504))
	_ = g.Handle(context.Background(), r)
	got := g.seen()
	if len(got) != 3 || !strings.Contains(got[0], "status=500") || !strings.Contains(got[1], "status=502") || !strings.Contains(got[2], "status=504") {
		t.Fatalf("kept %q; want the 500, 502 and 504 access lines", got)
	}
	// A cause a test provokes on purpose passes; others are still kept.
	(&Env{errs: g}).TolerateServerErrors("tenancy guard")
	log.Error("request", "status", 500, "err", "get companies: tenancy guard: row of workspace a read for b")
	log.Error("request", "status", 500, "err", "something else")
	if got := g.seen(); len(got) != 4 || !strings.Contains(got[3], "something else") {
		t.Fatalf("kept %q; want the tolerated cause left out", got)
	}
	// Key material in any line, its attributes or the logger's, is kept; the format message is not.
	log.Info("request", "status", 401, "code", "invalid_api_key", "message", "expected wsk_ followed by 64 hex")
	if n := len(g.leaked()); n != 0 {
		t.Fatalf("%d lines kept for the format message", n)
	}
	log.Info("request", "authorization", "Bearer wsk_0123456789abcdef")
	log.With("key", "wsk_deadbeef00").Info("x")
	if n := len(g.leaked()); n != 2 {
		t.Fatalf("%d lines with key material kept, want 2: %q", n, g.leaked())
	}
}

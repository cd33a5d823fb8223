package servertest

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// The guard keeps the access lines of 5xx answers other than 503, through loggers derived with With.
func TestServerErrorsGuard(t *testing.T) {
	g := &serverErrors{Handler: slog.NewJSONHandler(io.Discard, nil), sink: &guardSink{}}
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
	got := g.sink.seen()
	if len(got) != 3 || !strings.Contains(got[0], "status=500") || !strings.Contains(got[1], "status=502") || !strings.Contains(got[2], "status=504") {
		t.Fatalf("kept %q; want the 500, 502 and 504 access lines", got)
	}
	// A cause a test provokes on purpose passes; others are still kept.
	(&Env{errs: g.sink}).TolerateServerErrors("tenancy guard")
	log.Error("request", "status", 500, "err", "get companies: tenancy guard: row of workspace a read for b")
	log.Error("request", "status", 500, "err", "something else")
	if got := g.sink.seen(); len(got) != 4 || !strings.Contains(got[3], "something else") {
		t.Fatalf("kept %q; want the tolerated cause left out", got)
	}
	// Key material in any line, its attributes or the logger's, is kept; the format message is not.
	log.Info("request", "status", 401, "code", "invalid_api_key", "message", "expected wsk_ followed by 64 hex")
	if n := len(g.sink.leaked()); n != 0 {
		t.Fatalf("%d lines kept for the format message", n)
	}
	log.Info("request", "authorization", "Bearer wsk_0123456789abcdef")
	log.With("key", "wsk_deadbeef00").Info("x")
	if n := len(g.sink.leaked()); n != 2 {
		t.Fatalf("%d lines with key material kept, want 2: %q", n, g.sink.leaked())
	}
}

// On a shared server each line goes to the sink of the test whose request made it: the one its
// listener's handler put in the request's context, else the one its listener logs with, else the
// server's own.
func TestServerErrorsGuardAttributes(t *testing.T) {
	g := &serverErrors{Handler: slog.NewJSONHandler(io.Discard, nil), sink: &guardSink{}}
	log := slog.New(g).With("component", "http")
	a, b := &guardSink{}, &guardSink{}
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		log.LogAttrs(r.Context(), slog.LevelError, "request", slog.Int("status", 500), slog.String("path", r.URL.Path))
	})
	withSink(h, a).ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/a", nil))
	withSink(h, b).ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/b", nil))
	slog.New(g.to(b)).Info("request", "authorization", "Bearer wsk_0123456789abcdef")
	log.Error("request", "status", 502, "path", "/background")
	if got := a.seen(); len(got) != 1 || !strings.Contains(got[0], "/a") {
		t.Errorf("a kept %q", got)
	}
	if got := b.seen(); len(got) != 1 || !strings.Contains(got[0], "/b") || len(b.leaked()) != 1 {
		t.Errorf("b kept %q and %q", got, b.leaked())
	}
	if got := g.sink.seen(); len(got) != 1 || !strings.Contains(got[0], "/background") {
		t.Errorf("the server's own sink kept %q", got)
	}
}

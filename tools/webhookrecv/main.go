// Command webhookrecv is a webhook receiver for tests and manual checks: it verifies every request with
// runtime/webhooks.Verify against the secrets it is given, answers as told, and appends one JSON line
// per request to a file.
//
//	webhookrecv [-listen 127.0.0.1:0] -secret whsec_… [-secret whsec_…] [-fail N] [-status CODE]
//	            [-delay D] [-tolerance D] [-out FILE]
//
// Its first line on stdout is "listening on http://HOST:PORT". A request whose signature does not verify
// is answered 401; of the verified requests, the first N (-fail) are answered 500 and the rest -status
// (200). Every answer waits -delay first. Each request appends to -out (stdout when not given) a line
//
//	{"webhook_id":"msg_…","timestamp":1764000000,"verified":true,"status":200,"body":{…},
//	 "received_at":"2026-11-24T10:00:00.123456789Z","path":"/hooks"}
//
// with "error" naming why verification failed, "timestamp" null when the header is absent or not a
// number, and "body" the JSON body, compacted (a JSON string when the body is not JSON, null when
// empty). The line is written before the answer is sent, so a sender that has its answer finds its line
// in the file. SIGINT or SIGTERM stops it, letting requests in progress finish.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/workspace-records/records/runtime/webhooks"
)

// maxBody is the largest body read; a longer one is answered 413, unverified.
const maxBody = 1 << 20

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "webhookrecv:", err)
		if errors.Is(err, errUsage) {
			os.Exit(2)
		}
		os.Exit(1)
	}
}

// errUsage marks a mistake in the command line.
var errUsage = errors.New("usage")

// config is the command line, parsed.
type config struct {
	listen    string
	secrets   []string
	fail      int
	status    int
	delay     time.Duration
	tolerance time.Duration
	out       string
}

func parse(args []string, stderr io.Writer) (config, error) {
	c := config{}
	fs := flag.NewFlagSet("webhookrecv", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&c.listen, "listen", "127.0.0.1:0", "address to listen on")
	fs.Func("secret", "a signing secret, whsec_…; repeat it for several (as during a rotation)", func(s string) error {
		if _, err := webhooks.ParseSecret(s); err != nil {
			return err
		}
		c.secrets = append(c.secrets, s)
		return nil
	})
	fs.IntVar(&c.fail, "fail", 0, "answer 500 to the first `N` verified requests")
	fs.IntVar(&c.status, "status", http.StatusOK, "the status `CODE` of the other verified requests")
	fs.DurationVar(&c.delay, "delay", 0, "wait this long before each answer")
	fs.DurationVar(&c.tolerance, "tolerance", webhooks.DefaultTolerance, "accepted clock difference of webhook-timestamp")
	fs.StringVar(&c.out, "out", "", "append the JSON lines to this `FILE` (default stdout)")
	if err := fs.Parse(args); err != nil {
		return c, fmt.Errorf("%w: %w", errUsage, err)
	}
	switch {
	case fs.NArg() > 0:
		return c, fmt.Errorf("%w: unexpected argument %q", errUsage, fs.Arg(0))
	case len(c.secrets) == 0:
		return c, fmt.Errorf("%w: at least one -secret is needed", errUsage)
	case c.fail < 0:
		return c, fmt.Errorf("%w: -fail %d is negative", errUsage, c.fail)
	case c.status < 100 || c.status > 599:
		return c, fmt.Errorf("%w: -status %d is not an HTTP status", errUsage, c.status)
	case c.delay < 0:
		return c, fmt.Errorf("%w: -delay %s is negative", errUsage, c.delay)
	}
	return c, nil
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	c, err := parse(args, stderr)
	if err != nil {
		return err
	}
	out := stdout
	if c.out != "" {
		f, err := os.OpenFile(c.out, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
		if err != nil {
			return fmt.Errorf("open -out: %w", err)
		}
		defer f.Close()
		out = f
	}
	ln, err := net.Listen("tcp", c.listen)
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	// The address goes out before serving starts; requests sent upon reading it wait in the backlog.
	if _, err := fmt.Fprintf(stdout, "listening on http://%s\n", ln.Addr()); err != nil {
		ln.Close()
		return fmt.Errorf("write address: %w", err)
	}
	rc := &receiver{config: c, out: out, now: time.Now}
	srv := &http.Server{Handler: rc, ReadHeaderTimeout: 10 * time.Second}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	select {
	case err := <-served:
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil {
		return fmt.Errorf("shutdown: %w", err)
	}
	if err := rc.writeErr.Load(); err != nil {
		return fmt.Errorf("write -out: %w", *err)
	}
	return nil
}

// receiver is the HTTP handler: it verifies, records and answers each request.
type receiver struct {
	config
	now      func() time.Time
	verified atomic.Int64 // verified requests so far, for -fail

	mu  sync.Mutex // serializes the lines written to out
	out io.Writer

	writeErr atomic.Pointer[error] // the first failure to write a line, reported at exit
}

// line is one request as recorded in -out.
type line struct {
	WebhookID  string          `json:"webhook_id"`
	Timestamp  *int64          `json:"timestamp"`
	Verified   bool            `json:"verified"`
	Error      string          `json:"error,omitempty"`
	Status     int             `json:"status"`
	Body       json.RawMessage `json:"body"`
	ReceivedAt time.Time       `json:"received_at"`
	Path       string          `json:"path"`
}

func (rc *receiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	received := rc.now().UTC()
	l := line{WebhookID: r.Header.Get(webhooks.HeaderID), ReceivedAt: received, Path: r.URL.Path}
	if ts, err := strconv.ParseInt(r.Header.Get(webhooks.HeaderTimestamp), 10, 64); err == nil {
		l.Timestamp = &ts
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
	switch {
	case err != nil:
		l.Error = "read body: " + err.Error()
		l.Status = http.StatusRequestEntityTooLarge
		var tooLarge *http.MaxBytesError
		if !errors.As(err, &tooLarge) {
			l.Status = http.StatusBadRequest
		}
	default:
		if err := webhooks.Verify(rc.secrets, r.Header, body, received, rc.tolerance); err != nil {
			l.Error = err.Error()
			l.Status = http.StatusUnauthorized
		} else {
			l.Verified = true
			l.Status = rc.status
			if rc.verified.Add(1) <= int64(rc.fail) {
				l.Status = http.StatusInternalServerError
			}
		}
	}
	l.Body = rawBody(body)
	rc.record(l)
	if rc.delay > 0 {
		t := time.NewTimer(rc.delay)
		select {
		case <-t.C:
		case <-r.Context().Done():
			t.Stop()
			return
		}
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(l.Status)
	fmt.Fprintln(w, http.StatusText(l.Status))
}

// rawBody returns the body as it came when it is JSON, else as a JSON string (null when empty).
func rawBody(body []byte) json.RawMessage {
	if len(body) == 0 {
		return json.RawMessage("null")
	}
	if json.Valid(body) {
		return body
	}
	s, _ := json.Marshal(string(body))
	return s
}

// record appends one line to out.
func (rc *receiver) record(l line) {
	b, err := json.Marshal(l)
	if err == nil {
		b = append(b, '\n')
		rc.mu.Lock()
		_, err = rc.out.Write(b)
		rc.mu.Unlock()
	}
	if err != nil {
		rc.writeErr.CompareAndSwap(nil, &err)
	}
}

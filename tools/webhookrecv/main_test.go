package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/workspace-records/records/runtime/webhooks"
)

// build compiles webhookrecv into a temporary directory.
func build(t *testing.T) string {
	t.Helper()
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go tool: %v", err)
	}
	bin := filepath.Join(t.TempDir(), "webhookrecv")
	cmd := exec.Command(goTool, "build", "-o", bin, ".")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// start runs the receiver and returns its base URL, read from its first line of output. The process is
// stopped with SIGTERM at cleanup and must exit 0.
func start(t *testing.T, bin string, args ...string) string {
	t.Helper()
	cmd := exec.Command(bin, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	first := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		if sc.Scan() {
			first <- sc.Text()
		}
		close(first)
		_, _ = io.Copy(io.Discard, stdout)
		exited <- cmd.Wait()
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		select {
		case err := <-exited:
			if err != nil {
				t.Errorf("webhookrecv exited: %v\n%s", err, stderr.String())
			}
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			t.Errorf("webhookrecv did not stop on SIGINT")
		}
	})
	select {
	case l, ok := <-first:
		url, found := strings.CutPrefix(l, "listening on ")
		if !ok || !found || !strings.HasPrefix(url, "http://127.0.0.1:") {
			t.Fatalf("first line %q; stderr:\n%s", l, stderr.String())
		}
		return url
	case <-time.After(10 * time.Second):
		t.Fatal("no address printed within 10 s")
	}
	return ""
}

// record is a line of -out, as the test reads it.
type record struct {
	WebhookID  string          `json:"webhook_id"`
	Timestamp  *int64          `json:"timestamp"`
	Verified   bool            `json:"verified"`
	Error      string          `json:"error"`
	Status     int             `json:"status"`
	Body       json.RawMessage `json:"body"`
	ReceivedAt time.Time       `json:"received_at"`
	Path       string          `json:"path"`
}

func readLines(t *testing.T, path string) []record {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []record
	for i, l := range strings.Split(strings.TrimSuffix(string(b), "\n"), "\n") {
		dec := json.NewDecoder(strings.NewReader(l))
		dec.DisallowUnknownFields()
		var r record
		if err := dec.Decode(&r); err != nil {
			t.Fatalf("line %d %q: %v", i+1, l, err)
		}
		out = append(out, r)
	}
	return out
}

func post(t *testing.T, url string, h http.Header, body string) int {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range h {
		req.Header[k] = v
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

func signed(t *testing.T, secret, msgID string, ts time.Time, body string) http.Header {
	t.Helper()
	sig, err := webhooks.Sign(secret, msgID, ts, []byte(body))
	if err != nil {
		t.Fatal(err)
	}
	return webhooks.Headers(msgID, ts, sig)
}

func TestReceiver(t *testing.T) {
	bin := build(t)
	t.Run("verify, fail, record", func(t *testing.T) {
		t.Parallel()
		oldSecret, newSecret := freshSecret(t), freshSecret(t)
		out := filepath.Join(t.TempDir(), "requests.jsonl")
		url := start(t, bin, "-secret", oldSecret, "-secret", newSecret, "-fail", "1", "-status", "202", "-out", out)
		now := time.Now()
		body := `{"type":"record.created","data":{"id":"r_1"}}`

		steps := []struct {
			name   string
			h      http.Header
			body   string
			status int
		}{
			{"signed, the first verified: failed on purpose", signed(t, oldSecret, "msg_1", now, body), body, 500},
			{"signed with the second secret", signed(t, newSecret, "msg_1", now, body), body, 202},
			{"forged", signed(t, newSecret, "msg_2", now, body), `{"type":"forged"}`, 401},
			{"unknown secret", signed(t, freshSecret(t), "msg_3", now, body), body, 401},
			{"no headers", http.Header{}, body, 401},
			{"signed but stale", signed(t, oldSecret, "msg_4", now.Add(-time.Hour), body), body, 401},
			{"signed, not JSON", signed(t, oldSecret, "msg_5", now, "plain text"), "plain text", 202},
		}
		for _, s := range steps {
			if got := post(t, url+"/hooks", s.h, s.body); got != s.status {
				t.Errorf("%s: status %d, want %d", s.name, got, s.status)
			}
		}
		// A delivery by the package itself, through the client that allows private addresses.
		a := webhooks.Deliver(t.Context(), webhooks.NewClient(webhooks.Options{AllowPrivate: true}),
			url+"/deliver", newSecret, "msg_6", time.Now(), []byte(body))
		if a.Outcome != webhooks.OutcomeDelivered || a.Status != 202 {
			t.Errorf("Deliver: %+v", a)
		}

		lines := readLines(t, out)
		if len(lines) != len(steps)+1 {
			t.Fatalf("%d lines, want %d", len(lines), len(steps)+1)
		}
		for i, s := range steps {
			l := lines[i]
			if l.Status != s.status || l.Verified != (s.status != 401) || (l.Error == "") != l.Verified {
				t.Errorf("%s: line %+v", s.name, l)
			}
			if l.Path != "/hooks" || l.ReceivedAt.IsZero() || time.Since(l.ReceivedAt) > time.Minute {
				t.Errorf("%s: line %+v", s.name, l)
			}
			if s.h.Get(webhooks.HeaderID) != l.WebhookID {
				t.Errorf("%s: webhook_id %q", s.name, l.WebhookID)
			}
			if ts := s.h.Get(webhooks.HeaderTimestamp); ts == "" && l.Timestamp != nil ||
				ts != "" && (l.Timestamp == nil || strconv.FormatInt(*l.Timestamp, 10) != ts) {
				t.Errorf("%s: timestamp %v, header %q", s.name, l.Timestamp, ts)
			}
		}
		if string(lines[0].Body) != body {
			t.Errorf("body %s, want the JSON as sent", lines[0].Body)
		}
		if string(lines[6].Body) != `"plain text"` {
			t.Errorf("a body not JSON: %s", lines[6].Body)
		}
		if !strings.Contains(lines[2].Error, "no matching webhook signature") ||
			!strings.Contains(lines[4].Error, "missing webhook headers") ||
			!strings.Contains(lines[5].Error, "too old") {
			t.Errorf("errors: %q, %q, %q", lines[2].Error, lines[4].Error, lines[5].Error)
		}
		if l := lines[7]; !l.Verified || l.WebhookID != "msg_6" || l.Path != "/deliver" || string(l.Body) != body {
			t.Errorf("the delivered line %+v", l)
		}
	})
	t.Run("delay", func(t *testing.T) {
		t.Parallel()
		secret := freshSecret(t)
		out := filepath.Join(t.TempDir(), "requests.jsonl")
		url := start(t, bin, "-secret", secret, "-delay", "2s", "-out", out)
		a := webhooks.Deliver(t.Context(), webhooks.NewClient(webhooks.Options{AllowPrivate: true, Timeout: 300 * time.Millisecond}),
			url, secret, "msg_1", time.Now(), []byte(`{}`))
		if a.Outcome != webhooks.OutcomeTimeout {
			t.Fatalf("Deliver to a slow receiver: %+v", a)
		}
		// The line is written before the wait.
		if lines := readLines(t, out); len(lines) != 1 || !lines[0].Verified || lines[0].Status != 200 {
			t.Fatalf("lines %+v", lines)
		}
	})
	t.Run("usage", func(t *testing.T) {
		t.Parallel()
		for _, args := range [][]string{
			{},                          // no secret
			{"-secret", "not-a-secret"}, // invalid secret
			{"-secret", freshSecret(t), "-status", "42"},
			{"-secret", freshSecret(t), "extra"},
		} {
			cmd := exec.Command(bin, args...)
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			err := cmd.Run()
			var exit *exec.ExitError
			if !errors.As(err, &exit) || exit.ExitCode() != 2 || !strings.Contains(stderr.String(), "webhookrecv") {
				t.Errorf("%q: %v, stderr %q; want exit status 2", args, err, stderr.String())
			}
		}
	})
}

func freshSecret(t *testing.T) string {
	t.Helper()
	s, err := webhooks.NewSecret()
	if err != nil {
		t.Fatal(err)
	}
	return s
}

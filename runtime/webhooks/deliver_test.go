package webhooks

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"
)

// receiver is a real HTTP server on 127.0.0.1 that counts its requests, verifies each with the secret,
// and answers with handle.
type receiver struct {
	*httptest.Server
	requests atomic.Int32
	verified atomic.Int32
	header   atomic.Pointer[http.Header]
}

func newReceiver(t *testing.T, secret string, handle func(w http.ResponseWriter, r *http.Request)) *receiver {
	t.Helper()
	rc := &receiver{}
	rc.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rc.requests.Add(1)
		body, _ := io.ReadAll(r.Body)
		h := r.Header.Clone()
		rc.header.Store(&h)
		if Verify([]string{secret}, r.Header, body, time.Now(), 0) == nil {
			rc.verified.Add(1)
		}
		handle(w, r)
	}))
	t.Cleanup(rc.Close)
	return rc
}

func answer(status int, body string) func(http.ResponseWriter, *http.Request) {
	return func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(status)
		_, _ = io.WriteString(w, body)
	}
}

func newTestSecret(t *testing.T) string {
	t.Helper()
	s, err := NewSecret()
	if err != nil {
		t.Fatal(err)
	}
	return s
}

var testBody = []byte(`{"type":"record.created","timestamp":"2026-11-24T10:00:00Z","data":{"id":"r_1"}}`)

func TestDeliverDelivered(t *testing.T) {
	t.Parallel()
	secret := newTestSecret(t)
	rc := newReceiver(t, secret, answer(http.StatusAccepted, "thanks"))
	a := Deliver(t.Context(), NewClient(Options{AllowPrivate: true}), rc.URL+"/hooks", secret, "msg_1", time.Now(), testBody)
	if a.Outcome != OutcomeDelivered || a.Status != http.StatusAccepted || a.Err != "" {
		t.Fatalf("attempt %+v", a)
	}
	if a.ResponseExcerpt != "thanks" || string(a.Response) != "thanks" || a.Latency <= 0 {
		t.Fatalf("attempt %+v", a)
	}
	if rc.requests.Load() != 1 || rc.verified.Load() != 1 {
		t.Fatalf("receiver: %d requests, %d verified", rc.requests.Load(), rc.verified.Load())
	}
	h := *rc.header.Load()
	for k, want := range map[string]string{
		"Content-Type": "application/json", "User-Agent": UserAgent, "Webhook-Id": "msg_1",
	} {
		if got := h.Get(k); got != want {
			t.Errorf("%s = %q, want %q", k, got, want)
		}
	}
	if h.Get("Webhook-Timestamp") == "" || !strings.HasPrefix(h.Get("Webhook-Signature"), "v1,") {
		t.Errorf("headers %v", h)
	}
}

// TestDeliverRefusesPrivate: the same receiver, the client not allowing private addresses: refused by
// address and by name, before any byte is sent.
func TestDeliverRefusesPrivate(t *testing.T) {
	t.Parallel()
	secret := newTestSecret(t)
	rc := newReceiver(t, secret, answer(http.StatusOK, ""))
	_, port, err := net.SplitHostPort(rc.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	client := NewClient(Options{})
	for _, url := range []string{rc.URL + "/hooks", "http://localhost:" + port + "/hooks"} {
		a := Deliver(t.Context(), client, url, secret, "msg_1", time.Now(), testBody)
		if a.Outcome != OutcomeRefusedAddress || a.Status != 0 || !strings.Contains(a.Err, "loopback") {
			t.Errorf("%s: attempt %+v", url, a)
		}
		if strings.Contains(a.Err, "/hooks") {
			t.Errorf("the error quotes the URL: %s", a.Err)
		}
		_, err := client.Get(url)
		var re *RefusedAddressError
		if !errors.As(err, &re) || !re.IP.IsLoopback() {
			t.Errorf("%s: Get error %v, want a *RefusedAddressError of a loopback address", url, err)
		}
	}
	if n := rc.requests.Load(); n != 0 {
		t.Fatalf("the receiver got %d requests", n)
	}
}

func TestDeliverRedirectNotFollowed(t *testing.T) {
	t.Parallel()
	secret := newTestSecret(t)
	target := newReceiver(t, secret, answer(http.StatusOK, ""))
	rc := newReceiver(t, secret, func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, target.URL+"/elsewhere", http.StatusTemporaryRedirect)
	})
	a := Deliver(t.Context(), NewClient(Options{AllowPrivate: true}), rc.URL, secret, "msg_1", time.Now(), testBody)
	if a.Outcome != OutcomeHTTPError || a.Status != http.StatusTemporaryRedirect || a.Err != "status 307" {
		t.Fatalf("attempt %+v", a)
	}
	if rc.requests.Load() != 1 || target.requests.Load() != 0 {
		t.Fatalf("requests: %d to the first, %d to the redirect's target", rc.requests.Load(), target.requests.Load())
	}
}

func TestDeliverTimeout(t *testing.T) {
	t.Parallel()
	secret := newTestSecret(t)
	release := make(chan struct{})
	rc := newReceiver(t, secret, func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	})
	defer close(release)
	a := Deliver(t.Context(), NewClient(Options{AllowPrivate: true, Timeout: 200 * time.Millisecond}),
		rc.URL, secret, "msg_1", time.Now(), testBody)
	if a.Outcome != OutcomeTimeout || a.Status != 0 || a.Latency < 200*time.Millisecond {
		t.Fatalf("attempt %+v", a)
	}
	// The context's deadline is a timeout too.
	ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel()
	a = Deliver(ctx, NewClient(Options{AllowPrivate: true}), rc.URL, secret, "msg_2", time.Now(), testBody)
	if a.Outcome != OutcomeTimeout {
		t.Fatalf("attempt under a context deadline %+v", a)
	}
}

func TestDeliverCanceled(t *testing.T) {
	t.Parallel()
	secret := newTestSecret(t)
	rc := newReceiver(t, secret, func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() })
	ctx, cancel := context.WithCancel(t.Context())
	time.AfterFunc(50*time.Millisecond, cancel)
	a := Deliver(ctx, NewClient(Options{AllowPrivate: true}), rc.URL, secret, "msg_1", time.Now(), testBody)
	if a.Outcome != OutcomeCanceled {
		t.Fatalf("attempt %+v", a)
	}
}

func TestDeliverHTTPError(t *testing.T) {
	t.Parallel()
	secret := newTestSecret(t)
	rc := newReceiver(t, secret, func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Retry-After", "120")
		w.WriteHeader(http.StatusInternalServerError)
		_, _ = io.WriteString(w, "database is down")
	})
	a := Deliver(t.Context(), NewClient(Options{AllowPrivate: true}), rc.URL, secret, "msg_1", time.Now(), testBody)
	if a.Outcome != OutcomeHTTPError || a.Status != 500 || a.Err != "status 500" ||
		a.ResponseExcerpt != "database is down" || a.RetryAfter != 2*time.Minute {
		t.Fatalf("attempt %+v", a)
	}
	if rc.verified.Load() != 1 {
		t.Fatal("the request did not verify")
	}
}

func TestDeliverLargeAnswer(t *testing.T) {
	t.Parallel()
	secret := newTestSecret(t)
	big := strings.Repeat("é", MaxResponseBytes) // twice the limit in bytes
	rc := newReceiver(t, secret, answer(http.StatusOK, big))
	a := Deliver(t.Context(), NewClient(Options{AllowPrivate: true}), rc.URL, secret, "msg_1", time.Now(), testBody)
	if a.Outcome != OutcomeDelivered || len(a.Response) != MaxResponseBytes {
		t.Fatalf("outcome %s, %d bytes kept", a.Outcome, len(a.Response))
	}
	if len(a.ResponseExcerpt) > ExcerptBytes || len(a.ResponseExcerpt) < ExcerptBytes-3 ||
		!utf8.ValidString(a.ResponseExcerpt) || strings.Contains(a.ResponseExcerpt, "\uFFFD") {
		t.Fatalf("excerpt of %d bytes, valid %v", len(a.ResponseExcerpt), utf8.ValidString(a.ResponseExcerpt))
	}
}

func TestDeliverTLS(t *testing.T) {
	t.Parallel()
	secret := newTestSecret(t)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {}))
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // the refused handshakes
	srv.StartTLS()
	t.Cleanup(srv.Close)
	// Untrusted certificate.
	a := Deliver(t.Context(), NewClient(Options{AllowPrivate: true}), srv.URL, secret, "msg_1", time.Now(), testBody)
	if a.Outcome != OutcomeTLS {
		t.Fatalf("untrusted certificate: attempt %+v", a)
	}
	// Trusted: delivered over TLS.
	trusted := srv.Client().Transport.(*http.Transport).TLSClientConfig
	a = Deliver(t.Context(), NewClient(Options{AllowPrivate: true, TLSConfig: trusted}), srv.URL, secret, "msg_1", time.Now(), testBody)
	if a.Outcome != OutcomeDelivered {
		t.Fatalf("trusted certificate: attempt %+v", a)
	}
	// https to a plain HTTP server.
	plain := newReceiver(t, secret, answer(http.StatusOK, ""))
	a = Deliver(t.Context(), NewClient(Options{AllowPrivate: true}), strings.Replace(plain.URL, "http:", "https:", 1),
		secret, "msg_1", time.Now(), testBody)
	if a.Outcome != OutcomeTLS {
		t.Fatalf("https to plain HTTP: attempt %+v", a)
	}
}

func TestDeliverConnectAndDNS(t *testing.T) {
	t.Parallel()
	secret := newTestSecret(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "http://" + ln.Addr().String() + "/"
	ln.Close()
	a := Deliver(t.Context(), NewClient(Options{AllowPrivate: true}), closed, secret, "msg_1", time.Now(), testBody)
	if a.Outcome != OutcomeConnect {
		t.Fatalf("closed port: attempt %+v", a)
	}
	// .invalid never resolves (RFC 6761); without a resolver the lookup fails as DNS as well.
	a = Deliver(t.Context(), NewClient(Options{AllowPrivate: true}), "http://no-such-host.invalid/", secret, "msg_1", time.Now(), testBody)
	if a.Outcome != OutcomeDNS {
		t.Fatalf("unresolvable host: attempt %+v", a)
	}
	// A connection closed before an answer.
	ln, err = net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			_, _ = c.Read(make([]byte, 1024))
			c.Close()
		}
	}()
	a = Deliver(t.Context(), NewClient(Options{AllowPrivate: true}), "http://"+ln.Addr().String()+"/", secret, "msg_1", time.Now(), testBody)
	if a.Outcome != OutcomeConnect {
		t.Fatalf("connection closed: attempt %+v", a)
	}
}

// An endpoint saved before ValidateURL refused characters RFC 3986 does not allow (`"`, `<`, `>`, …) is
// still delivered to (net/http percent-encodes its path; the query goes as stored).
func TestDeliverToAURLSavedBeforeTheCharacterCheck(t *testing.T) {
	t.Parallel()
	secret := newTestSecret(t)
	got := make(chan string, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got <- r.RequestURI
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(srv.Close)
	raw := srv.URL + `/in/"a"<b>?q="c"`
	if err := ValidateURL(raw, true); !errors.Is(err, ErrInvalidURL) {
		t.Fatalf("ValidateURL(%q) = %v, want it refused", raw, err)
	}
	a := Deliver(t.Context(), NewClient(Options{AllowPrivate: true}), raw, secret, "msg_1", time.Now(), testBody)
	if a.Outcome != OutcomeDelivered {
		t.Fatalf("attempt %+v", a)
	}
	if uri := <-got; !strings.HasPrefix(uri, "/in/%22a%22%3Cb%3E?") {
		t.Fatalf("sent request URI %q", uri)
	}
}

func TestDeliverRefusesBeforeSending(t *testing.T) {
	t.Parallel()
	secret := newTestSecret(t)
	for name, c := range map[string]struct {
		url, secret, msgID string
		want               Outcome
	}{
		"not http":       {"ftp://example.com/", secret, "msg_1", OutcomeInvalidURL},
		"userinfo":       {"https://u:p@example.com/", secret, "msg_1", OutcomeInvalidURL},
		"bad secret":     {"https://example.com/", "whsec_abc", "msg_1", OutcomeSigning},
		"id with a stop": {"https://example.com/", secret, "msg.1", OutcomeSigning},
		"metadata":       {"http://169.254.169.254/latest/", secret, "msg_1", OutcomeRefusedAddress},
		"mapped":         {"http://[::ffff:127.0.0.1]:1/", secret, "msg_1", OutcomeRefusedAddress},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			a := Deliver(t.Context(), NewClient(Options{}), c.url, c.secret, c.msgID, time.Now(), testBody)
			if a.Outcome != c.want || a.Err == "" {
				t.Fatalf("attempt %+v, want %s", a, c.want)
			}
			if strings.Contains(a.Err, "u:p") {
				t.Fatalf("error quotes the credentials: %s", a.Err)
			}
		})
	}
}

func TestNewClient(t *testing.T) {
	t.Parallel()
	c := NewClient(Options{})
	tr, ok := c.Transport.(*http.Transport)
	if !ok || tr.Proxy != nil {
		t.Fatal("the transport may use a proxy")
	}
	if c.Timeout != DefaultTimeout || c.CheckRedirect == nil {
		t.Fatalf("client %+v", c)
	}
}

func TestRetryAfter(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 24, 10, 0, 0, 0, time.UTC)
	for v, want := range map[string]time.Duration{
		"":                              0,
		"0":                             0,
		"-5":                            0,
		"30":                            30 * time.Second,
		" 30 ":                          30 * time.Second,
		"99999999999":                   7 * 24 * time.Hour,
		"soon":                          0,
		"Tue, 24 Nov 2026 10:05:00 GMT": 5 * time.Minute,
		"Tue, 24 Nov 2026 09:00:00 GMT": 0,
	} {
		if got := retryAfter(v, now); got != want {
			t.Errorf("retryAfter(%q) = %s, want %s", v, got, want)
		}
	}
}

func TestExcerpt(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		in   []byte
		n    int
		want string
	}{
		{[]byte("hello"), 10, "hello"},
		{[]byte("hello"), 3, "hel"},
		{[]byte("aé"), 2, "a"},   // é cut in two
		{[]byte("a€b"), 3, "a"},  // € cut after two of three bytes
		{[]byte("a€b"), 4, "a€"}, // whole
		{[]byte{'a', 0xff, 'b'}, 10, "a\uFFFDb"},
		{bytes.Repeat([]byte{0xff}, 5), 4, "\uFFFD"}, // invalid bytes dropped as if cut, the last one replaced
	} {
		if got := excerpt(c.in, c.n); got != c.want {
			t.Errorf("excerpt(%q, %d) = %q, want %q", c.in, c.n, got, c.want)
		}
	}
}

// During a rotation the old and the new secret both sign: a receiver that knows either one verifies.
func TestDeliverSignsWithEverySecretOfARotation(t *testing.T) {
	t.Parallel()
	oldSecret, newSecret := newTestSecret(t), newTestSecret(t)
	for _, known := range []string{oldSecret, newSecret} {
		rc := newReceiver(t, known, answer(204, ""))
		a := Deliver(context.Background(), NewClient(Options{AllowPrivate: true}), rc.URL, newSecret, "msg_rot", time.Now(), []byte(`{"a":1}`), oldSecret)
		if a.Outcome != OutcomeDelivered || rc.verified.Load() != 1 {
			t.Errorf("outcome %s, verified %d", a.Outcome, rc.verified.Load())
		}
		if sigs := strings.Fields((*rc.header.Load()).Get("webhook-signature")); len(sigs) != 2 {
			t.Errorf("signatures %v, want 2", sigs)
		}
	}
}

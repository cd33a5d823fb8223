package webhooks

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// UserAgent is the User-Agent of every delivery.
const UserAgent = "WorkspaceRecords-Webhooks/1"

// Sizes of what [Deliver] keeps of an answer.
const (
	// MaxResponseBytes is the most of an answer's body that is read; the rest is never read (and the
	// connection is then not reused).
	MaxResponseBytes = 64 << 10
	// ExcerptBytes is the size of [Attempt.ResponseExcerpt], for a log line or a delivery listing.
	ExcerptBytes = 1 << 10
)

// Outcome says how a delivery attempt ended. Only [OutcomeDelivered] is a success; the worker retries
// the others on the [NextAttempt] schedule (but, per the specification, may disable an endpoint that
// answers 410 Gone, and should throttle on 429, 502 and 504).
type Outcome string

// The outcomes of [Deliver].
const (
	// OutcomeDelivered: the endpoint answered 2xx.
	OutcomeDelivered Outcome = "delivered"
	// OutcomeHTTPError: the endpoint answered with another status, 3xx included (redirects are not
	// followed).
	OutcomeHTTPError Outcome = "http_error"
	// OutcomeTimeout: the attempt ran out of time (the client's Timeout or the context's deadline)
	// while connecting, sending or waiting for the answer.
	OutcomeTimeout Outcome = "timeout"
	// OutcomeRefusedAddress: the URL's host is, or resolved to, an address in a refused range (see
	// [CheckAddress]); nothing was sent.
	OutcomeRefusedAddress Outcome = "refused_address"
	// OutcomeDNS: the host name could not be resolved.
	OutcomeDNS Outcome = "dns"
	// OutcomeConnect: the connection could not be made (refused, unreachable) or broke before an
	// answer came (reset, closed).
	OutcomeConnect Outcome = "connect"
	// OutcomeTLS: the TLS handshake failed: an untrusted or mismatched certificate, a protocol error.
	OutcomeTLS Outcome = "tls"
	// OutcomeInvalidURL: the URL fails [ValidateURL]'s syntax checks (but that of its characters, which
	// endpoints saved before it may fail); nothing was sent.
	OutcomeInvalidURL Outcome = "invalid_url"
	// OutcomeSigning: the message could not be signed (an invalid secret or message id); nothing was
	// sent. A configuration fault, not the endpoint's.
	OutcomeSigning Outcome = "signing"
	// OutcomeCanceled: the caller's context was canceled (the worker is stopping); the attempt says
	// nothing about the endpoint and should not count as one.
	OutcomeCanceled Outcome = "canceled"
)

// String returns the outcome's name.
func (o Outcome) String() string { return string(o) }

// Attempt is the record of one delivery attempt.
type Attempt struct {
	// Status is the HTTP status of the answer, 0 when none came.
	Status int
	// Latency is the time from the start of the attempt to the end of reading the answer (or the
	// failure).
	Latency time.Duration
	// Outcome says how the attempt ended; only [OutcomeDelivered] is a success.
	Outcome Outcome
	// Err describes the failure, "" when there was none. It never quotes the URL (which may carry a
	// token) nor the secret. A 2xx answer whose body could not be read to the end is still delivered,
	// with Err saying so.
	Err string
	// Response is the start of the answer's body, at most [MaxResponseBytes].
	Response []byte
	// ResponseExcerpt is the start of Response, at most [ExcerptBytes], cut on a UTF-8 boundary with
	// invalid sequences replaced, for a log line.
	ResponseExcerpt string
	// RetryAfter is the delay an answer's Retry-After header asks for (seconds or an HTTP date), 0
	// when none; the specification asks senders to take it into account when scheduling the next
	// attempt.
	RetryAfter time.Duration
}

// Deliver makes one delivery attempt: it signs body with secret ([Sign]) and POSTs it to endpointURL as
// application/json with the webhook-id, webhook-timestamp and webhook-signature headers ([Headers]) and
// User-Agent [UserAgent], through client — which should come from [NewClient]; nil means a client of
// NewClient(Options{}) made for this one call. It reads at most [MaxResponseBytes] of the answer.
//
// The message id stays the same across the attempts of one message (the receiver's idempotency key);
// ts is the time of this attempt, not of the event. Deliver never panics on a failure and returns no
// error: every failure is an [Attempt] with an [Outcome] other than [OutcomeDelivered].
//
// While a secret is being rotated, also holds the secrets that still sign beside it: the header then
// carries one signature per secret, space-separated, as the specification provides, so a receiver
// that knows either verifies.
func Deliver(ctx context.Context, client *http.Client, endpointURL string, secret string, msgID string, ts time.Time, body []byte, also ...string) Attempt {
	start := time.Now()
	done := func(a Attempt) Attempt {
		a.Latency = time.Since(start)
		return a
	}
	if err := checkURL(endpointURL, true); err != nil {
		return done(Attempt{Outcome: OutcomeInvalidURL, Err: err.Error()})
	}
	sig, err := Sign(secret, msgID, ts, body)
	if err != nil {
		return done(Attempt{Outcome: OutcomeSigning, Err: err.Error()})
	}
	for _, other := range also {
		more, err := Sign(other, msgID, ts, body)
		if err != nil {
			return done(Attempt{Outcome: OutcomeSigning, Err: err.Error()})
		}
		sig += " " + more
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpointURL, bytes.NewReader(body))
	if err != nil {
		return done(Attempt{Outcome: OutcomeInvalidURL, Err: fmt.Sprintf("%s: %v", ErrInvalidURL, unwrapURLError(err))})
	}
	for k, v := range Headers(msgID, ts, sig) {
		req.Header[k] = v
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", UserAgent)
	if client == nil {
		client = NewClient(Options{})
		defer client.CloseIdleConnections()
	}

	resp, err := client.Do(req)
	if err != nil {
		return done(Attempt{Outcome: classify(ctx, err), Err: "post: " + unwrapURLError(err).Error()})
	}
	defer resp.Body.Close()
	a := Attempt{Status: resp.StatusCode, Outcome: OutcomeHTTPError, RetryAfter: retryAfter(resp.Header.Get("Retry-After"), time.Now())}
	if resp.StatusCode >= 200 && resp.StatusCode <= 299 {
		a.Outcome = OutcomeDelivered
	}
	a.Response, err = io.ReadAll(io.LimitReader(resp.Body, MaxResponseBytes))
	if err != nil {
		a.Err = fmt.Sprintf("read answer (status %d): %v", resp.StatusCode, unwrapURLError(err))
	} else if a.Outcome == OutcomeHTTPError {
		a.Err = "status " + strconv.Itoa(resp.StatusCode)
	}
	a.ResponseExcerpt = excerpt(a.Response, ExcerptBytes)
	return done(a)
}

// classify names the outcome of a failed request. The order matters: a refused address and a DNS
// failure are reported as such even when they came with a timeout, and the caller's cancellation
// before a timeout.
func classify(ctx context.Context, err error) Outcome {
	var refused *RefusedAddressError
	var dnsErr *net.DNSError
	var netErr net.Error
	var certErr *tls.CertificateVerificationError
	var recordErr tls.RecordHeaderError
	var alertErr tls.AlertError
	var unknownAuthority x509.UnknownAuthorityError
	var hostnameErr x509.HostnameError
	var invalidCert x509.CertificateInvalidError
	switch {
	case errors.As(err, &refused):
		return OutcomeRefusedAddress
	case errors.As(err, &dnsErr):
		return OutcomeDNS
	case errors.Is(err, context.Canceled) && ctx.Err() != nil:
		return OutcomeCanceled
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &netErr) && netErr.Timeout():
		return OutcomeTimeout
	case errors.As(err, &certErr), errors.As(err, &recordErr), errors.As(err, &alertErr),
		errors.As(err, &unknownAuthority), errors.As(err, &hostnameErr), errors.As(err, &invalidCert),
		strings.Contains(err.Error(), "tls: "),
		// net/http replaces the tls.RecordHeaderError of a plain-HTTP answer with this text.
		strings.Contains(err.Error(), "server gave HTTP response to HTTPS client"):
		return OutcomeTLS
	}
	return OutcomeConnect
}

// unwrapURLError drops the *url.Error around a client error: its text quotes the whole URL.
func unwrapURLError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

// retryAfter parses a Retry-After value: delay seconds or an HTTP date, 0 when absent, invalid or past.
func retryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	if n, err := strconv.ParseInt(v, 10, 64); err == nil {
		if n <= 0 {
			return 0
		}
		return time.Duration(min(n, int64(7*24*time.Hour/time.Second))) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return t.Sub(now).Round(time.Second)
	}
	return 0
}

// excerpt returns at most n bytes of b as valid UTF-8, not cutting a character in two.
func excerpt(b []byte, n int) string {
	if len(b) > n {
		b = b[:n]
		// Drop a character cut at the end (at most utf8.UTFMax-1 bytes).
		for i := 0; i < utf8.UTFMax-1 && len(b) > 0; i++ {
			r, size := utf8.DecodeLastRune(b)
			if r != utf8.RuneError || size != 1 {
				break
			}
			b = b[:len(b)-1]
		}
	}
	return strings.ToValidUTF8(string(b), "\uFFFD")
}

package webhooks

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Header names of the Standard Webhooks specification. [http.Header] stores them canonicalized
// (Webhook-Id); HTTP header names are case-insensitive.
const (
	HeaderID        = "webhook-id"
	HeaderTimestamp = "webhook-timestamp"
	HeaderSignature = "webhook-signature"
)

// SecretPrefix starts every signing secret; the rest is the key in standard base64.
const SecretPrefix = "whsec_"

// Key sizes the specification allows for a symmetric secret, and the size [NewSecret] makes.
const (
	MinSecretBytes = 24
	MaxSecretBytes = 64
	SecretBytes    = 32
)

// DefaultTolerance is how far a message's timestamp may be from the receiver's clock, either way, when
// [Verify] is given a tolerance of 0.
const DefaultTolerance = 5 * time.Minute

// signatureVersion marks an HMAC-SHA256 signature ("v1a" would be ed25519, which we do not send).
const signatureVersion = "v1"

// Errors of [Sign] and [Verify]. Test for them with [errors.Is].
var (
	// ErrInvalidSecret: a secret is not whsec_ + base64 of 24 to 64 bytes.
	ErrInvalidSecret = errors.New("invalid webhook secret")
	// ErrInvalidMessageID: a message id is empty, or holds a full stop, a space or a control character
	// (the id is a header value and a part of the signed content, whose parts are split on full stops).
	ErrInvalidMessageID = errors.New("invalid webhook message id")
	// ErrMissingHeaders: webhook-id, webhook-timestamp or webhook-signature is absent or empty.
	ErrMissingHeaders = errors.New("missing webhook headers")
	// ErrInvalidTimestamp: webhook-timestamp is not an integer number of unix seconds.
	ErrInvalidTimestamp = errors.New("invalid webhook-timestamp header")
	// ErrNoMatchingSignature: no v1 signature of the header matches the body under any secret.
	ErrNoMatchingSignature = errors.New("no matching webhook signature")
	// ErrTimestampTooOld: the signature matches, but the timestamp is older than the tolerance (a replay).
	ErrTimestampTooOld = errors.New("webhook timestamp too old")
	// ErrTimestampTooNew: the signature matches, but the timestamp is further ahead than the tolerance.
	ErrTimestampTooNew = errors.New("webhook timestamp too new")
)

// NewSecret returns a new signing secret: [SecretPrefix] followed by the standard base64 encoding of
// [SecretBytes] bytes from crypto/rand.
func NewSecret() (string, error) {
	key := make([]byte, SecretBytes)
	if _, err := rand.Read(key); err != nil {
		return "", fmt.Errorf("new webhook secret: %w", err)
	}
	return SecretPrefix + base64.StdEncoding.EncodeToString(key), nil
}

// ParseSecret returns the key of a secret: the standard base64 after [SecretPrefix], decoded. The prefix
// is required, and the key must be [MinSecretBytes] to [MaxSecretBytes] long. The error wraps
// [ErrInvalidSecret] and never quotes the secret.
func ParseSecret(secret string) ([]byte, error) {
	enc, ok := strings.CutPrefix(secret, SecretPrefix)
	if !ok {
		return nil, fmt.Errorf("%w: no %s prefix", ErrInvalidSecret, SecretPrefix)
	}
	key, err := base64.StdEncoding.DecodeString(enc)
	if err != nil {
		return nil, fmt.Errorf("%w: not standard base64 after %s", ErrInvalidSecret, SecretPrefix)
	}
	if len(key) < MinSecretBytes || len(key) > MaxSecretBytes {
		return nil, fmt.Errorf("%w: %d bytes, want %d to %d", ErrInvalidSecret, len(key), MinSecretBytes, MaxSecretBytes)
	}
	return key, nil
}

// Sign returns the signature of a message: "v1," followed by the standard base64 of
// HMAC-SHA256(key, msgID + "." + unix seconds of ts + "." + body), the key being the decoded secret. Several
// signatures (one per secret while a secret is rotated) go into one header joined by spaces.
func Sign(secret, msgID string, ts time.Time, body []byte) (string, error) {
	key, err := ParseSecret(secret)
	if err != nil {
		return "", fmt.Errorf("sign: %w", err)
	}
	if err := checkMessageID(msgID); err != nil {
		return "", fmt.Errorf("sign: %w", err)
	}
	return signatureVersion + "," + string(mac(key, msgID, ts.Unix(), body)), nil
}

// Headers returns the three headers of a signed message: webhook-id, webhook-timestamp (unix seconds)
// and webhook-signature.
func Headers(msgID string, ts time.Time, signature string) http.Header {
	h := make(http.Header, 3)
	h.Set(HeaderID, msgID)
	h.Set(HeaderTimestamp, strconv.FormatInt(ts.Unix(), 10))
	h.Set(HeaderSignature, signature)
	return h
}

// Verify checks a received message against the secrets the receiver trusts (more than one while a secret
// is rotated). It accepts the message when a v1 signature of the space-separated webhook-signature list
// matches the body under one of the secrets — compared in constant time — and the webhook-timestamp is
// within tolerance of now, either way (0 means [DefaultTolerance]). Signatures of other versions (v1a)
// are skipped.
//
// The signature is checked before the timestamp, so [ErrTimestampTooOld] and [ErrTimestampTooNew] mean
// an authentic message outside its window (a replay, or a skewed clock), while a forgery gets
// [ErrNoMatchingSignature] whatever its timestamp. An unusable secret is [ErrInvalidSecret]: a
// configuration fault, not the sender's.
func Verify(secrets []string, h http.Header, body []byte, now time.Time, tolerance time.Duration) error {
	if tolerance <= 0 {
		tolerance = DefaultTolerance
	}
	if len(secrets) == 0 {
		return fmt.Errorf("verify: %w: no secret given", ErrInvalidSecret)
	}
	keys := make([][]byte, 0, len(secrets))
	for i, s := range secrets {
		key, err := ParseSecret(s)
		if err != nil {
			return fmt.Errorf("verify: secret %d: %w", i+1, err)
		}
		keys = append(keys, key)
	}
	msgID, tsText, sigList := h.Get(HeaderID), h.Get(HeaderTimestamp), h.Get(HeaderSignature)
	var missing []string
	for _, f := range []struct{ name, value string }{
		{HeaderID, msgID}, {HeaderTimestamp, tsText}, {HeaderSignature, sigList},
	} {
		if f.value == "" {
			missing = append(missing, f.name)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("verify: %w: %s", ErrMissingHeaders, strings.Join(missing, ", "))
	}
	ts, err := strconv.ParseInt(tsText, 10, 64)
	if err != nil {
		return fmt.Errorf("verify: %w: %q", ErrInvalidTimestamp, clip(tsText, 32))
	}
	if !matches(keys, msgID, ts, body, sigList) {
		return fmt.Errorf("verify: message %q: %w", clip(msgID, 64), ErrNoMatchingSignature)
	}
	switch at := time.Unix(ts, 0); {
	case now.Sub(at) > tolerance:
		return fmt.Errorf("verify: message %q: %w: %s ago, tolerance %s", clip(msgID, 64), ErrTimestampTooOld,
			now.Sub(at).Truncate(time.Second), tolerance)
	case at.Sub(now) > tolerance:
		return fmt.Errorf("verify: message %q: %w: %s ahead, tolerance %s", clip(msgID, 64), ErrTimestampTooNew,
			at.Sub(now).Truncate(time.Second), tolerance)
	}
	return nil
}

// matches reports whether one v1 signature of the list matches under one of the keys. Every candidate is
// compared with every expected signature in constant time (hmac.Equal); the loop does not stop early on
// a match, so its duration says nothing about which one matched.
func matches(keys [][]byte, msgID string, ts int64, body []byte, sigList string) bool {
	expected := make([][]byte, len(keys))
	for i, key := range keys {
		expected[i] = mac(key, msgID, ts, body)
	}
	found := 0
	for _, entry := range strings.Fields(sigList) {
		version, sig, ok := strings.Cut(entry, ",")
		if !ok || version != signatureVersion {
			continue
		}
		for _, want := range expected {
			if hmac.Equal([]byte(sig), want) {
				found++
			}
		}
	}
	return found > 0
}

// mac returns the standard base64 of HMAC-SHA256(key, "msgID.ts.body").
func mac(key []byte, msgID string, ts int64, body []byte) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(msgID))
	m.Write([]byte{'.'})
	m.Write(strconv.AppendInt(nil, ts, 10))
	m.Write([]byte{'.'})
	m.Write(body)
	sum := m.Sum(nil)
	out := make([]byte, base64.StdEncoding.EncodedLen(len(sum)))
	base64.StdEncoding.Encode(out, sum)
	return out
}

// checkMessageID refuses an id that cannot travel as a header value or would make the signed content
// ambiguous.
func checkMessageID(id string) error {
	if id == "" {
		return fmt.Errorf("%w: empty", ErrInvalidMessageID)
	}
	if len(id) > 256 {
		return fmt.Errorf("%w: %d bytes, at most 256", ErrInvalidMessageID, len(id))
	}
	for _, c := range []byte(id) {
		if c == '.' || c <= ' ' || c == 0x7f {
			return fmt.Errorf("%w: %q holds %q", ErrInvalidMessageID, clip(id, 64), c)
		}
	}
	return nil
}

// clip shortens untrusted text quoted in an error.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

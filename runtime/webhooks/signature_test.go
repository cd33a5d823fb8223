package webhooks

import (
	"encoding/base64"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The test vectors of the Standard Webhooks reference libraries
// (standard-webhooks/standard-webhooks: libraries/go/webhook_test.go TestWebhookSign, the same vector in
// the JavaScript, Python, PHP, Ruby, Java and C# tests; libraries/rust/src/lib.rs test_sign).
var vectors = []struct {
	name, secret, msgID string
	ts                  int64
	body, want          string
}{
	{"go", "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "msg_p5jXN8AQM9LWM0D4loKWxJek", 1614265330,
		`{"test": 2432232314}`, "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="},
	{"rust", "whsec_C2FVsBQIhrscChlQIMV+b5sSYspob7oD", "msg_27UH4WbU6Z5A5EzD8u03UvzRbpk", 1649367553,
		`{"email":"test@example.com","username":"test_user"}`, "v1,tZ1I4/hDygAJgO5TYxiSd6Sd0kDW6hPenDe+bTa3Kkw="},
}

func TestSignVectors(t *testing.T) {
	t.Parallel()
	for _, v := range vectors {
		t.Run(v.name, func(t *testing.T) {
			t.Parallel()
			ts := time.Unix(v.ts, 0)
			got, err := Sign(v.secret, v.msgID, ts, []byte(v.body))
			if err != nil {
				t.Fatal(err)
			}
			if got != v.want {
				t.Fatalf("Sign = %s, want %s", got, v.want)
			}
			h := Headers(v.msgID, ts, got)
			if err := Verify([]string{v.secret}, h, []byte(v.body), ts.Add(time.Minute), 0); err != nil {
				t.Fatalf("Verify of the vector: %v", err)
			}
			if got, want := h.Get("webhook-timestamp"), strconv.FormatInt(v.ts, 10); got != want {
				t.Fatalf("webhook-timestamp = %q, want %q", got, want)
			}
		})
	}
}

func TestNewSecret(t *testing.T) {
	t.Parallel()
	a, err := NewSecret()
	if err != nil {
		t.Fatal(err)
	}
	b, err := NewSecret()
	if err != nil {
		t.Fatal(err)
	}
	if a == b {
		t.Fatal("two secrets are equal")
	}
	if !strings.HasPrefix(a, "whsec_") {
		t.Fatalf("secret %q lacks whsec_", a)
	}
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(a, "whsec_"))
	if err != nil || len(key) != 32 {
		t.Fatalf("key of %q: %d bytes, %v", a, len(key), err)
	}
	if _, err := Sign(a, "msg_1", time.Now(), []byte("{}")); err != nil {
		t.Fatalf("Sign with a new secret: %v", err)
	}
}

func TestSignRefuses(t *testing.T) {
	t.Parallel()
	good := vectors[0].secret
	short := "whsec_" + base64.StdEncoding.EncodeToString(make([]byte, 23))
	long := "whsec_" + base64.StdEncoding.EncodeToString(make([]byte, 65))
	for name, c := range map[string]struct {
		secret, msgID string
		want          error
	}{
		"no prefix":         {strings.TrimPrefix(good, "whsec_"), "msg_1", ErrInvalidSecret},
		"empty secret":      {"whsec_", "msg_1", ErrInvalidSecret},
		"not base64":        {"whsec_not*base64", "msg_1", ErrInvalidSecret},
		"short key":         {short, "msg_1", ErrInvalidSecret},
		"long key":          {long, "msg_1", ErrInvalidSecret},
		"empty id":          {good, "", ErrInvalidMessageID},
		"id with stop":      {good, "msg.1", ErrInvalidMessageID},
		"id with space":     {good, "msg 1", ErrInvalidMessageID},
		"id with newline":   {good, "msg\n1", ErrInvalidMessageID},
		"id over 256":       {good, strings.Repeat("m", 257), ErrInvalidMessageID},
		"key of 64 is ok":   {"whsec_" + base64.StdEncoding.EncodeToString(make([]byte, 64)), "msg_1", nil},
		"key of 24 is ok":   {"whsec_" + base64.StdEncoding.EncodeToString(make([]byte, 24)), "msg_1", nil},
		"id of 256 is ok":   {good, strings.Repeat("m", 256), nil},
		"id of utf-8 is ok": {good, "msg_é", nil},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			_, err := Sign(c.secret, c.msgID, time.Unix(1, 0), nil)
			if !errors.Is(err, c.want) || (c.want == nil) != (err == nil) {
				t.Fatalf("Sign: %v, want %v", err, c.want)
			}
			if err != nil && c.secret != good && strings.Contains(err.Error(), strings.TrimPrefix(c.secret, "whsec_")) && len(c.secret) > 6 {
				t.Fatalf("error quotes the secret: %v", err)
			}
		})
	}
}

func TestVerify(t *testing.T) {
	t.Parallel()
	v := vectors[0]
	ts := time.Unix(v.ts, 0)
	now := ts.Add(30 * time.Second)
	body := []byte(v.body)
	other, err := NewSecret()
	if err != nil {
		t.Fatal(err)
	}
	otherSig, err := Sign(other, v.msgID, ts, body)
	if err != nil {
		t.Fatal(err)
	}
	forged := "v1,Ceo5qEr07ixe2NLpvHk3FH9bwy/WavXrAFQ/9tdO6mc=" // from the reference tests
	headers := func(sig string, mod func(http.Header)) http.Header {
		h := Headers(v.msgID, ts, sig)
		if mod != nil {
			mod(h)
		}
		return h
	}
	for name, c := range map[string]struct {
		secrets   []string
		h         http.Header
		body      []byte
		now       time.Time
		tolerance time.Duration
		want      error
	}{
		"valid": {[]string{v.secret}, headers(v.want, nil), body, now, 0, nil},
		"rotation: old and new signatures, receiver knows old": {[]string{v.secret},
			headers(otherSig+" "+v.want, nil), body, now, 0, nil},
		"rotation: receiver knows both secrets": {[]string{other, v.secret}, headers(v.want, nil), body, now, 0, nil},
		"among forged and other versions": {[]string{v.secret}, headers(strings.Join([]string{forged,
			"v2," + strings.TrimPrefix(v.want, "v1,"), v.want, forged}, " "), nil), body, now, 0, nil},
		"v1a with the right bytes is skipped": {[]string{v.secret},
			headers("v1a,"+strings.TrimPrefix(v.want, "v1,"), nil), body, now, 0, ErrNoMatchingSignature},
		"forged":        {[]string{v.secret}, headers(forged, nil), body, now, 0, ErrNoMatchingSignature},
		"wrong secret":  {[]string{other}, headers(v.want, nil), body, now, 0, ErrNoMatchingSignature},
		"partial v1,":   {[]string{v.secret}, headers("v1,", nil), body, now, 0, ErrNoMatchingSignature},
		"prefix of sig": {[]string{v.secret}, headers(v.want[:10], nil), body, now, 0, ErrNoMatchingSignature},
		"no comma":      {[]string{v.secret}, headers(strings.TrimPrefix(v.want, "v1,"), nil), body, now, 0, ErrNoMatchingSignature},
		"body changed":  {[]string{v.secret}, headers(v.want, nil), []byte(`{"test":2432232314}`), now, 0, ErrNoMatchingSignature},
		"id changed":    {[]string{v.secret}, headers(v.want, func(h http.Header) { h.Set(HeaderID, "msg_2") }), body, now, 0, ErrNoMatchingSignature},
		"ts changed": {[]string{v.secret}, headers(v.want, func(h http.Header) { h.Set(HeaderTimestamp, "1614265331") }),
			body, now, 0, ErrNoMatchingSignature},
		"missing id":        {[]string{v.secret}, headers(v.want, func(h http.Header) { h.Del(HeaderID) }), body, now, 0, ErrMissingHeaders},
		"missing timestamp": {[]string{v.secret}, headers(v.want, func(h http.Header) { h.Del(HeaderTimestamp) }), body, now, 0, ErrMissingHeaders},
		"missing signature": {[]string{v.secret}, headers(v.want, func(h http.Header) { h.Del(HeaderSignature) }), body, now, 0, ErrMissingHeaders},
		"timestamp not a number": {[]string{v.secret}, headers(v.want, func(h http.Header) { h.Set(HeaderTimestamp, "2021-02-25") }),
			body, now, 0, ErrInvalidTimestamp},
		"too old":                {[]string{v.secret}, headers(v.want, nil), body, ts.Add(5*time.Minute + time.Second), 0, ErrTimestampTooOld},
		"at the edge":            {[]string{v.secret}, headers(v.want, nil), body, ts.Add(5 * time.Minute), 0, nil},
		"too new":                {[]string{v.secret}, headers(v.want, nil), body, ts.Add(-5*time.Minute - time.Second), 0, ErrTimestampTooNew},
		"tolerance given":        {[]string{v.secret}, headers(v.want, nil), body, ts.Add(time.Hour), 2 * time.Hour, nil},
		"forged and old: forged": {[]string{v.secret}, headers(forged, nil), body, ts.Add(time.Hour), 0, ErrNoMatchingSignature},
		"no secrets":             {nil, headers(v.want, nil), body, now, 0, ErrInvalidSecret},
		"a bad secret":           {[]string{v.secret, "whsec_"}, headers(v.want, nil), body, now, 0, ErrInvalidSecret},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			err := Verify(c.secrets, c.h, c.body, c.now, c.tolerance)
			if !errors.Is(err, c.want) || (c.want == nil) != (err == nil) {
				t.Fatalf("Verify: %v, want %v", err, c.want)
			}
		})
	}
}

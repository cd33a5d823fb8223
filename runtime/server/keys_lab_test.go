package server_test

// The key lab of TestKeys: requests that keep every response and every secret for the final scan (K12),
// and helpers to make and guess keys.

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/workspace-records/records/internal/proc"
	"github.com/workspace-records/records/runtime/auth"
	"github.com/workspace-records/records/runtime/server/servertest"
	"github.com/workspace-records/records/runtime/store"
)

// keyLab runs key scenarios against one server and keeps every response it got (status, headers,
// body) and every secret it used, right or wrong, for the checks that span all scenarios: the 401/403
// shapes (K14) and that no secret or secret hash is ever written back or logged (K12).
type keyLab struct {
	e       *servertest.Env
	log     *proc.Buffer
	mu      sync.Mutex
	seen    []*servertest.Response
	secrets []string
}

func (l *keyLab) keep(res *servertest.Response) *servertest.Response {
	l.mu.Lock()
	l.seen = append(l.seen, res)
	l.mu.Unlock()
	return res
}

// secret registers s as a secret the server must never show.
func (l *keyLab) secret(s string) string {
	l.mu.Lock()
	l.secrets = append(l.secrets, s)
	l.mu.Unlock()
	return s
}

// newKey creates a key and registers its secret.
func (l *keyLab) newKey(member string, o auth.KeyOptions) string {
	return l.secret(l.e.NewKey(member, o))
}

// do sends a request through the env (envelope and OpenAPI checks included) and keeps the response.
func (l *keyLab) do(t *testing.T, key, method, path string, body any, header ...string) *servertest.Response {
	t.Helper()
	l.e.T = t
	return l.keep(l.e.DoKey(key, method, path, body, header...))
}

// raw sends a request with exactly the headers given (several values of one header allowed), for the
// shapes Env.Do cannot send, and keeps the response.
func (l *keyLab) raw(t *testing.T, method, path string, header http.Header) *servertest.Response {
	t.Helper()
	req, err := http.NewRequest(method, l.e.URL+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header = header
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	out := &servertest.Response{Status: res.StatusCode, Header: res.Header, Raw: raw}
	if err := json.Unmarshal(raw, &out.Body); err != nil {
		t.Errorf("%s %s: %d with a body that is not JSON: %q", method, path, res.StatusCode, raw)
	}
	return l.keep(out)
}

func klHex(n int) string {
	b := make([]byte, (n+1)/2)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)[:n]
}

func klHash(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

// guesses are secrets an attacker who knows a real key's id, prefix and hint (its last four
// characters, shown by key list and GET /v1/me) could try: the same shape, one character off.
func klGuesses(secret string) []string {
	body := secret[4:]
	flip := func(c byte) string {
		if c == '0' {
			return "1"
		}
		return "0"
	}
	return []string{
		"wsk_" + flip(body[0]) + body[1:],            // keeps the hint
		"wsk_" + body[:63] + flip(body[63]),          // last character off
		"wsk_" + klHex(60) + body[60:],               // random, same hint
		"wsk_" + body[:32] + klHex(32),               // half right
		"wsk_" + strings.Repeat("0", 60) + body[60:], // zeros, same hint
	}
}

func (l *keyLab) keyID(t *testing.T, secret string) string {
	t.Helper()
	me := l.do(t, secret, "GET", "/v1/me", nil)
	if me.Status != 200 {
		t.Fatalf("GET /v1/me with a fresh key: %d %s", me.Status, me.Raw)
	}
	return me.Data()["key"].(map[string]any)["id"].(string)
}

// queryRow runs one statement on st and appends the first row's values to out as text.
func queryRow(ctx context.Context, st store.Store, sql string, args []any, out *[]string) (bool, error) {
	return store.QueryOne(ctx, st, st.Dialect().Bind(sql, args...), func(row []any) error {
		for _, v := range row {
			if b, ok := v.([]byte); ok {
				*out = append(*out, string(b))
				continue
			}
			*out = append(*out, fmt.Sprint(v))
		}
		return nil
	})
}

// upperOne upper-cases the first letter of a hex string (it has one: 64 random hex digits).
func upperOne(h string) string {
	i := strings.IndexAny(h, "abcdef")
	return h[:i] + strings.ToUpper(h[i:i+1]) + h[i+1:]
}

package server_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/workspace-records/records/internal/proc"
	"github.com/workspace-records/records/runtime/auth"
	"github.com/workspace-records/records/runtime/server/servertest"
)

// TestKeys covers the key scenarios K1–K14 of the research note (shared/research/reliability.md §3)
// through real HTTP on both backends, with the server's log captured at debug level and every
// response kept, and ends by scanning all of them for every secret used (K12). K5–K8's bounds under
// load are TestKeyRejectionBound; K2's "no database query" and K11 are TestKeyStoreDown (a private
// PostgreSQL that is stopped) and, counted statement by statement, runtime/auth TestAuthenticateQueries.
func TestKeys(t *testing.T) {
	t.Parallel()
	for _, b := range servertest.Backends {
		t.Run(string(b), func(t *testing.T) {
			t.Parallel()
			logs := &proc.Buffer{}
			// 127.0.0.9 is a trusted proxy for K10's matrix; the lab's own requests come from 127.0.0.1,
			// an untrusted peer.
			e := servertest.Start(t, b, servertest.Options{Log: logs, LogLevel: -4, TrustedProxies: "127.0.0.9, 10.9.0.0/16"}) // slog.LevelDebug
			l := &keyLab{e: e, log: logs}
			l.secret(e.Key)
			ctx := context.Background()
			dir := e.Server.Backend().Directory
			n := 0
			member := func(role string) string {
				n++
				return e.NewMember(fmt.Sprintf("k%d-%s@keys.example", n, role), role, "")
			}
			unknownBody := func(t *testing.T) map[string]any {
				res := l.do(t, l.secret("wsk_"+klHex(64)), "GET", "/v1/me", nil)
				e.Expect(res, 401, "invalid_api_key")
				return res.Body["error"].(map[string]any)
			}
			// sameAsUnknown checks that res says exactly what a key that never existed gets: no reason.
			sameAsUnknown := func(t *testing.T, what string, res *servertest.Response) {
				t.Helper()
				want := unknownBody(t)
				got, _ := res.Body["error"].(map[string]any)
				if res.Status != 401 || got["code"] != want["code"] || got["message"] != want["message"] {
					t.Errorf("%s: %d %s, want exactly the answer to an unknown key (%v)", what, res.Status, res.Raw, want)
				}
			}
			// guessed: secrets one character off a real key get the generic answer, whatever the state
			// of the real key: the specific reason is revealed only after the secret matched.
			guessed := func(t *testing.T, what, secret string) {
				t.Helper()
				for _, g := range klGuesses(secret) {
					sameAsUnknown(t, what+" guessed", l.do(t, l.secret(g), "GET", "/v1/me", nil))
				}
			}

			t.Run("K1 only the Authorization header carries a key", func(t *testing.T) {
				key := l.newKey(member("admin"), auth.KeyOptions{Access: "read"})
				e.Expect(l.do(t, key, "GET", "/v1/me", nil), 200, "")
				e.Expect(l.raw(t, "GET", "/v1/me", http.Header{"Authorization": {"bearer " + key}}), 200, "") // the scheme is case-insensitive (RFC 7235)
				e.Expect(l.raw(t, "GET", "/v1/me", http.Header{"Authorization": {"BEARER " + key}}), 200, "")
				for _, c := range []struct {
					path   string
					header http.Header
				}{
					{"/v1/me?api_key=" + key, http.Header{}},
					{"/v1/me?access_token=" + key, http.Header{}},
					{"/v1/companies?key=" + key, http.Header{}},
					{"/v1/me", http.Header{"Cookie": {"api_key=" + key + "; session=" + key}}},
					{"/v1/me", http.Header{"X-Api-Key": {key}}},
					{"/v1/me", http.Header{"Api-Key": {key}}},
					{"/v1/me", http.Header{"Authorization": {"Basic " + base64.StdEncoding.EncodeToString([]byte("x:"+key))}}},
					{"/v1/me", http.Header{"Authorization": {"Token " + key}}},
					{"/v1/me", http.Header{"Authorization": {key}}},
					{"/v1/me", http.Header{"Proxy-Authorization": {"Bearer " + key}}},
				} {
					res := l.raw(t, "GET", c.path, c.header)
					if res.Status != 401 || res.Header.Get("WWW-Authenticate") == "" {
						t.Errorf("GET %s with %v: %d %s, want 401 with WWW-Authenticate", strings.ReplaceAll(c.path, key, "KEY"), c.header, res.Status, res.Raw)
					}
				}
			})

			t.Run("K2 malformed keys are refused as invalid", func(t *testing.T) {
				real := l.newKey(member("admin"), auth.KeyOptions{Access: "read"})
				e.Expect(l.do(t, real, "GET", "/v1/me", nil), 200, "")
				body := real[4:]
				cases := map[string]string{
					"wrong prefix":         "sk_" + body,
					"prefix upper":         "WSK_" + body,
					"prefix dash":          "wsk-" + body,
					"no separator":         "wsk" + body,
					"double separator":     "wsk__" + body[1:],
					"63 hex":               "wsk_" + body[:63],
					"65 hex":               "wsk_" + body + "0",
					"non-hex":              "wsk_" + body[:63] + "g",
					"uppercase hex":        "wsk_" + strings.ToUpper(body), // keys are issued lowercase; a case variant is another key
					"one uppercase":        "wsk_" + upperOne(body),
					"space inside":         "wsk_" + body[:32] + " " + body[32:],
					"tab inside":           "wsk_" + body[:32] + "\t" + body[32:],
					"lookalike prefix":     "w\u0455k_" + body, // Cyrillic dze
					"fullwidth digit":      "wsk_" + body[:63] + "\uff10",
					"percent-encoded":      "wsk%5F" + body,
					"quoted":               `"` + real + `"`,
					"trailing junk":        real + ".x",
					"10 KiB":               "wsk_" + strings.Repeat("a", 10<<10),
					"empty after scheme":   "",
					"two keys in one line": real + " " + real,
				}
				for name, bad := range cases {
					if len(bad) >= 16 {
						l.secret(bad)
					}
					res := l.raw(t, "GET", "/v1/me", http.Header{"Authorization": {"Bearer " + bad}})
					if res.Status != 401 || res.Body["error"].(map[string]any)["code"] != "invalid_api_key" {
						t.Errorf("%s: %d %s, want 401 invalid_api_key", name, res.Status, res.Raw)
					}
					if h := res.Header.Get("WWW-Authenticate"); !strings.Contains(h, `error="invalid_token"`) {
						t.Errorf("%s: WWW-Authenticate %q", name, h)
					}
				}
				for name, h := range map[string]http.Header{
					"two headers, both the key":  {"Authorization": {"Bearer " + real, "Bearer " + real}},
					"two headers, key first":     {"Authorization": {"Bearer " + real, "Bearer wsk_" + klHex(64)}},
					"two headers, key second":    {"Authorization": {"Basic eDp5", "Bearer " + real}},
					"scheme without credentials": {"Authorization": {"Bearer"}},
					"scheme and spaces only":     {"Authorization": {"Bearer    "}},
					"no header":                  {},
					"empty header":               {"Authorization": {""}},
				} {
					res := l.raw(t, "GET", "/v1/me", h)
					if res.Status != 401 || res.Body["error"].(map[string]any)["code"] != "invalid_api_key" {
						t.Errorf("%s: %d %s, want 401 invalid_api_key", name, res.Status, res.Raw)
					}
				}
			})

			t.Run("K3 unknown revoked and expired keys", func(t *testing.T) {
				unknown := l.do(t, l.secret("wsk_"+klHex(64)), "GET", "/v1/me", nil)
				e.Expect(unknown, 401, "invalid_api_key")
				rm := member("admin")
				revoked := l.newKey(rm, auth.KeyOptions{Access: "read"})
				id := l.keyID(t, revoked)
				if err := dir.RevokeKey(ctx, id); err != nil {
					t.Fatal(err)
				}
				// The server's own Directory forgets its cached keys before RevokeKey returns: no wait.
				sameAsUnknown(t, "revoked", l.do(t, revoked, "GET", "/v1/me", nil))
				guessed(t, "revoked", revoked)
				if err := dir.RevokeKey(ctx, id); err != nil { // revoking twice is not an error
					t.Errorf("second revocation: %v", err)
				}

				expiring := l.newKey(member("admin"), auth.KeyOptions{Access: "read", ExpiresIn: 300 * time.Millisecond})
				e.Expect(l.do(t, expiring, "GET", "/v1/me", nil), 200, "")
				time.Sleep(350 * time.Millisecond) // the key's life passing is the point
				res := l.do(t, expiring, "GET", "/v1/me", nil)
				e.Expect(res, 401, "expired_api_key")
				if !strings.Contains(res.Body["error"].(map[string]any)["message"].(string), "expired at") {
					t.Errorf("expired key message: %s", res.Raw)
				}
				guessed(t, "expired", expiring)
			})

			t.Run("K4 expiry at most one year, set at creation", func(t *testing.T) {
				m := member("admin")
				for _, life := range []time.Duration{0, -time.Hour, -auth.MaxKeyLifetime, auth.MaxKeyLifetime + time.Second, 2 * auth.MaxKeyLifetime} {
					_, secret, err := dir.CreateKey(ctx, m, auth.KeyOptions{Access: "read", ExpiresIn: life})
					if !errors.Is(err, auth.ErrInvalid) || !strings.Contains(err.Error(), "expiry") || secret != "" {
						t.Errorf("expires in %v: %v", life, err)
					}
				}
				k, secret, err := dir.CreateKey(ctx, m, auth.KeyOptions{Access: "read", ExpiresIn: auth.MaxKeyLifetime})
				if err != nil {
					t.Fatalf("a key of exactly one year: %v", err)
				}
				l.secret(secret)
				if got := k.ExpiresAt.Sub(k.CreatedAt); got < auth.MaxKeyLifetime-time.Millisecond || got > auth.MaxKeyLifetime {
					t.Errorf("lifetime %v", got)
				}
				key := l.do(t, secret, "GET", "/v1/me", nil).Data()["key"].(map[string]any)
				created, _ := time.Parse(time.RFC3339Nano, key["created_at"].(string))
				expires, _ := time.Parse(time.RFC3339Nano, key["expires_at"].(string))
				if d := expires.Sub(created); d > auth.MaxKeyLifetime || d < auth.MaxKeyLifetime-time.Second {
					t.Errorf("GET /v1/me: expires %v after creation", d)
				}
			})

			t.Run("K5 revoked key", func(t *testing.T) {
				key := l.newKey(member("admin"), auth.KeyOptions{Access: "write"})
				id := l.keyID(t, key)
				e.Expect(l.do(t, key, "GET", "/v1/companies", nil), 200, "")
				if err := dir.RevokeKey(ctx, id); err != nil {
					t.Fatal(err)
				}
				e.Expect(l.do(t, key, "GET", "/v1/companies", nil), 401, "invalid_api_key")
				e.Expect(l.do(t, key, "POST", "/v1/companies", map[string]any{"name": "After revocation"}), 401, "invalid_api_key")
			})

			t.Run("K6 deactivated member", func(t *testing.T) {
				m := member("member")
				keys := []string{l.newKey(m, auth.KeyOptions{Access: "read"}), l.newKey(m, auth.KeyOptions{Access: "write"}), l.newKey(m, auth.KeyOptions{Access: "read", Resources: []string{"deals"}})}
				bystander := l.newKey(member("member"), auth.KeyOptions{Access: "read"})
				for _, k := range keys {
					e.Expect(l.do(t, k, "GET", "/v1/me", nil), 200, "")
				}
				if err := e.Server.Backend().Members.Deactivate(ctx, m); err != nil {
					t.Fatal(err)
				}
				for _, k := range keys {
					sameAsUnknown(t, "deactivated member's key", l.do(t, k, "GET", "/v1/me", nil))
					guessed(t, "deactivated", k)
				}
				e.Expect(l.do(t, bystander, "GET", "/v1/me", nil), 200, "")
				// Revoked in the same transaction as the deactivation: one timestamp, every key.
				list, err := dir.ListKeys(ctx, e.Workspace)
				if err != nil {
					t.Fatal(err)
				}
				var stamps []time.Time
				for _, k := range list {
					if k.Member == m {
						if k.RevokedAt == nil {
							t.Errorf("key %s of the deactivated member is not revoked", k.ID)
							continue
						}
						stamps = append(stamps, *k.RevokedAt)
					}
				}
				if len(stamps) != len(keys) {
					t.Errorf("%d revoked keys, want %d", len(stamps), len(keys))
				}
				for _, s := range stamps {
					if !s.Equal(stamps[0]) {
						t.Errorf("revocation times differ: %v", stamps)
					}
				}
				if err := e.Server.Backend().Members.Activate(ctx, m); err != nil {
					t.Fatal(err)
				}
				for _, k := range keys {
					e.Expect(l.do(t, k, "GET", "/v1/me", nil), 401, "invalid_api_key")
				}
				e.Expect(l.do(t, l.newKey(m, auth.KeyOptions{Access: "read"}), "GET", "/v1/me", nil), 200, "")
			})

			t.Run("K7 assurance stale after a new MFA factor", func(t *testing.T) {
				m := member("admin")
				key := l.newKey(m, auth.KeyOptions{Access: "read"})
				e.Expect(l.do(t, key, "GET", "/v1/me", nil), 200, "")
				time.Sleep(2 * time.Millisecond)
				if err := e.Server.Backend().Members.MFAVerified(ctx, m); err != nil {
					t.Fatal(err)
				}
				res := l.do(t, key, "GET", "/v1/companies", nil)
				e.Expect(res, 401, "key_assurance_stale")
				guessed(t, "assurance-stale", key)
				time.Sleep(2 * time.Millisecond)
				e.Expect(l.do(t, l.newKey(m, auth.KeyOptions{Access: "read"}), "GET", "/v1/companies", nil), 200, "")
			})

			t.Run("K8 plan without API access and owner without api.access", func(t *testing.T) {
				ws, wm, key := e.NewWorkspace("growth", "admin", "write")
				l.secret(key)
				e.Expect(l.do(t, key, "GET", "/v1/companies", nil), 200, "")
				if err := e.Server.Backend().Members.SetPlan(ctx, ws, "free"); err != nil {
					t.Fatal(err)
				}
				for _, c := range []struct{ method, path string }{{"GET", "/v1/me"}, {"GET", "/v1/companies"}, {"POST", "/v1/companies"}, {"GET", "/v1/resources"}} {
					var body any
					if c.method == "POST" {
						body = map[string]any{"name": "x"}
					}
					e.Expect(l.do(t, key, c.method, c.path, body), 403, "plan_upgrade_required")
				}
				guessed(t, "plan-downgraded", key)
				if err := e.Server.Backend().Members.SetPlan(ctx, ws, "pro"); err != nil {
					t.Fatal(err)
				}
				e.Expect(l.do(t, key, "GET", "/v1/companies", nil), 200, "") // a plan change revokes nothing

				pm := member("admin")
				pk := l.newKey(pm, auth.KeyOptions{Access: "read"})
				e.Expect(l.do(t, pk, "GET", "/v1/me", nil), 200, "")
				if err := e.Server.Backend().Members.SetRole(ctx, pm, "no_api"); err != nil {
					t.Fatal(err)
				}
				e.Expect(l.do(t, pk, "GET", "/v1/me", nil), 403, "permission_denied")
				guessed(t, "permission-denied", pk)
				_ = wm
			})

			t.Run("K9 read keys and resource allowlists write nothing", func(t *testing.T) {
				company := l.do(t, e.Key, "POST", "/v1/companies", map[string]any{"name": "Scope Co"}).Data()["id"].(string)
				contact := l.do(t, e.Key, "POST", "/v1/contacts", map[string]any{"first_name": "Ann", "last_name": "Lee"}).Data()
				if contact == nil {
					t.Fatal("create contact failed")
				}
				contactID := contact["id"].(string)
				e.Expect(l.do(t, e.Key, "PUT", "/v1/companies/"+company+"/contacts/"+contactID, nil), 200, "")
				archived := l.do(t, e.Key, "POST", "/v1/companies", map[string]any{"name": "Archived Co"}).Data()["id"].(string)
				e.Expect(l.do(t, e.Key, "DELETE", "/v1/companies/"+archived, nil), 200, "")
				state := func() string {
					var sb strings.Builder
					for _, p := range []string{"/v1/companies?include_archived=true&page_size=100&sort=name&order=asc", "/v1/contacts?include_archived=true&page_size=100", "/v1/companies/" + company + "/contacts"} {
						sb.Write(l.do(t, e.Key, "GET", p, nil).Raw)
					}
					return sb.String()
				}
				before := state()
				m := member("admin")
				read := l.newKey(m, auth.KeyOptions{Access: "read"})
				scoped := l.newKey(m, auth.KeyOptions{Access: "write", Resources: []string{"companies"}})
				for _, c := range []struct {
					key, method, path, code string
					body                    any
				}{
					{read, "POST", "/v1/companies", "insufficient_scope", map[string]any{"name": "x"}},
					{read, "PATCH", "/v1/companies/" + company, "insufficient_scope", map[string]any{"name": "x"}},
					{read, "DELETE", "/v1/companies/" + company, "insufficient_scope", nil},
					{read, "POST", "/v1/companies/" + archived + "/restore", "insufficient_scope", nil},
					{read, "PUT", "/v1/companies/" + company + "/contacts/" + contactID, "insufficient_scope", nil},
					{read, "DELETE", "/v1/companies/" + company + "/contacts/" + contactID, "insufficient_scope", nil},
					{read, "POST", "/v1/companies", "insufficient_scope", map[string]any{"name": "x"}},
					{scoped, "GET", "/v1/contacts", "insufficient_scope", nil},
					{scoped, "POST", "/v1/contacts/query", "insufficient_scope", map[string]any{}},
					{scoped, "POST", "/v1/contacts", "insufficient_scope", map[string]any{"first_name": "x", "last_name": "y"}},
					{scoped, "GET", "/v1/contacts/" + contactID, "insufficient_scope", nil},
					{scoped, "GET", "/v1/resources/contacts", "insufficient_scope", nil},
					{scoped, "PUT", "/v1/companies/" + company + "/contacts/" + contactID, "insufficient_scope", nil},
					{scoped, "GET", "/v1/companies/" + company + "/contacts", "insufficient_scope", nil},
				} {
					var header []string
					if c.method != "GET" {
						header = []string{"Idempotency-Key", "k9-" + klHex(8)}
					}
					e.Expect(l.do(t, c.key, c.method, c.path, c.body, header...), 403, c.code)
				}
				e.Expect(l.do(t, read, "POST", "/v1/companies/query", map[string]any{}), 200, "") // query is a read
				if got := l.do(t, scoped, "GET", "/v1/resources", nil).List(); len(got) != 1 || got[0]["name"] != "companies" {
					t.Errorf("an allowlisted key lists resources %v", got)
				}
				// A read key writes nothing, whatever its owner's role: no catalog shows it anything writable.
				for _, r := range e.Server.Backend().Current().Catalog.Resources {
					if !r.ModelScoped {
						if w := writableEntries(l.do(t, read, "GET", "/v1/resources/"+r.Name, nil).Data()); len(w) > 0 {
							t.Errorf("a read key's catalog of %s shows writable %v", r.Name, w)
						}
					}
				}
				if after := state(); after != before {
					t.Errorf("refused writes changed data:\nbefore %s\nafter  %s", before, after)
				}
			})

			t.Run("K9 references obey the resource allowlist", func(t *testing.T) {
				m := member("admin")
				keyReferenceMatrix(t, e, func(resources ...string) string {
					return l.newKey(m, auth.KeyOptions{Access: "write", Resources: resources})
				}, func(t *testing.T, key, method, path string, body any) *servertest.Response {
					return l.do(t, key, method, path, body)
				})
			})

			t.Run("K10 forwarded addresses from an untrusted peer are ignored", func(t *testing.T) {
				m := member("admin")
				office := l.newKey(m, auth.KeyOptions{Access: "read", AllowIPs: []string{"10.0.0.0/8", "2001:db8::/32"}})
				local := l.newKey(m, auth.KeyOptions{Access: "read", AllowIPs: []string{"::ffff:127.0.0.1"}})
				for _, h := range [][]string{
					nil, {"X-Forwarded-For", "10.1.2.3"}, {"X-Forwarded-For", "127.0.0.1, 10.1.2.3"}, {"X-Real-IP", "10.1.2.3"},
					{"Forwarded", "for=10.1.2.3"}, {"True-Client-IP", "10.1.2.3"}, {"X-Forwarded-For", "2001:db8::1"},
				} {
					e.Expect(l.do(t, office, "GET", "/v1/me", nil, h...), 403, "ip_not_allowed")
					e.Expect(l.do(t, local, "GET", "/v1/me", nil, h...), 200, "")
				}
				e.Expect(l.do(t, local, "GET", "/v1/me", nil, "X-Forwarded-For", "garbage"), 200, "") // not read at all
			})

			t.Run("K10 allowlists against real peers and proxy chains", func(t *testing.T) {
				// Unit by unit: httpapi TestClientIP and auth TestAllowsIP.
				m := member("admin")
				clientAddressMatrix(t, e, "127.0.0.9", func(allow ...string) string {
					return l.newKey(m, auth.KeyOptions{Access: "read", AllowIPs: allow})
				})
			})

			t.Run("K13 the secret is shown once", func(t *testing.T) {
				m := member("admin")
				k, secret, err := dir.CreateKey(ctx, m, auth.KeyOptions{Access: "read", ExpiresIn: time.Hour})
				if err != nil {
					t.Fatal(err)
				}
				l.secret(secret)
				if strings.Contains(k.Hint, secret[4:12]) || !strings.HasSuffix(k.Hint, secret[len(secret)-4:]) {
					t.Errorf("hint %q: the last four characters only", k.Hint)
				}
				me := l.do(t, secret, "GET", "/v1/me", nil)
				e.Expect(me, 200, "")
				listed, err := dir.ListKeys(ctx, e.Workspace)
				if err != nil {
					t.Fatal(err)
				}
				data, _ := json.Marshal(listed)
				for what, text := range map[string]string{"GET /v1/me": string(me.Raw), "key list": string(data)} {
					if strings.Contains(text, secret[4:]) || strings.Contains(text, klHash(secret)) {
						t.Errorf("%s holds the secret or its hash", what)
					}
				}
				// Only the hash is stored: no column of the key's row holds the secret.
				st := e.Server.Backend().Store
				var row []string
				_, err = queryRow(ctx, st, "SELECT * FROM api_keys WHERE id = ?", []any{k.ID}, &row)
				if err != nil {
					t.Fatal(err)
				}
				joined := strings.Join(row, "|")
				if strings.Contains(joined, secret[4:]) || !strings.Contains(joined, klHash(secret)) {
					t.Errorf("stored key row %q: want the SHA-256 of the secret and never the secret", joined)
				}
			})

			t.Run("K14 every 401 challenges and every refusal is an envelope", func(t *testing.T) {
				l.mu.Lock()
				seen := append([]*servertest.Response(nil), l.seen...)
				l.mu.Unlock()
				var n401, n403 int
				challenge := regexp.MustCompile(`^Bearer realm="records"(, error="invalid_token", error_description="[^"]*")?$`)
				for _, res := range seen {
					env, _ := res.Body["error"].(map[string]any)
					switch res.Status {
					case 401:
						n401++
						h := res.Header.Get("WWW-Authenticate")
						if !challenge.MatchString(h) {
							t.Errorf("401 %s: WWW-Authenticate %q is not an RFC 6750 challenge", res.Raw, h)
						}
						noCredentials := strings.Contains(env["message"].(string), "missing")
						if noCredentials == strings.Contains(h, "error=") {
							t.Errorf("401 %q: WWW-Authenticate %q (an error code only when credentials were sent)", env["message"], h)
						}
						if env["type"] != "authentication_error" {
							t.Errorf("401 of type %v", env["type"])
						}
					case 403:
						n403++
						if env["type"] != "permission_error" || env["code"] == nil || env["request_id"] != res.Header.Get("X-Request-Id") {
							t.Errorf("403 without the envelope: %s", res.Raw)
						}
					}
					if res.Status >= 500 {
						t.Errorf("%d: %s", res.Status, res.Raw)
					}
				}
				t.Logf("%d responses: %d × 401, %d × 403", len(seen), n401, n403)
				if n401 < 50 || n403 < 15 {
					t.Errorf("only %d 401s and %d 403s were checked", n401, n403)
				}
			})

			t.Run("K12 no secret in any response or log line", func(t *testing.T) {
				l.mu.Lock()
				secrets := append([]string(nil), l.secrets...)
				seen := append([]*servertest.Response(nil), l.seen...)
				l.mu.Unlock()
				var texts []string
				for _, res := range seen {
					var h bytes.Buffer
					_ = res.Header.Write(&h)
					texts = append(texts, h.String()+"\n"+string(res.Raw))
				}
				logText := logs.String()
				texts = append(texts, logText)
				var needles []string
				for _, s := range secrets {
					needles = append(needles, s, klHash(s))
					if strings.HasPrefix(s, "wsk_") && len(s) > 36 {
						needles = append(needles, s[4:36]) // any half of a secret's body
					}
				}
				hits := 0
				for _, text := range texts {
					for _, n := range needles {
						if strings.Contains(text, n) {
							hits++
							t.Errorf("%.40s… found in %.300s", n, text)
						}
					}
				}
				// Nothing that even looks like a key or a hash: 32+ hex characters in a row.
				for _, m := range regexp.MustCompile(`(?i)wsk_[0-9a-f]{8}|[0-9a-f]{32}`).FindAllString(strings.Join(texts, "\n"), -1) {
					hits++
					t.Errorf("key-like text %q in a response or log line", m)
				}
				lines := strings.Count(logText, "\n")
				t.Logf("%d secrets (+ their hashes) scanned for in %d responses and %d log lines: %d hits", len(secrets), len(seen), lines, hits)
				if len(secrets) < 40 || lines < len(seen)/2 {
					t.Errorf("scan too small to mean anything: %d secrets, %d log lines for %d responses", len(secrets), lines, len(seen))
				}
			})
		})
	}
}

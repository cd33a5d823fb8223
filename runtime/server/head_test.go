package server_test

import (
	"io"
	"net/http"
	"strconv"
	"testing"

	"github.com/workspace-records/records/runtime/auth"
	"github.com/workspace-records/records/runtime/server/servertest"
)

// exchange is one answer read whole.
type exchange struct {
	status int
	header http.Header
	body   []byte
}

func send(t *testing.T, method, url string, header ...string) exchange {
	t.Helper()
	req, err := http.NewRequest(method, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	// Without the transport's own gzip negotiation: Content-Length is compared as the server sent it.
	req.Header.Set("Accept-Encoding", "identity")
	res, err := http.DefaultTransport.RoundTrip(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	return exchange{status: res.StatusCode, header: res.Header, body: body}
}

// HEAD is served wherever GET is (RFC 9110 9.3.2): the same status and headers, Content-Length
// included, and no body; the key check and the limits are GET's; Allow lists HEAD beside GET; the
// probes' answers match the document.
func TestHead(t *testing.T) {
	t.Parallel()
	for _, b := range servertest.Backends {
		t.Run(string(b), func(t *testing.T) {
			t.Parallel()
			e := servertest.Start(t, b, servertest.Options{})
			e.AwaitReady() // /readyz is 503 until the schemas compiled: GET and HEAD must see the same state
			company := e.Do("POST", "/v1/companies", map[string]any{"name": "Head Inc"}).Data()["id"].(string)
			contact := e.Do("POST", "/v1/contacts", map[string]any{"first_name": "Ada", "last_name": "Head"}).Data()["id"].(string)
			e.Expect(e.Do("PUT", "/v1/contacts/"+contact+"/companies/"+company, map[string]any{"is_primary": true}), 200, "")
			bearer := []string{"Authorization", "Bearer " + e.Key}
			// Headers that differ between any two requests.
			varying := map[string]bool{"Date": true, "X-Request-Id": true, "X-Ratelimit-Remaining": true, "X-Quota-Remaining": true, "X-Ratelimit-Reset": true, "X-Quota-Reset": true}
			for _, c := range []struct {
				path   string
				header []string
				status int
				// dynamic: the body holds counters (remaining requests, seconds to reset, last use) that
				// may change length between the GET and the HEAD, and Content-Length with them.
				dynamic bool
			}{
				{"/healthz", nil, 200, false},
				{"/readyz", nil, 200, false},
				{"/readyz?bogus=1", nil, 400, false},
				{"/v1", nil, 200, false},
				{"/v1/openapi.json", nil, 200, false},
				{"/v1/openapi.json", bearer, 200, false},
				{"/docs", nil, 200, false},
				{"/v1/me", bearer, 200, true},
				{"/v1/resources", bearer, 200, false},
				{"/v1/resources/companies", bearer, 200, false},
				{"/v1/companies?page_size=2", bearer, 200, false},
				{"/v1/companies/" + company, bearer, 200, false},
				{"/v1/companies/" + company + "?fields=bogus,name", bearer, 200, false},
				{"/v1/companies/00000000-0000-4000-8000-000000000000", bearer, 404, false},
				{"/v1/contacts/" + contact + "/companies", bearer, 200, false},
				{"/v1/companies/" + company + "/history?page_size=1", bearer, 200, false},
				{"/v1/companies/00000000-0000-4000-8000-000000000000/history", bearer, 404, false},
				{"/v1/companies/" + company + "/restore", bearer, 404, false}, // the links route, for no association
				{"/v1/companies", nil, 401, false},
				{"/v1/companies/" + company, []string{"Authorization", "Bearer wsk_" + "00000000000000000000000000000000000000000000000000000000000000ff"}, 401, false},
			} {
				get := send(t, "GET", e.URL+c.path, c.header...)
				head := send(t, "HEAD", e.URL+c.path, c.header...)
				if get.status != c.status || head.status != get.status {
					t.Errorf("%s: GET %d, HEAD %d, want %d", c.path, get.status, head.status, c.status)
					continue
				}
				if len(head.body) != 0 {
					t.Errorf("HEAD %s: %d bytes of body", c.path, len(head.body))
				}
				for k := range get.header {
					if c.dynamic && k == "Content-Length" {
						if _, err := strconv.Atoi(head.header.Get(k)); err != nil {
							t.Errorf("HEAD %s: Content-Length %q", c.path, head.header.Get(k))
						}
						continue
					}
					if !varying[k] && get.header.Get(k) != head.header.Get(k) {
						t.Errorf("%s: %s is %q on GET, %q on HEAD", c.path, k, get.header.Get(k), head.header.Get(k))
					}
				}
				for k := range head.header {
					if _, ok := get.header[k]; !ok {
						t.Errorf("%s: HEAD sends %s, GET does not", c.path, k)
					}
				}
				if n := get.header.Get("Content-Length"); n == "" || n != strconv.Itoa(len(get.body)) {
					t.Errorf("GET %s: Content-Length %q for %d bytes", c.path, n, len(get.body))
				}
			}

			// HEAD counts against the limits as GET does. The hour's window of 1,000 is the tightest (it refills
			// a request every 3.6 s; a minute's of 1,000 refilled one between two requests under load).
			setLimits(t, e, e.Workspace, auth.Limits{KeyPerMinute: n(1_000_000), KeyPerHour: n(1000), WorkspacePerMinute: n(1_000_000)})
			remaining := func(method string) int {
				n, err := strconv.Atoi(send(t, method, e.URL+"/v1/companies/"+company, bearer...).header.Get("X-RateLimit-Remaining"))
				if err != nil {
					t.Fatalf("%s: no X-RateLimit-Remaining: %v", method, err)
				}
				return n
			}
			if a, h, g := remaining("GET"), remaining("HEAD"), remaining("GET"); h != a-1 || g != h-1 {
				t.Errorf("X-RateLimit-Remaining after GET, HEAD, GET: %d, %d, %d", a, h, g)
			}

			// Allow names HEAD wherever GET is allowed, and HEAD is refused where GET is.
			for _, c := range []struct{ method, path, allow string }{
				{"POST", "/v1/automations", "GET, HEAD"},
				{"DELETE", "/v1/me", "GET, HEAD"},
				{"POST", "/readyz", "GET, HEAD"},
				{"POST", "/v1/contacts/" + contact + "/companies", "GET, HEAD"},
				{"PUT", "/v1/companies/" + company, "DELETE, GET, HEAD, PATCH"},
				{"HEAD", "/v1/contacts/" + contact + "/companies/" + company, "DELETE, PUT"},
			} {
				res := send(t, c.method, e.URL+c.path, bearer...)
				if res.status != 405 || res.header.Get("Allow") != c.allow {
					t.Errorf("%s %s: %d Allow %q, want 405 Allow %q", c.method, c.path, res.status, res.header.Get("Allow"), c.allow)
				}
			}

			// The probes answer as the document says.
			for _, path := range []string{"/healthz", "/readyz", "/readyz?optional=redis", "/readyz?bogus=1"} {
				req, _ := http.NewRequest("GET", e.URL+path, nil)
				res, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				body, _ := io.ReadAll(res.Body)
				res.Body.Close()
				if undocumented, problems := e.Contract().CheckResponse(req, res, body); undocumented || len(problems) > 0 {
					t.Errorf("GET %s: %d answer, undocumented %v: %v", path, res.StatusCode, undocumented, problems)
				}
			}
		})
	}
}

package server_test

import (
	"bufio"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/workspace-records/records/engine/model"
	"github.com/workspace-records/records/engine/route"
	"github.com/workspace-records/records/internal/proc"
	"github.com/workspace-records/records/runtime/server/servertest"
)

// pathSeeds are put, percent-encoded as a client sends them, in a route's path: control characters (C0
// and DEL) in either case of hex, alone and inside text, C1 controls, bytes that are not UTF-8, and
// escapes of escapes (the upsert route decodes its key and value once more).
var pathSeeds = []string{"%00", "%01", "%1f", "%1F", "%7f", "%7F", "a%00b", "%00%00", "x%0a", "%0d%0a", "%09", "%c2%80", "%C2%9F",
	"%ff", "%c3", "%ed%a0%80", "%2500", "%251f"}

// rawSeeds are sent as bytes in the request line: net/http refuses the control characters before any
// handler, and hands the bytes of 0x80 and up on.
var rawSeeds = []string{"\x00", "\x01", "\x1f", "\x7f", "\t", "\xc2\x85", "\xff"}

// pathCase is one request of the path tests: a route of the table with one segment poisoned.
type pathCase struct {
	method, template string
	path             string // as sent: percent-encoded, or holding raw bytes
	raw              bool   // path holds raw bytes: sent on a connection of its own
	key              bool   // with the env's key
}

// pathFillers are the values of the parameters left whole.
var pathFillers = map[string]string{"id": "0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b", "target_id": "0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5c",
	"resource": "companies", "association": "tags", "key": "domain", "value": "example.com", "name": "admin"}

// pathCases derives the requests from the route table (every GET route also serves HEAD): for each
// template and method, each parameter in turn holds a poisoned value (and, for a template without
// parameters, its last segment has one appended), always %00 (the byte that made the router panic)
// and one more of pathSeeds and of rawSeeds in rotation, each with and without a key.
func pathCases(cat *model.Catalog) []pathCase {
	var out []pathCase
	n := 0
	for _, rt := range route.Table(cat) {
		methods := []string{rt.Method}
		if rt.Method == http.MethodGet {
			methods = append(methods, http.MethodHead)
		}
		segs := strings.Split(rt.Path, "/")
		var spots []int
		for i, s := range segs {
			if strings.HasPrefix(s, ":") {
				spots = append(spots, i)
			}
		}
		if len(spots) == 0 {
			spots = []int{-1} // the seed appended to the last segment
		}
		for _, m := range methods {
			for _, spot := range spots {
				seeds := []struct {
					v   string
					raw bool
				}{{"%00", false}, {pathSeeds[n%len(pathSeeds)], false}, {rawSeeds[n%len(rawSeeds)], true}}
				for _, seed := range seeds {
					p := poison(segs, spot, seed.v)
					for _, key := range []bool{false, true} {
						out = append(out, pathCase{method: m, template: rt.Path, path: p, raw: seed.raw, key: key})
					}
				}
				n++
			}
		}
	}
	return out
}

// poison writes the template segs with seed in the parameter at spot (the others filled), or appended
// to the last segment when spot is -1.
func poison(segs []string, spot int, seed string) string {
	out := make([]string, len(segs))
	for i, s := range segs {
		name, param := strings.CutPrefix(s, ":")
		switch {
		case i == spot:
			out[i] = seed
		case param:
			out[i] = pathFillers[name]
			if out[i] == "" {
				out[i] = "x"
			}
		default:
			out[i] = s
		}
	}
	if spot == -1 {
		out[len(out)-1] += seed
	}
	return strings.Join(out, "/")
}

// A path holding a control character (U+0000–U+001F, U+007F–U+009F), percent-encoded or not, or
// bytes that are not UTF-8 is refused before routing and before the key is checked: 400
// invalid_request in the envelope, on every route of the table and with every method of it, with or
// without a key. Never a 5xx, never a panic in the log, never more than one line a request (issue 34,
// L2: %00 in a path panicked the router and logged a stack trace).
func TestPathControlCharacters(t *testing.T) {
	t.Parallel()
	log := &proc.Buffer{}
	e := servertest.Start(t, servertest.SQLite, servertest.Options{Log: log})
	cases := pathCases(e.Server.Backend().Current().Catalog)
	var sent atomic.Int64
	t.Run("routes", func(t *testing.T) {
		// One subtest per template and method, its requests in turn: the server's handler is what is
		// tested, not the client's concurrency.
		byRoute := map[string][]pathCase{}
		var order []string
		for _, c := range cases {
			name := c.method + " " + c.template
			if byRoute[name] == nil {
				order = append(order, name)
			}
			byRoute[name] = append(byRoute[name], c)
		}
		for _, name := range order {
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				te := *e
				te.T = t
				for _, c := range byRoute[name] {
					sent.Add(1)
					checkRefusedPath(t, &te, c)
				}
			})
		}
	})
	out := log.String()
	for line := range strings.Lines(out) {
		switch {
		case strings.Contains(line, `"level":"ERROR"`), strings.Contains(line, "panic"), strings.Contains(line, "goroutine "):
			t.Errorf("the server logged a failure: %.400s", line)
		case len(line) > 2048:
			t.Errorf("the server logged a line of %d bytes: %.400s", len(line), line)
		}
	}
	t.Logf("%d requests over %d routes", sent.Load(), len(route.Table(e.Server.Backend().Current().Catalog)))
}

// checkRefusedPath sends c and checks the answer is 400 invalid_request in the envelope.
func checkRefusedPath(t *testing.T, e *servertest.Env, c pathCase) {
	t.Helper()
	key := ""
	if c.key {
		key = e.Key
	}
	switch {
	case c.raw:
		status, header, body := sendRawPath(t, e.URL, c.method, c.path, key)
		checkRefusal(t, c, status, header, body)
	case c.method == http.MethodHead:
		req, err := http.NewRequest(c.method, e.URL+c.path, nil)
		if err != nil {
			t.Fatal(err)
		}
		if key != "" {
			req.Header.Set("Authorization", "Bearer "+key)
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("%s %q: %v", c.method, c.path, err)
		}
		res.Body.Close()
		if res.StatusCode != 400 || res.Header.Get("X-Request-Id") == "" {
			t.Errorf("%s %q (key %v): %d, want 400 with X-Request-Id", c.method, c.path, c.key, res.StatusCode)
		}
	default:
		// Env.DoKey checks the envelope, the request id and the answer against the OpenAPI document.
		res := e.DoKey(key, c.method, c.path, nil)
		if res.Status != 400 || res.Code() != "invalid_request" {
			t.Errorf("%s %q (key %v): %d %s, want 400 invalid_request: %.300s", c.method, c.path, c.key, res.Status, res.Code(), res.Raw)
		}
	}
}

// checkRefusal checks a raw exchange's answer: 400 invalid_request in the envelope (no body for HEAD).
func checkRefusal(t *testing.T, c pathCase, status int, header http.Header, body []byte) {
	t.Helper()
	id := header.Get("X-Request-Id")
	if status != 400 || id == "" {
		t.Errorf("%s %q (raw, key %v): %d, want 400 with X-Request-Id: %.300s", c.method, c.path, c.key, status, body)
		return
	}
	if c.method == http.MethodHead && len(body) == 0 {
		return
	}
	var env struct {
		Error struct {
			Type, Code, Message string
			RequestID           string `json:"request_id"`
		} `json:"error"`
	}
	if err := json.Unmarshal(body, &env); err != nil || env.Error.Code != "invalid_request" || env.Error.Type != "invalid_request_error" ||
		env.Error.Message == "" || env.Error.RequestID != id {
		t.Errorf("%s %q (raw, key %v): not the invalid_request envelope with the request id: %.300s", c.method, c.path, c.key, body)
	}
}

// sendRawPath sends one request whose target is path as bytes (no client would send it), on a
// connection of its own, and reads the answer.
func sendRawPath(t *testing.T, base, method, path, key string) (int, http.Header, []byte) {
	t.Helper()
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := net.DialTimeout("tcp", u.Host, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	var b strings.Builder
	b.WriteString(method + " " + path + " HTTP/1.1\r\nHost: " + u.Host + "\r\nConnection: close\r\n")
	if key != "" {
		b.WriteString("Authorization: Bearer " + key + "\r\n")
	}
	if method == http.MethodPost || method == http.MethodPut || method == http.MethodPatch {
		b.WriteString("Content-Type: application/json\r\nContent-Length: 2\r\n\r\n{}")
	} else {
		b.WriteString("\r\n")
	}
	if _, err := io.WriteString(conn, b.String()); err != nil {
		t.Fatal(err)
	}
	res, err := http.ReadResponse(bufio.NewReader(conn), &http.Request{Method: method})
	if err != nil {
		t.Fatalf("%s %q: read the answer: %v", method, path, err)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	return res.StatusCode, res.Header, body
}

// FuzzPath sends fuzzed paths, seeded from every template of the route table with a control
// character in one of its segments, with each method of the route, with or without the env's key.
// A path holding a control character or bytes that are not UTF-8 (decoded once, or a segment decoded
// twice) is 400 invalid_request; no path is ever answered with a 5xx other than 503 (so never with a
// panic), and every answer keeps the envelope and the OpenAPI document (Env.DoKey).
func FuzzPath(f *testing.F) {
	e := servertest.Start(f, servertest.SQLite, servertest.Options{})
	seen := map[string]bool{}
	for _, c := range pathCases(e.Server.Backend().Current().Catalog) {
		// One seed per template, method and poisoned parameter (the first encoded seed, with or
		// without a key in turn); HEAD answers no body to check.
		id := c.method + " " + c.template
		if c.raw || c.method == http.MethodHead || seen[id] {
			continue
		}
		seen[id] = true
		f.Add(c.method, c.path, len(seen)%2 == 0)
	}
	f.Fuzz(func(t *testing.T, method, path string, withKey bool) {
		switch method {
		case http.MethodGet, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete:
		default:
			return // HEAD answers no body; other methods are no route's
		}
		if !strings.HasPrefix(path, "/") {
			return
		}
		req, err := http.NewRequest(method, e.URL+path, nil)
		if err != nil || req.URL.RawQuery != "" || req.URL.ForceQuery || req.URL.Fragment != "" {
			return // not a path a client can send, or more than a path
		}
		refused := servertest.RefusedPath(req.URL.Path)
		if p := req.URL.Path; !refused && (strings.HasPrefix(p, "/docs") || strings.HasPrefix(p, "/console") || p == "/healthz" || p == "/readyz") {
			// Answers without a JSON body (the /docs page, the console), or the probes, which are not
			// part of the API's contract (docs/operations.md).
			return
		}
		te := *e
		te.T = t
		key := ""
		if withKey {
			key = e.Key
		}
		res := te.DoKey(key, method, req.URL.EscapedPath(), nil)
		if refused {
			te.Expect(res, 400, "invalid_request")
		}
	})
}

package server_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/workspace-records/records/internal/proc"
	"github.com/workspace-records/records/runtime/server/servertest"
)

// Requests net/http cannot parse never reach a handler; they are still answered in the envelope: 400
// invalid_request with an X-Request-Id that matches the body and the log, never Go's plain text, and
// never a 5xx (Go's own answers would be 501 for an unknown Transfer-Encoding and 505 for HTTP/2.0 in
// an HTTP/1 request line).
func TestUnparseableRequests(t *testing.T) {
	t.Parallel()
	for _, b := range servertest.Backends {
		t.Run(string(b), func(t *testing.T) {
			t.Parallel()
			logs := &proc.Buffer{}
			e := servertest.Start(t, b, servertest.Options{Log: logs})
			host := strings.TrimPrefix(e.URL, "http://")
			get := "GET /v1/me HTTP/1.1\r\nHost: " + host + "\r\nAuthorization: Bearer " + e.Key + "\r\n"
			cases := []struct{ name, raw, message string }{
				{"control character in a header value", get + "X-Note: a\x01b\r\n\r\n", "not valid HTTP"},
				{"control character in the key", "GET /v1/me HTTP/1.1\r\nHost: " + host + "\r\nAuthorization: Bearer " + e.Key[:10] + "\x7f\r\n\r\n", "not valid HTTP"},
				{"invalid header name", get + "Bad Name: x\r\n\r\n", "invalid header name"},
				{"missing Host", "GET /v1/me HTTP/1.1\r\nAuthorization: Bearer " + e.Key + "\r\n\r\n", "missing required Host header"},
				{"two Host headers", get + "Host: other\r\n\r\n", "not valid HTTP"},
				{"unknown Transfer-Encoding", "POST /v1/companies HTTP/1.1\r\nHost: " + host + "\r\nTransfer-Encoding: gzip\r\nContent-Type: application/json\r\n\r\n", "Transfer-Encoding"},
				{"HTTP/2.0 request line", "GET /v1 HTTP/2.0\r\nHost: " + host + "\r\n\r\n", "HTTP version"},
				{"garbage", "\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03\r\n\r\n", "not valid HTTP"},
				{"header block over the limit", get + "X-Pad: " + strings.Repeat("a", 1<<20+8192) + "\r\n\r\n", "too large"},
			}
			for _, c := range cases {
				res, body := rawRequest(t, host, c.raw)
				var env struct {
					Error struct {
						Type, Code, Message string
						RequestID           string `json:"request_id"`
					} `json:"error"`
				}
				if err := json.Unmarshal(body, &env); err != nil {
					t.Errorf("%s: %d %s %q: not the envelope: %v", c.name, res.StatusCode, res.Header.Get("Content-Type"), body, err)
					continue
				}
				id := res.Header.Get("X-Request-Id")
				if res.StatusCode != 400 || env.Error.Code != "invalid_request" || env.Error.Type != "invalid_request_error" ||
					res.Header.Get("Content-Type") != "application/json" || !strings.Contains(env.Error.Message, c.message) {
					t.Errorf("%s: %d %s %+v; want 400 invalid_request mentioning %q", c.name, res.StatusCode, res.Header.Get("Content-Type"), env.Error, c.message)
				}
				if _, err := uuid.Parse(id); err != nil || env.Error.RequestID != id {
					t.Errorf("%s: X-Request-Id %q, body request_id %q: want the same UUID", c.name, id, env.Error.RequestID)
				}
				if !res.Close {
					t.Errorf("%s: connection kept open after an unparseable request", c.name)
				}
				if !strings.Contains(logs.String(), `"request_id":"`+id+`"`) {
					t.Errorf("%s: no log line with request id %s", c.name, id)
				}
			}
			if strings.Contains(logs.String(), e.Key) {
				t.Error("a refused request's key reached the log")
			}

			// On a kept-alive connection, a good request is answered as always and the bad one after it
			// in the envelope.
			conn, err := net.DialTimeout("tcp", host, 5*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			conn.SetDeadline(time.Now().Add(10 * time.Second))
			io.WriteString(conn, get+"\r\n"+get+"X-Note: \x00\r\n\r\n")
			rd := bufio.NewReader(conn)
			for i, want := range []int{200, 400} {
				res, err := http.ReadResponse(rd, nil)
				if err != nil {
					t.Fatalf("response %d: %v", i+1, err)
				}
				data, _ := io.ReadAll(res.Body)
				if res.StatusCode != want || !json.Valid(data) || res.Header.Get("X-Request-Id") == "" {
					t.Errorf("kept-alive response %d: %d %q; want %d JSON with X-Request-Id", i+1, res.StatusCode, data, want)
				}
			}
			e.Expect(e.Do("GET", "/v1/me", nil), 200, "")
		})
	}
}

// rawRequest writes raw to a new connection and reads one response.
func rawRequest(t *testing.T, host, raw string) (*http.Response, []byte) {
	t.Helper()
	conn, err := net.DialTimeout("tcp", host, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(10 * time.Second))
	// The server may answer and close before it has read all of a large request: write alongside.
	go io.WriteString(conn, raw)
	res, err := http.ReadResponse(bufio.NewReader(conn), &http.Request{Method: "GET", URL: &url.URL{}})
	if err != nil {
		t.Fatalf("%q…: %v", raw[:min(len(raw), 40)], err)
	}
	defer res.Body.Close()
	data, _ := io.ReadAll(res.Body)
	return res, data
}

// TestRequestSmuggling: a request with both Content-Length and Transfer-Encoding (the desync a front
// proxy and this server could read differently, RFC 9112 §6.1) is refused with 400 invalid_request in
// the envelope and the connection closed, whatever the spelling, order or HTTP version, and nothing is
// written; on a kept-alive connection the requests before it — with Content-Length bodies, chunked
// bodies with extensions and trailers, and none — are answered as always, pipelined or not. Through raw
// TCP connections to the server's listener.
func TestRequestSmuggling(t *testing.T) {
	t.Parallel()
	for _, b := range servertest.Backends {
		t.Run(string(b), func(t *testing.T) {
			t.Parallel()
			logs := &proc.Buffer{}
			e := servertest.Start(t, b, servertest.Options{Log: logs})
			host := strings.TrimPrefix(e.URL, "http://")
			count := func() int { return len(e.Do("GET", "/v1/companies?page_size=100&include_archived=true", nil).List()) }
			before := count()
			post := "POST /v1/companies HTTP/1.1\r\nHost: " + host + "\r\nAuthorization: Bearer " + e.Key + "\r\nContent-Type: application/json\r\n"
			body := `{"name":"Smuggled"}`
			chunked := fmt.Sprintf("%x\r\n%s\r\n0\r\n\r\n", len(body), body)
			// The classic CL.TE and TE.CL desyncs: read by the other header, the rest is a second request.
			inner := "GET /v1/me HTTP/1.1\r\nHost: " + host + "\r\nAuthorization: Bearer " + e.Key + "\r\n\r\n"
			cases := []struct{ name, raw string }{
				{"chunked, then Content-Length", post + "Transfer-Encoding: chunked\r\nContent-Length: " + fmt.Sprint(len(chunked)) + "\r\n\r\n" + chunked},
				{"Content-Length, then chunked", post + "Content-Length: " + fmt.Sprint(len(chunked)) + "\r\nTransfer-Encoding: chunked\r\n\r\n" + chunked},
				{"lower case names", post + "content-length: " + fmt.Sprint(len(chunked)) + "\r\ntransfer-encoding: Chunked\r\n\r\n" + chunked},
				{"Content-Length 0", post + "Content-Length: 0\r\nTransfer-Encoding: chunked\r\n\r\n" + chunked},
				{"two Content-Lengths", post + "Content-Length: 5\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n" + chunked},
				{"CL.TE desync", post + "Content-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n" + inner},
				{"TE.CL desync", post + "Content-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n" + fmt.Sprintf("%x\r\n%s0\r\n\r\n", len(inner), inner)},
				{"HTTP/1.0", strings.Replace(post, "HTTP/1.1", "HTTP/1.0", 1) + "Content-Length: " + fmt.Sprint(len(body)) + "\r\nTransfer-Encoding: chunked\r\n\r\n" + body},
				{"GET", "GET /v1/me HTTP/1.1\r\nHost: " + host + "\r\nAuthorization: Bearer " + e.Key + "\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"},
				{"the framing mark sent by the client", post + "X-Smuggled-Len: 3\r\nContent-Length: " + fmt.Sprint(len(body)) + "\r\n\r\n" + body},
			}
			for _, c := range cases {
				conn, err := net.DialTimeout("tcp", host, 5*time.Second)
				if err != nil {
					t.Fatal(err)
				}
				conn.SetDeadline(time.Now().Add(10 * time.Second))
				io.WriteString(conn, c.raw)
				rd := bufio.NewReader(conn)
				res, err := http.ReadResponse(rd, nil)
				if err != nil {
					t.Fatalf("%s: %v", c.name, err)
				}
				data, _ := io.ReadAll(res.Body)
				var env struct {
					Error struct {
						Type, Code, Message string
						RequestID           string `json:"request_id"`
					} `json:"error"`
				}
				json.Unmarshal(data, &env)
				if res.StatusCode != 400 || env.Error.Code != "invalid_request" || res.Header.Get("Content-Type") != "application/json" ||
					!strings.Contains(env.Error.Message, "Content-Length and Transfer-Encoding") || env.Error.RequestID != res.Header.Get("X-Request-Id") {
					t.Errorf("%s: %d %q; want 400 invalid_request naming both headers", c.name, res.StatusCode, data)
				}
				if !res.Close {
					t.Errorf("%s: the connection is kept open", c.name)
				}
				// Nothing more is answered on the connection: no smuggled second request.
				if more, err := io.ReadAll(rd); len(more) > 0 {
					t.Errorf("%s: more on the connection after the refusal: %q (%v)", c.name, more, err)
				}
				conn.Close()
			}
			if n := count(); n != before {
				t.Errorf("%d companies created by refused requests", n-before)
			}

			// A kept-alive connection carries every framing the server reads, one request after another
			// and then all at once (pipelined), before the bad request ends it.
			get := "GET /v1/me HTTP/1.1\r\nHost: " + host + "\r\nAuthorization: Bearer " + e.Key + "\r\n\r\n"
			good := []string{
				post + "Content-Length: " + fmt.Sprint(len(body)) + "\r\n\r\n" + body,
				post + "Transfer-Encoding: chunked\r\n\r\n" + fmt.Sprintf("3;ext=1\r\n%s\r\n%x\r\n%s\r\n0\r\nX-Trailer: yes\r\n\r\n", body[:3], len(body)-3, body[3:]),
				get,
				post + "Transfer-Encoding: chunked\r\n\r\n" + chunked,
				"GET /v1/me HTTP/1.1\r\nHost: " + host + "\r\nAuthorization: Bearer " + e.Key + "\r\nContent-Length: 2\r\n\r\n{}",
			}
			bad := cases[0].raw
			for _, pipelined := range []bool{false, true} {
				conn, err := net.DialTimeout("tcp", host, 5*time.Second)
				if err != nil {
					t.Fatal(err)
				}
				conn.SetDeadline(time.Now().Add(10 * time.Second))
				rd := bufio.NewReader(conn)
				if pipelined {
					io.WriteString(conn, strings.Join(good, "")+bad)
				}
				for i, req := range append(good, bad) {
					if !pipelined {
						io.WriteString(conn, req)
					}
					res, err := http.ReadResponse(rd, nil)
					if err != nil {
						t.Fatalf("pipelined %v, request %d: %v", pipelined, i+1, err)
					}
					data, _ := io.ReadAll(res.Body)
					want := []int{201, 201, 200, 201, 200, 400}[i]
					if res.StatusCode != want {
						t.Errorf("pipelined %v, request %d: %d %s, want %d", pipelined, i+1, res.StatusCode, data, want)
					}
				}
				conn.Close()
			}
			if n := count(); n != before+6 {
				t.Errorf("%d companies created, want 6", n-before)
			}
		})
	}
}

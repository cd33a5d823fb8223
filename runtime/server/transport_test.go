package server_test

import (
	"bufio"
	"encoding/json"
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

package server_test

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/workspace-records/records/runtime/server/servertest"
)

// rawGet sends a request with header and no transparent decompression; it returns the response and
// its body as sent.
func rawGet(t *testing.T, e *servertest.Env, method, path string, body []byte, header ...string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, e.URL+path, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+e.Key)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	client := &http.Client{Transport: &http.Transport{DisableCompression: true}}
	defer client.CloseIdleConnections()
	res, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	data, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatalf("%s %s: reading the body: %v", method, path, err)
	}
	return res, data
}

func gunzip(t *testing.T, data []byte) []byte {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("not gzip: %v", err)
	}
	out, err := io.ReadAll(zr)
	if err != nil {
		t.Fatalf("gzip stream: %v", err)
	}
	return out
}

// TestCompression: answers of at least 1 KiB go out gzip-encoded to a client that accepts gzip (lists,
// records, large error envelopes, idempotent replays), decoding to exactly the bytes an identity client
// gets; smaller answers, clients that refuse gzip (q=0) or name only identity, HEAD, 204/304 and the
// documents that carry their own encoding are not (re)compressed; every answer says Vary:
// Accept-Encoding, and no Content-Length disagrees with the body.
func TestCompression(t *testing.T) {
	t.Parallel()
	for _, b := range servertest.Backends {
		t.Run(string(b), func(t *testing.T) {
			t.Parallel()
			e := servertest.Start(t, b, servertest.Options{})
			for i := range 30 {
				e.Expect(e.Do("POST", "/v1/companies", map[string]any{"name": fmt.Sprintf("Company %02d", i), "industry": "software"}), 201, "")
			}
			vary := func(what string, res *http.Response) {
				t.Helper()
				if !strings.Contains(strings.Join(res.Header.Values("Vary"), ","), "Accept-Encoding") {
					t.Errorf("%s: Vary %q lacks Accept-Encoding", what, res.Header.Values("Vary"))
				}
			}
			plain := func(what, method, path string, body []byte, header ...string) []byte {
				t.Helper()
				res, data := rawGet(t, e, method, path, body, header...)
				vary(what, res)
				if ce := res.Header.Get("Content-Encoding"); ce != "" {
					t.Errorf("%s: Content-Encoding %q", what, ce)
				}
				return data
			}
			zipped := func(what, method, path string, body []byte, header ...string) []byte {
				t.Helper()
				res, data := rawGet(t, e, method, path, body, append(header, "Accept-Encoding", "gzip")...)
				vary(what, res)
				if res.Header.Get("Content-Encoding") != "gzip" || res.Header.Get("Content-Length") != "" && res.Header.Get("Content-Length") != fmt.Sprint(len(data)) {
					t.Fatalf("%s: %d, Content-Encoding %q, Content-Length %q for %d bytes", what, res.StatusCode, res.Header.Get("Content-Encoding"), res.Header.Get("Content-Length"), len(data))
				}
				return gunzip(t, data)
			}

			list := "/v1/companies?page_size=100&sort=name&order=asc"
			identity := plain("list without Accept-Encoding", "GET", list, nil)
			if len(identity) < 4096 {
				t.Fatalf("the list is only %d bytes", len(identity))
			}
			got := zipped("list", "GET", list, nil)
			if !bytes.Equal(got, identity) {
				t.Errorf("the decoded list differs from the identity one")
			}
			plain("gzip;q=0", "GET", list, nil, "Accept-Encoding", "gzip;q=0, identity")
			plain("identity", "GET", list, nil, "Accept-Encoding", "identity")
			if got := zipped("gzip with a q-value among others", "GET", list, nil, "Accept-Encoding", "br;q=1.0, gzip;q=0.5"); !bytes.Equal(got, identity) {
				t.Errorf("the decoded list differs")
			}
			// A small answer is sent as it is.
			plain("GET /v1 (small)", "GET", "/v1", nil, "Accept-Encoding", "gzip")
			// HEAD is never compressed.
			res, _ := rawGet(t, e, "HEAD", "/v1/companies?page_size=100", nil, "Accept-Encoding", "gzip")
			if res.Header.Get("Content-Encoding") == "gzip" {
				t.Errorf("HEAD answered with Content-Encoding gzip (%d)", res.StatusCode)
			}
			// A large error envelope is compressed and stays valid.
			var big bytes.Buffer
			big.WriteString(`{"name":"X"`)
			for i := range 300 {
				fmt.Fprintf(&big, `,"unknown_%03d":1`, i)
			}
			big.WriteString("}")
			env := zipped("422", "POST", "/v1/companies", big.Bytes())
			if !json.Valid(env) || !strings.Contains(string(env), `"errors_omitted":200`) {
				t.Errorf("the decoded 422: %.200s", env)
			}
			// An idempotent write and its replay: the decoded bytes are the same.
			first := zipped("create", "POST", "/v1/companies", []byte(`{"name":"Replayed","description":"`+strings.Repeat("d", 1500)+`"}`), "Idempotency-Key", "gz-1")
			again := zipped("replay", "POST", "/v1/companies", []byte(`{"name":"Replayed","description":"`+strings.Repeat("d", 1500)+`"}`), "Idempotency-Key", "gz-1")
			if !bytes.Equal(first, again) {
				t.Errorf("the replay decodes to other bytes")
			}
			// The OpenAPI document carries its own encoding and ETags: not compressed twice; 304 stays bare.
			res, data := rawGet(t, e, "GET", "/v1/openapi.json", nil, "Accept-Encoding", "gzip")
			if res.Header.Values("Content-Encoding")[0] != "gzip" || len(res.Header.Values("Content-Encoding")) != 1 || !json.Valid(gunzip(t, data)) {
				t.Errorf("openapi.json: Content-Encoding %v", res.Header.Values("Content-Encoding"))
			}
			res, data = rawGet(t, e, "GET", "/v1/openapi.json", nil, "Accept-Encoding", "gzip", "If-None-Match", res.Header.Get("ETag"))
			if res.StatusCode != 304 || len(data) != 0 || res.Header.Get("Content-Encoding") != "" {
				t.Errorf("openapi.json revalidation: %d, %d bytes, Content-Encoding %q", res.StatusCode, len(data), res.Header.Get("Content-Encoding"))
			}
		})
	}
}

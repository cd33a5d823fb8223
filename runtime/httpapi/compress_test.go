package httpapi

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
)

// serveCompressed runs handler behind the compressor as ServeHTTP does.
func serveCompressed(handler http.HandlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		addVary(w.Header(), "Accept-Encoding")
		out, zip := compressed(w, r)
		handler(&statusWriter{ResponseWriter: out}, r)
		if zip != nil {
			zip.finish()
		}
	})
}

func TestCompressorRules(t *testing.T) {
	big := strings.Repeat("0123456789", 200)
	for _, c := range []struct {
		name      string
		handler   http.HandlerFunc
		method    string
		accept    string
		gzip      bool
		status    int
		etag      string
		wantBytes string
	}{
		{"large", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(201); io.WriteString(w, big) }, "GET", "gzip", true, 201, "", big},
		{"large in small writes", func(w http.ResponseWriter, _ *http.Request) {
			for i := 0; i < len(big); i += 7 {
				io.WriteString(w, big[i:min(i+7, len(big))])
			}
		}, "GET", "gzip", true, 200, "", big},
		{"small", func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "tiny") }, "GET", "gzip", false, 200, "", "tiny"},
		{"no Accept-Encoding", func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, big) }, "GET", "", false, 200, "", big},
		{"q=0", func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, big) }, "GET", "gzip;q=0", false, 200, "", big},
		{"HEAD", func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, big) }, "HEAD", "gzip", false, 200, "", ""},
		{"204", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(204) }, "GET", "gzip", false, 204, "", ""},
		{"strong ETag and Content-Length", func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("ETag", `"v1"`)
			w.Header().Set("Content-Length", fmt.Sprint(len(big)))
			io.WriteString(w, big)
		}, "GET", "gzip", true, 200, `"v1-gzip"`, big},
		{"weak ETag", func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("ETag", `W/"v1"`)
			io.WriteString(w, big)
		}, "GET", "gzip", true, 200, `W/"v1"`, big},
		{"already encoded", func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Encoding", "br")
			io.WriteString(w, big)
		}, "GET", "gzip", false, 200, "", big},
		{"nothing written", func(http.ResponseWriter, *http.Request) {}, "GET", "gzip", false, 200, "", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			srv := httptest.NewServer(serveCompressed(c.handler))
			defer srv.Close()
			req, _ := http.NewRequest(c.method, srv.URL, nil)
			if c.accept != "" {
				req.Header.Set("Accept-Encoding", c.accept)
			}
			res, err := (&http.Client{Transport: &http.Transport{DisableCompression: true}}).Do(req)
			if err != nil {
				t.Fatal(err)
			}
			data, err := io.ReadAll(res.Body)
			res.Body.Close()
			if err != nil {
				t.Fatal(err)
			}
			// A Content-Length, when there is one, counts the bytes sent (encoded or not).
			if cl := res.Header.Get("Content-Length"); cl != "" && c.method != "HEAD" && cl != fmt.Sprint(len(data)) {
				t.Errorf("Content-Length %s for %d bytes", cl, len(data))
			}
			if res.StatusCode != c.status || (res.Header.Get("Content-Encoding") == "gzip") != c.gzip || res.Header.Get("Vary") != "Accept-Encoding" {
				t.Fatalf("%d, Content-Encoding %q, Vary %q", res.StatusCode, res.Header.Get("Content-Encoding"), res.Header.Get("Vary"))
			}
			if c.gzip {
				zr, err := gzip.NewReader(bytes.NewReader(data))
				if err != nil {
					t.Fatal(err)
				}
				if data, err = io.ReadAll(zr); err != nil {
					t.Fatal(err)
				}
			}
			if string(data) != c.wantBytes {
				t.Errorf("body %d bytes, want %d", len(data), len(c.wantBytes))
			}
			if res.Header.Get("ETag") != c.etag {
				t.Errorf("ETag %q, want %q", res.Header.Get("ETag"), c.etag)
			}
		})
	}
}

// A handler that flushes streams: the client decodes what was written before the flush while the
// handler still runs.
func TestCompressorStreams(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(serveCompressed(func(w http.ResponseWriter, _ *http.Request) {
		io.WriteString(w, "first line\n")
		if err := http.NewResponseController(w).Flush(); err != nil {
			t.Errorf("flush: %v", err)
		}
		<-release
		io.WriteString(w, strings.Repeat("x", 5000)+"\n")
	}))
	defer srv.Close()
	defer close(release)
	req, _ := http.NewRequest("GET", srv.URL, nil)
	req.Header.Set("Accept-Encoding", "gzip")
	res, err := (&http.Client{Transport: &http.Transport{DisableCompression: true}, Timeout: 5 * time.Second}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if res.Header.Get("Content-Encoding") != "gzip" {
		t.Fatalf("a flushed stream is not compressed: %v", res.Header)
	}
	zr, err := gzip.NewReader(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(zr).ReadString('\n')
	if err != nil || line != "first line\n" {
		t.Fatalf("before the handler ends: %q, %v", line, err)
	}
}

// BenchmarkCompress measures what compressing a list page costs: a page of 25 and one of 100 records
// (about 15 and 60 KiB of varied JSON) written whole, as writeRaw does, at the level the server uses and at
// gzip's default, against not compressing. It reports the encoded size as a share of the body.
func BenchmarkCompress(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 2))
	words := strings.Fields("acme global systems partners digital north river labs cloud data health logistics retail energy studio group capital works")
	text := func(n int) string {
		out := make([]string, n)
		for i := range out {
			out[i] = words[rng.IntN(len(words))]
		}
		return strings.Join(out, " ")
	}
	for _, n := range []int{25, 100} {
		page := make([]any, n)
		for i := range page {
			page[i] = map[string]any{"id": uuid.NewString(), "name": text(2) + fmt.Sprintf(" %d", rng.IntN(1000)), "industry": words[rng.IntN(len(words))],
				"website": "https://" + words[rng.IntN(len(words))] + fmt.Sprint(rng.IntN(100)) + ".example", "employee_count": rng.IntN(5000),
				"annual_revenue": fmt.Sprintf("%d.%02d", rng.IntN(10_000_000), rng.IntN(100)), "description": text(12),
				"created_at": time.Unix(1_790_000_000+rng.Int64N(10_000_000), rng.Int64N(1e9)).UTC().Format(time.RFC3339Nano),
				"updated_at": time.Unix(1_790_000_000+rng.Int64N(10_000_000), rng.Int64N(1e9)).UTC().Format(time.RFC3339Nano),
				"archived":   false, "archived_at": nil, "archive_reason": nil, "owner_id": uuid.NewString(), "parent_company_id": nil,
				"account_manager_id": uuid.NewString(), "billing_city": words[rng.IntN(len(words))], "billing_country": "DE",
				"custom_fields": map[string]any{"tier": words[rng.IntN(3)]}}
		}
		body, _ := json.Marshal(map[string]any{"data": page, "meta": map[string]any{"next_cursor": nil, "has_more": false, "page_size": n}})
		for _, level := range []int{-2, gzip.BestSpeed, gzip.DefaultCompression} {
			name := map[int]string{-2: "identity", gzip.BestSpeed: "level1", gzip.DefaultCompression: "default"}[level]
			b.Run(fmt.Sprintf("%d_records/%s", n, name), func(b *testing.B) {
				pool := gzipWriters
				if level != compressLevel && level != -2 {
					pool = newGzipPool(level)
				}
				req := httptest.NewRequest("GET", "/v1/companies", nil)
				if level != -2 {
					req.Header.Set("Accept-Encoding", "gzip")
				}
				var size int
				b.SetBytes(int64(len(body)))
				b.ReportAllocs()
				for b.Loop() {
					rec := httptest.NewRecorder()
					out, zip := compressedWith(rec, req, pool)
					writeRaw(out, 200, body)
					if zip != nil {
						zip.finish()
					}
					size = rec.Body.Len()
				}
				b.ReportMetric(float64(size)/float64(len(body)), "encoded/body")
			})
		}
	}
}

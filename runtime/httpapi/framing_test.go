package httpapi

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"
)

// trickleConn returns data in reads of random sizes, now and then a deadline error without data (as
// when net/http aborts its background read), then io.EOF.
type trickleConn struct {
	net.Conn
	data []byte
	rng  *rand.Rand
}

func (c *trickleConn) Read(p []byte) (int, error) {
	if len(c.data) == 0 {
		return 0, io.EOF
	}
	if c.rng.IntN(8) == 0 {
		return 0, os.ErrDeadlineExceeded
	}
	n := min(len(p), len(c.data), 1+c.rng.IntN(64))
	copy(p, c.data[:n])
	c.data = c.data[n:]
	return n, nil
}

// genRequest is one request of a generated stream: its bytes, and what net/http must read from it.
type genRequest struct {
	raw, body, path string
	conflict        bool // both Content-Length and Transfer-Encoding
}

func generate(rng *rand.Rand, conflict bool) genRequest {
	body := strings.Repeat("x", rng.IntN(300))
	path := fmt.Sprintf("/r%d", rng.IntN(1000))
	head := "POST " + path + " HTTP/1.1\r\nHost: h\r\n"
	if rng.IntN(3) == 0 {
		head += "X-Folded: a\r\n\tb\r\n"
	}
	switch k := rng.IntN(3); {
	case conflict:
		chunked := fmt.Sprintf("%x\r\n%s\r\n0\r\n\r\n", len(body), body)
		if len(body) == 0 {
			chunked = "0\r\n\r\n"
		}
		names := []string{"Content-Length", "content-length", "CONTENT-LENGTH"}
		cl := names[rng.IntN(3)] + ": " + fmt.Sprint(rng.IntN(50)) + "\r\n"
		if rng.IntN(2) == 0 {
			head += cl + "Transfer-Encoding: chunked\r\n"
		} else {
			head += "Transfer-Encoding: chunked\r\n" + cl + cl
		}
		return genRequest{raw: head + "\r\n" + chunked, body: body, path: path, conflict: true}
	case k == 0 && len(body) == 0:
		return genRequest{raw: strings.Replace(head, "POST", "GET", 1) + "\r\n", path: path}
	case k == 0:
		return genRequest{raw: head + "Content-Length: " + fmt.Sprint(len(body)) + "\r\n\r\n" + body, body: body, path: path}
	default:
		var sb strings.Builder
		rest := body
		for len(rest) > 0 {
			n := 1 + rng.IntN(len(rest))
			ext := ""
			if rng.IntN(4) == 0 {
				ext = ";name=value"
			}
			fmt.Fprintf(&sb, "%x%s\r\n%s\r\n", n, ext, rest[:n])
			rest = rest[n:]
		}
		sb.WriteString("0\r\n")
		if rng.IntN(3) == 0 {
			sb.WriteString("X-Trailer: t\r\n")
		}
		sb.WriteString("\r\n")
		return genRequest{raw: head + "Transfer-Encoding: chunked\r\n\r\n" + sb.String(), body: body, path: path}
	}
}

// FuzzFraming: over streams of pipelined requests — Content-Length bodies, chunked bodies with
// extensions and trailers, no body, folded header lines — read in pieces of random sizes with
// deadline errors between them, the framer hands net/http every byte unchanged and in order, so that
// http.ReadRequest reads the same requests and bodies from it as from the stream itself; a request with
// both Content-Length and Transfer-Encoding reaches it with Content-Length renamed smuggledHeader (and
// is the last one a server reads, since it answers it with Connection: close).
func FuzzFraming(f *testing.F) {
	for _, seed := range []uint64{1, 2, 3, 42, 1234} {
		f.Add(seed, uint8(5), uint8(255))
		f.Add(seed, uint8(9), uint8(3))
	}
	f.Fuzz(func(t *testing.T, seed uint64, count, conflictAt uint8) {
		rng := rand.New(rand.NewPCG(seed, uint64(count)))
		var reqs []genRequest
		var stream strings.Builder
		for i := range int(count%16) + 1 {
			r := generate(rng, i == int(conflictAt))
			reqs = append(reqs, r)
			stream.WriteString(r.raw)
			if r.conflict {
				break
			}
		}
		in := &framedReader{src: &trickleConn{data: []byte(stream.String()), rng: rng}}
		// Read through the deadline errors, as net/http does after aborting a background read.
		rd := bufio.NewReader(readerFunc(func(p []byte) (int, error) {
			for {
				n, err := in.Read(p)
				if err == os.ErrDeadlineExceeded && n == 0 {
					continue
				}
				return n, err
			}
		}))
		var got bytes.Buffer
		for i, want := range reqs {
			req, err := http.ReadRequest(rd)
			if err != nil {
				t.Fatalf("request %d of %d: %v\n%q", i+1, len(reqs), err, stream.String())
			}
			body, err := io.ReadAll(req.Body)
			if err != nil || string(body) != want.body || req.URL.Path != want.path {
				t.Fatalf("request %d: %s with body %q (%v), want %s %q", i+1, req.URL.Path, body, err, want.path, want.body)
			}
			_, marked := req.Header[smuggledHeader]
			if marked != want.conflict || (want.conflict && req.Header.Get("Content-Length") != "") {
				t.Fatalf("request %d: marked %v, conflict %v, header %v", i+1, marked, want.conflict, req.Header)
			}
			if req.Header.Get("X-Folded") != "" && req.Header.Get("X-Folded") != "a b" {
				t.Fatalf("request %d: folded header read as %q", i+1, req.Header.Get("X-Folded"))
			}
			got.WriteString(want.raw)
		}
		if rest, _ := io.ReadAll(rd); len(rest) > 0 {
			t.Fatalf("%d bytes after the last request: %q", len(rest), rest)
		}
		if reqs[len(reqs)-1].conflict {
			return
		}
		if in.f.state != inHead || len(in.f.held) != 0 {
			t.Fatalf("after the stream: state %d, %d bytes held", in.f.state, len(in.f.held))
		}
	})
}

type readerFunc func(p []byte) (int, error)

func (f readerFunc) Read(p []byte) (int, error) { return f(p) }

// The framer passes every byte unchanged; only a head with both headers changes, in place.
func TestFramingKeepsBytes(t *testing.T) {
	stream := "POST /a HTTP/1.1\r\nHost: h\r\nContent-Length: 3\r\n\r\nabc" +
		"POST /b HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n3;x=y\r\nabc\r\n0\r\nT: 1\r\n\r\n" +
		"GET /c HTTP/1.1\nHost: h\n\n" +
		"POST /d HTTP/1.1\r\nHost: h\r\ncontent-length: 3\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"
	in := &framedReader{src: &trickleConn{data: []byte(stream), rng: rand.New(rand.NewPCG(1, 2))}}
	var out bytes.Buffer
	buf := make([]byte, 7)
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		n, err := in.Read(buf)
		out.Write(buf[:n])
		if err == io.EOF {
			break
		}
	}
	want := strings.Replace(stream, "content-length: 3\r\nTransfer", smuggledHeader+": 3\r\nTransfer", 1)
	if out.String() != want {
		t.Fatalf("got\n%q\nwant\n%q", out.String(), want)
	}
}

// FuzzFramingBytes: whatever arrives, the framer neither panics nor loses, adds or reorders a byte: what
// it hands on is what came, except Content-Length names renamed in place.
func FuzzFramingBytes(f *testing.F) {
	f.Add([]byte("POST / HTTP/1.1\r\nContent-Length: 2\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"), uint64(1))
	f.Add([]byte("POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nz\r\n"), uint64(2))
	f.Add([]byte("\r\nGET / HTTP/1.0\r\nContent-Length: -1\r\n\r\n"), uint64(3))
	f.Add([]byte("POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n1\r\nx\r\n0\r\nA: b\r\n\r\nGET / HTTP/1.1\r\n\r\n"), uint64(4))
	f.Fuzz(func(t *testing.T, data []byte, seed uint64) {
		in := &framedReader{src: &trickleConn{data: bytes.Clone(data), rng: rand.New(rand.NewPCG(seed, 7))}}
		var out bytes.Buffer
		buf := make([]byte, 1+int(seed%100))
		for range 10 * (len(data) + 10) {
			n, err := in.Read(buf)
			out.Write(buf[:n])
			if err == io.EOF {
				break
			}
		}
		got := out.Bytes()
		if len(got) != len(data) {
			t.Fatalf("%d bytes in, %d out", len(data), len(got))
		}
		for i := 0; i < len(data); i++ {
			if got[i] == data[i] {
				continue
			}
			if i+len(smuggledHeader) > len(data) || string(got[i:i+len(smuggledHeader)]) != smuggledHeader || !strings.EqualFold(string(data[i:i+len(smuggledHeader)]), "Content-Length") {
				t.Fatalf("byte %d changed: %q became %q", i, data[i:min(len(data), i+20)], got[i:min(len(got), i+20)])
			}
			i += len(smuggledHeader) - 1
		}
	})
}

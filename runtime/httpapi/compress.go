package httpapi

import (
	"compress/gzip"
	"io"
	"net/http"
	"strings"
	"sync"
)

// Response compression. A response goes out gzip-encoded when the client names gzip in Accept-Encoding
// (with a q-value above 0), the request is not a HEAD, the status is not 204 or 304 (nor 1xx), the handler
// did not encode the body itself (the cached documents carry their own gzip encoding and ETags), and the
// body reaches minCompress bytes: below that the header costs more than it saves. Every answer says
// Vary: Accept-Encoding. The body is held until minCompress bytes decide, then streamed through a pooled
// gzip.Writer; a Flush sends what was written so far (compressed from then on), so streaming works.
// A strong ETag set by a handler gets the suffix -gzip inside its quotes (the encoded bytes are another
// representation); a Content-Length set by a handler is dropped, as the encoded length differs.

// minCompress is the smallest body that is compressed.
const minCompress = 1024

// compressLevel is gzip's level: BenchmarkCompress measures it against DefaultCompression on list pages
// (see the README): level 1 costs about a third of the CPU for a ratio a few percent worse on JSON.
const compressLevel = gzip.BestSpeed

var gzipWriters = newGzipPool(compressLevel)

// newGzipPool returns a pool of gzip writers of level (a valid one).
func newGzipPool(level int) *sync.Pool {
	return &sync.Pool{New: func() any {
		zw, _ := gzip.NewWriterLevel(io.Discard, level)
		return zw
	}}
}

// addVary adds name to the Vary header unless it is there.
func addVary(h http.Header, name string) {
	for _, v := range h.Values("Vary") {
		for _, part := range strings.Split(v, ",") {
			if strings.EqualFold(strings.TrimSpace(part), name) {
				return
			}
		}
	}
	h.Add("Vary", name)
}

// compressor is the ResponseWriter that compresses a response (see above).
type compressor struct {
	w       http.ResponseWriter
	status  int // held until the body decides; 0: none yet
	buf     []byte
	zw      *gzip.Writer // compressing
	plain   bool         // decided: passing through
	written bool         // WriteHeader went out
	pool    *sync.Pool   // of *gzip.Writer
}

// compressed returns w wrapped to compress r's answer, or w when r's answer must not be.
func compressed(w http.ResponseWriter, r *http.Request) (http.ResponseWriter, *compressor) {
	return compressedWith(w, r, gzipWriters)
}

// compressedWith is compressed with the gzip writers of pool.
func compressedWith(w http.ResponseWriter, r *http.Request, pool *sync.Pool) (http.ResponseWriter, *compressor) {
	if r.Method == http.MethodHead || !acceptsGzip(strings.Join(r.Header.Values("Accept-Encoding"), ",")) {
		return w, nil
	}
	c := &compressor{w: w, pool: pool}
	return c, c
}

func (c *compressor) Header() http.Header { return c.w.Header() }

// Unwrap lets http.ResponseController reach the connection's writer.
func (c *compressor) Unwrap() http.ResponseWriter { return c.w }

func (c *compressor) WriteHeader(code int) {
	switch {
	case c.written || c.plain || c.zw != nil:
		return // net/http ignores a second WriteHeader, so do we
	case code < 200:
		c.w.WriteHeader(code) // informational: the real status follows
		return
	case code == http.StatusNoContent || code == http.StatusNotModified || c.w.Header().Get("Content-Encoding") != "":
		c.plain = true
		c.send(code)
		return
	}
	if c.status == 0 {
		c.status = code
	}
}

func (c *compressor) Write(p []byte) (int, error) {
	switch {
	case c.zw != nil:
		return c.zw.Write(p)
	case c.plain:
		return c.w.Write(p)
	}
	if c.status == 0 {
		c.WriteHeader(http.StatusOK)
		if c.plain {
			return c.w.Write(p)
		}
	}
	if len(c.buf)+len(p) < minCompress {
		c.buf = append(c.buf, p...)
		return len(p), nil
	}
	if err := c.decide(true, p); err != nil {
		return 0, err
	}
	return len(p), nil
}

// decide ends the wait: compress (when zip and the handler did not encode the body) or pass through,
// sending the status, what is held and then more.
func (c *compressor) decide(zip bool, more []byte) error {
	h := c.w.Header()
	if zip && h.Get("Content-Encoding") == "" {
		h.Set("Content-Encoding", "gzip")
		h.Del("Content-Length")
		if tag := h.Get("ETag"); strings.HasPrefix(tag, `"`) && strings.HasSuffix(tag, `"`) && len(tag) >= 2 {
			h.Set("ETag", tag[:len(tag)-1]+`-gzip"`)
		}
		c.send(c.status)
		c.zw = c.pool.Get().(*gzip.Writer)
		c.zw.Reset(c.w)
		return c.put(c.zw, more)
	}
	c.plain = true
	c.send(c.status)
	return c.put(c.w, more)
}

// put writes what is held, then more, to w.
func (c *compressor) put(w io.Writer, more []byte) error {
	held := c.buf
	c.buf = nil
	if len(held) > 0 {
		if _, err := w.Write(held); err != nil {
			return err
		}
	}
	if len(more) > 0 {
		_, err := w.Write(more)
		return err
	}
	return nil
}

func (c *compressor) send(code int) {
	if code == 0 {
		code = http.StatusOK
	}
	c.written = true
	c.w.WriteHeader(code)
}

// Flush sends what was written so far: a streamed response is compressed from its first flush on.
func (c *compressor) Flush() {
	if c.zw == nil && !c.plain {
		if c.status == 0 && len(c.buf) == 0 {
			c.status = http.StatusOK
		}
		_ = c.decide(true, nil)
	}
	if c.zw != nil {
		_ = c.zw.Flush()
	}
	_ = http.NewResponseController(c.w).Flush()
}

// finish ends the response: a short body goes out as it is, a compressed one gets its gzip trailer, and
// the writer goes back to the pool.
func (c *compressor) finish() error {
	switch {
	case c.zw != nil:
		err := c.zw.Close()
		c.zw.Reset(io.Discard)
		c.pool.Put(c.zw)
		c.zw = nil
		return err
	case c.plain || (c.status == 0 && len(c.buf) == 0):
		return nil // passed through, or nothing was written (net/http answers 200 with no body)
	}
	return c.decide(false, nil)
}

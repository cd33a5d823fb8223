package httpapi

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"strconv"
	"strings"
)

// representation is a static body with its gzip encoding and their (distinct) strong ETags.
type representation struct {
	body, gz       []byte
	etag, gzipETag string
	contentType    string
}

func newRepresentation(body []byte, contentType string) *representation {
	sum := sha256.Sum256(body)
	tag := hex.EncodeToString(sum[:12])
	var buf bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	zw.Write(body) // writes to a bytes.Buffer do not fail
	zw.Close()
	return &representation{body: body, gz: buf.Bytes(), etag: `"` + tag + `"`, gzipETag: `"` + tag + `-gzip"`, contentType: contentType}
}

// serve writes r for req: gzip-encoded when the client accepts it, 304 when If-None-Match names the
// representation's ETag (or the other encoding's: the content is the same).
func (r *representation) serve(w http.ResponseWriter, req *http.Request) {
	h := w.Header()
	addVary(h, "Accept-Encoding")
	body, etag := r.body, r.etag
	if acceptsGzip(req.Header.Get("Accept-Encoding")) {
		body, etag = r.gz, r.gzipETag
		h.Set("Content-Encoding", "gzip")
	}
	h.Set("ETag", etag)
	if h.Get("Cache-Control") == "" {
		h.Set("Cache-Control", "no-cache")
	}
	if match := req.Header.Get("If-None-Match"); match != "" && (etagMatches(match, r.etag) || etagMatches(match, r.gzipETag)) {
		h.Del("Content-Encoding")
		w.WriteHeader(http.StatusNotModified)
		return
	}
	h.Set("Content-Type", r.contentType)
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(http.StatusOK)
	if req.Method != http.MethodHead {
		w.Write(body)
	}
}

// acceptsGzip reports whether an Accept-Encoding header allows gzip (q=0 refuses it).
func acceptsGzip(header string) bool {
	for _, part := range strings.Split(header, ",") {
		name, params, _ := strings.Cut(strings.TrimSpace(part), ";")
		if strings.EqualFold(strings.TrimSpace(name), "gzip") {
			q := strings.ReplaceAll(strings.TrimSpace(params), " ", "")
			return q != "q=0" && q != "q=0.0" && q != "q=0.00" && q != "q=0.000"
		}
	}
	return false
}

// etagMatches reports whether an If-None-Match header names etag (or is *); weak tags compare by value.
func etagMatches(header, etag string) bool {
	for _, t := range strings.Split(header, ",") {
		t = strings.TrimPrefix(strings.TrimSpace(t), "W/")
		if t == "*" || t == etag {
			return true
		}
	}
	return false
}

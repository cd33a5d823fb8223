package httpapi

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"sync/atomic"

	"github.com/uptrace/bunrouter"
)

// Document is the OpenAPI document, encoded once per definitions load and served with the server's
// address filled in where the generator left a placeholder.
type Document struct {
	before, after []byte                   // the encoded document around the placeholder
	last          atomic.Pointer[rendered] // the last rendering (one base address in practice)
}

type rendered struct {
	base string
	*representation
}

// NewDocument encodes doc (deterministically: encoding/json sorts map keys) and finds placeholder in it,
// which must occur exactly once.
func NewDocument(doc map[string]any, placeholder string) (*Document, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(doc); err != nil {
		return nil, fmt.Errorf("encode: %w", err)
	}
	data := bytes.TrimRight(buf.Bytes(), "\n")
	if n := bytes.Count(data, []byte(placeholder)); n != 1 {
		return nil, fmt.Errorf("server placeholder %q occurs %d times", placeholder, n)
	}
	i := bytes.Index(data, []byte(placeholder))
	return &Document{before: data[:i], after: data[i+len(placeholder):]}, nil
}

// Render returns the document for the server address base and its ETag.
func (d *Document) Render(base string) ([]byte, string) {
	r := d.rendition(base)
	return r.body, r.etag
}

func (d *Document) rendition(base string) *representation {
	if r := d.last.Load(); r != nil && r.base == base {
		return r.representation
	}
	quoted, _ := json.Marshal(base) // JSON-escaped: base may come from a Host header
	esc := quoted[1 : len(quoted)-1]
	body := make([]byte, 0, len(d.before)+len(esc)+len(d.after))
	body = append(append(append(body, d.before...), esc...), d.after...)
	r := &rendered{base: base, representation: newRepresentation(body, "application/json")}
	d.last.Store(r)
	return r.representation
}

func (h *Handler) openAPI(w http.ResponseWriter, req bunrouter.Request) error {
	if h.publicURL == "" {
		w.Header().Set("Vary", "Host")
	}
	h.openapi.rendition(h.base(req.Request)).serve(w, req.Request)
	return nil
}

// base is the server address the document and GET /v1 name: the configured public URL, else the scheme
// and host the caller used.
func (h *Handler) base(r *http.Request) string {
	if h.publicURL != "" {
		return h.publicURL
	}
	return baseURL(r)
}

package httpapi

import (
	"net/http"
	"sync/atomic"

	"github.com/uptrace/bunrouter"

	"github.com/workspace-records/records/engine/catalog"
)

// Document is the OpenAPI document, encoded once per definitions load (by [catalog.Encode]) and served
// with the server's address filled in where the generator left a placeholder.
type Document struct {
	enc  catalog.Encoded
	last atomic.Pointer[rendered] // the last rendering (one base address in practice)
}

type rendered struct {
	base string
	*representation
}

// NewDocument encodes doc (deterministically: encoding/json sorts map keys) and finds placeholder in it,
// which must occur exactly once.
func NewDocument(doc map[string]any, placeholder string) (*Document, error) {
	enc, err := catalog.Encode(doc, placeholder)
	if err != nil {
		return nil, err
	}
	return &Document{enc: enc}, nil
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
	r := &rendered{base: base, representation: newRepresentation(d.enc.Render(base), "application/json")}
	d.last.Store(r)
	return r.representation
}

func (h *Handler) openAPI(w http.ResponseWriter, req bunrouter.Request) error {
	if h.publicURL == "" {
		addVary(w.Header(), "Host")
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

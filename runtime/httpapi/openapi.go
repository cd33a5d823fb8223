package httpapi

import (
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"

	"github.com/uptrace/bunrouter"

	"github.com/workspace-records/records/engine/catalog"
	"github.com/workspace-records/records/engine/model"
	"github.com/workspace-records/records/engine/route"
)

// Document is the OpenAPI document, encoded once per definitions load (by [catalog.Encode]) and served
// with the server's address filled in where the generator left a placeholder.
type Document struct {
	build func() (catalog.Encoded, error) // nil: enc is set
	once  sync.Once
	enc   catalog.Encoded
	err   error
	last  atomic.Pointer[rendered] // the last rendering (one base address in practice)
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

// NewLazyDocument returns the Document of what build returns, built and encoded as NewDocument does at
// its first use or at Prepare, whichever comes first: a server's start need not wait for it.
func NewLazyDocument(build func() map[string]any, placeholder string) *Document {
	return &Document{build: func() (enc catalog.Encoded, err error) {
		defer func() {
			if p := recover(); p != nil {
				err = fmt.Errorf("build the OpenAPI document: %v", p)
			}
		}()
		return catalog.Encode(build(), placeholder)
	}}
}

// Prepare builds a lazy document now. Its error is a defect: the generator's output did not encode.
func (d *Document) Prepare() error {
	if d.build != nil {
		d.once.Do(func() { d.enc, d.err = d.build() })
	}
	return d.err
}

func (d *Document) encoded() catalog.Encoded {
	if err := d.Prepare(); err != nil {
		panic(err) // answered 500 by the handler's recovery, and logged
	}
	return d.enc
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
	r := &rendered{base: base, representation: newRepresentation(d.encoded().Render(base), "application/json")}
	d.last.Store(r)
	return r.representation
}

// openAPI serves the contract: the generic document without a key, the key's workspace's document with
// one (workspaceOpenAPI), after the key check, limits and quota of any keyed request.
func (h *Handler) openAPI(w http.ResponseWriter, req bunrouter.Request) error {
	addVary(w.Header(), "Authorization")
	if h.publicURL == "" {
		addVary(w.Header(), "Host")
	}
	if len(req.Header.Values("Authorization")) > 0 {
		return h.authed(route.ScopeAny, h.workspaceOpenAPI)(w, req)
	}
	h.openapi.rendition(h.base(req.Request)).serve(w, req.Request)
	return nil
}

// workspaceOpenAPI serves the document of the caller's workspace: the custom fields and data model fields
// of the resources the key and its owner may read are typed. Documents are kept by what makes them
// differ (catalog.Workspace.Fingerprint), so callers who see the same fields share one encoding.
func (h *Handler) workspaceOpenAPI(w http.ResponseWriter, req bunrouter.Request) error {
	ctx := req.Context()
	p := principal(ctx)
	readable := func(r *model.Resource) bool { return p.Authorize(r, false) == nil }
	ws, err := h.svc.WorkspaceFields(ctx, actorOf(ctx), p.Workspace.Name, readable)
	if err != nil {
		return err
	}
	doc, err := h.wsDocs.get(ws.Fingerprint(), func(fp string) (*Document, error) {
		d := h.svc.OpenAPIFor(ws)
		// A placeholder no custom field's text can hold (it names the fields' own fingerprint).
		placeholder := "{{server_url:" + fp + "}}"
		d["servers"].([]any)[0].(map[string]any)["url"] = placeholder
		return NewDocument(d, placeholder)
	})
	if err != nil {
		return fmt.Errorf("workspace OpenAPI document: %w", err)
	}
	w.Header().Set("Cache-Control", "private, no-cache")
	doc.rendition(h.base(req.Request)).serve(w, req.Request)
	return nil
}

// maxWorkspaceDocs bounds the workspace documents a server keeps (each is a few hundred KiB encoded).
const maxWorkspaceDocs = 32

// workspaceDocs keeps encoded workspace documents by fingerprint.
type workspaceDocs struct {
	mu   sync.Mutex
	docs map[string]*Document
}

func (c *workspaceDocs) get(fp string, build func(fp string) (*Document, error)) (*Document, error) {
	c.mu.Lock()
	d := c.docs[fp]
	c.mu.Unlock()
	if d != nil {
		return d, nil
	}
	d, err := build(fp)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.docs == nil || len(c.docs) >= maxWorkspaceDocs {
		c.docs = map[string]*Document{}
	}
	c.docs[fp] = d
	return d, nil
}

// base is the server address the document and GET /v1 name: the configured public URL, else the scheme
// and host the caller used.
func (h *Handler) base(r *http.Request) string {
	if h.publicURL != "" {
		return h.publicURL
	}
	return baseURL(r)
}

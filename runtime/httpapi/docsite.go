package httpapi

import (
	"embed"
	"net/http"
	"sync"

	"github.com/uptrace/bunrouter"
)

// The API reference at GET /docs: Redoc (MIT, bundled from the npm package by `make docs-bundle`)
// rendering /v1/openapi.json, all from this server: no CDN, no key, no CORS.
//
//go:embed docs/index.html docs/redoc.standalone.js
var docsFS embed.FS

// docsCSP lets the page run only this server's script; Redoc needs inline styles and a blob: worker
// for its search index.
const docsCSP = "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; font-src 'self' data:; connect-src 'self'; worker-src 'self' blob:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

func loadAsset(name, ctype string) *representation {
	body, err := docsFS.ReadFile(name)
	if err != nil {
		panic("embedded " + name + ": " + err.Error()) // go:embed guarantees it
	}
	return newRepresentation(body, ctype)
}

// The assets are compressed on first use, not at start: the bundle takes tens of milliseconds to
// compress, which a server's start should not wait for.
var (
	docsPage   = sync.OnceValue(func() *representation { return loadAsset("docs/index.html", "text/html; charset=utf-8") })
	docsScript = sync.OnceValue(func() *representation {
		return loadAsset("docs/redoc.standalone.js", "text/javascript; charset=utf-8")
	})
)

func serveAsset(asset func() *representation) bunrouter.HandlerFunc {
	return func(w http.ResponseWriter, req bunrouter.Request) error {
		h := w.Header()
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Content-Security-Policy", docsCSP)
		h.Set("Referrer-Policy", "no-referrer")
		asset().serve(w, req.Request)
		return nil
	}
}

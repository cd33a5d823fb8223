package httpapi

import (
	"embed"
	"net/http"
	"path"
	"strings"
	"sync"

	"github.com/uptrace/bunrouter"

	"github.com/workspace-records/records/engine/route"
)

// The web console at /console (docs/issue-24.md, "Console"): one page and its stylesheet and plain
// JavaScript modules, embedded, no build step and nothing from outside this server.
//
//go:embed console
var consoleFS embed.FS

// consoleCSP allows this server's scripts, styles and calls only: no inline script or style, no frame,
// no form posted elsewhere.
const consoleCSP = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'"

// consoleAssets holds each file's representation, compressed on first use.
var consoleAssets = func() map[string]func() *representation {
	out := make(map[string]func() *representation, len(route.ConsoleFiles))
	for _, name := range route.ConsoleFiles {
		ctype := "text/javascript; charset=utf-8"
		switch path.Ext(name) {
		case ".html":
			ctype = "text/html; charset=utf-8"
		case ".css":
			ctype = "text/css; charset=utf-8"
		}
		out[name] = sync.OnceValue(func() *representation {
			body, err := consoleFS.ReadFile("console/" + name)
			if err != nil {
				panic("embedded console/" + name + ": " + err.Error()) // TestConsoleFiles keeps them in step
			}
			return newRepresentation(body, ctype)
		})
	}
	return out
}()

// serveConsole serves the console's page (name "") or the asset the request names, with the console's
// security headers. The page is never stored (it is where a sign-in link lands); the assets are
// revalidated by ETag.
func serveConsole(page bool) bunrouter.HandlerFunc {
	return func(w http.ResponseWriter, req bunrouter.Request) error {
		name := "index.html"
		if !page {
			name = strings.TrimPrefix(req.URL.Path, "/console/")
		}
		asset, ok := consoleAssets[name]
		if !ok {
			panic("httpapi: console route without an asset: " + req.URL.Path) // both come from route.ConsoleFiles
		}
		h := w.Header()
		h.Set("Content-Security-Policy", consoleCSP)
		h.Set("X-Frame-Options", "DENY")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("Cross-Origin-Opener-Policy", "same-origin")
		h.Set("Cross-Origin-Resource-Policy", "same-origin")
		if page {
			h.Set("Cache-Control", "no-store")
		}
		asset().serve(w, req.Request)
		return nil
	}
}

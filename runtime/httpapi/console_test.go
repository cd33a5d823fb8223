package httpapi

import (
	"io/fs"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/uptrace/bunrouter"

	"github.com/workspace-records/records/engine/route"
)

// The embedded console files and route.ConsoleFiles agree, so every file is served and every route has
// its file.
func TestConsoleFiles(t *testing.T) {
	entries, err := fs.ReadDir(consoleFS, "console")
	if err != nil {
		t.Fatal(err)
	}
	var embedded []string
	for _, e := range entries {
		embedded = append(embedded, e.Name())
	}
	want := slices.Clone(route.ConsoleFiles)
	slices.Sort(embedded)
	slices.Sort(want)
	if !slices.Equal(embedded, want) {
		t.Fatalf("embedded %v, route.ConsoleFiles %v", embedded, want)
	}
}

// No file of the console runs or styles anything inline (the CSP forbids it), loads anything from
// another origin, or builds HTML from strings; every module the page imports is a served file.
func TestConsoleAssetsAreSelfContained(t *testing.T) {
	importRE := regexp.MustCompile(`from '\./([a-z]+\.js)'`)
	for _, name := range route.ConsoleFiles {
		body, err := consoleFS.ReadFile("console/" + name)
		if err != nil {
			t.Fatal(err)
		}
		s := string(body)
		for _, bad := range []string{"http://", "https://", "innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval(", "new Function", " style=", "<style", "javascript:"} {
			if strings.Contains(s, bad) && !(bad == "http://" && strings.Contains(s, "http://www.w3.org/2000/svg") && strings.Count(s, "http://") == 1) {
				t.Errorf("%s contains %q", name, bad)
			}
		}
		if name == "index.html" && regexp.MustCompile(`<script(?:\s[^>]*)?>\s*[^<\s]`).MatchString(s) {
			t.Errorf("index.html has an inline script")
		}
		for _, m := range importRE.FindAllStringSubmatch(s, -1) {
			if !slices.Contains(route.ConsoleFiles, m[1]) {
				t.Errorf("%s imports %s, which is not served", name, m[1])
			}
		}
	}
}

// Every console answer carries the console's security headers, the page is never stored, and none
// carries a CORS header.
func TestConsoleHeaders(t *testing.T) {
	r := bunrouter.New()
	r.GET("/console", serveConsole(true))
	r.GET("/console/", serveConsole(true))
	for _, name := range route.ConsoleFiles {
		if name != "index.html" {
			r.GET("/console/"+name, serveConsole(false))
		}
	}
	paths := []string{"/console", "/console/"}
	for _, name := range route.ConsoleFiles {
		if name != "index.html" {
			paths = append(paths, "/console/"+name)
		}
	}
	for _, p := range paths {
		req := httptest.NewRequest("GET", p, nil)
		req.Header.Set("Origin", "https://evil.example")
		w := httptest.NewRecorder()
		r.ServeHTTP(w, req)
		res := w.Result()
		if res.StatusCode != http.StatusOK {
			t.Errorf("%s: %d", p, res.StatusCode)
			continue
		}
		for k, v := range map[string]string{"Content-Security-Policy": consoleCSP, "X-Frame-Options": "DENY", "X-Content-Type-Options": "nosniff", "Referrer-Policy": "no-referrer"} {
			if got := res.Header.Get(k); got != v {
				t.Errorf("%s: %s %q, want %q", p, k, got, v)
			}
		}
		isPage := p == "/console" || p == "/console/"
		if got := res.Header.Get("Cache-Control"); isPage != (got == "no-store") {
			t.Errorf("%s: Cache-Control %q", p, got)
		}
		for k := range res.Header {
			if strings.HasPrefix(strings.ToLower(k), "access-control-") {
				t.Errorf("%s: CORS header %s", p, k)
			}
		}
		ctype := res.Header.Get("Content-Type")
		switch {
		case isPage && !strings.HasPrefix(ctype, "text/html"),
			strings.HasSuffix(p, ".js") && !strings.HasPrefix(ctype, "text/javascript"),
			strings.HasSuffix(p, ".css") && !strings.HasPrefix(ctype, "text/css"):
			t.Errorf("%s: Content-Type %q", p, ctype)
		}
	}
}

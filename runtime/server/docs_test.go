package server_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/workspace-records/records/runtime/server/servertest"
)

// docsBudget is the wall-clock time Chromium has, from its start, to render the reference: a fixed
// budget, not Chromium's virtual time, which on a loaded machine may never run out (the page is polled,
// so a fast machine is done in a second or two). It bounds a hang, not the speed: the small definitions
// set renders in 7-9 s at a load of 11 on 2 cores; the shipped definitions' whole reference
// (RECORDS_DOCS_FULL, make docs-check) in 30-44 s there, and took up to 122 s within a loaded make test.
// Two make tests side by side (load 30-58) kept the small set from rendering within 180 s once.
const docsBudget = 300 * time.Second

// docsResources is the small definitions set /docs is rendered from in `make test`: three groups, a
// reference between two resources (pipeline stages name a pipeline and a forecast category) and the data
// model records. Its document (370 kB) is a fifth of the shipped definitions' (44 resources, 1.9 MB; 3.4 MB
// indented), whose Redoc rendering took most of the test's time.
var docsResources = []string{"tags", "pipelines", "pipeline_stages", "forecast_categories", "signal_types", "data_model_records"}

// docsRoles are the shipped built-in roles without their rules on resources outside docsResources (roles
// naming an unknown resource are refused).
const docsRoles = `version: 1
roles:
  admin:
    label: Administrator
    description: Full access to every resource and to workspace-wide API administration.
    permissions: [api.access, api.manage]
    resources: {"*": write}
    record_rules: {"*": all}
  member:
    label: Member
    description: Works with the records.
    permissions: [api.access]
    resources: {"*": write, pipelines: read, pipeline_stages: read}
    record_rules: {"*": all}
  viewer:
    label: Viewer
    description: Read-only access.
    permissions: [api.access]
    resources: {"*": read}
    record_rules: {"*": all}
  no_api:
    label: Member without API access
    description: Uses the app only; cannot create or use API keys.
    permissions: []
    resources: {"*": write}
    record_rules: {"*": all}
`

// definitionsOf copies the shipped definitions (plans, meta) with only the named resources and roles
// that name no other resource.
func definitionsOf(t *testing.T, roles string, resources ...string) string {
	t.Helper()
	dir := servertest.CopyDefinitions(t)
	files, err := filepath.Glob(filepath.Join(dir, "resources", "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	kept := 0
	for _, f := range files {
		if slices.Contains(resources, strings.TrimSuffix(filepath.Base(f), ".yaml")) {
			kept++
			continue
		}
		if err := os.Remove(f); err != nil {
			t.Fatal(err)
		}
	}
	if kept != len(resources) {
		t.Fatalf("the shipped definitions hold %d of the resources %v", kept, resources)
	}
	if err := os.WriteFile(filepath.Join(dir, "roles.yaml"), []byte(roles), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// render opens url in Chromium and waits, within docsBudget of wall time, until the page's text holds
// every one of want; it returns a PNG screenshot of the window, and reports the page's console output
// and every request the page made outside the server at base.
func render(t *testing.T, bin, base, url string, want []string) (png []byte) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), docsBudget)
	defer cancel()
	t0 := time.Now()
	p := startBrowser(t, bin).openPage(ctx)
	p.do("Network.enable", map[string]any{}, nil)
	p.navigate(url)
	// One read of the page's text per poll, every 100 ms, not a serialisation of the whole document per
	// wanted string: the poll must not take the main thread from the page it waits for (Redoc over a large
	// document). The whole budget, not waitTimeout: the full reference may take longer than that.
	words := make([]string, len(want))
	for i, w := range want {
		words[i] = jsString(w)
	}
	p.waitEvery(fmt.Sprintf("the page to render %q within %v", want, docsBudget),
		"((t) => ["+strings.Join(words, ", ")+"].every((w) => t.includes(w)))(document.documentElement.textContent || '')", 100*time.Millisecond, docsBudget)
	png = p.screenshot()
	t.Logf("chromium rendered the page in %v", time.Since(t0).Round(time.Millisecond))
	p.checkConsole()
	for _, u := range p.b.requested() {
		if !strings.HasPrefix(u, base+"/") && !strings.HasPrefix(u, "data:") && !strings.HasPrefix(u, "blob:") {
			t.Errorf("the page requested %s, outside the server", u)
		}
	}
	return png
}

// GET /docs is a reference rendered by the bundled Redoc from /v1/openapi.json, all from this server:
// in headless Chromium it loads, shows the resources and operations, requests nothing from outside the
// server, logs nothing to the console, and its screenshot is a real page. The server runs a small
// definitions set (docsResources); RECORDS_DOCS_FULL=1 renders the shipped definitions' whole reference
// instead, and RECORDS_DOCS_SCREENSHOT keeps the screenshot (make docs-check does both).
func TestDocsPageInChromium(t *testing.T) {
	t.Parallel()
	bin := chromium(t)
	full := os.Getenv("RECORDS_DOCS_FULL") != ""
	opts := servertest.Options{DefinitionsDir: definitionsOf(t, docsRoles, docsResources...)}
	want := []string{"Workspace Records API", "Tags", "Pipeline stages", "Signal types", "Data model records",
		"List tags", "Create a pipeline stage", "Archive a signal type", "Delivery vocabulary", "Administration"}
	if full {
		opts = servertest.Options{}
		want = []string{"Workspace Records API", "Companies", "Signals", "Data model records", "List companies", "Create a deal", "Archive a task", "Delivery vocabulary"}
	}
	e := servertest.Start(t, servertest.SQLite, opts)
	res, err := http.Get(e.URL + "/docs")
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != 200 || !strings.HasPrefix(res.Header.Get("Content-Type"), "text/html") || !strings.Contains(res.Header.Get("Content-Security-Policy"), "script-src 'self'") {
		t.Fatalf("GET /docs: %d %v", res.StatusCode, res.Header)
	}
	for k := range res.Header {
		if strings.HasPrefix(strings.ToLower(k), "access-control-") {
			t.Errorf("CORS header %s on /docs", k)
		}
	}
	if bytes.Contains(page, []byte("http://")) || bytes.Contains(page, []byte("https://")) {
		t.Errorf("the page names an outside address:\n%s", page)
	}

	png := render(t, bin, e.URL, e.URL+"/docs", want)
	if keep := os.Getenv("RECORDS_DOCS_SCREENSHOT"); keep != "" {
		if err := os.WriteFile(keep, png, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if !bytes.HasPrefix(png, []byte("\x89PNG\r\n\x1a\n")) || len(png) < 50_000 {
		t.Errorf("screenshot: %d bytes, not a rendered page", len(png))
	}
}

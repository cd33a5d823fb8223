package server_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/workspace-records/records/runtime/server/servertest"
)

// docsBudget is the wall-clock time Chromium has, from its start, to render the reference: a fixed
// budget, not Chromium's virtual time, which on a loaded machine may never run out (the page is polled,
// so a fast machine is done in a second or two).
const docsBudget = 120 * time.Second

// render opens url in Chromium and waits, within docsBudget of wall time, until the page's DOM holds
// every one of want; it returns the DOM and a PNG screenshot of the window, and reports the page's
// console output.
func render(t *testing.T, bin, url string, want []string) (dom string, png []byte) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), docsBudget)
	defer cancel()
	t0 := time.Now()
	p := startBrowser(t, bin).openPage(ctx)
	p.navigate(url)
	// One read of the page's text per poll, not a serialisation of the whole document per wanted string:
	// the poll must not take the main thread from the page it waits for (Redoc over a large document).
	words := make([]string, len(want))
	for i, w := range want {
		words[i] = jsString(w)
	}
	p.waitFor(fmt.Sprintf("the page to render %q within %v", want, docsBudget),
		"((t) => ["+strings.Join(words, ", ")+"].every((w) => t.includes(w)))(document.documentElement.textContent || '')")
	dom = p.dom()
	png = p.screenshot()
	t.Logf("chromium rendered the page in %v", time.Since(t0).Round(time.Millisecond))
	p.checkConsole()
	return dom, png
}

// GET /docs is a reference rendered by the bundled Redoc from /v1/openapi.json, all from this server:
// in headless Chromium it loads, shows the resources and operations, logs nothing to the console, and
// its screenshot is a real page. RECORDS_DOCS_SCREENSHOT keeps the screenshot (make docs-check).
func TestDocsPageInChromium(t *testing.T) {
	t.Parallel()
	bin := chromium(t)
	e := servertest.Start(t, servertest.SQLite, servertest.Options{})
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

	want := []string{"Workspace Records API", "Companies", "Signals", "Data model records", "List companies", "Create a deal", "Archive a task", "Delivery vocabulary"}
	_, png := render(t, bin, e.URL+"/docs", want)
	if keep := os.Getenv("RECORDS_DOCS_SCREENSHOT"); keep != "" {
		if err := os.WriteFile(keep, png, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if !bytes.HasPrefix(png, []byte("\x89PNG\r\n\x1a\n")) || len(png) < 50_000 {
		t.Errorf("screenshot: %d bytes, not a rendered page", len(png))
	}
}

package server_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/workspace-records/records/runtime/server/servertest"
)

// chromium returns Debian's Chromium, or skips (fails when CI=true: .ci/run installs it).
func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("Chromium is required when CI=true (apt-get install chromium)")
	}
	t.Skip("Chromium not installed (apt-get install chromium)")
	return ""
}

// docsBudget is the wall-clock time Chromium has, from its start, to render the reference: a fixed
// budget, not Chromium's virtual time, which on a loaded machine may never run out (the page is polled,
// so a fast machine is done in a second or two).
const docsBudget = 120 * time.Second

// browser is headless Chromium driven over the DevTools protocol on a pipe (--remote-debugging-pipe:
// the browser reads NUL-terminated JSON commands on its fd 3 and writes answers and events on its fd 4).
type browser struct {
	t       *testing.T
	cmd     *exec.Cmd
	stderr  *bytes.Buffer
	out     io.WriteCloser
	mu      sync.Mutex
	next    int
	waiting map[int]chan cdpMessage
	console []string // console calls and uncaught exceptions of the page
	closed  chan struct{}
}

type cdpMessage struct {
	ID        int             `json:"id,omitempty"`
	Method    string          `json:"method,omitempty"`
	SessionID string          `json:"sessionId,omitempty"`
	Params    json.RawMessage `json:"params,omitempty"`
	Result    json.RawMessage `json:"result,omitempty"`
	Error     *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error,omitempty"`
}

// startBrowser starts Chromium on about:blank; it is killed when the test ends.
func startBrowser(t *testing.T, bin string) *browser {
	t.Helper()
	toBrowser, commands, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	answers, fromBrowser, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync", "--disable-dev-shm-usage",
		"--user-data-dir="+t.TempDir(), "--enable-logging=stderr", "--v=0", "--window-size=1400,1000",
		"--remote-debugging-pipe", "about:blank")
	b := &browser{t: t, cmd: cmd, stderr: &bytes.Buffer{}, out: commands, waiting: map[int]chan cdpMessage{}, closed: make(chan struct{})}
	cmd.Stderr = &lockedWriter{mu: &b.mu, w: b.stderr}
	cmd.ExtraFiles = []*os.File{toBrowser, fromBrowser} // fds 3 and 4
	if err := cmd.Start(); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	toBrowser.Close()
	fromBrowser.Close()
	go b.read(answers)
	t.Cleanup(func() {
		commands.Close()
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		answers.Close()
	})
	return b
}

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// read hands each answer to its caller and keeps the page's console output.
func (b *browser) read(r io.Reader) {
	defer close(b.closed)
	br := bufio.NewReader(r)
	for {
		raw, err := br.ReadBytes(0)
		if err != nil {
			return
		}
		var m cdpMessage
		if err := json.Unmarshal(raw[:len(raw)-1], &m); err != nil {
			continue
		}
		b.mu.Lock()
		switch m.Method {
		case "Runtime.consoleAPICalled", "Runtime.exceptionThrown":
			b.console = append(b.console, fmt.Sprintf("%s %.500s", m.Method, m.Params))
		}
		if ch, ok := b.waiting[m.ID]; ok && m.ID != 0 {
			delete(b.waiting, m.ID)
			ch <- m
		}
		b.mu.Unlock()
	}
}

// call sends one command (in session, unless "") and decodes its result into out (may be nil).
func (b *browser) call(ctx context.Context, session, method string, params, out any) error {
	ch := make(chan cdpMessage, 1)
	b.mu.Lock()
	b.next++
	id := b.next
	b.waiting[id] = ch
	b.mu.Unlock()
	msg, err := json.Marshal(map[string]any{"id": id, "sessionId": session, "method": method, "params": params})
	if err != nil {
		return err
	}
	if session == "" {
		msg, _ = json.Marshal(map[string]any{"id": id, "method": method, "params": params})
	}
	if _, err := b.out.Write(append(msg, 0)); err != nil {
		return fmt.Errorf("%s: %w", method, err)
	}
	select {
	case m := <-ch:
		if m.Error != nil {
			return fmt.Errorf("%s: %d %s", method, m.Error.Code, m.Error.Message)
		}
		if out != nil {
			return json.Unmarshal(m.Result, out)
		}
		return nil
	case <-b.closed:
		return fmt.Errorf("%s: chromium closed its pipe", method)
	case <-ctx.Done():
		return fmt.Errorf("%s: %w", method, ctx.Err())
	}
}

// logs returns what Chromium wrote on stderr and the page's console calls.
func (b *browser) logs() (stderr string, console []string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.stderr.String(), append([]string(nil), b.console...)
}

// render opens url in Chromium and waits, within docsBudget of wall time, until the page's DOM holds
// every one of want; it returns the DOM, a PNG screenshot of the window and the console output.
func render(t *testing.T, bin, url string, want []string) (dom string, png []byte) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), docsBudget)
	defer cancel()
	t0 := time.Now()
	b := startBrowser(t, bin)
	fail := func(format string, args ...any) {
		t.Helper()
		stderr, _ := b.logs()
		if len(stderr) > 4000 {
			stderr = "…" + stderr[len(stderr)-4000:]
		}
		t.Fatalf("chromium after %v: %s\n%s", time.Since(t0).Round(time.Millisecond), fmt.Sprintf(format, args...), stderr)
	}
	var targets struct {
		TargetInfos []struct {
			TargetID string `json:"targetId"`
			Type     string `json:"type"`
		} `json:"targetInfos"`
	}
	var page string
	for page == "" {
		if err := b.call(ctx, "", "Target.getTargets", map[string]any{}, &targets); err != nil {
			fail("%v", err)
		}
		for _, ti := range targets.TargetInfos {
			if ti.Type == "page" {
				page = ti.TargetID
			}
		}
		if page == "" {
			select {
			case <-ctx.Done():
				fail("no page target")
			case <-time.After(100 * time.Millisecond):
			}
		}
	}
	var attached struct {
		SessionID string `json:"sessionId"`
	}
	if err := b.call(ctx, "", "Target.attachToTarget", map[string]any{"targetId": page, "flatten": true}, &attached); err != nil {
		fail("%v", err)
	}
	s := attached.SessionID
	for _, m := range []string{"Runtime.enable", "Page.enable"} {
		if err := b.call(ctx, s, m, map[string]any{}, nil); err != nil {
			fail("%v", err)
		}
	}
	if err := b.call(ctx, s, "Page.navigate", map[string]any{"url": url}, nil); err != nil {
		fail("%v", err)
	}
	var missing []string
	for {
		var ev struct {
			Result struct {
				Value string `json:"value"`
			} `json:"result"`
		}
		if err := b.call(ctx, s, "Runtime.evaluate", map[string]any{"expression": "document.documentElement.outerHTML", "returnByValue": true}, &ev); err != nil {
			fail("the page did not render %q within %v: %v", missing, docsBudget, err)
		}
		dom = ev.Result.Value
		missing = missing[:0]
		for _, w := range want {
			if !strings.Contains(dom, w) {
				missing = append(missing, w)
			}
		}
		if len(missing) == 0 {
			break
		}
		select {
		case <-ctx.Done():
			fail("the page did not render %q within %v", missing, docsBudget)
		case <-time.After(250 * time.Millisecond):
		}
	}
	var shot struct {
		Data []byte `json:"data"` // base64 in JSON
	}
	if err := b.call(ctx, s, "Page.captureScreenshot", map[string]any{"format": "png"}, &shot); err != nil {
		fail("screenshot: %v", err)
	}
	t.Logf("chromium rendered the page in %v", time.Since(t0).Round(time.Millisecond))
	stderr, console := b.logs()
	for _, line := range strings.Split(stderr, "\n") {
		if strings.Contains(line, ":CONSOLE") || strings.Contains(line, "Uncaught") {
			t.Errorf("console: %s", line)
		}
	}
	for _, c := range console {
		t.Errorf("console: %s", c)
	}
	return dom, shot.Data
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

package server_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"
)

// The Chrome DevTools Protocol driver of the browser tests (the /docs reference, the console): Debian's
// headless Chromium over --remote-debugging-pipe, no other dependency.

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
	fetched []string // the URLs the page requested (with the Network domain enabled)
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
	// Nothing the tests do not use: no GPU, extensions, sync, updates, crash reports or background fetches
	// (start to DevTools in 0.2-0.6 s at a load of 8 on 2 cores, with or without the later flags); and no
	// throttling of the page's timers, which the waits poll with, should Chromium count the page hidden.
	cmd := exec.Command(bin, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync", "--disable-dev-shm-usage",
		"--disable-extensions", "--disable-default-apps", "--disable-breakpad", "--mute-audio",
		"--disable-features=Translate,OptimizationHints,MediaRouter", "--disable-background-timer-throttling",
		"--disable-renderer-backgrounding", "--disable-backgrounding-occluded-windows",
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
		case "Network.requestWillBeSent":
			var ev struct {
				Request struct {
					URL string `json:"url"`
				} `json:"request"`
			}
			if json.Unmarshal(m.Params, &ev) == nil {
				b.fetched = append(b.fetched, ev.Request.URL)
			}
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

// requested returns the URLs the page requested since the Network domain was enabled.
func (b *browser) requested() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]string(nil), b.fetched...)
}

// logs returns what Chromium wrote on stderr and the page's console calls.
func (b *browser) logs() (stderr string, console []string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.stderr.String(), append([]string(nil), b.console...)
}

// tabPage is the browser's page target, attached in a flat session with Runtime and Page enabled. Its
// methods fail the test, with Chromium's last output, when the browser does not answer within ctx.
type tabPage struct {
	t   *testing.T
	b   *browser
	ctx context.Context
	s   string
	t0  time.Time
	// skipLooks makes lookAt a no-op: the pages' looks (axe, width, screenshots) are checked on one
	// backend's walk only (see TestConsoleInChromium).
	skipLooks bool
}

// openPage attaches to the browser's page; ctx bounds every later command.
func (b *browser) openPage(ctx context.Context) *tabPage {
	p := &tabPage{t: b.t, b: b, ctx: ctx, t0: time.Now()}
	var targets struct {
		TargetInfos []struct {
			TargetID string `json:"targetId"`
			Type     string `json:"type"`
		} `json:"targetInfos"`
	}
	var target string
	for target == "" {
		if err := b.call(ctx, "", "Target.getTargets", map[string]any{}, &targets); err != nil {
			p.fail("%v", err)
		}
		for _, ti := range targets.TargetInfos {
			if ti.Type == "page" {
				target = ti.TargetID
			}
		}
		if target == "" {
			select {
			case <-ctx.Done():
				p.fail("no page target")
			case <-time.After(100 * time.Millisecond):
			}
		}
	}
	var attached struct {
		SessionID string `json:"sessionId"`
	}
	if err := b.call(ctx, "", "Target.attachToTarget", map[string]any{"targetId": target, "flatten": true}, &attached); err != nil {
		p.fail("%v", err)
	}
	p.s = attached.SessionID
	for _, m := range []string{"Runtime.enable", "Page.enable"} {
		p.do(m, map[string]any{}, nil)
	}
	return p
}

// fail ends the test with the message and the tail of Chromium's output.
func (p *tabPage) fail(format string, args ...any) {
	p.t.Helper()
	stderr, console := p.b.logs()
	if len(stderr) > 4000 {
		stderr = "…" + stderr[len(stderr)-4000:]
	}
	p.t.Fatalf("chromium after %v: %s\nconsole: %q\n%s", time.Since(p.t0).Round(time.Millisecond), fmt.Sprintf(format, args...), console, stderr)
}

// do sends one command of the page's session.
func (p *tabPage) do(method string, params, out any) {
	p.t.Helper()
	if err := p.b.call(p.ctx, p.s, method, params, out); err != nil {
		p.fail("%v", err)
	}
}

// navigate opens url in the page.
func (p *tabPage) navigate(url string) {
	p.t.Helper()
	p.do("Page.navigate", map[string]any{"url": url}, nil)
}

// eval runs a JavaScript expression in the page (awaiting a promise) and decodes its value into out
// (may be nil); an exception fails the test.
func (p *tabPage) eval(expr string, out any) {
	p.t.Helper()
	if err := p.tryEval(expr, out); err != nil {
		p.fail("%v", err)
	}
}

// tryEval is eval that answers the page's exception as an error.
func (p *tabPage) tryEval(expr string, out any) error {
	var res struct {
		Result struct {
			Value json.RawMessage `json:"value"`
		} `json:"result"`
		ExceptionDetails *struct {
			Text      string `json:"text"`
			Exception struct {
				Description string `json:"description"`
			} `json:"exception"`
		} `json:"exceptionDetails"`
	}
	if err := p.b.call(p.ctx, p.s, "Runtime.evaluate", map[string]any{"expression": expr, "returnByValue": true, "awaitPromise": true}, &res); err != nil {
		return err
	}
	if e := res.ExceptionDetails; e != nil {
		return fmt.Errorf("%.200s: %s %s", expr, e.Text, e.Exception.Description)
	}
	if out != nil && len(res.Result.Value) > 0 {
		return json.Unmarshal(res.Result.Value, out)
	}
	return nil
}

// waitTimeout bounds one wait for the page (the page's context bounds them all): a hang guard; the
// longest wait of the console run, a page module's first render, takes about a second under load.
const waitTimeout = 45 * time.Second

// waitFor waits until the expression is true, for at most waitTimeout; what names it in the failure. The
// page itself polls the expression every 20 ms (a cheap check between its own tasks).
func (p *tabPage) waitFor(what, expr string) {
	p.t.Helper()
	p.waitEvery(what, expr, 20*time.Millisecond, waitTimeout)
}

// waitEvery is waitFor polling every interval for at most timeout, in rounds of at most 2 s: a round that
// a navigation cut short is started again in the new document.
func (p *tabPage) waitEvery(what, expr string, every, timeout time.Duration) {
	p.t.Helper()
	deadline := time.Now().Add(timeout)
	round := `new Promise((resolve) => {
		const end = Date.now() + 2000;
		const check = () => {
			let ok = false, err = '';
			try { ok = !!(` + expr + `); } catch (e) { err = String(e); }
			if (ok || Date.now() >= end) resolve({ok, err}); else setTimeout(check, ` + fmt.Sprint(every.Milliseconds()) + `);
		};
		check();
	})`
	for {
		var res struct {
			OK  bool   `json:"ok"`
			Err string `json:"err"`
		}
		err := p.tryEval(round, &res)
		if err == nil && res.OK {
			return
		}
		if err == nil && res.Err != "" {
			err = fmt.Errorf("%s", res.Err)
		}
		if p.ctx.Err() != nil {
			p.fail("waiting for %s (%s): %v", what, expr, p.ctx.Err())
		}
		if time.Now().After(deadline) {
			var text string
			_ = p.tryEval("document.querySelector('main') ? document.querySelector('main').innerText : document.documentElement.outerHTML", &text)
			if len(text) > 3000 {
				text = text[:3000] + "…"
			}
			p.fail("waiting for %s (%s): %v\nthe page says:\n%s", what, expr, err, text)
		}
		if err != nil {
			// The document went away under the evaluation (a navigation): a moment for the next one.
			select {
			case <-p.ctx.Done():
			case <-time.After(20 * time.Millisecond):
			}
		}
	}
}

// viewport sets the window's size; mobile emulates a phone (touch layout, meta viewport honoured).
func (p *tabPage) viewport(width, height int, mobile bool) {
	p.t.Helper()
	p.do("Emulation.setDeviceMetricsOverride", map[string]any{"width": width, "height": height, "deviceScaleFactor": 1, "mobile": mobile}, nil)
}

// screenshot returns a PNG of the window (encoded for speed, not size: the console's full-page pictures
// are up to 10,000 px tall).
func (p *tabPage) screenshot() []byte {
	p.t.Helper()
	var shot struct {
		Data []byte `json:"data"` // base64 in JSON
	}
	p.do("Page.captureScreenshot", map[string]any{"format": "png", "optimizeForSpeed": true}, &shot)
	return shot.Data
}

// click clicks the centre of the element selector names, as a mouse would, after scrolling it into view.
func (p *tabPage) click(selector string) {
	p.t.Helper()
	p.waitFor("the element "+selector, "document.querySelector("+jsString(selector)+")")
	var box struct{ X, Y float64 }
	p.eval(`(() => { const el = document.querySelector(`+jsString(selector)+`); el.scrollIntoView({block: 'center'});
		const r = el.getBoundingClientRect(); return {X: r.left + r.width / 2, Y: r.top + r.height / 2}; })()`, &box)
	for _, typ := range []string{"mousePressed", "mouseReleased"} {
		p.do("Input.dispatchMouseEvent", map[string]any{"type": typ, "x": box.X, "y": box.Y, "button": "left", "clickCount": 1}, nil)
	}
}

// typeInto focuses the input selector names, empties it and types text as keyboard input.
func (p *tabPage) typeInto(selector, text string) {
	p.t.Helper()
	p.waitFor("the input "+selector, "document.querySelector("+jsString(selector)+")")
	p.eval(`(() => { const el = document.querySelector(`+jsString(selector)+`); el.focus(); el.select && el.select(); })()`, nil)
	p.do("Input.insertText", map[string]any{"text": text}, nil)
}

// choose selects value in the <select> selector names and tells the page, as a person picking it would.
func (p *tabPage) choose(selector, value string) {
	p.t.Helper()
	p.waitFor("the select "+selector, "document.querySelector("+jsString(selector)+")")
	p.eval(`(() => { const el = document.querySelector(`+jsString(selector)+`); el.focus(); el.value = `+jsString(value)+`;
		if (el.value !== `+jsString(value)+`) throw new Error('no option ' + `+jsString(value)+`);
		el.dispatchEvent(new Event('input', {bubbles: true})); el.dispatchEvent(new Event('change', {bubbles: true})); })()`, nil)
}

// press sends one key (Tab, Enter) to the focused element.
func (p *tabPage) press(key string) {
	p.t.Helper()
	codes := map[string]int{"Tab": 9, "Enter": 13}
	for _, typ := range []string{"rawKeyDown", "keyUp"} {
		params := map[string]any{"type": typ, "key": key, "code": key, "windowsVirtualKeyCode": codes[key]}
		if key == "Enter" && typ == "rawKeyDown" {
			p.do("Input.dispatchKeyEvent", params, nil)
			params = map[string]any{"type": "char", "key": key, "text": "\r", "windowsVirtualKeyCode": 13}
		}
		p.do("Input.dispatchKeyEvent", params, nil)
	}
}

// checkConsole reports the page's console calls, uncaught exceptions and Chromium's console lines, but
// those holding one of expected (the browser's own notes of answers a test asked for, such as a 403).
func (p *tabPage) checkConsole(expected ...string) {
	p.t.Helper()
	stderr, console := p.b.logs()
	known := func(s string) bool {
		for _, x := range expected {
			if strings.Contains(s, x) {
				return true
			}
		}
		return false
	}
	for _, line := range strings.Split(stderr, "\n") {
		if (strings.Contains(line, ":CONSOLE") || strings.Contains(line, "Uncaught")) && !known(line) {
			p.t.Errorf("console: %s", line)
		}
	}
	for _, c := range console {
		if !known(c) {
			p.t.Errorf("console: %s", c)
		}
	}
}

// jsString quotes s as a JavaScript string literal.
func jsString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

package server_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/workspace-records/records/runtime/server/servertest"
)

// The console's page checks, shared by its browser tests: screenshots at a desktop's and a phone's size
// and an axe-core accessibility run at each.

// consoleSizes are the sizes every console page is looked at.
var consoleSizes = []struct {
	name          string
	width, height int
	mobile        bool
}{
	{"1280x800", 1280, 800, false},
	{"390x844", 390, 844, true},
}

// consoleScreensDir is where the screenshots are kept as test artefacts (git-ignored: bin/).
func consoleScreensDir(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(servertest.RepoDir(), "bin", "console-screens")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

var axeSource = sync.OnceValues(func() (string, error) {
	b, err := os.ReadFile(filepath.Join("testdata", "axe", "axe.min.js"))
	return string(b), err
})

// axeViolation is one rule axe-core found broken, with the elements that break it.
type axeViolation struct {
	ID          string   `json:"id"`
	Impact      string   `json:"impact"`
	Help        string   `json:"help"`
	HelpURL     string   `json:"helpUrl"`
	Targets     []string `json:"targets"`
	FailSummary string   `json:"failureSummary"`
}

func (v axeViolation) String() string {
	return fmt.Sprintf("%s (%s): %s at %s: %s", v.ID, v.Impact, v.Help, strings.Join(v.Targets, ", "), v.FailSummary)
}

// axe runs axe-core (the vendored build, injected once per document) on the page and answers every
// violation of the WCAG 2.x A and AA rules and axe's best practices.
func (p *tabPage) axe() []axeViolation {
	p.t.Helper()
	var loaded bool
	p.eval("typeof window.axe !== 'undefined'", &loaded)
	if !loaded {
		src, err := axeSource()
		if err != nil {
			p.t.Fatalf("axe-core (make axe-bundle): %v", err)
		}
		p.eval(src+"\n;true", nil)
	}
	var out struct {
		Version    string         `json:"version"`
		Passes     int            `json:"passes"`
		Violations []axeViolation `json:"violations"`
	}
	// resultTypes keeps only the violations' nodes; the passing rules are still counted.
	p.eval(`axe.run(document, {resultTypes: ['violations'], runOnly: {type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa', 'wcag22aa', 'best-practice']}})
		.then(r => ({version: axe.version, passes: r.passes.length, violations: r.violations.map(v => ({id: v.id, impact: v.impact || '', help: v.help, helpUrl: v.helpUrl,
			targets: v.nodes.slice(0, 6).map(n => n.target.join(' ')), failureSummary: (v.nodes[0] && v.nodes[0].failureSummary || '').slice(0, 400)}))}))`, &out)
	if out.Passes == 0 {
		p.t.Fatalf("axe-core %q checked nothing on the page", out.Version)
	}
	return out.Violations
}

// lookAt screenshots the page as it stands at every console size (name-SIZE.png) and runs axe at
// each: serious and critical violations fail the test, the others are logged. It leaves the desktop size.
func (p *tabPage) lookAt(name string) {
	p.t.Helper()
	if p.skipLooks {
		return
	}
	dir := consoleScreensDir(p.t)
	// The last action's note (the page's live region, shown for a few seconds) would cover the page.
	p.eval(`document.getElementById('status').textContent = ''`, nil)
	for _, size := range consoleSizes {
		p.viewport(size.width, size.height, size.mobile)
		p.eval(`new Promise(r => requestAnimationFrame(() => requestAnimationFrame(() => r(true))))`, nil)
		for _, v := range p.axe() {
			if v.Impact == "serious" || v.Impact == "critical" {
				p.t.Errorf("axe on %s at %s: %s", name, size.name, v)
			} else {
				p.t.Logf("axe on %s at %s (not failing): %s", name, size.name, v)
			}
		}
		// The page is no wider than the screen: only a table's own scroll region scrolls sideways.
		var overflow struct {
			Scroll, Client int
			Culprits       []string
		}
		p.eval(`(() => { const d = document.documentElement; const w = d.clientWidth;
			const culprits = [...document.querySelectorAll('body *')].filter(el => { const r = el.getBoundingClientRect();
				return r.width > 0 && r.right > w + 1 && !(el.parentElement && el.parentElement.closest('.scroll, pre')); })
				.slice(0, 5).map(el => el.tagName.toLowerCase() + (el.id ? '#' + el.id : '') + (typeof el.className === 'string' && el.className ? '.' + el.className.split(' ').join('.') : ''));
			return {Scroll: d.scrollWidth, Client: w, Culprits: culprits}; })()`, &overflow)
		if overflow.Scroll > overflow.Client+1 {
			p.t.Errorf("%s at %s: the page is %d px wide on a %d px screen (%v)", name, size.name, overflow.Scroll, overflow.Client, overflow.Culprits)
		}
		// The whole page in one picture: the window as tall as the page (Chromium leaves the inside of
		// scrolling regions below the window unpainted when it captures beyond the viewport).
		var height int
		p.eval("Math.ceil(document.documentElement.scrollHeight)", &height)
		if height > size.height {
			p.viewport(size.width, min(height, 10000), size.mobile)
			p.eval(`new Promise(r => requestAnimationFrame(() => requestAnimationFrame(() => r(true))))`, nil)
		}
		png := p.screenshot()
		if len(png) < 8 || string(png[:8]) != "\x89PNG\r\n\x1a\n" {
			p.t.Errorf("%s at %s: the screenshot is not a PNG", name, size.name)
		}
		if err := os.WriteFile(filepath.Join(dir, name+"-"+size.name+".png"), png, 0o644); err != nil {
			p.t.Fatal(err)
		}
	}
	p.viewport(consoleSizes[0].width, consoleSizes[0].height, consoleSizes[0].mobile)
}

// openConsolePage goes to the console's hash route (#/fields/new…) and waits until the page module
// has rendered it (main[data-ready] names the page).
func (p *tabPage) openConsolePage(hash string) {
	p.t.Helper()
	page := strings.SplitN(strings.TrimPrefix(hash, "#/"), "/", 2)[0]
	page = strings.SplitN(page, "?", 2)[0]
	p.eval(`(() => { const m = document.getElementById('main'); delete m.dataset.ready;
		if (location.hash === `+jsString(hash)+`) window.dispatchEvent(new HashChangeEvent('hashchange')); else location.hash = `+jsString(hash)+`; return true; })()`, nil)
	p.waitFor("the console page "+hash, `document.getElementById('main').dataset.ready === `+jsString(page))
}

// text returns the visible text of the element selector names ("" when none).
func (p *tabPage) text(selector string) string {
	p.t.Helper()
	var s string
	p.eval(`(() => { const el = document.querySelector(`+jsString(selector)+`); return el ? (el.value !== undefined && el.tagName === 'INPUT' ? el.value : el.innerText) : ''; })()`, &s)
	return s
}

// cookies returns the browser's cookies for url.
func (p *tabPage) cookies(url string) []struct {
	Name     string `json:"name"`
	Value    string `json:"value"`
	HTTPOnly bool   `json:"httpOnly"`
	SameSite string `json:"sameSite"`
	Path     string `json:"path"`
} {
	p.t.Helper()
	var res struct {
		Cookies []struct {
			Name     string `json:"name"`
			Value    string `json:"value"`
			HTTPOnly bool   `json:"httpOnly"`
			SameSite string `json:"sameSite"`
			Path     string `json:"path"`
		} `json:"cookies"`
	}
	p.do("Network.getCookies", map[string]any{"urls": []string{url}}, &res)
	return res.Cookies
}

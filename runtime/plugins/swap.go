package plugins

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/workspace-records/records/plugins/sdk"
	"github.com/workspace-records/records/runtime/metrics"
)

// DefaultWatchInterval is how often Watch looks at the plugins' programs when none is configured.
const DefaultWatchInterval = time.Second

// drainGrace is how long past the hook deadline a swapped-out process waits for its calls before it
// is stopped: every call has the deadline, so they are over by then unless the plugin ignores it.
const drainGrace = time.Second

// Watch polls the program of every plugin every Config.WatchInterval until ctx is done or the host
// closes, and swaps in a program replaced on disk, without a restart of the server. The way to deploy
// one is to write it beside the old under another name and rename it over the old (atomic); a program
// written in place is taken too, once its file stayed the same for a whole interval.
//
// A program counts as changed when its file's size, modification time or identity (a rename puts
// another file at the path) differ from the program the running process was started from, and it
// stayed so across two polls (a file still being written is not taken), and its SHA-256 differs from
// that program's. Then it is started beside the running process (the handshake), asked to describe
// itself and pinged; it must say it is the same plugin and serve at least the resources the running
// process serves. If so it takes the new calls at once and the old process is stopped once its calls
// in flight are over (at most the hook deadline and drainGrace later). If not, the old process serves
// on, the refusal is logged and counted (records_plugin_swaps_total{result="refused"}), and that
// program is not tried again: only a program changed since.
//
// A plugin whose process exits meanwhile is started again by the next call from whatever program is
// on disk then, as before. Only the plugins the definitions named at start are watched: a program for
// another name is not looked at (New refuses to start without every named plugin's program).
func (h *Host) Watch(ctx context.Context) {
	if h == nil || len(h.plugins) == 0 {
		return
	}
	h.watchMu.Lock()
	if h.closed.Load() {
		h.watchMu.Unlock()
		return
	}
	h.watchers.Add(1)
	h.watchMu.Unlock()
	defer h.watchers.Done()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-h.done:
			cancel()
		case <-ctx.Done():
		}
	}()
	names := make([]string, 0, len(h.plugins))
	for name := range h.plugins {
		names = append(names, name)
	}
	sort.Strings(names)
	seen := map[string]*watched{}
	for _, name := range names {
		seen[name] = &watched{}
	}
	t := time.NewTicker(h.cfg.WatchInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		for _, name := range names {
			if ctx.Err() != nil {
				return
			}
			h.poll(h.plugins[name], seen[name])
		}
	}
}

// watched is what Watch saw of one plugin's program.
type watched struct {
	last    os.FileInfo // the file at the last poll; nil when it could not be read
	decided os.FileInfo // the last file hashed and acted on (served or refused): not hashed again
	missing bool        // the file was missing at the last poll (logged once)
}

// sameFile reports whether a and b are the same file with the same size and modification time.
func sameFile(a, b os.FileInfo) bool {
	return a != nil && b != nil && a.Size() == b.Size() && a.ModTime().Equal(b.ModTime()) && os.SameFile(a, b)
}

// poll looks at e's program once and swaps it in when it changed (see Watch).
func (h *Host) poll(e *entry, w *watched) {
	info, err := os.Stat(e.path)
	if err != nil {
		if !w.missing {
			h.cfg.Log.Warn("plugin program unreadable; the running process serves on", "plugin", e.name, "path", e.path, "err", err)
		}
		w.missing, w.last = true, nil
		return
	}
	w.missing = false
	e.mu.Lock()
	served, starting := e.served, e.starting != nil
	e.mu.Unlock()
	stable := sameFile(info, w.last)
	w.last = info
	switch {
	case sameFile(info, served.info) || sameFile(info, w.decided):
		return
	case !stable:
		return // changed since the last poll: perhaps still being written
	case starting:
		return // a (re)start is under way, from the file as it is: look again at the next poll
	}
	prog, err := readProgram(e.path)
	if err != nil {
		return // replaced or removed meanwhile: the next polls see what is there
	}
	if !sameFile(prog.info, info) {
		w.last = prog.info
		return
	}
	e.mu.Lock()
	refused := e.refused
	e.mu.Unlock()
	// The same content as served (copied again, touched) or as refused: nothing to do.
	if prog.sum == served.sum || prog.sum == refused || h.swap(e, prog) {
		w.decided = prog.info
	}
}

// swap starts want, e's program as polled, beside e's running process and puts it in that process's
// place if it proves healthy (see Watch). It reports whether it decided: swapped or refused; not when
// the file changed again meanwhile or a restart or Close came first.
func (h *Host) swap(e *entry, want program) bool {
	began := time.Now()
	p, hooks, desc, prog, err := h.launch(e, &e.candidate)
	e.mu.Lock()
	e.candidate = nil
	old, oldDesc, oldProg := e.proc, e.desc, e.served
	e.mu.Unlock()
	if err == nil && prog.sum != want.sum {
		// Replaced again between the poll and the start: the next polls look at the newest.
		h.cfg.Log.Info("plugin program changed while starting it; looking again", "plugin", e.name, "path", e.path)
		h.stop(p)
		return false
	}
	if err == nil {
		err = covers(oldDesc, desc)
	}
	if err == nil {
		err = h.healthy(p)
	}
	if h.closed.Load() {
		h.stop(p)
		return false
	}
	if err != nil {
		h.stop(p)
		e.mu.Lock()
		e.refused, e.swapErr = want.sum, err
		e.mu.Unlock()
		h.cfg.Metrics.PluginSwap(e.name, metrics.SwapRefused)
		h.cfg.Log.Warn("plugin program refused; the running process serves on", "plugin", e.name, "path", e.path,
			"sha256", shortSum(want.sum), "serving_version", oldDesc.Version, "serving_sha256", shortSum(oldProg.sum),
			"took", time.Since(began).Round(time.Millisecond).String(), "err", err)
		return true
	}
	e.mu.Lock()
	if h.closed.Load() || e.starting != nil || e.proc != old {
		// A (re)start began meanwhile (the old process died): it runs the program on disk, and the next
		// poll compares with what it started. Or the host is closing.
		e.mu.Unlock()
		h.stop(p)
		return false
	}
	e.proc, e.hooks, e.desc, e.served = p, hooks, desc, prog
	e.broken, e.lastErr, e.backoff, e.retryAt = false, nil, 0, time.Time{}
	e.refused, e.swapErr = "", nil
	e.starts++
	e.swaps++
	e.mu.Unlock()
	h.cfg.Metrics.PluginSwap(e.name, metrics.SwapSwapped)
	h.cfg.Metrics.PluginServing(e.name, desc.Version, prog.sum)
	h.cfg.Log.Info("plugin program swapped in", "plugin", e.name, "path", e.path,
		"version", desc.Version, "sha256", shortSum(prog.sum), "pid", pid(p),
		"old_version", oldDesc.Version, "old_sha256", shortSum(oldProg.sum), "old_pid", pid(old),
		"took", time.Since(began).Round(time.Millisecond).String())
	h.retire(e, old)
	return true
}

// covers returns why a process describing itself as next may not take the place of one described as
// cur: it must be the same plugin, and serve every resource cur serves (no resources: every resource
// whose definition names it).
func covers(cur, next sdk.Description) error {
	if next.Name != cur.Name {
		return fmt.Errorf("the program is plugin %q, not %q", next.Name, cur.Name)
	}
	if len(next.Resources) == 0 {
		return nil
	}
	if len(cur.Resources) == 0 {
		return fmt.Errorf("the program serves only %s; the running one serves every resource naming it", strings.Join(next.Resources, ", "))
	}
	var lost []string
	for _, r := range cur.Resources {
		if !slices.Contains(next.Resources, r) {
			lost = append(lost, r)
		}
	}
	if len(lost) > 0 {
		return fmt.Errorf("the program does not serve %s", strings.Join(lost, ", "))
	}
	return nil
}

// healthy pings p's process through go-plugin's health service, within the start timeout.
func (h *Host) healthy(p *proc) error {
	done := make(chan error, 1)
	go func() {
		rpc, err := p.client.Client()
		if err == nil {
			err = rpc.Ping()
		}
		done <- err
	}()
	t := time.NewTimer(h.cfg.StartTimeout)
	defer t.Stop()
	select {
	case err := <-done:
		if err != nil {
			return fmt.Errorf("ping: %w", err)
		}
		return nil
	case <-t.C:
		return errors.New("ping: no answer")
	}
}

// retire stops old, a process swapped out, in the background once its calls in flight are over: at most
// the hook deadline and drainGrace from now, sooner if the host closes.
func (h *Host) retire(e *entry, old *proc) {
	if old == nil {
		return
	}
	h.bg.Add(1)
	go func() {
		defer h.bg.Done()
		drained := make(chan struct{})
		go func() {
			old.calls.Wait()
			close(drained)
		}()
		t := time.NewTimer(h.cfg.Timeout + drainGrace)
		defer t.Stop()
		select {
		case <-drained:
		case <-h.done:
		case <-t.C:
			h.cfg.Log.Warn("calls still running on a swapped-out plugin process past the hook deadline; stopping it", "plugin", e.name, "pid", pid(old))
		}
		h.stop(old)
	}()
}

// shortSum is a program's SHA-256 as logs print it: 12 hex digits, as git prints commits (logs carry
// nothing that looks like a key or a full hash; plugins list and the metric have the whole sum).
func shortSum(sum string) string {
	if len(sum) > 12 {
		return sum[:12]
	}
	return sum
}

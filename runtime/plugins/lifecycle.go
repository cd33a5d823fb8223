package plugins

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin"

	"github.com/workspace-records/records/plugins/sdk"
)

// ensure returns e's running client. When the program is not running (never started, exited, or
// marked broken) it starts it in the background, one start at a time, and waits for that start at most
// until ctx is done: a start that is slow or stuck costs a call no more than its own deadline, and goes
// on for the calls after it. The caller does not hold e.mu.
func (h *Host) ensure(ctx context.Context, e *entry) (*sdk.Client, error) {
	e.mu.Lock()
	if e.hooks != nil && !e.broken && !e.proc.client.Exited() {
		c := e.hooks
		e.mu.Unlock()
		return c, nil
	}
	s := e.starting
	if s == nil {
		if h.closed.Load() {
			e.mu.Unlock()
			return nil, errors.New("the host is closed")
		}
		if wait := time.Until(e.retryAt); wait > 0 {
			err := fmt.Errorf("did not start (%v); next start in %v", e.lastErr, wait.Round(time.Millisecond))
			e.mu.Unlock()
			return nil, err
		}
		s = &start{began: time.Now(), done: make(chan struct{})}
		e.starting = s
		old := e.proc
		e.proc, e.hooks, e.broken = nil, nil, false
		e.starts++
		n := e.starts
		h.bg.Add(1)
		go func() {
			defer h.bg.Done()
			h.start(e, s, old, n)
		}()
	}
	e.mu.Unlock()
	select {
	case <-s.done:
		return s.hooks, s.err
	case <-ctx.Done():
		err := fmt.Errorf("still starting after %v", time.Since(s.began).Round(time.Millisecond))
		e.mu.Lock()
		if e.starting == s {
			e.lastErr = err
		}
		e.mu.Unlock()
		return nil, fmt.Errorf("%w: %w", err, ctx.Err())
	}
}

// start starts e's program as the n-th start, replacing old (stopped in the background), and reports
// through s.
func (h *Host) start(e *entry, s *start, old *proc, n int) {
	if old != nil {
		h.cfg.Log.Warn("restarting plugin", "plugin", e.name, "starts", n, "err", e.lastErrLocked())
		h.bg.Add(1)
		go func() {
			defer h.bg.Done()
			h.stop(old)
		}()
	}
	h.cfg.Metrics.PluginStarted(e.name, n > 1)
	p, hooks, desc, err := h.launch(e)
	e.mu.Lock()
	e.pending = nil
	if err == nil && h.closed.Load() {
		err = errors.New("the host is closed")
	}
	if err != nil {
		e.lastErr, hooks = err, nil
		e.backoff = min(max(2*e.backoff, startBackoffMin), startBackoffMax)
		e.retryAt = time.Now().Add(e.backoff)
	} else {
		e.proc, e.hooks, e.desc, e.lastErr = p, hooks, desc, nil
		e.backoff, e.retryAt = 0, time.Time{}
	}
	e.starting = nil
	e.mu.Unlock()
	s.hooks, s.err = hooks, err
	close(s.done)
	if err != nil {
		h.cfg.Log.Warn("plugin did not start", "plugin", e.name, "starts", n, "err", err)
		h.stop(p)
		return
	}
	h.cfg.Log.Info("plugin started", "plugin", e.name, "version", desc.Version, "starts", n)
}

// launch runs e's program, connects to it and asks it to describe itself. The process it returns (nil
// when there is none) must be stopped if err is not nil.
func (h *Host) launch(e *entry) (*proc, *sdk.Client, sdk.Description, error) {
	var desc sdk.Description
	dir, err := os.MkdirTemp(h.sockets, e.name+"-")
	if err != nil {
		return nil, nil, desc, fmt.Errorf("socket directory: %w", err)
	}
	pctx, kill := context.WithCancel(context.Background())
	// The command's context lets the host kill the process without go-plugin's locks, which a start in
	// flight holds until the handshake.
	cmd := exec.CommandContext(pctx, e.path)
	cmd.SysProcAttr = childAttrs()
	cmd.Env = []string{plugin.EnvUnixSocketDir + "=" + dir}
	// One logger per stream, so that lines arriving on two streams at once are not mixed; one limit
	// per plugin, kept across restarts.
	out := func(stream string) *lineLogger {
		return &lineLogger{log: h.cfg.Log, plugin: e.name, stream: stream, limit: &e.output}
	}
	client := plugin.NewClient(&plugin.ClientConfig{
		HandshakeConfig:  sdk.Handshake,
		Plugins:          sdk.HostPlugins(lookupServer{h}),
		Cmd:              cmd,
		AllowedProtocols: []plugin.Protocol{plugin.ProtocolGRPC},
		Stderr:           out("stderr"), // the process's file descriptor 2 (a panic's trace, log.Print)
		SyncStdout:       out("stdout"), // os.Stdout and os.Stderr once the plugin serves
		SyncStderr:       out("stderr"),
		StartTimeout:     h.cfg.StartTimeout,
		Logger: hclog.New(&hclog.LoggerOptions{
			Name: "go-plugin." + e.name, Level: hclog.Warn, Output: out("go-plugin"), DisableTime: true,
		}),
	})
	p := &proc{client: client, kill: kill, dir: dir}
	e.mu.Lock()
	closed := h.closed.Load()
	if !closed {
		e.pending = p
	}
	e.mu.Unlock()
	if closed {
		return p, nil, desc, errors.New("the host is closed")
	}
	rpc, err := client.Client()
	if err != nil {
		return p, nil, desc, err
	}
	raw, err := rpc.Dispense(sdk.PluginName)
	if err != nil {
		return p, nil, desc, err
	}
	hooks := raw.(*sdk.Client)
	// Describe is part of the start, bounded like the handshake: callers wait for a start no longer
	// than their own deadline anyway, and a busy machine may take longer than one call's deadline.
	dctx, cancel := context.WithTimeout(context.Background(), h.cfg.StartTimeout)
	defer cancel()
	if desc, err = hooks.Describe(dctx); err != nil {
		return p, nil, desc, fmt.Errorf("describe: %w", err)
	}
	return p, hooks, desc, nil
}

// stop ends process p and removes its socket directory: go-plugin's Kill, and a kill when that has not
// returned within stopGrace.
func (h *Host) stop(p *proc) {
	if p == nil {
		return
	}
	done := make(chan struct{})
	go func() {
		p.client.Kill()
		close(done)
	}()
	t := time.NewTimer(stopGrace)
	select {
	case <-done:
	case <-t.C:
		p.kill()
		<-done
	}
	t.Stop()
	p.kill()
	_ = os.RemoveAll(p.dir)
}

func (e *entry) lastErrLocked() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.lastErr
}

func (h *Host) client(ctx context.Context, name string) (*sdk.Client, *entry, error) {
	e, ok := h.plugins[name]
	if !ok {
		return nil, nil, fmt.Errorf("%w: %s is not loaded", ErrUnavailable, name)
	}
	c, err := h.ensure(ctx, e)
	if err != nil {
		return nil, e, fmt.Errorf("%w: %s: %v", ErrUnavailable, name, err)
	}
	return c, e, nil
}

// Restart stops plugin name's process, and kills a start in flight (one stuck before its handshake);
// the next call starts the program again (a new binary, if it was replaced).
func (h *Host) Restart(name string) error {
	e, ok := h.plugins[name]
	if !ok {
		return fmt.Errorf("plugin %s is not loaded", name)
	}
	e.mu.Lock()
	p, pending := e.proc, e.pending
	e.broken = true
	e.retryAt = time.Time{} // asked for: start at the next call, even while waiting after a failed start
	e.mu.Unlock()
	if pending != nil {
		pending.kill()
	}
	h.stop(p)
	return nil
}

// Close waits for running After hooks (each bounded by the deadline) and stops every plugin: a start
// in flight is killed, and a process that does not stop when asked is killed after stopGrace.
func (h *Host) Close() {
	if h == nil {
		return
	}
	h.closed.Store(true)
	h.after.Wait()
	for _, e := range h.plugins {
		e.mu.Lock()
		p, pending := e.proc, e.pending
		e.proc, e.hooks = nil, nil
		e.mu.Unlock()
		if pending != nil {
			pending.kill() // its start fails, and stops it
		}
		h.bg.Add(1)
		go func() {
			defer h.bg.Done()
			h.stop(p)
		}()
	}
	h.bg.Wait()
	if h.sockets != "" {
		_ = os.RemoveAll(h.sockets)
	}
}

package plugins

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin"

	"github.com/workspace-records/records/internal/memo"
	"github.com/workspace-records/records/plugins/sdk"
)

// ensure returns e's running client and its process, with a call taken on the process: the caller
// releases it (p.calls.Done) when the call is over, so that a swap lets it finish before stopping the
// process. When the program is not running (never started, exited, or marked broken) it starts it in
// the background, one start at a time, and waits for that start at most until ctx is done: a start that
// is slow or stuck costs a call no more than its own deadline, and goes on for the calls after it. The
// caller does not hold e.mu.
func (h *Host) ensure(ctx context.Context, e *entry) (*sdk.Client, *proc, error) {
	// A start that succeeded may have been swapped out already (Watch) by the time its waiters take it:
	// they take what serves then, a few times at most.
	for tries := 0; ; tries++ {
		e.mu.Lock()
		if e.hooks != nil && !e.broken && !e.proc.client.Exited() {
			c, p := e.hooks, e.proc
			p.calls.Add(1)
			e.mu.Unlock()
			return c, p, nil
		}
		s := e.starting
		if s == nil {
			if h.closed.Load() {
				e.mu.Unlock()
				return nil, nil, errors.New("the host is closed")
			}
			if wait := time.Until(e.retryAt); wait > 0 {
				err := fmt.Errorf("did not start (%v); next start in %v", e.lastErr, wait.Round(time.Millisecond))
				e.mu.Unlock()
				return nil, nil, err
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
			if s.err != nil {
				return nil, nil, s.err
			}
			e.mu.Lock()
			if e.hooks == s.hooks && e.proc != nil {
				// The process this start made, whatever became of it since: a call through it that fails
				// is handled as any other.
				p := e.proc
				p.calls.Add(1)
				e.mu.Unlock()
				return s.hooks, p, nil
			}
			e.mu.Unlock()
			if tries >= 2 {
				return nil, nil, errors.New("replaced while starting")
			}
		case <-ctx.Done():
			err := fmt.Errorf("still starting after %v", time.Since(s.began).Round(time.Millisecond))
			e.mu.Lock()
			if e.starting == s {
				e.lastErr = err
			}
			e.mu.Unlock()
			return nil, nil, fmt.Errorf("%w: %w", err, ctx.Err())
		}
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
	p, hooks, desc, prog, err := h.launch(e, &e.pending)
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
		e.proc, e.hooks, e.desc, e.served, e.lastErr = p, hooks, desc, prog, nil
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
	h.cfg.Metrics.PluginServing(e.name, desc.Version, prog.sum)
	h.cfg.Log.Info("plugin started", "plugin", e.name, "version", desc.Version, "sha256", shortSum(prog.sum), "pid", pid(p), "starts", n)
}

// launch runs e's program, connects to it and asks it to describe itself; it also reports the program
// it ran (hashed just before it is run). The process is kept in *slot (a field of e, under e.mu) while
// it starts, for Close and Restart to kill; the caller clears it. The process it returns (nil when
// there is none) must be stopped if err is not nil.
func (h *Host) launch(e *entry, slot **proc) (*proc, *sdk.Client, sdk.Description, program, error) {
	var desc sdk.Description
	prog, err := readProgram(e.path)
	if err != nil {
		return nil, nil, desc, prog, err
	}
	dir, err := os.MkdirTemp(h.sockets, e.name+"-")
	if err != nil {
		return nil, nil, desc, prog, fmt.Errorf("socket directory: %w", err)
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
		*slot = p
	}
	e.mu.Unlock()
	if closed {
		return p, nil, desc, prog, errors.New("the host is closed")
	}
	// go-plugin forks the process here (Client starts it, then waits for its handshake): on a thread kept
	// for it until the process is killed, which its parent-death signal depends on (startPinned).
	var rpc plugin.ClientProtocol
	startPinned(func() { rpc, err = client.Client() }, pctx.Done())
	if err != nil {
		return p, nil, desc, prog, err
	}
	raw, err := rpc.Dispense(sdk.PluginName)
	if err != nil {
		return p, nil, desc, prog, err
	}
	hooks := raw.(*sdk.Client)
	// Describe is part of the start, bounded like the handshake: callers wait for a start no longer
	// than their own deadline anyway, and a busy machine may take longer than one call's deadline.
	dctx, cancel := context.WithTimeout(context.Background(), h.cfg.StartTimeout)
	defer cancel()
	if desc, err = hooks.Describe(dctx); err != nil {
		return p, nil, desc, prog, fmt.Errorf("describe: %w", err)
	}
	return p, hooks, desc, prog, nil
}

// readProgram hashes the program at path (SHA-256) and returns it with its file's state. A file whose
// identity is unchanged since it was last hashed (see programID) is not read again: a plugin binary is
// tens of megabytes, and every start, restart and swap of every host in the process asks for its sum.
func readProgram(path string) (program, error) {
	f, err := os.Open(path)
	if err != nil {
		return program{}, fmt.Errorf("program: %w", err)
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return program{}, fmt.Errorf("program: %w", err)
	}
	id, known := programID(info)
	if known {
		if sum, ok := programSums.Get(id); ok {
			return program{info: info, sum: sum}, nil
		}
	}
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return program{}, fmt.Errorf("program: %w", err)
	}
	sum := hex.EncodeToString(h.Sum(nil))
	// Kept only when the file did not change while it was read (a program being written in place).
	if after, err := f.Stat(); err == nil && known {
		if id2, ok := programID(after); ok && id2 == id {
			programSums.Put(id, sum)
		}
	}
	return program{info: info, sum: sum}, nil
}

// fileID is what identifies a file's content without reading it: device and inode, size, and the
// modification and status-change times in nanoseconds. Any write changes the status-change time, which
// no user can set (touch and cp -p set the modification time only), so a file rewritten in place with
// the same size and modification time is still a new identity.
type fileID struct {
	dev, ino, size, mtime, ctime int64
}

// programSums remembers the SHA-256 of the programs this process hashed, by file identity (a process
// serving its plugins from one directory has a handful).
var programSums = memo.Map[fileID, string]{Limit: 256}

// pid returns p's process id, or 0 when it has none (not started, or gone).
func pid(p *proc) int {
	if p == nil {
		return 0
	}
	if rc := p.client.ReattachConfig(); rc != nil {
		return rc.Pid
	}
	return 0
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

// client returns plugin name's client with a call taken on its process (see ensure): the caller calls
// p.calls.Done when its call is over.
func (h *Host) client(ctx context.Context, name string) (*sdk.Client, *proc, *entry, error) {
	e, ok := h.plugins[name]
	if !ok {
		return nil, nil, nil, fmt.Errorf("%w: %s is not loaded", ErrUnavailable, name)
	}
	c, p, err := h.ensure(ctx, e)
	if err != nil {
		return nil, nil, e, fmt.Errorf("%w: %s: %v", ErrUnavailable, name, err)
	}
	return c, p, e, nil
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

// Close ends Watch, waits for running After hooks (each bounded by the deadline) and stops every
// plugin: a start or a swap in flight is killed, a process swapped out is stopped without waiting for
// its calls any longer, and a process that does not stop when asked is killed after stopGrace.
func (h *Host) Close() {
	if h == nil {
		return
	}
	// Under watchMu: a Watch loop either counted itself in watchers before, or sees closed and returns.
	h.watchMu.Lock()
	h.closed.Store(true)
	h.watchMu.Unlock()
	h.doneOnce.Do(func() { close(h.done) })
	h.after.Wait()
	for _, e := range h.plugins {
		e.mu.Lock()
		p, pending, candidate := e.proc, e.pending, e.candidate
		e.proc, e.hooks = nil, nil
		e.mu.Unlock()
		for _, q := range []*proc{pending, candidate} {
			if q != nil {
				q.kill() // its start fails, and stops it
			}
		}
		h.bg.Add(1)
		go func() {
			defer h.bg.Done()
			h.stop(p)
		}()
	}
	// A Watch loop may be swapping (its last bg.Add, retiring a process): wait for it before bg.
	h.watchers.Wait()
	h.bg.Wait()
	if h.sockets != "" {
		_ = os.RemoveAll(h.sockets)
	}
}

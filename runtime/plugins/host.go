// Package plugins hosts the rules plugins that definitions name in hooks: it finds their programs in
// the plugins directory, starts each once through github.com/hashicorp/go-plugin, reuses the connection,
// calls hooks with a deadline, restarts a plugin that exited, crashed or missed a deadline, serves the
// Lookup calls plugins make back, logs their output through log/slog and stops them all on Close.
//
// A misbehaving plugin costs its callers no more than the deadline: a call waits for a (re)start of the
// program at most until its deadline (the start goes on in the background, one at a time), a plugin
// that misses a deadline is presumed stuck and replaced, a process that does not stop when asked is
// killed, and what a plugin writes is logged with bounded line length and rate.
package plugins

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/workspace-records/records/engine/model"
	"github.com/workspace-records/records/plugins/sdk"
	"github.com/workspace-records/records/runtime/metrics"
)

// DefaultTimeout is the deadline of one hook call when none is configured.
const DefaultTimeout = 2 * time.Second

// DefaultStartTimeout is how long a program may take to start and answer go-plugin's handshake when
// none is configured.
const DefaultStartTimeout = 10 * time.Second

// stopGrace is how long a plugin asked to stop may take before it is killed. go-plugin's Kill waits 2 s
// for a graceful exit, but forever for a process that does not answer its shutdown call at all (a
// stopped or wedged one).
const stopGrace = 3 * time.Second

// ErrUnavailable is a hook that could not run: the plugin is down, crashed, or missed its deadline.
// The write is refused (503) and nothing is written.
var ErrUnavailable = errors.New("plugin unavailable")

// Reader reads stored records for a plugin's Lookup calls, inside the write's transaction.
type Reader interface {
	Get(ctx context.Context, resource, id string) (map[string]any, bool, error)
	List(ctx context.Context, resource string, filters []sdk.Filter, limit int) ([]map[string]any, bool, error)
}

// Config configures a Host.
type Config struct {
	Dir     string        // directory holding plugin programs, one per name
	Timeout time.Duration // deadline of one hook call; DefaultTimeout when zero
	// StartTimeout bounds a program's start up to its handshake; DefaultStartTimeout when zero. Calls
	// do not wait that long: they wait for a start at most until their own deadline.
	StartTimeout time.Duration
	Log          *slog.Logger
	// Metrics counts calls, failures and restarts; nil counts nothing.
	Metrics *metrics.Metrics
}

// Host runs the plugins of a catalog. It is safe for concurrent use.
type Host struct {
	cfg     Config
	plugins map[string]*entry
	lookups sync.Map // lookup id -> Reader
	nextID  atomic.Uint64
	after   sync.WaitGroup
	// sockets holds a directory per plugin process for its go-plugin socket, removed once the process
	// is gone: a crashed or killed plugin cannot remove its own.
	sockets string
	closed  atomic.Bool
	bg      sync.WaitGroup // starts and stops running in the background
}

type entry struct {
	name, path string
	mu         sync.Mutex
	proc       *proc  // the running process, once started
	pending    *proc  // the process of the start in flight
	starting   *start // the start in flight; nil when none
	hooks      *sdk.Client
	desc       sdk.Description
	starts     int
	lastErr    error
	broken     bool // the connection failed or a call missed its deadline: restart before the next call
	output     outputLimit
	// After a start that failed, the next one waits: a program that cannot start (a bad build, a missing
	// library, one that exits at once) is not started again by every call, each a fork and exec.
	backoff time.Duration // 0 after a start that succeeded
	retryAt time.Time
}

// The wait after a failed start doubles from startBackoffMin up to startBackoffMax.
const (
	startBackoffMin = 100 * time.Millisecond
	startBackoffMax = 5 * time.Second
)

// proc is one plugin process.
type proc struct {
	client *plugin.Client
	kill   context.CancelFunc // kills the process at once
	dir    string             // its socket directory
}

// start is one start of a plugin's program, in the background: callers wait for it until done is
// closed or their deadline passes.
type start struct {
	began time.Time
	done  chan struct{}
	hooks *sdk.Client
	err   error
}

// New finds the program of every plugin named by cat's hooks in cfg.Dir and starts it. A name with no
// program is an error naming the resources that use it.
func New(ctx context.Context, cfg Config, cat *model.Catalog) (*Host, error) {
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.StartTimeout <= 0 {
		cfg.StartTimeout = DefaultStartTimeout
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	h := &Host{cfg: cfg, plugins: map[string]*entry{}}
	users := map[string][]string{}
	for _, r := range cat.Resources {
		for _, name := range r.Hooks {
			users[name] = append(users[name], r.Name)
		}
	}
	names := make([]string, 0, len(users))
	for n := range users {
		names = append(names, n)
	}
	sort.Strings(names)
	var problems []string
	for _, name := range names {
		path := filepath.Join(cfg.Dir, name)
		if st, err := os.Stat(path); err != nil || st.IsDir() || st.Mode()&0o111 == 0 {
			problems = append(problems, fmt.Sprintf("plugin %q (hooks of %s) has no executable program %s", name, strings.Join(users[name], ", "), path))
			continue
		}
		h.plugins[name] = &entry{name: name, path: path}
	}
	if len(problems) > 0 {
		return nil, fmt.Errorf("%s (build the shipped plugins with `make plugins`, or point --plugins at the directory holding them)", strings.Join(problems, "; "))
	}
	if len(names) > 0 {
		removeStaleSockets(cfg.Log)
		dir, err := os.MkdirTemp("", fmt.Sprintf("records-plugins-%d-", os.Getpid()))
		if err != nil {
			return nil, fmt.Errorf("plugin socket directory: %w", err)
		}
		h.sockets = dir
	}
	// The programs start side by side: a server's start waits for the slowest, not for their sum.
	errs := make([]error, len(names))
	var wg sync.WaitGroup
	for i, name := range names {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := h.ensure(ctx, h.plugins[name]); err != nil {
				errs[i] = fmt.Errorf("start plugin %s: %w", name, err)
			}
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		h.Close()
		return nil, err
	}
	return h, nil
}

// removeStaleSockets removes the socket directories of hosts that died without closing (killed): each
// is named by its host's process id.
func removeStaleSockets(log *slog.Logger) {
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), "records-plugins-*-*"))
	for _, dir := range dirs {
		f := strings.Split(filepath.Base(dir), "-")
		pid, err := strconv.Atoi(f[2])
		if err != nil || pid == os.Getpid() || processAlive(pid) {
			continue
		}
		if err := os.RemoveAll(dir); err == nil {
			log.Info("removed the plugin sockets of a host that is gone", "dir", dir)
		}
	}
}

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

// Handles reports whether plugin name has rules for resource.
func (h *Host) Handles(name, resource string) bool {
	e, ok := h.plugins[name]
	if !ok {
		return false
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if len(e.desc.Resources) == 0 {
		return true
	}
	for _, r := range e.desc.Resources {
		if r == resource {
			return true
		}
	}
	return false
}

// Before runs plugin name's Before hook for call, with the call deadline; reader serves its lookups.
func (h *Host) Before(ctx context.Context, name string, call *sdk.Call, reader Reader) (res *sdk.Result, err error) {
	start := time.Now()
	defer func() {
		outcome := metrics.OutcomeOK
		if err != nil {
			outcome = metrics.OutcomeUnavailable
		}
		h.cfg.Metrics.PluginCall(name, "before", outcome, time.Since(start))
	}()
	// The deadline covers the whole call, a (re)start of the program included.
	cctx, cancel := context.WithTimeout(ctx, h.cfg.Timeout)
	defer cancel()
	c, e, err := h.client(cctx, name)
	if err != nil {
		return nil, err
	}
	id := h.nextID.Add(1)
	h.lookups.Store(id, reader)
	defer h.lookups.Delete(id)
	res, err = c.Before(cctx, call, id)
	if err != nil && h.failed(ctx, cctx, e, c, err) && cctx.Err() == nil {
		// The process died or was replaced under the call: start it again if need be and ask once
		// more, within the same deadline.
		if c, _, err = h.client(cctx, name); err == nil {
			res, err = c.Before(cctx, call, id)
			if err != nil {
				h.failed(ctx, cctx, e, c, err)
			}
		}
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %s before %s %s: %v", ErrUnavailable, name, call.Operation, call.Resource, err)
	}
	return res, nil
}

// failed records err, the failure of a call through c whose deadline is cctx (under the caller's ctx),
// and reports whether the plugin's connection or process is gone (or was replaced meanwhile) rather than
// that the hook failed. A connection gone, or a call that missed the deadline the host gave it (the
// plugin is presumed stuck: a hook that ignores its context would pile up in the process), marks the
// plugin for a restart before the next call, unless c was replaced already.
func (h *Host) failed(ctx, cctx context.Context, e *entry, c *sdk.Client, err error) bool {
	code := status.Code(err)
	e.mu.Lock()
	defer e.mu.Unlock()
	e.lastErr = err
	if e.hooks != c {
		return true
	}
	lost := code == codes.Unavailable || (code == codes.Canceled && cctx.Err() == nil) || e.proc.client.Exited()
	if lost || (cctx.Err() == context.DeadlineExceeded && ctx.Err() == nil) {
		e.broken = true
	}
	return lost
}

// After runs plugin name's After hook in the background, with the call deadline; a failure is logged.
func (h *Host) After(name string, call *sdk.Call, record map[string]any) {
	h.after.Add(1)
	go func() {
		defer h.after.Done()
		ctx, cancel := context.WithTimeout(context.Background(), h.cfg.Timeout)
		defer cancel()
		start := time.Now()
		outcome := metrics.OutcomeOK
		c, e, err := h.client(ctx, name)
		if err != nil {
			outcome = metrics.OutcomeUnavailable
		} else if err = c.After(ctx, call, record); err != nil {
			outcome = metrics.OutcomeError
			if h.failed(context.Background(), ctx, e, c, err) || ctx.Err() != nil {
				outcome = metrics.OutcomeUnavailable
			}
		}
		h.cfg.Metrics.PluginCall(name, "after", outcome, time.Since(start))
		if err != nil {
			h.cfg.Log.Warn("after hook failed; the write stands", "plugin", name, "resource", call.Resource, "operation", call.Operation, "request_id", call.RequestID, "err", err)
		}
	}()
}

// Status is one plugin's state, for `recordsctl plugins list` and readiness.
type Status struct {
	Name      string   `json:"name"`
	Path      string   `json:"path"`
	Version   string   `json:"version"`
	Resources []string `json:"resources"`
	Running   bool     `json:"running"`
	PID       int      `json:"pid,omitempty"`
	Starts    int      `json:"starts"`
	LastError string   `json:"last_error,omitempty"`
}

// Statuses reports every loaded plugin, by name.
func (h *Host) Statuses() []Status {
	var out []Status
	for _, e := range h.plugins {
		e.mu.Lock()
		s := Status{Name: e.name, Path: e.path, Version: e.desc.Version, Resources: e.desc.Resources, Running: e.proc != nil && !e.proc.client.Exited(), Starts: e.starts}
		if s.Running {
			if rc := e.proc.client.ReattachConfig(); rc != nil {
				s.PID = rc.Pid
			}
		}
		if e.lastErr != nil {
			s.LastError = e.lastErr.Error()
		}
		e.mu.Unlock()
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Check reports, per plugin, whether its process answers a health ping within ctx; a plugin that
// exited is started again first, as the next hook call would.
func (h *Host) Check(ctx context.Context) map[string]error {
	out := map[string]error{}
	if h == nil {
		return out
	}
	for name, e := range h.plugins {
		out[name] = h.ping(ctx, e)
	}
	return out
}

func (h *Host) ping(ctx context.Context, e *entry) error {
	c, err := h.ensure(ctx, e)
	if err != nil {
		return fmt.Errorf("not running: %w", err)
	}
	e.mu.Lock()
	var client *plugin.Client
	if e.proc != nil && e.hooks == c {
		client = e.proc.client
	}
	e.mu.Unlock()
	if client == nil {
		return errors.New("not running: restarting")
	}
	// The ping runs without the entry's lock: a plugin slow to answer must not hold up hook calls.
	done := make(chan error, 1)
	go func() {
		rpc, err := client.Client()
		if err == nil {
			err = rpc.Ping()
		}
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			e.mu.Lock()
			e.lastErr = err
			if e.hooks == c {
				e.broken = true
			}
			e.mu.Unlock()
			return fmt.Errorf("ping: %w", err)
		}
		return nil
	case <-ctx.Done():
		return fmt.Errorf("ping: no answer: %w", ctx.Err())
	}
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

// lookupServer serves plugins' Lookup calls from the Reader registered for the write.
type lookupServer struct{ h *Host }

func (l lookupServer) reader(id uint64) (Reader, error) {
	r, ok := l.h.lookups.Load(id)
	if !ok {
		return nil, fmt.Errorf("lookup %d is not part of a running hook", id)
	}
	return r.(Reader), nil
}

func (l lookupServer) Get(ctx context.Context, id uint64, resource, recordID string) (map[string]any, bool, error) {
	r, err := l.reader(id)
	if err != nil {
		return nil, false, err
	}
	return r.Get(ctx, resource, recordID)
}

func (l lookupServer) List(ctx context.Context, id uint64, resource string, filters []sdk.Filter, limit int) ([]map[string]any, bool, error) {
	r, err := l.reader(id)
	if err != nil {
		return nil, false, err
	}
	return r.List(ctx, resource, filters, limit)
}

// Limits on what a plugin's output may add to the server's log.
const (
	maxLineBytes   = 8 << 10 // a longer line is cut (truncated: true) and the rest of it dropped
	linesPerSecond = 100     // lines logged per second and plugin, past a burst of lineBurst
	lineBurst      = 1000
	dropWarnEvery  = 10 * time.Second
)

// lineLogger logs what a plugin writes on one stream, one slog record per line. A plugin flooding its
// output cannot flood the server's log or memory: lines are cut at maxLineBytes, and its lines share an
// outputLimit.
type lineLogger struct {
	log    *slog.Logger
	plugin string
	stream string
	limit  *outputLimit
	mu     sync.Mutex
	buf    []byte
	skip   bool // the rest of the current line was cut
}

func (w *lineLogger) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := len(p)
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		part := p
		if i >= 0 {
			part = p[:i]
		}
		if !w.skip {
			if room := maxLineBytes - len(w.buf); len(part) > room {
				w.buf = append(w.buf, part[:room]...)
				w.emit(true)
				w.skip = true
			} else {
				w.buf = append(w.buf, part...)
			}
		}
		if i < 0 {
			break
		}
		if !w.skip {
			w.emit(false)
		}
		w.buf, w.skip = w.buf[:0], false
		p = p[i+1:]
	}
	return n, nil
}

// emit logs the line in w.buf, if the limit allows. The caller holds w.mu.
func (w *lineLogger) emit(truncated bool) {
	line := bytes.TrimSpace(w.buf)
	w.buf = w.buf[:0]
	if len(line) == 0 {
		return
	}
	dropped, ok := w.limit.take(w.log, w.plugin)
	if !ok {
		return
	}
	attrs := []any{"plugin", w.plugin, "stream", w.stream, "line", string(line)}
	if truncated {
		attrs = append(attrs, "truncated", true)
	}
	if dropped > 0 {
		attrs = append(attrs, "dropped", dropped)
	}
	w.log.Info("plugin output", attrs...)
}

// outputLimit is a token bucket of log lines: lineBurst, refilled at linesPerSecond.
type outputLimit struct {
	mu      sync.Mutex
	tokens  float64
	last    time.Time
	dropped int
	warned  time.Time
}

// take reports whether one more line may be logged, and how many were dropped since the last one.
// Dropping is announced at most every dropWarnEvery.
func (l *outputLimit) take(log *slog.Logger, plugin string) (dropped int, ok bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := time.Now()
	if l.last.IsZero() {
		l.tokens = lineBurst
	} else {
		l.tokens = min(lineBurst, l.tokens+now.Sub(l.last).Seconds()*linesPerSecond)
	}
	l.last = now
	if l.tokens < 1 {
		if l.dropped == 0 && now.Sub(l.warned) >= dropWarnEvery {
			l.warned = now
			log.Warn("plugin output over the limit; dropping lines", "plugin", plugin, "lines_per_second", linesPerSecond, "burst", lineBurst)
		}
		l.dropped++
		return 0, false
	}
	l.tokens--
	dropped, l.dropped = l.dropped, 0
	return dropped, true
}

// Package plugins hosts the rules plugins that definitions name in hooks: it finds their programs in
// the plugins directory, starts each once through github.com/hashicorp/go-plugin, reuses the connection,
// calls hooks with a deadline, restarts a plugin that exited, serves the Lookup calls plugins make back,
// logs their output through log/slog and stops them all on Close.
package plugins

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
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
	Log     *slog.Logger
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
}

type entry struct {
	name, path string
	mu         sync.Mutex
	client     *plugin.Client
	hooks      *sdk.Client
	desc       sdk.Description
	starts     int
	lastErr    error
	broken     bool // the connection failed: restart before the next call
}

// New finds the program of every plugin named by cat's hooks in cfg.Dir and starts it. A name with no
// program is an error naming the resources that use it.
func New(ctx context.Context, cfg Config, cat *model.Catalog) (*Host, error) {
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
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
	// The programs start side by side: a server's start waits for the slowest, not for their sum.
	errs := make([]error, len(names))
	var wg sync.WaitGroup
	for i, name := range names {
		wg.Add(1)
		go func() {
			defer wg.Done()
			e := h.plugins[name]
			e.mu.Lock()
			defer e.mu.Unlock()
			if _, err := h.ensure(ctx, e); err != nil {
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

// ensure returns e's running client, starting (or restarting) the program when it is not running.
// The caller holds e.mu.
func (h *Host) ensure(ctx context.Context, e *entry) (*sdk.Client, error) {
	if e.client != nil && !e.client.Exited() && !e.broken && e.hooks != nil {
		return e.hooks, nil
	}
	e.broken = false
	if e.client != nil {
		e.client.Kill()
		h.cfg.Log.Warn("plugin exited; restarting", "plugin", e.name, "starts", e.starts)
	}
	cmd := exec.Command(e.path)
	cmd.SysProcAttr = childAttrs()
	out := &lineLogger{log: h.cfg.Log, plugin: e.name}
	client := plugin.NewClient(&plugin.ClientConfig{
		HandshakeConfig:  sdk.Handshake,
		Plugins:          sdk.HostPlugins(lookupServer{h}),
		Cmd:              cmd,
		AllowedProtocols: []plugin.Protocol{plugin.ProtocolGRPC},
		Stderr:           out,
		SyncStdout:       out,
		StartTimeout:     10 * time.Second,
		Logger: hclog.New(&hclog.LoggerOptions{
			Name: "go-plugin." + e.name, Level: hclog.Warn, Output: out, DisableTime: true,
		}),
	})
	e.starts++
	h.cfg.Metrics.PluginStarted(e.name, e.starts > 1)
	e.client, e.hooks = client, nil
	rpc, err := client.Client()
	if err != nil {
		e.lastErr = err
		client.Kill()
		return nil, err
	}
	raw, err := rpc.Dispense(sdk.PluginName)
	if err != nil {
		e.lastErr = err
		client.Kill()
		return nil, err
	}
	hooks := raw.(*sdk.Client)
	dctx, cancel := context.WithTimeout(ctx, h.cfg.Timeout)
	defer cancel()
	desc, err := hooks.Describe(dctx)
	if err != nil {
		e.lastErr = err
		client.Kill()
		return nil, err
	}
	e.hooks, e.desc, e.lastErr = hooks, desc, nil
	h.cfg.Log.Info("plugin started", "plugin", e.name, "version", desc.Version, "starts", e.starts)
	return hooks, nil
}

func (h *Host) client(ctx context.Context, name string) (*sdk.Client, *entry, error) {
	e, ok := h.plugins[name]
	if !ok {
		return nil, nil, fmt.Errorf("%w: %s is not loaded", ErrUnavailable, name)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
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
	c, e, err := h.client(ctx, name)
	if err != nil {
		return nil, err
	}
	id := h.nextID.Add(1)
	h.lookups.Store(id, reader)
	defer h.lookups.Delete(id)
	cctx, cancel := context.WithTimeout(ctx, h.cfg.Timeout)
	defer cancel()
	res, err = c.Before(cctx, call, id)
	if err != nil && h.connectionLost(e, err) && cctx.Err() == nil {
		// The process died between calls: nothing ran, so start it again and ask once more, within
		// the same deadline.
		if c, _, err = h.client(cctx, name); err == nil {
			res, err = c.Before(cctx, call, id)
		}
	}
	if err != nil {
		h.connectionLost(e, err)
		return nil, fmt.Errorf("%w: %s before %s %s: %v", ErrUnavailable, name, call.Operation, call.Resource, err)
	}
	return res, nil
}

// connectionLost records err, and reports (marking e for a restart) whether it means the plugin's
// connection or process is gone rather than that the hook failed.
func (h *Host) connectionLost(e *entry, err error) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.lastErr = err
	if status.Code(err) == codes.Unavailable || (e.client != nil && e.client.Exited()) {
		e.broken = true
		return true
	}
	return false
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
		c, _, err := h.client(ctx, name)
		if err != nil {
			outcome = metrics.OutcomeUnavailable
		} else if err = c.After(ctx, call, record); err != nil {
			outcome = metrics.OutcomeError
			if status.Code(err) == codes.Unavailable || status.Code(err) == codes.DeadlineExceeded {
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
		s := Status{Name: e.name, Path: e.path, Version: e.desc.Version, Resources: e.desc.Resources, Running: e.client != nil && !e.client.Exited(), Starts: e.starts}
		if s.Running {
			if rc := e.client.ReattachConfig(); rc != nil {
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
	e.mu.Lock()
	_, err := h.ensure(ctx, e)
	var client *plugin.Client
	if err == nil {
		client = e.client
	}
	e.mu.Unlock()
	if err != nil {
		return fmt.Errorf("not running: %w", err)
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
			h.connectionLost(e, err)
			return fmt.Errorf("ping: %w", err)
		}
		return nil
	case <-ctx.Done():
		return fmt.Errorf("ping: no answer: %w", ctx.Err())
	}
}

// Restart stops plugin name's process; the next call starts the program again (a new binary, if it was
// replaced).
func (h *Host) Restart(name string) error {
	e, ok := h.plugins[name]
	if !ok {
		return fmt.Errorf("plugin %s is not loaded", name)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.client != nil {
		e.client.Kill()
	}
	return nil
}

// Close waits for running After hooks (each bounded by the deadline) and stops every plugin.
func (h *Host) Close() {
	if h == nil {
		return
	}
	h.after.Wait()
	for _, e := range h.plugins {
		e.mu.Lock()
		if e.client != nil {
			e.client.Kill()
		}
		e.mu.Unlock()
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

// lineLogger logs what a plugin writes, one slog record per line.
type lineLogger struct {
	log    *slog.Logger
	plugin string
	mu     sync.Mutex
	buf    []byte
}

func (w *lineLogger) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf = append(w.buf, p...)
	for {
		i := strings.IndexByte(string(w.buf), '\n')
		if i < 0 {
			break
		}
		if line := strings.TrimSpace(string(w.buf[:i])); line != "" {
			w.log.Info("plugin output", "plugin", w.plugin, "line", line)
		}
		w.buf = w.buf[i+1:]
	}
	if len(w.buf) > 64<<10 { // a line that never ends is logged in pieces
		w.log.Info("plugin output", "plugin", w.plugin, "line", string(w.buf))
		w.buf = w.buf[:0]
	}
	return len(p), nil
}

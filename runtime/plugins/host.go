// Package plugins hosts the rules plugins that definitions name in hooks: it finds their programs in
// the plugins directory, starts each once through github.com/hashicorp/go-plugin, reuses the connection,
// calls hooks with a deadline, restarts a plugin that exited, crashed or missed a deadline, serves the
// Lookup calls plugins make back, logs their output through log/slog and stops them all on Close.
//
// A misbehaving plugin costs its callers no more than the deadline: a call waits for a (re)start of the
// program at most until its deadline (the start goes on in the background, one at a time), a plugin
// that misses a deadline is presumed stuck and replaced, a process that does not stop when asked is
// killed, and what a plugin writes is logged with bounded line length and rate.
//
// Watch swaps in a plugin's program replaced on disk without a restart of the server: the new program
// starts beside the old one and takes the new calls once it has proved healthy; calls in flight finish
// on the old process (swap.go).
package plugins

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-plugin"

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
	// Metrics counts calls, failures, restarts and swaps; nil counts nothing.
	Metrics *metrics.Metrics
	// WatchInterval is how often Watch looks at the programs; DefaultWatchInterval when zero.
	WatchInterval time.Duration
	// AfterLimit bounds the After hooks running at once (each in the background, for at most Timeout);
	// past it an After hook is skipped, logged and counted (metrics.OutcomeSkipped). 0: no bound.
	AfterLimit int
}

// Host runs the plugins of a catalog. It is safe for concurrent use.
type Host struct {
	cfg     Config
	plugins map[string]*entry
	lookups sync.Map // lookup id -> Reader
	nextID  atomic.Uint64
	after   sync.WaitGroup
	// afterSlots holds a token per After hook running (Config.AfterLimit); nil: no bound.
	afterSlots chan struct{}
	// sockets holds a directory per plugin process for its go-plugin socket, removed once the process
	// is gone: a crashed or killed plugin cannot remove its own.
	sockets string
	closed  atomic.Bool
	bg      sync.WaitGroup // starts and stops running in the background
	// done is closed by Close; it ends Watch and the wait of replaced processes for their calls.
	done     chan struct{}
	doneOnce sync.Once
	// watchers counts running Watch loops; watchMu orders their start against Close (no Add after Wait).
	watchMu  sync.Mutex
	watchers sync.WaitGroup
}

type entry struct {
	name, path string
	mu         sync.Mutex
	proc       *proc  // the running process, once started
	pending    *proc  // the process of the start in flight
	candidate  *proc  // the process of the swap in flight (Watch), beside proc
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
	// The program proc runs: its file as it was when proc started, and its SHA-256 (hex).
	served program
	swaps  int // programs swapped in by Watch
	// refused is the SHA-256 of the last program a swap refused, and swapErr why: Watch does not try
	// that program again, only a program changed since.
	refused string
	swapErr error
}

// program is a plugin's program file as it was started.
type program struct {
	info os.FileInfo
	sum  string // SHA-256 of the file's content, hex
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
	// calls counts the hook calls and pings through this process in flight: taken under the entry's
	// lock while the process is the entry's, so a process swapped out (no longer the entry's) gets no new
	// ones and may be waited for.
	calls sync.WaitGroup
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
	if cfg.WatchInterval <= 0 {
		cfg.WatchInterval = DefaultWatchInterval
	}
	h := &Host{cfg: cfg, plugins: map[string]*entry{}, done: make(chan struct{})}
	if cfg.AfterLimit > 0 {
		h.afterSlots = make(chan struct{}, cfg.AfterLimit)
	}
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
			_, p, err := h.ensure(ctx, h.plugins[name])
			if err != nil {
				errs[i] = fmt.Errorf("start plugin %s: %w", name, err)
				return
			}
			p.calls.Done()
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

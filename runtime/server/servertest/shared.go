package servertest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/workspace-records/records/runtime/config"
	"github.com/workspace-records/records/runtime/server"
)

// Shared servers. Most behaviour tests need a server of the shipped definitions with default settings
// and a workspace of their own, nothing else: starting one per test cost a template copy, three plugin
// processes, a migration check and the schemas' compilation each time (0.65 s on SQLite, 1.4 s on
// PostgreSQL; some 245 starts a run). So each test process starts one such server per backend, at the
// first test that asks for it, and gives each test that asks with default Options a listener of its own
// in front of it and a fresh workspace on it: the product's own tenancy keeps the tests apart, as the
// isolation matrix proves it keeps workspaces apart. A test that changes server-wide state asks for
// Options{Private: true} (or any other option) and gets a server of its own.
//
// The guard (serverErrors) still fails the test that caused a 5xx or a key in a log line: its listener's
// handler puts the test's sink in each request's context (withSink), the access line is logged with that
// context, and the test's cleanup checks its sink. Lines no test's request made (background work) go to
// the shared server's own sink, which Main reports at the end of the process, failing it.

// shared is one backend's shared server.
type shared struct {
	once     sync.Once
	skip     string // why the backend is not here (PostgreSQL unreachable outside CI)
	err      error
	srv      *server.Server
	cfg      config.Config
	guard    *serverErrors
	contract *lazyContract
	stop     func()
}

var sharedServers = struct {
	mu sync.Mutex
	m  map[Backend]*shared
}{m: map[Backend]*shared{}}

// shareable reports whether o asks for nothing but defaults.
func (o Options) shareable() bool { return reflect.ValueOf(o).IsZero() }

func sharedOf(b Backend) *shared {
	sharedServers.mu.Lock()
	defer sharedServers.mu.Unlock()
	s := sharedServers.m[b]
	if s == nil {
		s = &shared{}
		sharedServers.m[b] = s
	}
	return s
}

// startShared gives t a listener of its own in front of b's shared server, and a workspace.
func startShared(t testing.TB, b Backend) *Env {
	t.Helper()
	s := sharedOf(b)
	s.once.Do(func() { s.start(b) })
	if s.skip != "" {
		t.Skip(s.skip)
	}
	if s.err != nil {
		t.Fatalf("start the shared %s server: %v", b, s.err)
	}
	sink := &guardSink{}
	ts := listen(withSink(s.srv.Handler(), sink), s.guard.to(sink))
	t.Cleanup(func() {
		ts.Close() // waits for the test's requests in flight
		sink.check(t)
	})
	e := &Env{T: t, Server: s.srv, URL: ts.URL, Config: s.cfg, contract: s.contract, errs: sink}
	e.Workspace, e.Member, e.Key = e.NewWorkspace("growth", "admin", "write")
	return e
}

// start starts b's shared server on a copy of the migrated template.
func (s *shared) start(b Backend) {
	var drop func()
	s.cfg = config.Default(func(string) string { return "" })
	s.cfg.WebhookAllowPrivate = true
	s.cfg.DefinitionsDir = DefinitionsDir()
	s.cfg.DB, drop, s.err = migratedCopy(b)
	if s.err != nil {
		if b == Postgres && os.Getenv("CI") != "true" && errors.Is(s.err, errUnreachable) {
			s.skip = fmt.Sprintf("PostgreSQL not reachable (%v); set RECORDS_TEST_POSTGRES", s.err)
		}
		return
	}
	pluginsOnce.Do(func() { shippedDir, pluginsErr = buildShipped() })
	if s.cfg.PluginsDir, s.err = shippedDir, pluginsErr; s.err != nil {
		drop()
		return
	}
	s.guard = &serverErrors{Handler: slog.NewJSONHandler(io.Discard, nil), sink: &guardSink{}}
	srv, stop, err := launch(s.cfg, s.guard, nil)
	if err != nil {
		drop()
		s.err = err
		return
	}
	s.srv, s.contract = srv, &lazyContract{}
	s.stop = func() { stop(); drop() }
}

// migratedCopy returns a new database of kind b holding the repository's definitions migrated (a copy
// of the process's template), and the function that drops it.
func migratedCopy(b Backend) (url string, drop func(), err error) {
	leakproof := os.Getenv("RECORDS_TEST_NO_LEAKPROOF") == ""
	tpl := templateOf(b, leakproof)
	tpl.build(b, leakproof)
	if tpl.err != nil {
		return "", nil, fmt.Errorf("template database (%s/%t): %w", b, leakproof, tpl.err)
	}
	if b == SQLite {
		dir, err := os.MkdirTemp("", "records-test-shared-")
		if err != nil {
			return "", nil, err
		}
		path := filepath.Join(dir, "records.db")
		if err := copyFile(tpl.ref, path, 0o644); err != nil {
			os.RemoveAll(dir)
			return "", nil, fmt.Errorf("copy the SQLite template: %w", err)
		}
		return "sqlite:" + path, func() { os.RemoveAll(dir) }, nil
	}
	return createPostgresDatabase(context.Background(), tpl.ref, false)
}

// closeShared stops the shared servers and returns what their guards kept that no test's request made.
func closeShared() error {
	sharedServers.mu.Lock()
	defer sharedServers.mu.Unlock()
	var errs []error
	for b, s := range sharedServers.m {
		if s.srv == nil {
			continue
		}
		s.stop()
		if lines := s.guard.sink.seen(); len(lines) > 0 {
			errs = append(errs, fmt.Errorf("the shared %s server answered %d requests no test made with a 5xx other than 503:\n%s", b, len(lines), strings.Join(lines, "\n")))
		}
		if lines := s.guard.sink.leaked(); len(lines) > 0 {
			errs = append(errs, fmt.Errorf("the shared %s server logged key material in %d lines no test's request made:\n%s", b, len(lines), strings.Join(lines, "\n")))
		}
	}
	return errors.Join(errs...)
}

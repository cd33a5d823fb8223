package server

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/workspace-records/records/engine/catalog"
	"github.com/workspace-records/records/engine/model"
	"github.com/workspace-records/records/engine/schema"
	"github.com/workspace-records/records/runtime/defset"
	"github.com/workspace-records/records/runtime/httpapi"
	"github.com/workspace-records/records/runtime/migrate"
	"github.com/workspace-records/records/runtime/plugins"
	"github.com/workspace-records/records/runtime/store"
)

// Live definitions (docs/issue-25.md): a server serves one definitions version at a time, a
// generation; it switches to the version the database serves when that changes (defset.Watch), and to
// its own directory's on SIGHUP (Reload). A switch builds the new generation whole — catalog, routes,
// services, the plugins it names running (JSON Schemas compile as used, and all at once in the
// background, as at a start) — before a request sees it, then swaps it in atomically:
// requests in flight finish on the generation they started with. A version that fails to build is
// refused: the server goes on serving the previous one and reports the refusal (log, metric, /readyz).

// chooseSet picks the version a starting process serves: its definitions directory's (local), as ever,
// unless the database serves a version applied (recordsctl definitions apply, SIGHUP) after local was
// last served — then local is an older directory (a replica restarted with the files of before the
// apply) and the applied version wins. served is the version the database served before ("" for none);
// note explains a choice other than local.
func chooseSet(ctx context.Context, st store.Store, local *defset.Set) (set *defset.Set, served, note string, err error) {
	exists, err := migrate.TableExists(ctx, st, "definitions_versions")
	if err != nil || !exists {
		return local, "", "", err // a database the migration has not brought here yet serves nothing stored
	}
	d := st.Dialect()
	if served, err = defset.Current(ctx, st, d); err != nil || served == "" || served == local.ID {
		return local, served, "", err
	}
	mine, found, err := defset.Load(ctx, st, d, local.ID)
	if err != nil || !found {
		return local, served, "", err // new files: a deploy of a new version
	}
	cur, found, err := defset.Load(ctx, st, d, served)
	if err != nil || !found || cur.AppliedBy == defset.ByStart || !cur.AppliedAt.After(mine.AppliedAt) {
		return local, served, "", err
	}
	set, err = defset.FromStored(cur)
	if err != nil {
		return nil, "", "", fmt.Errorf("the database serves definitions version %s, applied after this directory's (%s), but it does not compile here: %w",
			defset.Short(served), local.Short(), err)
	}
	note = fmt.Sprintf("the definitions directory holds version %s, older than version %s applied by %s at %s: serving %s",
		local.Short(), set.Short(), cur.AppliedBy, cur.AppliedAt.Format(time.RFC3339), set.Short())
	return set, served, note, nil
}

// live is a server's state of its definitions switches: the time of the last one and the last
// refusal. The generation served is the backend's (Backend.Current), stored there only.
type live struct {
	mu      sync.Mutex // one switch at a time
	closed  bool       // set by Close: no switch after it
	since   atomic.Pointer[time.Time]
	refused atomic.Pointer[refusal]
}

// refusal is a definitions version a server would not serve.
type refusal struct {
	Version string    `json:"version"`
	By      string    `json:"by"`
	At      time.Time `json:"at"`
	Error   string    `json:"error"`
}

// Generation reports the definitions version served and the catalog of it.
func (s *Server) Generation() (version string, cat *model.Catalog) {
	g := s.backend.Current()
	return g.Set.ID, g.Catalog
}

// readyDetails is the definitions member of GET /readyz: the version served, since when, and the last
// version refused, if any.
func (s *Server) readyDetails() map[string]any {
	g := s.backend.Current()
	out := map[string]any{"version": g.Set.Short(), "served_since": s.live.since.Load().UTC().Format(time.RFC3339Nano)}
	if r := s.live.refused.Load(); r != nil {
		out["refused"] = r
	}
	return map[string]any{"definitions": out}
}

// Reload reads the server's definitions directory again (SIGHUP): the set is validated whole, applied to
// the database as `recordsctl definitions apply` would (destructive changes only with
// --allow-destructive), then served at once; other servers on the database switch to it as they hear
// of it. A set refused leaves everything as it was, and is reported.
func (s *Server) Reload(ctx context.Context) error {
	by := "recordsd SIGHUP"
	set, err := defset.Dir(s.cfg.DefinitionsDir)
	if err == nil {
		_, err = defset.Apply(ctx, s.backend.Store, set, defset.Options{By: by, AllowDestructive: s.cfg.AllowDestructive, Served: s.backend.Current().Set})
	}
	if err != nil {
		id := ""
		if set != nil {
			id = set.ID
		}
		s.refuse(id, by, err)
		return err
	}
	return s.switchTo(ctx, set, by)
}

// watchDefinitions switches to the version the database serves whenever it changes, until ctx ends.
func (s *Server) watchDefinitions(ctx context.Context) {
	defset.Watch(ctx, s.backend.Store, defset.PollInterval, func(id string) {
		if id == s.backend.Current().Set.ID {
			return
		}
		by := "database"
		stored, found, err := defset.Load(ctx, s.backend.Store, s.backend.Store.Dialect(), id)
		if err == nil && !found {
			err = errors.New("the version named by settings.definitions_version is not stored")
		}
		var set *defset.Set
		if err == nil {
			by = stored.AppliedBy
			set, err = defset.FromStored(stored)
		}
		if err != nil {
			s.refuse(id, by, err)
			return
		}
		_ = s.switchTo(ctx, set, by) // refusals are reported by switchTo
	}, func(err error) {
		s.log.Warn("read the definitions version", "err", err)
	})
}

// switchTo builds set's generation and serves it from the next request on; the generation replaced
// drains: its plugins stop when the last request (or webhook drain) that started on it ends, unless
// the new generation shares them. A set that does not build (a plugin that does not start) is refused.
func (s *Server) switchTo(ctx context.Context, set *defset.Set, by string) error {
	s.live.mu.Lock()
	defer s.live.mu.Unlock()
	b := s.backend
	cur := b.gen.Load()
	if cur.Set.ID == set.ID || s.live.closed {
		return nil
	}
	start := time.Now()
	// The JSON Schemas compile as they are used and all at once in the background after the swap, as at
	// a start: they are generated from the catalog, which compiled, and compiling all 45 takes half a
	// second of a processor the switch need not wait for.
	schemas := schema.Prepare(set.Catalog)
	var host *sharedHost
	if covers(cur.Plugins, set.Catalog) {
		host = cur.host.retain()
	} else {
		started, err := startPlugins(ctx, pluginConfig(s.cfg, s.log, s.metrics), set.Catalog)
		if err != nil {
			s.refuse(set.ID, by, err)
			return err
		}
		if s.cfg.PluginWatch > 0 {
			go started.Watch(context.WithoutCancel(ctx)) // until the host is closed (drained or at Close)
		}
		host = share(started)
	}
	g := b.newGeneration(set, schemas, host)
	s.attach(g)
	b.serve(g)
	now := time.Now()
	s.live.since.Store(&now)
	s.live.refused.Store(nil)
	s.background.Go(func() {
		if err := schemas.CompileInBackground(); err != nil {
			s.log.Error("compile JSON Schemas", "version", set.Short(), "err", err)
		}
		if err := g.doc.Prepare(); err != nil {
			s.log.Error("OpenAPI document", "version", set.Short(), "err", err)
		}
	})
	s.metrics.DefinitionsSwitched(set.Short())
	s.log.Info("serving definitions version", "version", set.Short(), "previous", cur.Set.Short(), "by", by,
		"resources", len(set.Catalog.Resources), "in", time.Since(start).String())
	return nil
}

// attach gives g its OpenAPI document and its API handler, sharing the server's keys, limits and
// metrics.
func (s *Server) attach(g *generation) {
	cat, schemas := g.Catalog, g.Schemas
	g.doc = httpapi.NewLazyDocument(func() map[string]any { return catalog.OpenAPI(cat, schemas) }, catalog.ServerURL)
	g.handler = s.handler.Generation(httpapi.Generation{Records: g.Records, Admin: g.Admin, OpenAPI: g.doc})
}

// acquireHandler gives a request the API of the generation served, held until release
// (httpapi.Config.Generations).
func (s *Server) acquireHandler() (*httpapi.Handler, func()) {
	g, release := s.backend.acquire()
	return g.handler, release
}

// refuse reports a version the server would not serve.
func (s *Server) refuse(id, by string, err error) {
	s.live.refused.Store(&refusal{Version: defset.Short(id), By: by, At: time.Now().UTC(), Error: err.Error()})
	s.metrics.DefinitionsRefused()
	s.log.Error("definitions version refused; serving the previous one", "version", defset.Short(id), "by", by,
		"serving", s.backend.Current().Set.Short(), "err", err)
}

// covers reports whether host runs every plugin cat's resources name, for each of those resources.
func covers(host *plugins.Host, cat *model.Catalog) bool {
	var running []string
	if host != nil {
		for _, st := range host.Statuses() {
			running = append(running, st.Name)
		}
	}
	for _, r := range cat.Resources {
		for _, name := range r.Hooks {
			if !slices.Contains(running, name) || !host.Handles(name, r.Name) {
				return false
			}
		}
	}
	return true
}

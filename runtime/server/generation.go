package server

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/workspace-records/records/engine/model"
	"github.com/workspace-records/records/engine/schema"
	"github.com/workspace-records/records/runtime/admin"
	"github.com/workspace-records/records/runtime/auth"
	"github.com/workspace-records/records/runtime/customfields"
	"github.com/workspace-records/records/runtime/defset"
	"github.com/workspace-records/records/runtime/dispatch"
	"github.com/workspace-records/records/runtime/httpapi"
	"github.com/workspace-records/records/runtime/members"
	"github.com/workspace-records/records/runtime/plugins"
	"github.com/workspace-records/records/runtime/records"
)

// Generation is what one definitions version builds over a backend's store: its catalog and JSON
// Schemas, and the services that resolve in them. A server serves one generation at a time and
// switches between them (live.go); Backend.Current is the one served now.
type Generation struct {
	Set     *defset.Set
	Catalog *model.Catalog
	Schemas *schema.Set
	Custom  *customfields.Registry
	Records *records.Service
	Admin   *admin.Service
	// Plugins runs the rules plugins the catalog names (nil until a server or StartPlugins starts them).
	Plugins *plugins.Host
	// Directory, Members and Webhooks are the backend's, resolving plans, roles and resources in Catalog.
	Directory *auth.Directory
	Members   *members.Service
	Webhooks  *dispatch.Registry
}

// generation is a Generation with its lifetime. It is owned: the backend holds one reference while it
// is served, each request and webhook drain that runs on it holds another (Backend.acquire). When the
// served reference is dropped (a switch, Close) and the last holder releases its own, the generation is
// drained: its plugins stop, unless a later generation shares them.
type generation struct {
	Generation
	host    *sharedHost
	handler *httpapi.Handler  // the API of this generation (a server's; nil for admin commands)
	doc     *httpapi.Document // its OpenAPI document, built as first asked for (a server's)
	refs    atomic.Int64      // 1 while served, plus one per holder; 0: drained, never held again
	drained func()            // runs once, when refs reaches 0
}

// tryAcquire holds g unless it is drained.
func (g *generation) tryAcquire() bool {
	for {
		n := g.refs.Load()
		if n == 0 {
			return false
		}
		if g.refs.CompareAndSwap(n, n+1) {
			return true
		}
	}
}

// release drops one reference to g; the last one drains it.
func (g *generation) release() {
	switch n := g.refs.Add(-1); {
	case n == 0:
		g.drained()
	case n < 0:
		panic("server: a generation released more often than held")
	}
}

// sharedHost is a plugin host and the number of generations using it: a switch to a version whose
// resources name the same plugins keeps the host, and it stops when the last generation using it is
// drained.
type sharedHost struct {
	host  *plugins.Host
	users atomic.Int32
	once  sync.Once
}

func share(h *plugins.Host) *sharedHost {
	s := &sharedHost{host: h}
	s.users.Store(1)
	return s
}

// retain counts one more generation using s.
func (s *sharedHost) retain() *sharedHost {
	s.users.Add(1)
	return s
}

// release counts one generation less, and stops the plugins after the last one.
func (s *sharedHost) release() {
	if s.users.Add(-1) == 0 {
		s.close()
	}
}

// close stops the plugins (waiting for their After hooks), once.
func (s *sharedHost) close() { s.once.Do(s.host.Close) }

// newGeneration builds the services of set over b's store, with the plugins of host.
func (b *Backend) newGeneration(set *defset.Set, schemas *schema.Set, host *sharedHost) *generation {
	g := &generation{host: host}
	g.Set, g.Catalog, g.Schemas, g.Plugins = set, set.Catalog, schemas, host.host
	g.Directory, g.Webhooks = b.Directory.For(set.Catalog), b.Webhooks.For(set.Catalog)
	g.Members = members.New(b.Store, g.Directory, func() *model.Catalog { return set.Catalog })
	g.Custom = customfields.New(b.Store, set.Catalog)
	rc := b.recordsConfig
	rc.Catalog, rc.Schemas, rc.Custom = set.Catalog, schemas, g.Custom
	if host.host != nil {
		rc.Hooks = host.host
	}
	g.Records = records.New(rc)
	g.Admin = admin.New(admin.Config{Catalog: set.Catalog, Store: b.Store, Directory: g.Directory, Members: g.Members, Custom: g.Custom, Webhooks: g.Webhooks, Records: g.Records,
		CursorSecret: rc.CursorSecret})
	g.refs.Store(1)
	b.hosts.Lock()
	b.hosts.live[host] = struct{}{}
	b.hosts.Unlock()
	b.undrained.Add(1)
	g.drained = func() {
		// Not on the goroutine of the last holder (a request's): stopping plugins waits for their After
		// hooks.
		g.Records.Retire() // a caller that kept this generation's service past its switch fails loudly
		go func() {
			defer b.undrained.Done()
			host.release()
			if host.users.Load() == 0 {
				b.hosts.Lock()
				delete(b.hosts.live, host)
				b.hosts.Unlock()
			}
		}()
	}
	return g
}

// closeWait bounds how long Backend.Close waits for the generations still held to drain before it
// stops their plugins anyway.
const closeWait = 5 * time.Second

// closeGenerations drops the served reference and waits, for at most closeWait, until every generation
// has drained; plugins still running past it are stopped anyway.
func (b *Backend) closeGenerations() {
	b.gen.Load().release()
	done := make(chan struct{})
	go func() {
		b.undrained.Wait()
		close(done)
	}()
	select {
	case <-done:
		return
	case <-time.After(closeWait):
	}
	b.hosts.Lock()
	left := make([]*sharedHost, 0, len(b.hosts.live))
	for h := range b.hosts.live {
		left = append(left, h)
	}
	b.hosts.Unlock()
	for _, h := range left {
		h.close()
	}
}

// Current returns the generation the backend serves now: the version a server switched to last, or
// the one opened. It is not held: a request holds the generation it started on until it ends, and a
// generation switched away from keeps working only until then (its plugins stop).
func (b *Backend) Current() *Generation { return &b.gen.Load().Generation }

// catalog is the catalog of the version served now (the backend's Directory and Webhooks follow it).
func (b *Backend) catalog() *model.Catalog { return b.gen.Load().Catalog }

// acquire returns the generation served now and the function that releases it.
func (b *Backend) acquire() (*generation, func()) {
	for {
		g := b.gen.Load()
		if g.tryAcquire() {
			return g, g.release
		}
		// A drained generation (refs 0) that a switch replaced: its successor was stored before the
		// served reference was dropped, so the next load finds it. One still stored is the last one of
		// a closed backend: answered unheld, its services refuse (records.ErrRetired) rather than spin.
		if b.gen.Load() == g {
			return g, func() {}
		}
	}
}

// serve makes g the generation served and drops the served reference of the one it replaces, which
// drains once its holders have released it.
func (b *Backend) serve(g *generation) {
	if old := b.gen.Swap(g); old != nil {
		old.release()
	}
}

// heldRecords gives the webhook dispatcher the record service of the generation served, held until
// release (dispatch.Generations).
func (b *Backend) heldRecords() (*records.Service, func()) {
	g, release := b.acquire()
	return g.Records, release
}

// Package server is the composition root: it loads the definitions, opens and migrates the database,
// and wires the record service, the key directory and the HTTP handler together. What one definitions
// version builds is a generation (generation.go), owned and reference-counted, switched live (live.go).
// recordsd serves with it; recordsctl uses the same Backend for its admin commands.
package server

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/workspace-records/records/engine/apierr"
	"github.com/workspace-records/records/engine/catalog"
	"github.com/workspace-records/records/engine/model"
	"github.com/workspace-records/records/engine/schema"
	"github.com/workspace-records/records/runtime/auth"
	"github.com/workspace-records/records/runtime/config"
	"github.com/workspace-records/records/runtime/defset"
	"github.com/workspace-records/records/runtime/dispatch"
	"github.com/workspace-records/records/runtime/events"
	"github.com/workspace-records/records/runtime/httpapi"
	"github.com/workspace-records/records/runtime/idempotency"
	"github.com/workspace-records/records/runtime/jobs"
	"github.com/workspace-records/records/runtime/limits"
	"github.com/workspace-records/records/runtime/members"
	"github.com/workspace-records/records/runtime/metrics"
	"github.com/workspace-records/records/runtime/migrate"
	"github.com/workspace-records/records/runtime/notices"
	"github.com/workspace-records/records/runtime/plugins"
	"github.com/workspace-records/records/runtime/records"
	"github.com/workspace-records/records/runtime/store"
	"github.com/workspace-records/records/runtime/webhooks"
)

// LoadDefinitions reads and compiles the definitions in fsys, returning every problem at once: a
// *DefinitionsError when the definitions are refused.
func LoadDefinitions(fsys fs.FS) (*model.Catalog, *schema.Set, error) {
	files, err := defset.Read(fsys)
	if err != nil {
		return nil, nil, err
	}
	return withSchemas(defset.Compile(files))
}

// LoadDefinitionsDir is LoadDefinitions of the directory dir, whose refusal names the files under dir
// as it is written.
func LoadDefinitionsDir(dir string) (*model.Catalog, *schema.Set, error) {
	return withSchemas(defset.Dir(dir))
}

// withSchemas compiles the JSON Schemas of a set that compiled.
func withSchemas(set *defset.Set, err error) (*model.Catalog, *schema.Set, error) {
	if err != nil {
		return nil, nil, err
	}
	schemas, err := schema.Compile(set.Catalog)
	if err != nil {
		return nil, nil, fmt.Errorf("definitions: %w", err)
	}
	return set.Catalog, schemas, nil
}

// DefinitionsError refuses a definitions set: every problem found, of every file, each placed at its
// file, line and column (defset.Invalid).
type DefinitionsError = defset.Invalid

// Backend is an opened, migrated database with the services over it. What one definitions version
// builds is its Generation: Current is the one served now (a server switches between them, live.go).
type Backend struct {
	Store store.Store
	// Directory keeps workspaces, members and keys; Webhooks the workspaces' webhook endpoints and their
	// delivery logs. Both outlive generations and resolve plans, roles and resources in the version
	// served at each call (Current); a generation has views of them fixed to its version.
	Directory *auth.Directory
	Webhooks  *dispatch.Registry
	// Members keeps members, workspace roles and limits, resolving built-in roles in the version served.
	Members *members.Service
	// Notices keeps members' notifications and key expiry reminders.
	Notices   *notices.Service
	Migration *migrate.Result
	// Events numbers the change feed's events (nil when the feed is off); recordsd runs it.
	Events *events.Sequencer
	// Dispatcher delivers events to the endpoints (set by New; nil for admin commands and when the
	// feed is off).
	Dispatcher *dispatch.Dispatcher
	// Jobs keeps and runs bulk import and export jobs (set by New; nil for admin commands).
	Jobs *jobs.Service

	gen       atomic.Pointer[generation] // the generation served (Current); the only place it is stored
	undrained sync.WaitGroup             // generations built and not yet drained
	hosts     struct {
		sync.Mutex
		live map[*sharedHost]struct{} // plugin hosts not yet stopped
	}
	closed        sync.Once
	recordsConfig records.Config
	// note says why the version opened is not the definitions directory's (logged by New).
	note string
}

// Open loads the definitions, opens the database (creating a missing SQLite file) and migrates it.
func Open(ctx context.Context, cfg config.Config) (*Backend, error) {
	return open(ctx, cfg, openOptions{schemas: true, create: true, migrate: true, record: true})
}

// openOptions say what open does beyond loading the definitions and opening the database.
type openOptions struct {
	schemas bool // compile the JSON Schemas (validating record bodies needs them)
	create  bool // a missing SQLite file may be created
	migrate bool // run the migration even when the database is current (migrate.Current)
	// unchanged (without migrate) skips the migration only when migrate.Unchanged gives its result: the
	// database is current, and the result has what the last migration left pending, for the start to
	// report as a migration's (recordsd's start).
	unchanged bool
	// record stores the definitions version opened as the one the database serves, when it is not
	// (recordsd's start, recordsctl migrate: docs/issue-25.md); other commands only read it.
	record bool
	// also runs (when not nil) alongside the opening and migration, once the catalog is known.
	also func(*model.Catalog) error
}

// open loads the definitions and opens the database, migrating it when o.migrate or when it is not
// current. The JSON Schemas compile (o.schemas) and o.also runs while the database opens and migrates:
// a start costs the longest of them.
func open(ctx context.Context, cfg config.Config, o openOptions) (*Backend, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if !o.create {
		if err := sqliteExists(cfg.DB); err != nil {
			return nil, err
		}
	}
	local, err := defset.Dir(cfg.DefinitionsDir)
	if err != nil {
		return nil, err
	}
	cat := local.Catalog
	var schemas *schema.Set
	if o.schemas {
		// Compiled as they are used (or all at once by Server.Serve, once serving).
		schemas = schema.Prepare(cat)
	}
	var alsoErr error
	var wg sync.WaitGroup
	if o.also != nil {
		wg.Go(func() { alsoErr = o.also(cat) })
	}
	b, set, err := openStore(ctx, cfg, local, o)
	wg.Wait()
	if err := errors.Join(err, alsoErr); err != nil {
		if b != nil {
			b.Store.Close()
		}
		return nil, err
	}
	if set != local && o.schemas {
		schemas = schema.Prepare(set.Catalog)
	}
	if cfg.Events {
		b.Events = events.NewSequencer(b.Store, events.NewHub())
		b.Events.Retention = cfg.EventRetention
	}
	b.recordsConfig.Store, b.recordsConfig.Idempotency, b.recordsConfig.Events = b.Store, idempotency.New(b.Store, nil), b.Events
	// The backend's directory and registry resolve in the version served, whichever it is when asked.
	b.Directory = auth.NewDirectory(b.Store, set.Catalog, nil).Following(b.catalog)
	b.Members = members.New(b.Store, b.Directory, b.catalog)
	b.Notices = notices.New(b.Store, nil)
	b.Webhooks = dispatch.NewRegistry(b.Store, set.Catalog, cfg.WebhookAllowPrivate).Following(b.catalog)
	b.hosts.live = map[*sharedHost]struct{}{}
	b.serve(b.newGeneration(set, schemas, share(nil)))
	if b.Events != nil {
		b.Events.Subscribe(b.Webhooks) // New subscribes the dispatcher instead, which also delivers
	}
	return b, nil
}

// openStore opens the database, picks the definitions version to serve (chooseSet), migrates the
// database to it (always, or only when it is not current: o.migrate, o.unchanged), records it as the
// version served (o.record) and reads (or makes) the cursor secret.
func openStore(ctx context.Context, cfg config.Config, local *defset.Set, o openOptions) (*Backend, *defset.Set, error) {
	st, err := store.Open(ctx, cfg.DB)
	if err != nil {
		return nil, nil, err
	}
	fail := func(err error) (*Backend, *defset.Set, error) {
		st.Close()
		return nil, nil, err
	}
	set, served, note, err := chooseSet(ctx, st, local)
	if err != nil {
		return fail(err)
	}
	cat := set.Catalog
	var res *migrate.Result // nil: migrate
	switch {
	case o.migrate:
	case o.unchanged:
		if res, err = migrate.Unchanged(ctx, st, cat); err != nil {
			return fail(err)
		}
	default:
		current, err := migrate.Current(ctx, st, cat)
		if err != nil {
			return fail(err)
		}
		if current {
			res = &migrate.Result{Applied: []string{}}
		}
	}
	if res == nil {
		if res, err = migrate.Run(ctx, st, cat, migrate.Options{AllowDestructive: cfg.AllowDestructive}); err != nil {
			return fail(fmt.Errorf("migrate: %w", err))
		}
	}
	if o.record && served != set.ID {
		if err := defset.Record(ctx, st, set, defset.ByStart, res.Applied); err != nil {
			return fail(err)
		}
	}
	secret := []byte(cfg.CursorSecret)
	if len(secret) == 0 {
		if secret, err = storedSecret(ctx, st, "cursor_secret"); err != nil {
			return fail(err)
		}
	}
	return &Backend{Store: st, Migration: res, recordsConfig: records.Config{CursorSecret: secret}, note: note}, set, nil
}

// pluginConfig is the plugin host's configuration of a server.
func pluginConfig(cfg config.Config, log *slog.Logger, m *metrics.Metrics) plugins.Config {
	return plugins.Config{Dir: cfg.PluginsDir, Timeout: cfg.PluginTimeout, Log: log, Metrics: m, WatchInterval: cfg.PluginWatch,
		AfterLimit: int(cfg.PluginAfterLimit)}
}

func startPlugins(ctx context.Context, cfg plugins.Config, cat *model.Catalog) (*plugins.Host, error) {
	host, err := plugins.New(ctx, cfg, cat)
	if err != nil {
		return nil, fmt.Errorf("plugins: %w", err)
	}
	return host, nil
}

// usePlugins serves the generation of the version served with the plugins of host (before serving:
// the generation replaced is held by no request).
func (b *Backend) usePlugins(host *plugins.Host) {
	cur := b.gen.Load()
	b.serve(b.newGeneration(cur.Set, cur.Schemas, share(host)))
}

// Close stops the plugins, once the requests holding their generations have ended (for at most
// closeWait), and closes the database.
func (b *Backend) Close() error {
	b.closed.Do(b.closeGenerations)
	return b.Store.Close()
}

// storedSecret returns the named secret, generating and storing it the first time. Concurrent first
// calls agree: the insert keeps the first value written. Once stored, reading it is one query, no write.
func storedSecret(ctx context.Context, st store.Store, name string) ([]byte, error) {
	d := st.Dialect()
	read := func() (string, bool, error) {
		var value string
		found, err := store.QueryOne(ctx, st, d.Bind("SELECT value FROM settings WHERE name = ?", name), func(row []any) error {
			value, _ = row[0].(string)
			return nil
		})
		if err != nil {
			return "", false, fmt.Errorf("read %s: %w", name, err)
		}
		return value, found, nil
	}
	value, found, err := read()
	if err != nil {
		return nil, err
	}
	if !found {
		raw := make([]byte, 32)
		if _, err := rand.Read(raw); err != nil {
			return nil, fmt.Errorf("generate %s: %w", name, err)
		}
		if _, err := st.Exec(ctx, d.Bind("INSERT INTO settings (name, value) VALUES (?, ?) ON CONFLICT (name) DO NOTHING", name, hex.EncodeToString(raw))); err != nil {
			return nil, fmt.Errorf("store %s: %w", name, err)
		}
		if value, _, err = read(); err != nil {
			return nil, err
		}
	}
	secret, err := hex.DecodeString(value)
	if err != nil || len(secret) < 16 {
		return nil, fmt.Errorf("read %s: stored value is malformed", name)
	}
	return secret, nil
}

// Server is a running recordsd.
type Server struct {
	cfg      config.Config
	log      *slog.Logger
	backend  *Backend
	handler  *httpapi.Handler
	quota    *limits.Quota
	idem     *idempotency.Keys
	instance *idempotency.Instance
	redis    *redis.Client // nil without --redis
	metrics  *metrics.Metrics
	// prepareOnce starts prepare once (Serve, or the first readiness check); prepared is closed when it
	// has ended, with preparedErr its failure.
	prepareOnce sync.Once
	prepared    chan struct{}
	preparedErr error
	closed      sync.Once
	closeErr    error
	live        live // the definitions switches (live.go)
	// background counts what Serve and the switches started that may outlive them (a switch's schema
	// compile); Close waits for it.
	background sync.WaitGroup
}

// New opens the backend and builds the HTTP handler.
func New(ctx context.Context, cfg config.Config, log *slog.Logger) (*Server, error) {
	var m *metrics.Metrics
	if cfg.MetricsAddr != "" {
		m = metrics.New()
	}
	// The plugin programs start while the database opens and migrates. A database already current skips
	// the migration (whose run would find nothing to do) and its database-wide lock; its result, logged
	// below, is what the last migration left pending (migrate.Unchanged). Told to drop columns, a start
	// migrates.
	var host *plugins.Host
	created := sqliteExists(cfg.DB) != nil
	b, err := open(ctx, cfg, openOptions{schemas: true, create: true, migrate: cfg.AllowDestructive, unchanged: true, record: true, also: func(cat *model.Catalog) (err error) {
		host, err = startPlugins(ctx, pluginConfig(cfg, log, m), cat)
		return err
	}})
	if err != nil {
		host.Close()
		return nil, err
	}
	if !covers(host, b.catalog()) {
		// The database serves a version applied after the directory's (chooseSet), naming other plugins.
		host.Close()
		if host, err = startPlugins(ctx, pluginConfig(cfg, log, m), b.catalog()); err != nil {
			b.Close()
			return nil, err
		}
	}
	b.usePlugins(host)
	if b.note != "" {
		log.Warn(b.note)
	}
	if b.Events != nil {
		b.Dispatcher = dispatch.NewDispatcher(b.Store, b.Webhooks, b.heldRecords, b.Events,
			webhooks.NewClient(webhooks.Options{AllowPrivate: cfg.WebhookAllowPrivate}))
		b.Dispatcher.Metrics = m
		if cfg.WebhookLease > 0 {
			b.Dispatcher.Lease = cfg.WebhookLease
		}
		b.Events.Metrics = m
		b.Events.Subscribe(b.Dispatcher)
		b.Notices.Notified = func(ctx context.Context, q store.Querier, n notices.Notification) error {
			// A key expiry reminder is a notice of the feed too, so its owner can receive it by webhook.
			return events.Write(ctx, q, b.Store.Dialect(), events.Actor{Workspace: n.Workspace}, n.CreatedAt, []events.Event{{
				Type: events.KeyExpiring, Resource: events.KeysResource, RecordID: n.KeyID,
				Data: map[string]any{"key_id": n.KeyID, "key_hint": n.KeyHint, "member_id": n.Member,
					"expires_at": n.ExpiresAt.UTC().Format(time.RFC3339), "days_before": n.DaysBefore},
			}})
		}
	}
	b.Jobs = jobs.New(b.Store, b.heldRecords, b.jobActor, log)
	if cfg.JobLease > 0 {
		b.Jobs.Lease = cfg.JobLease
	}
	if created {
		// Started from another directory, a relative sqlite: path names a new, empty database: say so.
		level := slog.LevelWarn
		if cfg.Dev {
			level = slog.LevelInfo // --dev is how a first start makes the demo database
		}
		log.Log(ctx, level, "created a new, empty SQLite database: the file did not exist", "path", sqlitePath(cfg.DB))
	}
	if n := len(b.Migration.Applied); n > 0 {
		log.Info("migrations applied", "count", n)
	}
	for _, line := range b.Migration.Applied {
		log.Debug("migration applied", "change", line)
	}
	for _, line := range b.Migration.Pending {
		log.Warn("migration pending", "change", line)
	}
	if err := warnRowSecurityBypass(ctx, b.Store, log); err != nil {
		b.Close()
		return nil, err
	}
	proxies, err := httpapi.ParseProxies(cfg.TrustedProxies)
	if err != nil {
		b.Close()
		return nil, err
	}
	var limiter limits.Limiter = limits.NewLocal()
	quota := limits.NewQuota(b.Store)
	var rdb *redis.Client
	if cfg.Redis != "" {
		if rdb, err = limits.ParseRedisURL(cfg.Redis); err != nil {
			b.Close()
			return nil, err
		}
		redis.SetLogger(redisLog{log})
		rl := limits.NewRedis(rdb, "records:rl:", log)
		rl.SetTimeout(cfg.RedisTimeout)
		limiter, quota = rl, rl.NewQuota(b.Store, "records:quota:")
		q := quota
		for part, n := range map[string]func() uint64{"rate_limits": rl.Fallbacks, "quota": q.Fallbacks} {
			m.Register(prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "records_redis_fallbacks_total", ConstLabels: prometheus.Labels{"part": part},
				Help: "Requests judged by this server alone (rate limits in process, quota from the database count) because Redis failed or was not asked."},
				func() float64 { return float64(n()) }))
		}
		log.Info("rate limits and the monthly quota shared through Redis", "addr", rdb.Options().Addr)
	}
	if _, ok := store.Stats(b.Store); ok {
		m.Register(metrics.PoolCollector(func() metrics.Pool {
			s, _ := store.Stats(b.Store)
			return metrics.Pool(s)
		}))
	}
	// This process's heartbeat: a retry takes over the Idempotency-Key claims of a server that died
	// within seconds (idempotency.DeadAfter) instead of after their lease.
	inst, err := idempotency.Register(ctx, b.Store, log)
	if err != nil {
		b.Close()
		return nil, err
	}
	idem := b.recordsConfig.Idempotency
	idem.SetInstance(inst)
	if b.Dispatcher != nil {
		// Its leases and attempts name this process's server_instances row (host and pid).
		b.Dispatcher.SetOwner(inst.ID)
	}
	b.Jobs.SetOwner(inst.ID)
	b.Jobs.Quota = jobQuota(quota)
	s := &Server{cfg: cfg, log: log, backend: b, quota: quota, idem: idem, instance: inst, redis: rdb, metrics: m, prepared: make(chan struct{})}
	g := b.gen.Load()
	now := time.Now()
	s.live.since.Store(&now)
	m.DefinitionsServed(g.Set.Short())
	log.Info("serving definitions version", "version", g.Set.Short(), "resources", len(g.Catalog.Resources))
	// The document is built once serving (Serve), or by the first request for it.
	cat, schemas := g.Catalog, g.Schemas
	g.doc = httpapi.NewLazyDocument(func() map[string]any { return catalog.OpenAPI(cat, schemas) }, catalog.ServerURL)
	s.handler = httpapi.New(httpapi.Config{Records: g.Records, Directory: b.Directory, Admin: g.Admin, Logger: log, OpenAPI: g.doc, PublicURL: cfg.PublicURL, TrustedProxies: proxies,
		Limiter: limiter, Quota: quota, Idempotency: idem, Metrics: m, Ready: s.ready, ReadyDetails: s.readyDetails, RequestTimeout: cfg.RequestTimeout,
		FailedAuthPerMinute: cfg.FailedAuthPerMinute, Generations: s.acquireHandler, Notices: b.Notices, Jobs: b.Jobs})
	g.handler = s.handler
	return s, nil
}

// redisLog sends the Redis client's own messages (failed dials) to the server's structured log.
type redisLog struct{ log *slog.Logger }

func (l redisLog) Printf(ctx context.Context, format string, v ...any) {
	l.log.WarnContext(ctx, "redis client", "detail", fmt.Sprintf(format, v...))
}

// ready checks the parts requests need: the database, the compiled schemas, Redis when configured, and
// every plugin.
func (s *Server) ready(ctx context.Context) []httpapi.Check {
	var wg sync.WaitGroup
	var db, rd error
	var plug map[string]plugins.Health
	wg.Go(func() {
		if err := s.backend.Store.Ping(ctx); err != nil {
			db = errors.New("unreachable")
			s.log.Warn("readiness: database unreachable", "err", err)
		}
	})
	if s.redis != nil {
		wg.Go(func() {
			if err := s.redis.Ping(ctx).Err(); err != nil {
				rd = errors.New("unreachable")
				s.log.Warn("readiness: redis unreachable", "err", err)
			}
		})
	}
	wg.Go(func() {
		g, release := s.backend.acquire()
		defer release()
		plug = g.Plugins.Check(ctx)
	})
	var schemas httpapi.Check
	wg.Go(func() { schemas = s.schemasCheck(ctx) })
	wg.Wait()
	out := []httpapi.Check{{Name: "database", Err: db}, schemas}
	if s.redis != nil {
		out = append(out, httpapi.Check{Name: "redis", Err: rd})
	}
	for name, health := range plug {
		err := health.Err
		if err != nil {
			s.log.Warn("readiness: plugin unreachable", "plugin", name, "err", err)
			err = errors.New("unreachable")
		}
		out = append(out, httpapi.Check{Name: "plugin:" + name, Err: err})
	}
	return out
}

// prepare compiles the resources' JSON Schemas not compiled yet and builds the OpenAPI document, once
// serving: a start does not wait for them (a write compiles its resource's schemas first, a request for
// the document builds it, if it comes before).
// Until it has succeeded /readyz reports the "schemas" check not ready, so that a load balancer sends
// no traffic to a server whose definitions do not compile.
func (s *Server) prepare() {
	t := time.Now()
	defer close(s.prepared)
	g := s.backend.gen.Load()
	if err := g.Schemas.CompileInBackground(); err != nil {
		s.log.Error("compile JSON Schemas", "err", err)
		s.preparedErr = errors.New("failed to compile")
	}
	if err := g.doc.Prepare(); err != nil {
		s.log.Error("OpenAPI document", "err", err)
		s.preparedErr = errors.New("failed to build the OpenAPI document")
	}
	s.log.Debug("JSON Schemas and OpenAPI document ready", "in", time.Since(t).String())
}

// startPrepare runs prepare in the background, once.
func (s *Server) startPrepare() { s.prepareOnce.Do(func() { go s.prepare() }) }

// schemasCheck is the readiness of what prepare builds: it waits for it while ctx allows.
func (s *Server) schemasCheck(ctx context.Context) httpapi.Check {
	s.startPrepare()
	select {
	case <-s.prepared:
		return httpapi.Check{Name: "schemas", Err: s.preparedErr}
	case <-ctx.Done():
		return httpapi.Check{Name: "schemas", Err: errors.New("compiling")}
	}
}

// Metrics returns the server's metrics, nil when --metrics-addr is off.
func (s *Server) Metrics() *metrics.Metrics { return s.metrics }

// Backend returns the server's backend.
func (s *Server) Backend() *Backend { return s.backend }

// Handler returns the API handler.
func (s *Server) Handler() http.Handler { return s.handler }

// Serve serves on ln until ctx is done, then shuts down gracefully: GET /readyz turns 503, the listener
// closes, and requests in flight get ShutdownGrace to finish (a request past it is cut off, its
// transaction rolled back). With --metrics-addr, Prometheus metrics are served there meanwhile.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	srv := &http.Server{
		Handler:           s.handler,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      60 * time.Second,
		IdleTimeout:       120 * time.Second,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
	}
	var side []*http.Server
	if s.cfg.MetricsAddr != "" {
		mln, err := net.Listen("tcp", s.cfg.MetricsAddr)
		if err != nil {
			ln.Close() // never served: connections must be refused, not left waiting
			return fmt.Errorf("listen %s (metrics): %w", s.cfg.MetricsAddr, err)
		}
		mux := http.NewServeMux()
		mux.Handle("GET /metrics", s.metrics.Handler())
		ms := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, ErrorLog: srv.ErrorLog}
		side = append(side, ms)
		go func() {
			if err := ms.Serve(mln); err != nil && !errors.Is(err, http.ErrServerClosed) {
				s.log.Error("metrics server", "err", err)
			}
		}()
		s.log.Info("serving metrics", "addr", mln.Addr().String())
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(httpapi.TransportErrors(ln, s.log)) }()
	// The background work outlives the signal until the last request is answered: a draining server
	// still shares its quota counts and still hears of revoked keys.
	bg, stopBackground := context.WithCancel(context.WithoutCancel(ctx))
	var started sync.WaitGroup
	defer func() {
		// Serve returns once what it started has stopped: Close then flushes and closes alone.
		stopBackground()
		started.Wait()
	}()
	s.startPrepare()
	started.Go(func() { s.sendReminders(bg) })
	started.Go(func() { s.flushQuota(bg) })
	started.Go(func() { s.flushKeyUsage(bg) })
	started.Go(func() { s.Watch(bg) })
	started.Go(func() { s.watchDefinitions(bg) })
	select {
	case err := <-errc:
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	s.log.Info("shutting down", "drain_delay", s.cfg.DrainDelay.String(), "grace", s.cfg.ShutdownGrace.String())
	s.handler.Drain()
	if s.cfg.DrainDelay > 0 {
		// Still serving, but not ready: load balancers take the server out before its listener closes.
		select {
		case <-time.After(s.cfg.DrainDelay):
		case err := <-errc:
			return fmt.Errorf("serve: %w", err)
		}
	}
	sctx, cancel := context.WithTimeout(context.Background(), s.cfg.ShutdownGrace)
	defer cancel()
	err := srv.Shutdown(sctx)
	if err != nil {
		// Past the grace period: cut what is left; their transactions roll back.
		s.log.Warn("requests still running at the end of the shutdown grace period; closing them", "err", err)
		err = srv.Close()
	}
	stopBackground()
	for _, ms := range side {
		_ = ms.Close()
	}
	if serr := <-errc; serr != nil && !errors.Is(serr, http.ErrServerClosed) {
		err = errors.Join(err, fmt.Errorf("serve: %w", serr))
	}
	s.log.Info("stopped serving")
	return err
}

// Close flushes quota usage and releases the database.
func (s *Server) Close() error {
	s.closed.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		err := s.quota.Flush(ctx, time.Now())
		if err != nil {
			s.log.Error("flush quota usage at shutdown", "err", err)
		}
		if _, kerr := s.backend.Directory.FlushUsage(ctx); kerr != nil {
			s.log.Error("write key usage at shutdown", "err", kerr)
			err = errors.Join(err, kerr)
		}
		if ierr := s.instance.Close(ctx); ierr != nil {
			s.log.Error("deregister at shutdown", "err", ierr)
			err = errors.Join(err, ierr)
		}
		s.live.mu.Lock()
		s.live.closed = true // no switch from now on
		s.live.mu.Unlock()
		s.background.Wait()
		// The generations drain (their plugins stop) as the last requests on them end.
		s.closeErr = errors.Join(err, s.backend.Close())
		if s.redis != nil {
			s.closeErr = errors.Join(s.closeErr, s.redis.Close())
		}
	})
	return s.closeErr
}

// QuotaFlushInterval is how often a server writes its quota counts and reads other servers'.
const QuotaFlushInterval = time.Second

// Watch keeps what the server shares with other servers current until ctx ends: it listens for
// changes of keys (auth.Directory.Watch), numbers the change feed's events (events.Sequencer.Run) and
// delivers them to webhook endpoints (dispatch.Dispatcher.Run). It also swaps in plugin programs
// replaced in the plugins directory (plugins.Host.Watch), unless plugin_watch is 0.
func (s *Server) Watch(ctx context.Context) {
	var wg sync.WaitGroup
	wg.Go(func() { s.backend.Directory.Watch(ctx) })
	if s.cfg.PluginWatch > 0 {
		wg.Go(func() { s.backend.Current().Plugins.Watch(ctx) }) // a switch's new plugins are watched by the switch
	}
	if s.backend.Events != nil {
		wg.Go(func() { s.backend.Events.Run(ctx, s.log) })
	}
	if s.backend.Dispatcher != nil {
		wg.Go(func() { s.backend.Dispatcher.Run(ctx, s.log) })
	}
	if s.backend.Jobs != nil {
		wg.Go(func() { s.backend.Jobs.Run(ctx, s.log) })
	}
	wg.Wait()
}

func (s *Server) flushQuota(ctx context.Context) {
	t := time.NewTicker(QuotaFlushInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if err := s.quota.Flush(ctx, time.Now()); err != nil && ctx.Err() == nil {
			s.log.Warn("flush quota usage", "err", err)
		}
	}
}

// flushKeyUsage writes the last use of the keys this server served every KeyUsageInterval until ctx is
// done (Close writes the rest).
func (s *Server) flushKeyUsage(ctx context.Context) {
	t := time.NewTicker(s.cfg.KeyUsageInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if _, err := s.backend.Directory.FlushUsage(ctx); err != nil && ctx.Err() == nil {
			s.log.Warn("write key usage", "err", err)
		}
	}
}

// ReminderInterval is how often a server looks for key expiry reminders that are due.
const ReminderInterval = time.Minute

// sendReminders delivers due key expiry reminders and deletes expired idempotency keys and the rows of
// long-dead server instances until ctx is done. Several servers may run it at once.
func (s *Server) sendReminders(ctx context.Context) {
	t := time.NewTicker(ReminderInterval)
	defer t.Stop()
	for {
		if n, err := s.idem.Cleanup(ctx); err != nil {
			s.log.Warn("idempotency key clean-up", "err", err)
		} else if n > 0 {
			s.log.Info("idempotency keys expired", "count", n)
		}
		if _, err := idempotency.CleanupInstances(ctx, s.backend.Store); err != nil {
			s.log.Warn("server instance clean-up", "err", err)
		}
		if n, err := s.backend.Notices.SendDueReminders(ctx, time.Now()); err != nil {
			s.log.Warn("key expiry reminders", "err", err)
		} else if n > 0 {
			s.log.Info("key expiry notifications written", "count", n)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// jobActor is the actor a bulk job acts as when it runs: its key as it is now (revoked, expired, its
// owner deactivated: refused), allowed to use r (write: to write it) as a request of the key would be.
func (b *Backend) jobActor(ctx context.Context, workspace, key string, r *model.Resource, write bool) (records.Actor, *int64, error) {
	p, err := b.Directory.KeyPrincipal(ctx, workspace, key)
	if err != nil {
		return records.Actor{}, nil, err
	}
	if denied := p.Authorize(r, write); denied != nil {
		return records.Actor{}, nil, records.Explain(denied)
	}
	return httpapi.ActorOf(p, ""), p.Limits.MonthlyQuota, nil
}

// jobQuota counts a job's work against its workspace's monthly quota, as admission counts requests.
func jobQuota(q *limits.Quota) jobs.Quota {
	return func(ctx context.Context, workspace string, n int64, limit *int64) error {
		_, ok, err := q.Take(ctx, workspace, n, limit, time.Now())
		if err != nil {
			return err
		}
		if !ok {
			return apierr.New(apierr.QuotaExceeded, "The workspace's monthly request quota ran out during the job; what it committed before stays. The quota resets at the start of next month (UTC).")
		}
		return nil
	}
}

// Package records runs the record operations for any resource of the model, each on a Collection (the
// resource, the caller's workspace, data model, custom fields and policy): list, get, create, update,
// archive, restore, upsert, batch, associations, history and bulk loads. It validates bodies with the
// compiled schemas, plans lists with listplan, builds SQL with sqlgen, runs it on a store inside the
// caller's workspace, runs the rules plugins' hooks, writes the audit entry and the feed's events in the
// write's transaction, and turns rows into JSON-shaped records. Reading the audit trail and the feed
// as a caller may see them is runtime/audit's and runtime/feed's; this package names the caller to them.
package records

import (
	"context"
	"errors"
	"sync/atomic"
	"time"

	"github.com/workspace-records/records/engine/access"
	"github.com/workspace-records/records/engine/model"
	"github.com/workspace-records/records/engine/schema"
	"github.com/workspace-records/records/engine/sqlgen"
	"github.com/workspace-records/records/runtime/audit"
	"github.com/workspace-records/records/runtime/customfields"
	"github.com/workspace-records/records/runtime/events"
	"github.com/workspace-records/records/runtime/feed"
	"github.com/workspace-records/records/runtime/idempotency"
	"github.com/workspace-records/records/runtime/jsonenc"
	"github.com/workspace-records/records/runtime/plugins"
	"github.com/workspace-records/records/runtime/store"
)

// Actor is who a request acts as.
type Actor struct {
	Workspace  string
	Member     string
	Department string
	Key        string
	RequestID  string
	// Role limits records and fields through its record and field rules; nil is the unrestricted
	// admin path (recordsctl).
	Role *model.Role
	// Synthetic marks generated data (recordsctl seed): Import writes no audit entries for it, which
	// would double a million-record load for rows nobody changed.
	Synthetic bool
	// ReadOnly is a key with read access: its policies allow reading at most, whatever the role.
	ReadOnly bool
	// Reach reports whether the caller may use resource r at all: the key's resource allowlist, the
	// plan's features and the role's access. A write may set a reference only into a resource it
	// reaches, as a link needs both sides. nil reaches every resource (the admin path).
	Reach func(r *model.Resource) bool
}

// reaches reports whether a may use r (see Actor.Reach).
func (a Actor) reaches(r *model.Resource) bool { return a.Reach == nil || a.Reach(r) }

// Policy returns the actor's policy on r: its role's, capped at reading for a read-only key.
func (a Actor) Policy(r *model.Resource) *access.Policy {
	p := access.For(a.Role, r, a.Member, a.Department)
	if a.ReadOnly && p.Level > access.Read {
		p.Level = access.Read
	}
	return p
}

// linked is a's policy on r as the other end of a relation — an association or a reference — or nil
// when a may not use r at all (its key's allowlist or plan leaves r out, or its role reads none of r).
// Its record rule decides which records of r a sees there: the association list (ListLinks) and
// expansions apply it in their statements (sqlgen.Link.OtherPolicy, sqlgen.Records), and a link's
// entries in the change feed, webhook payloads, histories and the audit trail name the other record
// only when it holds (Service.linkShown).
func (a Actor) linked(r *model.Resource) *access.Policy {
	if !a.reaches(r) {
		return nil
	}
	if p := a.Policy(r); p.Level != access.None {
		return p
	}
	return nil
}

// Record is a JSON-shaped record.
type Record = map[string]any

// Service runs record operations. It is safe for concurrent use.
type Service struct {
	retired atomic.Bool // Retire
	cat     *model.Catalog
	schemas *schema.Set
	st      store.Store
	d       sqlgen.Dialect
	secret  []byte
	now     func() time.Time
	custom  *customfields.Registry
	hooks   *plugins.Host
	idem    *idempotency.Keys
	trail   *audit.Reader
	feed    *feed.Reader
	events  *events.Sequencer
	// figures caches the planner's row figures by table and workspace (count.go).
	figures *plannerFigures
}

// Config configures a Service.
type Config struct {
	Catalog *model.Catalog
	Schemas *schema.Set
	Store   store.Store
	// CursorSecret signs list cursors; every server sharing a database must use the same one.
	CursorSecret []byte
	// Now returns the current time; defaults to time.Now.
	Now func() time.Time
	// Custom holds the workspaces' custom fields; nil refuses every custom field.
	Custom *customfields.Registry
	// Hooks runs the plugins definitions name; nil runs none.
	Hooks *plugins.Host
	// Idempotency stores the responses of writes sent with an Idempotency-Key (see Receipt).
	Idempotency *idempotency.Keys
	// Events numbers the change feed's events: every write records its events in its own transaction
	// (runtime/events) and kicks it after commit. nil records none (the feed is off).
	Events *events.Sequencer
}

// New returns a Service.
func New(cfg Config) *Service {
	now := cfg.Now
	if now == nil {
		now = time.Now
	}
	return &Service{cat: cfg.Catalog, schemas: cfg.Schemas, st: cfg.Store, d: cfg.Store.Dialect(), secret: cfg.CursorSecret, now: now, custom: cfg.Custom, hooks: cfg.Hooks, idem: cfg.Idempotency, events: cfg.Events, figures: &plannerFigures{}, trail: audit.NewReader(cfg.Store, cfg.Catalog, cfg.CursorSecret),
		feed: feed.NewReader(cfg.Store, cfg.Catalog, cfg.Events)}
}

// Catalog returns the model the service serves.
func (s *Service) Catalog() *model.Catalog { return s.cat }

func (s *Service) timestamp() time.Time { return s.now().UTC().Truncate(time.Microsecond) }

func jsonText(v map[string]any) string {
	data, _ := jsonenc.Marshal(v)
	return string(data)
}

// StatementCounter counts the database statements run with a context that carries it.
type StatementCounter = store.Counter

// CountStatements returns ctx carrying c: every statement the service runs with it counts in c (see
// store.Counter).
func CountStatements(ctx context.Context, c *StatementCounter) context.Context {
	return store.WithCounter(ctx, c)
}

// ErrRetired is an operation of a service whose definitions generation was retired: the server serves
// another version, and this service's catalog, schemas and plugins are gone. No request meets it (each
// holds its generation until it ends); a caller that kept a service past a switch does.
var ErrRetired = errors.New("records: this service's definitions generation was retired; use the one served now")

// Retire refuses every later operation of s with ErrRetired (its generation drained: runtime/server).
func (s *Service) Retire() { s.retired.Store(true) }

// live refuses an operation of a retired service.
func (s *Service) live() error {
	if s.retired.Load() {
		return ErrRetired
	}
	return nil
}

// Package dispatch delivers the change feed's events to webhook endpoints.
//
// Endpoints (webhook_endpoints) belong to a workspace and to the member who owns them: a payload is the
// event as that member may read it in the feed (runtime/records.Service.EventFor), so the owner's role,
// record rules and masks apply. When the sequencer numbers events (runtime/events), Numbered creates one
// delivery per matching enabled endpoint in the same transaction: an event is numbered and its
// deliveries exist, or neither. Every server runs a Dispatcher that leases due endpoints (FOR UPDATE
// SKIP LOCKED on PostgreSQL; the one process on SQLite) and sends their pending deliveries in sequence
// order, so N servers make each attempt once; a server killed mid-delivery leaves the endpoint to
// another once its lease ends. A failing endpoint holds its later events back while its first is
// retried (at-least-once, in order). Attempts follow runtime/webhooks' schedule (about 27.6 hours); an endpoint whose delivery
// exhausts it is disabled, and a webhook_endpoints.disabled notice goes to the feed.
package dispatch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/workspace-records/records/engine/field"
	"github.com/workspace-records/records/engine/model"
	"github.com/workspace-records/records/engine/sqlgen"
	"github.com/workspace-records/records/runtime/events"
	"github.com/workspace-records/records/runtime/store"
	"github.com/workspace-records/records/runtime/webhooks"
)

// Endpoint is a webhook endpoint (never with its secret, except in the answer of Create and Rotate).
type Endpoint struct {
	ID          string   `json:"id"`
	Workspace   string   `json:"workspace_id"`
	Member      string   `json:"member_id"`
	URL         string   `json:"url"`
	Description string   `json:"description"`
	EventTypes  []string `json:"event_types"` // nil: every type
	Resources   []string `json:"resources"`   // nil: every resource
	Enabled     bool     `json:"enabled"`
	// DisabledReason says why the endpoint was disabled ("" when enabled, or disabled by hand).
	DisabledReason string    `json:"disabled_reason"`
	CreatedAt      time.Time `json:"created_at"`
	UpdatedAt      time.Time `json:"updated_at"`
	// Secret is set only in the answer of Create and RotateSecret: it is never shown again.
	Secret string `json:"secret,omitempty"`
}

// Input is what Create sets and Update changes (nil: unchanged; on Create, nil lists mean every type
// or resource).
type Input struct {
	URL         *string
	Description *string
	EventTypes  *[]string
	Resources   *[]string
	Enabled     *bool
}

// ErrNotFound is an endpoint (or delivery) that is not in the workspace.
var ErrNotFound = errors.New("webhook endpoint not found in this workspace")

// Registry keeps the workspaces' endpoints. Their filters name the resources of a definitions version,
// its catalog: For gives the registry over one version, Following over whichever a source names.
type Registry struct {
	st  store.Store
	cat func() *model.Catalog
	// AllowPrivate lets endpoints name loopback and private addresses (the setting
	// webhook_allow_private_addresses; tests use it).
	AllowPrivate bool
	now          func() time.Time
}

// NewRegistry returns the registry of st's endpoints, whose filters name cat's resources.
func NewRegistry(st store.Store, cat *model.Catalog, allowPrivate bool) *Registry {
	g := &Registry{st: st, AllowPrivate: allowPrivate, now: time.Now}
	return g.For(cat)
}

// For returns the registry of the same endpoints whose filters name cat's resources (a server's
// generation each has one).
func (g *Registry) For(cat *model.Catalog) *Registry {
	return g.Following(func() *model.Catalog { return cat })
}

// Following returns the registry of the same endpoints whose filters name the resources of the
// version source returns at each call (a server's backend: the version served).
func (g *Registry) Following(source func() *model.Catalog) *Registry {
	v := *g
	v.cat = source
	return &v
}

const endpointColumns = "workspace_id, id, member_id, url, description, CAST(event_types AS TEXT), CAST(resources AS TEXT), enabled, disabled_reason, created_at, updated_at"

// check validates in (for Create when create is true) and returns the field errors.
func (g *Registry) check(in Input, create bool) field.ErrorList {
	var errs field.ErrorList
	if create && in.URL == nil {
		errs = append(errs, field.New(field.CodeRequired, field.NewPath("url"), "is required"))
	}
	if in.URL != nil {
		if err := webhooks.ValidateURL(*in.URL, g.AllowPrivate); err != nil {
			errs = append(errs, field.New(field.CodeInvalid, field.NewPath("url"), err.Error()))
		}
	}
	if in.Description != nil && len(*in.Description) > 500 {
		errs = append(errs, field.New(field.CodeRange, field.NewPath("description"), "must be at most 500 characters"))
	}
	cat := g.cat()
	if in.EventTypes != nil {
		for i, t := range *in.EventTypes {
			if !events.KnownType(t, func(name string) bool { _, ok := cat.Resource(name); return ok }) {
				errs = append(errs, field.New(field.CodeOption, field.NewPath("event_types").Index(i), fmt.Sprintf("%q is not an event type", t)))
			}
		}
	}
	if in.Resources != nil {
		for i, r := range *in.Resources {
			if _, ok := cat.Resource(r); !ok && !events.IsNoticeResource(r) {
				errs = append(errs, field.New(field.CodeOption, field.NewPath("resources").Index(i), fmt.Sprintf("%q is not a resource", r)))
			}
		}
	}
	return errs
}

// Then runs inside the transaction of a change to an endpoint with the endpoint before and after it
// (the zero Endpoint before a Create and after a Delete; never with a secret): an error rolls the change
// back. The admin API writes its audit entry there (runtime/admin).
type Then func(ctx context.Context, q store.Querier, before, after Endpoint) error

// Create adds an endpoint of workspace owned by member and returns it with its secret, shown this once.
func (g *Registry) Create(ctx context.Context, workspace, member string, in Input) (Endpoint, error) {
	return g.CreateThen(ctx, workspace, member, in, nil)
}

// CreateThen is Create running then, when set, in its transaction.
func (g *Registry) CreateThen(ctx context.Context, workspace, member string, in Input, then Then) (Endpoint, error) {
	if errs := g.check(in, true); errs != nil {
		return Endpoint{}, errs
	}
	d := g.st.Dialect()
	found, err := store.QueryOne(ctx, g.st, d.Bind("SELECT 1 FROM members WHERE workspace_id = ? AND id = ?", workspace, member), func([]any) error { return nil })
	if err != nil {
		return Endpoint{}, fmt.Errorf("find member %s: %w", member, err)
	}
	if !found {
		return Endpoint{}, field.ErrorList{field.New(field.CodeNotFound, field.NewPath("member"), "no such member in this workspace")}
	}
	secret, err := webhooks.NewSecret()
	if err != nil {
		return Endpoint{}, err
	}
	now := g.now().UTC()
	e := Endpoint{ID: store.NewID(), Workspace: workspace, Member: member, URL: *in.URL, Enabled: true, CreatedAt: now, UpdatedAt: now, Secret: secret}
	if in.Description != nil {
		e.Description = *in.Description
	}
	if in.Enabled != nil {
		e.Enabled = *in.Enabled
	}
	if in.EventTypes != nil {
		e.EventTypes = *in.EventTypes
	}
	if in.Resources != nil {
		e.Resources = *in.Resources
	}
	err = g.st.Tx(ctx, func(q store.Querier) error {
		_, err := q.Exec(ctx, d.Bind(`INSERT INTO webhook_endpoints (workspace_id, id, member_id, url, description, event_types, resources, secret, enabled, created_at, updated_at)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`, workspace, e.ID, member, e.URL, e.Description, jsonList(e.EventTypes), jsonList(e.Resources), secret, e.Enabled, now, now))
		if err != nil {
			return fmt.Errorf("create webhook endpoint: %w", err)
		}
		return runThen(ctx, q, then, Endpoint{}, e)
	})
	if err != nil {
		return Endpoint{}, err
	}
	return e, nil
}

// runThen runs then, when set, with before and after stripped of any secret.
func runThen(ctx context.Context, q store.Querier, then Then, before, after Endpoint) error {
	if then == nil {
		return nil
	}
	before.Secret, after.Secret = "", ""
	return then(ctx, q, before, after)
}

// List returns workspace's endpoints, oldest first.
func (g *Registry) List(ctx context.Context, workspace string) ([]Endpoint, error) {
	return g.query(ctx, "workspace_id = ? ORDER BY created_at, id", workspace)
}

// Get returns endpoint id of workspace, or ErrNotFound.
func (g *Registry) Get(ctx context.Context, workspace, id string) (Endpoint, error) {
	if !model.IsUUID(id) {
		return Endpoint{}, ErrNotFound
	}
	return g.getIn(ctx, g.st, workspace, id)
}

// getIn is Get reading through q (a transaction's).
func (g *Registry) getIn(ctx context.Context, q store.Querier, workspace, id string) (Endpoint, error) {
	if !model.IsUUID(id) {
		return Endpoint{}, ErrNotFound
	}
	list, err := g.queryIn(ctx, q, "workspace_id = ? AND id = ?", workspace, strings.ToLower(id))
	if err != nil {
		return Endpoint{}, err
	}
	if len(list) == 0 {
		return Endpoint{}, ErrNotFound
	}
	return list[0], nil
}

func (g *Registry) query(ctx context.Context, where string, args ...any) ([]Endpoint, error) {
	return g.queryIn(ctx, g.st, where, args...)
}

func (g *Registry) queryIn(ctx context.Context, q store.Querier, where string, args ...any) ([]Endpoint, error) {
	out := []Endpoint{}
	err := q.Query(ctx, g.st.Dialect().Bind("SELECT "+endpointColumns+" FROM webhook_endpoints WHERE "+where, args...), func(row []any) error {
		e, err := scanEndpoint(row)
		if err == nil {
			out = append(out, e)
		}
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("read webhook endpoints: %w", err)
	}
	return out, nil
}

func scanEndpoint(row []any) (Endpoint, error) {
	e := Endpoint{Workspace: store.UUIDText(row[0]), ID: store.UUIDText(row[1]), Member: store.UUIDText(row[2]), URL: store.Text(row[3]),
		Description: store.Text(row[4]), Enabled: store.Bool(row[7]), DisabledReason: store.Text(row[8])}
	var err error
	if e.EventTypes, err = listOf(row[5]); err != nil {
		return e, fmt.Errorf("endpoint %s event_types: %w", e.ID, err)
	}
	if e.Resources, err = listOf(row[6]); err != nil {
		return e, fmt.Errorf("endpoint %s resources: %w", e.ID, err)
	}
	if e.CreatedAt, err = store.Time(row[9]); err != nil {
		return e, err
	}
	if e.UpdatedAt, err = store.Time(row[10]); err != nil {
		return e, err
	}
	return e, nil
}

// Update changes endpoint id of workspace. Enabling an endpoint clears its disabled reason; its
// deliveries that failed while it was failing stay failed (Replay sends them again).
func (g *Registry) Update(ctx context.Context, workspace, id string, in Input) (Endpoint, error) {
	return g.UpdateThen(ctx, workspace, id, in, nil)
}

// UpdateThen is Update running then, when set, in its transaction.
func (g *Registry) UpdateThen(ctx context.Context, workspace, id string, in Input, then Then) (Endpoint, error) {
	if errs := g.check(in, false); errs != nil {
		return Endpoint{}, errs
	}
	var e Endpoint
	err := g.st.Tx(ctx, func(q store.Querier) error {
		var err error
		e, err = g.update(ctx, q, workspace, id, in, then)
		return err
	})
	if err != nil {
		return Endpoint{}, err
	}
	return e, nil
}

func (g *Registry) update(ctx context.Context, q store.Querier, workspace, id string, in Input, then Then) (Endpoint, error) {
	before, err := g.getIn(ctx, q, workspace, id)
	if err != nil {
		return Endpoint{}, err
	}
	e := before
	if in.URL != nil {
		e.URL = *in.URL
	}
	if in.Description != nil {
		e.Description = *in.Description
	}
	if in.EventTypes != nil {
		e.EventTypes = *in.EventTypes
	}
	if in.Resources != nil {
		e.Resources = *in.Resources
	}
	if in.Enabled != nil {
		e.Enabled = *in.Enabled
		e.DisabledReason = ""
	}
	e.UpdatedAt = g.now().UTC()
	// An endpoint enabled again is due at once: its dispatcher finds what is pending (or nothing).
	_, err = q.Exec(ctx, g.st.Dialect().Bind(`UPDATE webhook_endpoints SET url = ?, description = ?, event_types = ?, resources = ?, enabled = ?, disabled_reason = ?, updated_at = ?,
due_at = CASE WHEN ? THEN ? ELSE due_at END WHERE workspace_id = ? AND id = ?`, e.URL, e.Description, jsonList(e.EventTypes), jsonList(e.Resources), e.Enabled, store.Nullable(e.DisabledReason), e.UpdatedAt,
		in.Enabled != nil && *in.Enabled, e.UpdatedAt, workspace, e.ID))
	if err != nil {
		return Endpoint{}, fmt.Errorf("update webhook endpoint: %w", err)
	}
	return e, runThen(ctx, q, then, before, e)
}

// MaxSecretOverlap bounds how long a rotated secret keeps signing beside the new one.
const MaxSecretOverlap = 7 * 24 * time.Hour

// RotateSecret gives endpoint id a new secret and returns the endpoint with it, shown this once. For
// overlap (at most MaxSecretOverlap) the old secret keeps signing too: each delivery carries both
// signatures, so a receiver can switch secrets without missing one.
func (g *Registry) RotateSecret(ctx context.Context, workspace, id string, overlap time.Duration) (Endpoint, error) {
	return g.RotateSecretThen(ctx, workspace, id, overlap, nil)
}

// RotateSecretThen is RotateSecret running then, when set, in its transaction.
func (g *Registry) RotateSecretThen(ctx context.Context, workspace, id string, overlap time.Duration, then Then) (Endpoint, error) {
	if overlap < 0 || overlap > MaxSecretOverlap {
		return Endpoint{}, field.ErrorList{field.New(field.CodeRange, field.NewPath("overlap"), "must be between 0 and 168h")}
	}
	secret, err := webhooks.NewSecret()
	if err != nil {
		return Endpoint{}, err
	}
	now := g.now().UTC()
	d := g.st.Dialect()
	var e Endpoint
	err = g.st.Tx(ctx, func(q store.Querier) error {
		before, err := g.getIn(ctx, q, workspace, id)
		if err != nil {
			return err
		}
		stmt := d.Bind(`UPDATE webhook_endpoints SET previous_secret = NULL, previous_secret_until = NULL, secret = ?, updated_at = ? WHERE workspace_id = ? AND id = ?`,
			secret, now, workspace, before.ID)
		if overlap > 0 {
			stmt = d.Bind(`UPDATE webhook_endpoints SET previous_secret = secret, previous_secret_until = ?, secret = ?, updated_at = ? WHERE workspace_id = ? AND id = ?`,
				now.Add(overlap), secret, now, workspace, before.ID)
		}
		if _, err := q.Exec(ctx, stmt); err != nil {
			return fmt.Errorf("rotate webhook secret: %w", err)
		}
		e = before
		e.UpdatedAt = now
		return runThen(ctx, q, then, before, e)
	})
	if err != nil {
		return Endpoint{}, err
	}
	e.Secret = secret
	return e, nil
}

// Delete removes endpoint id and its pending deliveries; its delivery log goes with it.
func (g *Registry) Delete(ctx context.Context, workspace, id string) error {
	return g.DeleteThen(ctx, workspace, id, nil)
}

// DeleteThen is Delete running then, when set, in its transaction.
func (g *Registry) DeleteThen(ctx context.Context, workspace, id string, then Then) error {
	d := g.st.Dialect()
	return g.st.Tx(ctx, func(q store.Querier) error {
		e, err := g.getIn(ctx, q, workspace, id)
		if err != nil {
			return err
		}
		for _, t := range []string{"webhook_attempts", "webhook_deliveries", "webhook_endpoints"} {
			col := "endpoint_id"
			if t == "webhook_endpoints" {
				col = "id"
			}
			if _, err := q.Exec(ctx, d.Bind("DELETE FROM "+t+" WHERE workspace_id = ? AND "+col+" = ?", workspace, e.ID)); err != nil {
				return fmt.Errorf("delete webhook endpoint: %s: %w", t, err)
			}
		}
		return runThen(ctx, q, then, e, Endpoint{})
	})
}

// Numbered implements events.Subscriber: inside the numbering transaction q, one pending delivery per
// event and matching enabled endpoint of workspace. Whoever numbers events (a server, or recordsctl
// after an import) subscribes the registry, so no numbered event lacks its deliveries.
func (g *Registry) Numbered(ctx context.Context, q store.Querier, workspace string, evs []events.Numbered) error {
	dl := g.st.Dialect()
	var eps []Endpoint
	// The rows stay locked until the numbering commits: see Dispatcher.release.
	err := q.Query(ctx, dl.Bind("SELECT "+endpointColumns+" FROM webhook_endpoints WHERE workspace_id = ? AND enabled = ?"+forUpdate(dl), workspace, true), func(row []any) error {
		e, err := scanEndpoint(row)
		if err == nil {
			eps = append(eps, e)
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("webhook endpoints: %w", err)
	}
	if len(eps) == 0 {
		return nil
	}
	now := g.now().UTC()
	rows := sqlgen.Rows{Table: "webhook_deliveries", Columns: deliveryColumns}
	touched := map[string]bool{}
	for _, ev := range evs {
		for _, ep := range eps {
			if ep.matches(ev.Type, ev.Resource) {
				rows.Values = append(rows.Values, []any{store.NewID(), workspace, ep.ID, ev.ID, ev.Seq, StatePending, 0, dl.Arg(now), dl.Arg(now)})
				touched[ep.ID] = true
			}
		}
	}
	if err := store.LaterRows(ctx, q, dl, rows, func(err error) error { return fmt.Errorf("webhook deliveries: %w", err) }); err != nil {
		return err
	}
	return markDue(ctx, q, dl, workspace, touched, now)
}

// deliveryColumns are the columns a new delivery fills.
var deliveryColumns = []string{"id", "workspace_id", "endpoint_id", "event_id", "seq", "state", "attempts", "next_at", "created_at"}

// markDue makes the endpoints that got deliveries due at now when nothing made them due before (a due_at
// already set is their first delivery's, earlier, or its retry's, which the new ones wait behind).
// The caller holds their rows locked.
func markDue(ctx context.Context, q store.Querier, dl sqlgen.Dialect, workspace string, endpoints map[string]bool, now time.Time) error {
	for id := range endpoints {
		if err := store.Later(ctx, q, dl.Bind("UPDATE webhook_endpoints SET due_at = ? WHERE workspace_id = ? AND id = ? AND due_at IS NULL", now, workspace, id), false,
			func(err error) error { return fmt.Errorf("webhook endpoint due: %w", err) }); err != nil {
			return err
		}
	}
	return nil
}

// forUpdate locks the rows a SELECT reads until the transaction ends (PostgreSQL; SQLite's one writer
// needs none).
func forUpdate(dl sqlgen.Dialect) string {
	if dl.Kind() == sqlgen.SQLite {
		return ""
	}
	return " FOR UPDATE"
}

// Committed implements events.Subscriber: nothing to do without a dispatcher (a server's finds the
// deliveries when it next looks).
func (g *Registry) Committed(string) {}

// matches reports whether e takes an event of type typ about resource.
func (e Endpoint) matches(typ, resource string) bool {
	return e.Enabled && (e.EventTypes == nil || slices.Contains(e.EventTypes, typ)) && (e.Resources == nil || slices.Contains(e.Resources, resource))
}

func jsonList(l []string) any {
	if l == nil {
		return nil
	}
	data, _ := json.Marshal(l)
	return string(data)
}

func listOf(v any) ([]string, error) {
	if v == nil {
		return nil, nil
	}
	var out []string
	if err := json.Unmarshal(store.JSON(v), &out); err != nil {
		return nil, err
	}
	return out, nil
}

package dispatch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/workspace-records/records/engine/sqlgen"
	"github.com/workspace-records/records/runtime/events"
	"github.com/workspace-records/records/runtime/metrics"
	"github.com/workspace-records/records/runtime/records"
	"github.com/workspace-records/records/runtime/store"
	"github.com/workspace-records/records/runtime/webhooks"
)

// Delivery states.
const (
	StatePending   = "pending"   // due at next_at, or being attempted under a lease
	StateDelivered = "delivered" // an attempt got a 2xx
	StateFailed    = "failed"    // every attempt of the schedule failed (the endpoint was disabled)
	StateSkipped   = "skipped"   // the endpoint's owner may not read the event (or it left the feed): nothing sent
)

// Defaults of a Dispatcher.
const (
	DefaultConcurrency = 16
	// DefaultLease is how long a server holds an endpoint it delivers to. A server gives the endpoint up
	// after Lease/4 (DrainFor) and an attempt takes at most webhooks.DefaultTimeout, so a live server
	// never loses one; a killed server's endpoint is taken by another once the lease passes.
	DefaultLease = time.Minute
	// DefaultPoll is how often a server looks for endpoints that came due without a kick (retries coming
	// due, deliveries another server created).
	DefaultPoll = time.Second
	// drainBatch is how many pending deliveries of one endpoint are read at once.
	drainBatch = 100
)

// Dispatcher delivers to the endpoints that are due. Every server runs one.
//
// It leases endpoints, not deliveries: an endpoint is due when its first pending delivery is
// (webhook_endpoints.due_at), and the server holding its lease sends its pending deliveries one after
// another in sequence order, the event, the owner's view and the secrets read once per batch, until
// one fails (its retry time becomes the endpoint's due_at), none is left or its time share ends. Then
// it gives the lease up with the new due_at. The numbering transaction locks the endpoint's row while
// it adds deliveries and sets a missing due_at, and giving the lease up locks it before reading what is
// pending, so a delivery added meanwhile is never left without a due time.
type Dispatcher struct {
	st     store.Store
	reg    *Registry
	gens   Generations // the record service of the definitions served, held while a lease is drained
	seq    *events.Sequencer
	client *http.Client
	owner  string
	// Metrics counts attempts by outcome and the delivery lag (nil: none).
	Metrics *metrics.Metrics
	// Now is the clock of schedules and leases (time.Now); tests move it forward a day.
	Now func() time.Time
	// Schedule returns the wait before the next attempt after attempts failed ones, false when the
	// schedule is spent (webhooks.NextAttempt with jitter).
	Schedule func(attempts int) (time.Duration, bool)
	// Concurrency is how many endpoints a server delivers to at once.
	Concurrency int
	// Lease is how long a server holds an endpoint (the setting webhook_lease).
	Lease time.Duration
	Poll  time.Duration

	kick chan struct{}
}

// Generations gives the record service of the definitions version served now, held (its generation
// not drained) until release is called: a server's generations (runtime/server).
type Generations func() (svc *records.Service, release func())

// NewDispatcher returns a dispatcher of reg's endpoints whose payloads the record service of gens
// shapes, posting with client (webhooks.NewClient), that writes its notices through seq.
func NewDispatcher(st store.Store, reg *Registry, gens Generations, seq *events.Sequencer, client *http.Client) *Dispatcher {
	return &Dispatcher{st: st, reg: reg, gens: gens, seq: seq, client: client, owner: uuid.NewString(), Now: time.Now,
		Schedule:    func(n int) (time.Duration, bool) { return webhooks.NextAttempt(n, rand.Float64) },
		Concurrency: DefaultConcurrency, Lease: DefaultLease, Poll: DefaultPoll, kick: make(chan struct{}, 1)}
}

// SetOwner names the server this dispatcher delivers for in webhook_endpoints.lease_owner and
// webhook_attempts.server (by default a random id of its own): recordsd gives its server_instances id,
// whose row says which host and process hold an endpoint's lease and made an attempt. Call it before Run.
func (d *Dispatcher) SetOwner(id string) { d.owner = id }

// Numbered implements events.Subscriber (Registry.Numbered).
func (d *Dispatcher) Numbered(ctx context.Context, q store.Querier, workspace string, evs []events.Numbered) error {
	return d.reg.Numbered(ctx, q, workspace, evs)
}

// Committed implements events.Subscriber: the deliveries just created are due now.
func (d *Dispatcher) Committed(string) { d.Kick() }

// Kick makes Run look for due endpoints now.
func (d *Dispatcher) Kick() {
	select {
	case d.kick <- struct{}{}:
	default:
	}
}

// Run delivers to due endpoints until ctx ends.
func (d *Dispatcher) Run(ctx context.Context, log *slog.Logger) {
	t := time.NewTicker(d.Poll)
	defer t.Stop()
	for ctx.Err() == nil {
		n, err := d.RunOnce(ctx)
		if err != nil && ctx.Err() == nil {
			log.Warn("webhook deliveries", "err", err)
		}
		if n > 0 && err == nil {
			continue // an endpoint given up for fairness may be due again at once
		}
		select {
		case <-ctx.Done():
		case <-d.kick:
		case <-t.C:
		}
	}
}

// leased is an endpoint this server holds the lease of.
type leased struct{ workspace, endpoint string }

// claimed is a pending delivery of a leased endpoint.
type claimed struct {
	id, workspace, endpoint, event string
	seq                            int64
	attempts                       int
	next                           time.Time
}

// RunOnce leases the due endpoints (at most Concurrency), delivers to them at once, and returns how many
// endpoints it served.
func (d *Dispatcher) RunOnce(ctx context.Context) (int, error) {
	eps, err := d.claim(ctx)
	if err != nil || len(eps) == 0 {
		return 0, err
	}
	var wg sync.WaitGroup
	errs := make([]error, len(eps))
	for i, l := range eps {
		wg.Go(func() { errs[i] = d.drain(ctx, l) })
	}
	wg.Wait()
	return len(eps), errors.Join(errs...)
}

// claim leases the endpoints that are due: enabled, due_at passed, not leased by a live server.
func (d *Dispatcher) claim(ctx context.Context) ([]leased, error) {
	dl := d.st.Dialect()
	now := d.Now().UTC()
	lock := " FOR UPDATE SKIP LOCKED"
	if dl.Kind() == sqlgen.SQLite {
		lock = "" // one process, one writer
	}
	var out []leased
	// In a transaction: on SQLite, only the writer's connection writes.
	err := d.st.Tx(ctx, func(q store.Querier) error {
		out = out[:0]
		return q.Query(ctx, dl.Bind(`UPDATE webhook_endpoints SET lease_owner = ?, lease_until = ?
WHERE id IN (SELECT e.id FROM webhook_endpoints e
  WHERE e.due_at IS NOT NULL AND e.due_at <= ? AND e.enabled = ? AND (e.lease_until IS NULL OR e.lease_until < ?)
  ORDER BY e.due_at LIMIT ?`+lock+`)
RETURNING workspace_id, id`, d.owner, now.Add(d.Lease), now, true, now, d.Concurrency), func(row []any) error {
			out = append(out, leased{workspace: store.UUIDText(row[0]), endpoint: store.UUIDText(row[1])})
			return nil
		})
	})
	if err != nil {
		return nil, fmt.Errorf("lease webhook endpoints: %w", err)
	}
	return out, nil
}

// drain sends l's pending deliveries in sequence order until one fails, none is due, or its share of the
// lease (Lease/4) is spent, then gives the lease up. Every payload of one drain is shaped by the
// definitions version served when it began.
func (d *Dispatcher) drain(ctx context.Context, l leased) error {
	svc, done := d.gens()
	defer done()
	wctx := store.WithWorkspace(ctx, l.workspace)
	until := d.Now().Add(d.Lease / 4)
	ep, secrets, err := d.reg.signing(wctx, l.workspace, l.endpoint, d.Now())
	if errors.Is(err, ErrNotFound) {
		return nil // deleted meanwhile, with its deliveries
	}
	if err != nil {
		return d.release(ctx, l, err)
	}
	owner, err := svc.MemberActor(wctx, l.workspace, ep.Member)
	ownerGone := errors.Is(err, records.ErrMemberNotFound)
	if err != nil && !ownerGone {
		return d.release(ctx, l, err)
	}
	for {
		batch, err := d.pending(wctx, l)
		if err != nil || len(batch) == 0 {
			return d.release(ctx, l, err)
		}
		ids := make([]string, len(batch))
		for i, c := range batch {
			ids[i] = c.event
		}
		evs, err := events.ReadIDs(wctx, d.st, l.workspace, ids)
		if err != nil {
			return d.release(ctx, l, err)
		}
		for _, c := range batch {
			if now := d.Now(); c.next.After(now) || now.After(until) || ctx.Err() != nil {
				return d.release(ctx, l, nil) // the first is waiting for its retry, or the share is spent
			}
			stored, found := evs[c.event]
			if !found || ownerGone {
				// Past the feed's retention, or the owner left the workspace: nothing to send.
				if err := d.skip(wctx, c); err != nil {
					return d.release(ctx, l, err)
				}
				continue
			}
			ev, visible, err := svc.EventFor(wctx, owner, stored)
			if err != nil {
				return d.release(ctx, l, err)
			}
			if !visible {
				if err := d.skip(wctx, c); err != nil {
					return d.release(ctx, l, err)
				}
				continue
			}
			body, err := json.Marshal(ev)
			if err != nil {
				return d.release(ctx, l, fmt.Errorf("webhook payload of event %s: %w", ev.ID, err))
			}
			at := d.Now()
			a := webhooks.Deliver(ctx, d.client, ep.URL, secrets[0], ev.ID, at, body, secrets[1:]...)
			if a.Outcome == webhooks.OutcomeCanceled {
				// The server is stopping: not an attempt. The lease ends and another server (or this
				// one, restarted) makes it.
				return d.release(context.WithoutCancel(ctx), l, nil)
			}
			d.Metrics.WebhookAttempt(a.Outcome.String(), a.Outcome == webhooks.OutcomeDelivered, at.Sub(stored.CreatedAt))
			more, err := d.record(context.WithoutCancel(wctx), c, ep, a, at)
			if err != nil {
				return d.release(ctx, l, err)
			}
			if !more {
				return nil // record gave the lease up
			}
		}
	}
}

// pending reads the first pending deliveries of l's endpoint, in sequence order.
func (d *Dispatcher) pending(ctx context.Context, l leased) ([]claimed, error) {
	var out []claimed
	err := d.st.Query(ctx, d.st.Dialect().Bind(fmt.Sprintf(`SELECT id, event_id, seq, attempts, next_at FROM webhook_deliveries
WHERE endpoint_id = ? AND state = 'pending' ORDER BY seq, id LIMIT %d`, drainBatch), l.endpoint), func(row []any) error {
		c := claimed{id: store.UUIDText(row[0]), workspace: l.workspace, endpoint: l.endpoint, event: store.UUIDText(row[1]),
			seq: store.Int(row[2]), attempts: int(store.Int(row[3]))}
		var err error
		c.next, err = store.Time(row[4])
		out = append(out, c)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("pending webhook deliveries: %w", err)
	}
	return out, nil
}

// lockOwned locks endpoint's row inside q (PostgreSQL) and reports whether this server still holds its
// lease.
func (d *Dispatcher) lockOwned(ctx context.Context, q store.Querier, endpoint string) (bool, error) {
	dl := d.st.Dialect()
	lock := " FOR UPDATE"
	if dl.Kind() == sqlgen.SQLite {
		lock = ""
	}
	owned := false
	_, err := store.QueryOne(ctx, q, dl.Bind("SELECT lease_owner FROM webhook_endpoints WHERE id = ?"+lock, endpoint), func(row []any) error {
		owned = store.Text(row[0]) == d.owner
		return nil
	})
	if err != nil {
		return false, fmt.Errorf("lock webhook endpoint: %w", err)
	}
	return owned, nil
}

// release gives l's lease up, its due_at the time of its first pending delivery (none: NULL), and
// returns cause. The row is locked before the pending deliveries are read, so a numbering transaction
// that adds one either committed before (and is seen) or finds due_at NULL after (and sets it).
func (d *Dispatcher) release(ctx context.Context, l leased, cause error) error {
	dl := d.st.Dialect()
	err := d.st.Tx(context.WithoutCancel(ctx), func(q store.Querier) error {
		if owned, err := d.lockOwned(ctx, q, l.endpoint); err != nil || !owned {
			return err
		}
		var due any
		if _, err := store.QueryOne(ctx, q, dl.Bind("SELECT min(next_at) FROM webhook_deliveries WHERE endpoint_id = ? AND state = 'pending'", l.endpoint), func(row []any) error {
			due = row[0]
			return nil
		}); err != nil {
			return fmt.Errorf("next webhook delivery: %w", err)
		}
		_, err := q.Exec(ctx, dl.Bind("UPDATE webhook_endpoints SET due_at = ?, lease_owner = NULL, lease_until = NULL WHERE id = ? AND lease_owner = ?", due, l.endpoint, d.owner))
		return err
	})
	if err != nil {
		err = fmt.Errorf("give webhook endpoint %s up: %w", l.endpoint, err)
	}
	return errors.Join(cause, err)
}

// record writes attempt a of c in the log and schedules what follows, and reports whether the drain goes
// on: it does when delivered; otherwise the next attempt's time becomes the endpoint's due_at and the
// lease is given up, or, the schedule spent, the delivery failed, the endpoint is disabled and its owner
// told (a webhook_endpoints.disabled notice in the feed). An attempt made after the lease passed is
// logged and changes nothing else: the server that took the endpoint decides.
func (d *Dispatcher) record(ctx context.Context, c claimed, ep Endpoint, a webhooks.Attempt, at time.Time) (bool, error) {
	dl := d.st.Dialect()
	n := c.attempts + 1
	now := d.Now().UTC()
	var status any
	if a.Status != 0 {
		status = a.Status
	}
	more, disabled := false, false
	err := d.st.Tx(ctx, func(q store.Querier) error {
		more, disabled = false, false
		owned, err := d.lockOwned(ctx, q, c.endpoint)
		if err != nil {
			return err
		}
		if err := store.Later(ctx, q, dl.Bind(`INSERT INTO webhook_attempts (delivery_id, n, workspace_id, endpoint_id, at, status, outcome, latency_ms, error, response, server)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`, c.id, n, c.workspace, c.endpoint, at.UTC(), status, a.Outcome.String(), a.Latency.Milliseconds(), store.Nullable(a.Err), store.Nullable(a.ResponseExcerpt), d.owner), false,
			func(err error) error { return fmt.Errorf("log webhook attempt: %w", err) }); err != nil {
			return err
		}
		if !owned {
			return nil
		}
		state, next, done := StatePending, now, any(nil)
		switch wait, again := d.Schedule(n); {
		case a.Outcome == webhooks.OutcomeDelivered:
			state, done, more = StateDelivered, now, true
		case again:
			next = now.Add(max(wait, min(a.RetryAfter, time.Hour)))
		default:
			state, done, disabled = StateFailed, now, true
		}
		if err := store.Later(ctx, q, dl.Bind(`UPDATE webhook_deliveries SET state = ?, attempts = ?, next_at = ?, done_at = ?, last_status = ?, last_outcome = ?, last_error = ?
WHERE id = ?`, state, n, next, done, status, a.Outcome.String(), store.Nullable(a.Err), c.id), false,
			func(err error) error { return fmt.Errorf("schedule webhook delivery: %w", err) }); err != nil {
			return err
		}
		switch {
		case more:
			return nil
		case !disabled:
			_, err := q.Exec(ctx, dl.Bind("UPDATE webhook_endpoints SET due_at = ?, lease_owner = NULL, lease_until = NULL WHERE id = ?", next, c.endpoint))
			return err
		}
		reason := fmt.Sprintf("every attempt to deliver event %d failed for %s (last: %s)", c.seq, webhooks.NominalRetrySpan.Round(time.Minute), a.Outcome)
		if _, err := q.Exec(ctx, dl.Bind("UPDATE webhook_endpoints SET enabled = ?, disabled_reason = ?, due_at = NULL, lease_owner = NULL, lease_until = NULL, updated_at = ? WHERE workspace_id = ? AND id = ?",
			false, reason, now, c.workspace, c.endpoint)); err != nil {
			return fmt.Errorf("disable webhook endpoint: %w", err)
		}
		return events.Write(ctx, q, dl, events.Actor{Workspace: c.workspace}, now, []events.Event{{
			Type: events.EndpointDisabled, Resource: events.EndpointsResource, RecordID: c.endpoint,
			Data: map[string]any{"endpoint_id": c.endpoint, "url": ep.URL, "member_id": ep.Member, "reason": reason, "failed_event_sequence": c.seq},
		}})
	})
	if err != nil {
		return false, err
	}
	if disabled && d.seq != nil {
		d.seq.Kick(c.workspace)
	}
	return more, nil
}

// skip ends c without an attempt: the endpoint's owner may not read its event, or it left the feed.
func (d *Dispatcher) skip(ctx context.Context, c claimed) error {
	_, err := d.st.Exec(ctx, d.st.Dialect().Bind("UPDATE webhook_deliveries SET state = ?, done_at = ? WHERE id = ? AND state = 'pending'",
		StateSkipped, d.Now().UTC(), c.id))
	if err != nil {
		return fmt.Errorf("skip webhook delivery: %w", err)
	}
	return nil
}

// signing returns endpoint id with the secrets that sign now: its secret, then the previous one while a
// rotation's overlap lasts.
func (g *Registry) signing(ctx context.Context, workspace, id string, now time.Time) (Endpoint, []string, error) {
	var secrets []string
	var ep Endpoint
	found, err := store.QueryOne(ctx, g.st, g.st.Dialect().Bind("SELECT "+endpointColumns+", secret, previous_secret, previous_secret_until FROM webhook_endpoints WHERE workspace_id = ? AND id = ?", workspace, id), func(row []any) error {
		var err error
		if ep, err = scanEndpoint(row); err != nil {
			return err
		}
		secrets = append(secrets, store.Text(row[11]))
		if prev := store.Text(row[12]); prev != "" && row[13] != nil {
			until, err := store.Time(row[13])
			if err != nil {
				return err
			}
			if now.Before(until) {
				secrets = append(secrets, prev)
			}
		}
		return nil
	})
	if err != nil {
		return Endpoint{}, nil, fmt.Errorf("webhook endpoint %s: %w", id, err)
	}
	if !found {
		return Endpoint{}, nil, ErrNotFound
	}
	return ep, secrets, nil
}

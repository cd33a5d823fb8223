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
	// DefaultLease is how long a server holds a delivery it attempts: longer than an attempt can take
	// (webhooks.DefaultTimeout), so a live server never loses one; a killed server's deliveries are
	// attempted again by another once it passes.
	DefaultLease = time.Minute
	// DefaultPoll is how often a server looks for due deliveries that no kick announced (retries coming
	// due, deliveries another server created).
	DefaultPoll = time.Second
)

// Dispatcher attempts due deliveries. Every server runs one.
type Dispatcher struct {
	st     store.Store
	reg    *Registry
	svc    *records.Service
	seq    *events.Sequencer
	client *http.Client
	owner  string
	// Metrics counts attempts by outcome and the delivery lag (nil: none).
	Metrics *metrics.Metrics
	// Now is the clock of schedules and leases (time.Now); tests move it forward a day.
	Now func() time.Time
	// Schedule returns the wait before the next attempt after attempts failed ones, false when the
	// schedule is spent (webhooks.NextAttempt with jitter).
	Schedule    func(attempts int) (time.Duration, bool)
	Concurrency int
	Lease       time.Duration
	Poll        time.Duration

	kick chan struct{}
}

// NewDispatcher returns a dispatcher of reg's endpoints whose payloads svc shapes, posting with client
// (webhooks.NewClient), that writes its notices through seq.
func NewDispatcher(st store.Store, reg *Registry, svc *records.Service, seq *events.Sequencer, client *http.Client) *Dispatcher {
	return &Dispatcher{st: st, reg: reg, svc: svc, seq: seq, client: client, owner: uuid.NewString(), Now: time.Now,
		Schedule:    func(n int) (time.Duration, bool) { return webhooks.NextAttempt(n, rand.Float64) },
		Concurrency: DefaultConcurrency, Lease: DefaultLease, Poll: DefaultPoll, kick: make(chan struct{}, 1)}
}

// Numbered implements events.Subscriber (Registry.Numbered).
func (d *Dispatcher) Numbered(ctx context.Context, q store.Querier, workspace string, evs []events.Numbered) error {
	return d.reg.Numbered(ctx, q, workspace, evs)
}

// Committed implements events.Subscriber: the deliveries just created are due now.
func (d *Dispatcher) Committed(string) { d.Kick() }

// Kick makes Run look for due deliveries now.
func (d *Dispatcher) Kick() {
	select {
	case d.kick <- struct{}{}:
	default:
	}
}

// Run attempts due deliveries until ctx ends.
func (d *Dispatcher) Run(ctx context.Context, log *slog.Logger) {
	t := time.NewTicker(d.Poll)
	defer t.Stop()
	for ctx.Err() == nil {
		n, err := d.RunOnce(ctx)
		if err != nil && ctx.Err() == nil {
			log.Warn("webhook deliveries", "err", err)
		}
		if n > 0 && err == nil {
			continue // more may be due at once: the next of each endpoint
		}
		select {
		case <-ctx.Done():
		case <-d.kick:
		case <-t.C:
		}
	}
}

// claimed is a delivery this server holds the lease of.
type claimed struct {
	id, workspace, endpoint, event string
	seq                            int64
	attempts                       int
}

// RunOnce leases the due deliveries (at most Concurrency), attempts them at once, and returns how many
// it attempted.
func (d *Dispatcher) RunOnce(ctx context.Context) (int, error) {
	batch, err := d.claim(ctx)
	if err != nil || len(batch) == 0 {
		return 0, err
	}
	var wg sync.WaitGroup
	errs := make([]error, len(batch))
	for i, c := range batch {
		wg.Go(func() { errs[i] = d.attempt(ctx, c) })
	}
	wg.Wait()
	return len(batch), errors.Join(errs...)
}

// claim leases the deliveries that are due: pending, past next_at, not leased by a live attempt, of an
// enabled endpoint, and the first pending one of their endpoint (sequence order).
func (d *Dispatcher) claim(ctx context.Context) ([]claimed, error) {
	dl := d.st.Dialect()
	now := d.Now().UTC()
	lock := " FOR UPDATE SKIP LOCKED"
	if dl.Kind() == sqlgen.SQLite {
		lock = "" // one process, one writer
	}
	var out []claimed
	// In a transaction: on SQLite, only the writer's connection writes.
	err := d.st.Tx(ctx, func(q store.Querier) error {
		out = out[:0]
		return q.Query(ctx, dl.Bind(`UPDATE webhook_deliveries SET lease_owner = ?, lease_until = ?
WHERE id IN (SELECT w.id FROM webhook_deliveries w
  WHERE w.state = 'pending' AND w.next_at <= ? AND (w.lease_until IS NULL OR w.lease_until < ?)
    AND EXISTS (SELECT 1 FROM webhook_endpoints e WHERE e.id = w.endpoint_id AND e.enabled = ?)
    AND NOT EXISTS (SELECT 1 FROM webhook_deliveries o WHERE o.endpoint_id = w.endpoint_id AND o.state = 'pending'
      AND (o.seq < w.seq OR (o.seq = w.seq AND o.id < w.id)))
  ORDER BY w.next_at LIMIT ?`+lock+`)
RETURNING id, workspace_id, endpoint_id, event_id, seq, attempts`, d.owner, now.Add(d.Lease), now, now, true, d.Concurrency), func(row []any) error {
			out = append(out, claimed{id: store.UUIDText(row[0]), workspace: store.UUIDText(row[1]), endpoint: store.UUIDText(row[2]),
				event: store.UUIDText(row[3]), seq: store.Int(row[4]), attempts: int(store.Int(row[5]))})
			return nil
		})
	})
	if err != nil {
		return nil, fmt.Errorf("lease webhook deliveries: %w", err)
	}
	return out, nil
}

// attempt makes one attempt of c and records it.
func (d *Dispatcher) attempt(ctx context.Context, c claimed) error {
	wctx := store.WithWorkspace(ctx, c.workspace)
	ep, secrets, err := d.reg.signing(wctx, c.workspace, c.endpoint, d.Now())
	if errors.Is(err, ErrNotFound) {
		return nil // deleted meanwhile, with its deliveries
	}
	if err != nil {
		return err
	}
	stored, found, err := events.ReadOne(wctx, d.st, c.workspace, c.event)
	if err != nil {
		return err
	}
	if !found {
		return d.finish(wctx, c, StateSkipped) // past the feed's retention
	}
	owner, err := d.svc.MemberActor(wctx, c.workspace, ep.Member)
	if errors.Is(err, records.ErrMemberNotFound) {
		return d.finish(wctx, c, StateSkipped)
	}
	if err != nil {
		return err
	}
	ev, visible, err := d.svc.EventFor(wctx, owner, stored)
	if err != nil {
		return err
	}
	if !visible {
		return d.finish(wctx, c, StateSkipped)
	}
	body, err := json.Marshal(ev)
	if err != nil {
		return fmt.Errorf("webhook payload of event %s: %w", ev.ID, err)
	}
	at := d.Now()
	a := webhooks.Deliver(ctx, d.client, ep.URL, secrets[0], ev.ID, at, body, secrets[1:]...)
	if a.Outcome == webhooks.OutcomeCanceled {
		// The server is stopping: not an attempt. The lease ends and another server (or this one,
		// restarted) attempts it.
		_, err := d.st.Exec(context.WithoutCancel(wctx), d.st.Dialect().Bind("UPDATE webhook_deliveries SET lease_owner = NULL, lease_until = NULL WHERE id = ? AND lease_owner = ?", c.id, d.owner))
		return err
	}
	d.Metrics.WebhookAttempt(a.Outcome.String(), a.Outcome == webhooks.OutcomeDelivered, at.Sub(stored.CreatedAt))
	return d.record(context.WithoutCancel(wctx), c, ep, a, at)
}

// record writes attempt a of c in the log and schedules what follows: done when delivered, the next
// attempt when the schedule has one, and otherwise the end: the delivery failed, the endpoint is
// disabled and its owner told (a webhook_endpoints.disabled notice in the feed).
func (d *Dispatcher) record(ctx context.Context, c claimed, ep Endpoint, a webhooks.Attempt, at time.Time) error {
	dl := d.st.Dialect()
	n := c.attempts + 1
	now := d.Now().UTC()
	var status any
	if a.Status != 0 {
		status = a.Status
	}
	disabled := false
	err := d.st.Tx(ctx, func(q store.Querier) error {
		_, err := q.Exec(ctx, dl.Bind(`INSERT INTO webhook_attempts (delivery_id, n, workspace_id, endpoint_id, at, status, outcome, latency_ms, error, response, server)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`, c.id, n, c.workspace, c.endpoint, at.UTC(), status, a.Outcome.String(), a.Latency.Milliseconds(), nullable(a.Err), nullable(a.ResponseExcerpt), d.owner))
		if err != nil {
			return fmt.Errorf("log webhook attempt: %w", err)
		}
		state, next, done := StatePending, now, any(nil)
		switch wait, more := d.Schedule(n); {
		case a.Outcome == webhooks.OutcomeDelivered:
			state, done = StateDelivered, now
		case more:
			next = now.Add(max(wait, min(a.RetryAfter, time.Hour)))
		default:
			state, done, disabled = StateFailed, now, true
		}
		res, err := q.Exec(ctx, dl.Bind(`UPDATE webhook_deliveries SET state = ?, attempts = ?, next_at = ?, done_at = ?, lease_owner = NULL, lease_until = NULL,
last_status = ?, last_outcome = ?, last_error = ? WHERE id = ? AND lease_owner = ?`, state, n, next, done, status, a.Outcome.String(), nullable(a.Err), c.id, d.owner))
		if err != nil {
			return fmt.Errorf("schedule webhook delivery: %w", err)
		}
		if res == 0 {
			// The lease passed and another server took the delivery: its outcome stands; this attempt
			// stays in the log.
			disabled = false
			return nil
		}
		if !disabled {
			return nil
		}
		reason := fmt.Sprintf("every attempt to deliver event %d failed for %s (last: %s)", c.seq, webhooks.NominalRetrySpan.Round(time.Minute), a.Outcome)
		if _, err := q.Exec(ctx, dl.Bind("UPDATE webhook_endpoints SET enabled = ?, disabled_reason = ?, updated_at = ? WHERE workspace_id = ? AND id = ?", false, reason, now, c.workspace, c.endpoint)); err != nil {
			return fmt.Errorf("disable webhook endpoint: %w", err)
		}
		return events.Write(ctx, q, dl, events.Actor{Workspace: c.workspace}, now, []events.Event{{
			Type: events.EndpointDisabled, Resource: events.EndpointsResource, RecordID: c.endpoint,
			Data: map[string]any{"endpoint_id": c.endpoint, "url": ep.URL, "member_id": ep.Member, "reason": reason, "failed_event_sequence": c.seq},
		}})
	})
	if err == nil && disabled && d.seq != nil {
		d.seq.Kick(c.workspace)
	}
	return err
}

// finish ends c without an attempt.
func (d *Dispatcher) finish(ctx context.Context, c claimed, state string) error {
	_, err := d.st.Exec(ctx, d.st.Dialect().Bind("UPDATE webhook_deliveries SET state = ?, done_at = ?, lease_owner = NULL, lease_until = NULL WHERE id = ? AND lease_owner = ?",
		state, d.Now().UTC(), c.id, d.owner))
	if err != nil {
		return fmt.Errorf("end webhook delivery: %w", err)
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

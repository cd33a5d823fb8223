package dispatch

import (
	"context"
	"fmt"
	"time"

	"github.com/workspace-records/records/engine/sqlgen"
	"github.com/workspace-records/records/runtime/events"
	"github.com/workspace-records/records/runtime/store"
)

// Delivery is one event's delivery to an endpoint, with its attempts.
type Delivery struct {
	ID          string     `json:"id"`
	EndpointID  string     `json:"endpoint_id"`
	EventID     string     `json:"event_id"`
	Sequence    int64      `json:"sequence"`
	State       string     `json:"state"`
	Attempts    []Attempt  `json:"attempts"`
	NextAttempt *time.Time `json:"next_attempt_at"` // while pending
	CreatedAt   time.Time  `json:"created_at"`
	DoneAt      *time.Time `json:"done_at"`
}

// Attempt is one attempt of a delivery, as logged.
type Attempt struct {
	N         int       `json:"n"`
	At        time.Time `json:"at"`
	Status    *int      `json:"status"` // the receiver's HTTP status; nil when none came
	Outcome   string    `json:"outcome"`
	LatencyMS int64     `json:"latency_ms"`
	Error     string    `json:"error,omitempty"`
	Response  string    `json:"response,omitempty"` // the start of the receiver's answer
}

// Deliveries returns the newest deliveries (at most limit) of endpoint id of workspace, newest first,
// with their attempts; state "" is every state.
func (g *Registry) Deliveries(ctx context.Context, workspace, id, state string, limit int) ([]Delivery, error) {
	return g.DeliveriesBefore(ctx, workspace, id, state, limit, nil)
}

// Place is a delivery's place in an endpoint's log, newest first: by the event's sequence, then the
// delivery's id (a replay delivers an event again).
type Place struct {
	Seq int64
	ID  string
}

// DeliveriesBefore is Deliveries continuing past before (nil: from the newest): the deliveries that
// come after it, newest first, are older.
func (g *Registry) DeliveriesBefore(ctx context.Context, workspace, id, state string, limit int, before *Place) ([]Delivery, error) {
	ep, err := g.Get(ctx, workspace, id)
	if err != nil {
		return nil, err
	}
	d := g.st.Dialect()
	where, args := "workspace_id = ? AND endpoint_id = ?", []any{workspace, ep.ID}
	if state != "" {
		where += " AND state = ?"
		args = append(args, state)
	}
	if before != nil {
		where += " AND (seq < ? OR (seq = ? AND id < ?))"
		args = append(args, before.Seq, before.Seq, before.ID)
	}
	out := []Delivery{}
	byID := map[string]int{}
	err = g.st.Query(ctx, d.Bind(fmt.Sprintf("SELECT id, event_id, seq, state, next_at, created_at, done_at FROM webhook_deliveries WHERE %s ORDER BY seq DESC, id DESC LIMIT %d", where, max(limit, 1)), args...), func(row []any) error {
		dv := Delivery{ID: store.UUIDText(row[0]), EndpointID: ep.ID, EventID: store.UUIDText(row[1]), Sequence: store.Int(row[2]), State: store.Text(row[3]), Attempts: []Attempt{}}
		var err error
		if dv.State == StatePending {
			next, err := store.Time(row[4])
			if err != nil {
				return err
			}
			dv.NextAttempt = &next
		}
		if dv.CreatedAt, err = store.Time(row[5]); err != nil {
			return err
		}
		if row[6] != nil {
			done, err := store.Time(row[6])
			if err != nil {
				return err
			}
			dv.DoneAt = &done
		}
		byID[dv.ID] = len(out)
		out = append(out, dv)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("webhook deliveries: %w", err)
	}
	if len(out) == 0 {
		return out, nil
	}
	ids := make([]any, 0, len(out)+1)
	ids = append(ids, workspace)
	marks := ""
	for i, dv := range out {
		if i > 0 {
			marks += ", "
		}
		marks += "?"
		ids = append(ids, dv.ID)
	}
	err = g.st.Query(ctx, d.Bind("SELECT delivery_id, n, at, status, outcome, latency_ms, error, response FROM webhook_attempts WHERE workspace_id = ? AND delivery_id IN ("+marks+") ORDER BY delivery_id, n", ids...), func(row []any) error {
		a := Attempt{N: int(store.Int(row[1])), Outcome: store.Text(row[4]), LatencyMS: store.Int(row[5]), Error: store.Text(row[6]), Response: store.Text(row[7])}
		var err error
		if a.At, err = store.Time(row[2]); err != nil {
			return err
		}
		if row[3] != nil {
			s := int(store.Int(row[3]))
			a.Status = &s
		}
		i := byID[store.UUIDText(row[0])]
		out[i].Attempts = append(out[i].Attempts, a)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("webhook attempts: %w", err)
	}
	return out, nil
}

// MaxReplay bounds the events one Replay sends again.
const MaxReplay = 10000

// Replay sends endpoint id of workspace the events it takes again, as new deliveries due now: the event
// eventID alone, or every event after sequence after (at most MaxReplay, in order). Receivers see the
// same webhook-id as the first time, so they can tell a replay from a new event. It returns how many
// deliveries it made.
func (g *Registry) Replay(ctx context.Context, workspace, id, eventID string, after int64) (int, error) {
	return g.ReplayThen(ctx, workspace, id, eventID, after, nil)
}

// ReplayThen is Replay running then, when set, in its transaction, with the deliveries queued (0 when
// no event was to be sent again: then runs all the same).
func (g *Registry) ReplayThen(ctx context.Context, workspace, id, eventID string, after int64, then func(ctx context.Context, q store.Querier, ep Endpoint, queued int) error) (int, error) {
	ep, err := g.Get(ctx, workspace, id)
	if err != nil {
		return 0, err
	}
	var evs []events.Stored
	if eventID != "" {
		e, found, err := events.ReadOne(ctx, g.st, workspace, eventID)
		if err != nil {
			return 0, err
		}
		if !found {
			return 0, fmt.Errorf("event %s: %w", eventID, ErrEventNotFound)
		}
		evs = []events.Stored{e}
	} else {
		f := events.Filter{After: after, Types: ep.EventTypes, Resources: ep.Resources, Limit: MaxReplay}
		if evs, err = events.Read(ctx, g.st, workspace, f); err != nil {
			return 0, err
		}
	}
	d := g.st.Dialect()
	if len(evs) == 0 {
		if then == nil {
			return 0, nil
		}
		return 0, g.st.Tx(ctx, func(q store.Querier) error { return then(ctx, q, ep, 0) })
	}
	now := g.now().UTC()
	rows := sqlgen.Rows{Table: "webhook_deliveries", Columns: deliveryColumns}
	for _, e := range evs {
		rows.Values = append(rows.Values, []any{store.NewID(), workspace, ep.ID, e.ID, e.Seq, StatePending, 0, d.Arg(now), d.Arg(now)})
	}
	err = g.st.Tx(ctx, func(q store.Querier) error {
		if _, err := q.Exec(ctx, d.Bind("SELECT 1 FROM webhook_endpoints WHERE id = ?"+forUpdate(d), ep.ID)); err != nil {
			return fmt.Errorf("lock webhook endpoint: %w", err)
		}
		if err := store.LaterRows(ctx, q, d, rows, func(err error) error { return fmt.Errorf("replay webhook deliveries: %w", err) }); err != nil {
			return err
		}
		if err := markDue(ctx, q, d, workspace, map[string]bool{ep.ID: true}, now); err != nil {
			return err
		}
		if then != nil {
			return then(ctx, q, ep, len(rows.Values))
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	return len(rows.Values), nil
}

// ErrEventNotFound is an event that is not in the workspace's feed (never, or no longer: retention).
var ErrEventNotFound = fmt.Errorf("no such event in the feed")

package events

import (
	"context"
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/workspace-records/records/runtime/metrics"
	"github.com/workspace-records/records/runtime/store"
)

// Channel is the PostgreSQL notification channel on which a server announces that it numbered events,
// so that every server wakes its long-polling readers.
const Channel = "records_events"

// Defaults of the Sequencer.
const (
	// DefaultSweep is how often a server numbers events that no kick announced (left by a server that
	// stopped between a write's commit and its numbering).
	DefaultSweep = 2 * time.Second
	// DefaultGather spaces numbering rounds under load: at most this much is added to the time from a
	// write's commit to its event's number.
	DefaultGather = 50 * time.Millisecond
	// notifyEvery spaces a server's announcements to the others (NOTIFY, whose commit serialises on
	// PostgreSQL's notification queue); the last one of a burst is always sent.
	notifyEvery = 50 * time.Millisecond
	// DefaultRetention is how long events are kept.
	DefaultRetention = 30 * 24 * time.Hour
	// stampBatch bounds the events one numbering transaction takes; more wait for the next round.
	stampBatch = 5000
	// pruneEvery is how often the sweep deletes events older than the retention.
	pruneEvery = time.Minute
)

// Sequencer numbers committed events per workspace (see the package comment) and tells readers
// waiting for them.
type Sequencer struct {
	st  store.Store
	hub *Hub
	// Sweep is the interval of the sweep over every workspace (DefaultSweep).
	Sweep time.Duration
	// Gather is the least time between two numbering rounds of kicked workspaces (DefaultGather).
	Gather time.Duration
	// Retention is how long events are kept (DefaultRetention); 0 keeps them forever.
	Retention time.Duration
	// Now is the clock of the retention (time.Now).
	Now func() time.Time

	// sub, when set, is told of every event as it is numbered (Subscribe).
	sub Subscriber
	// Metrics counts the events numbered (nil: none).
	Metrics *metrics.Metrics

	mu      sync.Mutex
	pending map[string]bool
	kick    chan struct{}

	// Announcements to other servers (announce).
	notifyMu   sync.Mutex
	notifiedAt time.Time
	notifyDue  bool // a trailing announcement is scheduled
}

// Numbered is an event as the sequencer numbered it.
type Numbered struct {
	Seq                int64
	ID, Type, Resource string
}

// Subscriber is told of events as they are numbered: Numbered inside the numbering transaction (what it
// writes there commits with the numbers, or neither does), Committed once that transaction committed.
type Subscriber interface {
	Numbered(ctx context.Context, q store.Querier, workspace string, evs []Numbered) error
	Committed(workspace string)
}

// Subscribe makes sub hear of every event numbered from now on. Call it before Run.
func (s *Sequencer) Subscribe(sub Subscriber) { s.sub = sub }

// NewSequencer returns a sequencer of st's events that wakes hub's readers.
func NewSequencer(st store.Store, hub *Hub) *Sequencer {
	return &Sequencer{st: st, hub: hub, Sweep: DefaultSweep, Gather: DefaultGather, Retention: DefaultRetention, Now: time.Now,
		pending: map[string]bool{}, kick: make(chan struct{}, 1)}
}

// Hub is where readers wait for this sequencer's (and, on PostgreSQL, every server's) numbered events.
func (s *Sequencer) Hub() *Hub { return s.hub }

// Kick asks for workspace's new events to be numbered now: writers call it after their commit.
func (s *Sequencer) Kick(workspace string) {
	s.mu.Lock()
	s.pending[workspace] = true
	s.mu.Unlock()
	select {
	case s.kick <- struct{}{}:
	default:
	}
}

// Run numbers kicked workspaces as they come and sweeps every workspace each Sweep, until ctx ends;
// on PostgreSQL it also listens for other servers' announcements to wake this server's readers.
func (s *Sequencer) Run(ctx context.Context, log *slog.Logger) {
	if l, ok := s.st.(interface {
		Listen(ctx context.Context, channel string, ready func(bool), fn func())
	}); ok {
		go l.Listen(ctx, Channel, func(listening bool) {
			if !listening {
				s.hub.PublishAll() // announcements may have been missed: readers look again
			}
		}, s.hub.PublishAll)
	}
	tick := time.NewTicker(s.Sweep)
	defer tick.Stop()
	var pruned time.Time
	for {
		select {
		case <-ctx.Done():
			return
		case <-s.kick:
			s.mu.Lock()
			batch := s.pending
			s.pending = map[string]bool{}
			s.mu.Unlock()
			for ws := range batch {
				if _, err := s.Stamp(ctx, ws); err != nil && ctx.Err() == nil {
					log.Warn("number events (the sweep retries)", "workspace", ws, "err", err)
				}
			}
			// Under a stream of writes, one numbering transaction per Gather takes all that came
			// meanwhile, instead of one (with its commit) per write.
			select {
			case <-ctx.Done():
			case <-time.After(s.Gather):
			}
		case <-tick.C:
			prune := s.Retention > 0 && s.Now().Sub(pruned) >= pruneEvery
			if err := s.SweepOnce(ctx, prune); err != nil && ctx.Err() == nil {
				log.Warn("sweep events", "err", err)
			}
			if prune {
				pruned = s.Now()
			}
		}
	}
}

// Stamp numbers workspace's committed, unnumbered events and returns how many it numbered. Servers
// may call it at once: the counter row serialises them.
func (s *Sequencer) Stamp(ctx context.Context, workspace string) (int, error) {
	ctx = store.WithWorkspace(ctx, workspace)
	d := s.st.Dialect()
	total := 0
	for {
		n := 0
		err := s.st.Tx(ctx, func(q store.Querier) error {
			n = 0
			var numbered []Numbered
			// Takes the workspace's counter row (created at 0) for the rest of the transaction.
			var last int64
			if _, err := store.QueryOne(ctx, q, d.Bind(`INSERT INTO event_sequences (workspace_id, last) VALUES (?, 0)
ON CONFLICT (workspace_id) DO UPDATE SET last = event_sequences.last RETURNING last`, workspace), func(row []any) error {
				last = store.Int(row[0])
				return nil
			}); err != nil {
				return fmt.Errorf("lock the event counter: %w", err)
			}
			// The queue's committed events leave it; they get the next numbers in the order of their ids.
			var ids []any
			err := q.Query(ctx, d.Bind(`DELETE FROM event_queue WHERE workspace_id = ? AND id IN
(SELECT id FROM event_queue WHERE workspace_id = ? ORDER BY id LIMIT ?) RETURNING id`, workspace, workspace, stampBatch), func(row []any) error {
				ids = append(ids, store.UUIDText(row[0]))
				n++
				return nil
			})
			if err != nil {
				return fmt.Errorf("take events to number: %w", err)
			}
			if n == 0 {
				return nil
			}
			top := last
			args := append([]any{last, workspace}, ids...)
			err = q.Query(ctx, d.Bind(`INSERT INTO event_numbers (workspace_id, seq, event_id, type, resource)
SELECT workspace_id, ? + row_number() OVER (ORDER BY id), id, type, resource FROM events WHERE workspace_id = ? AND id IN (`+marks(len(ids))+`)
RETURNING seq, event_id, type, resource`, args...), func(row []any) error {
				e := Numbered{Seq: store.Int(row[0]), ID: store.UUIDText(row[1]), Type: store.Text(row[2]), Resource: store.Text(row[3])}
				top = max(top, e.Seq)
				numbered = append(numbered, e)
				return nil
			})
			if err != nil {
				return fmt.Errorf("number events: %w", err)
			}
			if s.sub != nil {
				sort.Slice(numbered, func(i, j int) bool { return numbered[i].Seq < numbered[j].Seq })
				if err := s.sub.Numbered(ctx, q, workspace, numbered); err != nil {
					return err
				}
			}
			if _, err := q.Exec(ctx, d.Bind("UPDATE event_sequences SET last = ? WHERE workspace_id = ?", top, workspace)); err != nil {
				return fmt.Errorf("advance the event counter: %w", err)
			}
			return nil
		})
		if err != nil {
			return total, fmt.Errorf("workspace %s: %w", workspace, err)
		}
		total += n
		if n < stampBatch {
			break
		}
	}
	if total > 0 {
		s.Metrics.EventsNumbered(total)
		if s.sub != nil {
			s.sub.Committed(workspace)
		}
		return total, s.announce(ctx, workspace)
	}
	return total, nil
}

// announce wakes the readers waiting for workspace's events, here at once and, on PostgreSQL, on every
// server: at most one NOTIFY per notifyEvery, the last of a burst sent when the interval ends.
func (s *Sequencer) announce(ctx context.Context, workspace string) error {
	s.hub.Publish(workspace)
	n, ok := s.st.(interface {
		Notify(ctx context.Context, channel string) error
	})
	if !ok {
		return nil
	}
	s.notifyMu.Lock()
	wait := notifyEvery - time.Since(s.notifiedAt)
	switch {
	case s.notifyDue:
		s.notifyMu.Unlock()
		return nil // the trailing announcement covers this one
	case wait > 0:
		s.notifyDue = true
		s.notifyMu.Unlock()
		time.AfterFunc(wait, func() {
			s.notifyMu.Lock()
			s.notifyDue, s.notifiedAt = false, time.Now()
			s.notifyMu.Unlock()
			_ = n.Notify(context.WithoutCancel(ctx), Channel) // a lost one costs readers elsewhere their next poll
		})
		return nil
	}
	s.notifiedAt = time.Now()
	s.notifyMu.Unlock()
	if err := n.Notify(context.WithoutCancel(ctx), Channel); err != nil {
		return fmt.Errorf("announce events: %w", err)
	}
	return nil
}

// SweepOnce numbers every workspace's events that are still unnumbered and, with prune, deletes events
// older than the retention.
func (s *Sequencer) SweepOnce(ctx context.Context, prune bool) error {
	d := s.st.Dialect()
	var workspaces []string
	if err := s.st.Query(ctx, d.Bind("SELECT id FROM workspaces"), func(row []any) error {
		workspaces = append(workspaces, store.UUIDText(row[0]))
		return nil
	}); err != nil {
		return fmt.Errorf("list workspaces: %w", err)
	}
	cutoff := s.Now().Add(-s.Retention).UTC()
	for _, ws := range workspaces {
		wctx := store.WithWorkspace(ctx, ws)
		found, err := store.QueryOne(wctx, s.st, d.Bind("SELECT 1 FROM event_queue WHERE workspace_id = ? LIMIT 1", ws), func([]any) error { return nil })
		if err != nil {
			return fmt.Errorf("workspace %s: find unnumbered events: %w", ws, err)
		}
		if found {
			if _, err := s.Stamp(ctx, ws); err != nil {
				return err
			}
		}
		if prune && s.Retention > 0 {
			err := s.st.Tx(wctx, func(q store.Querier) error {
				if _, err := q.Exec(wctx, d.Bind("DELETE FROM event_numbers WHERE workspace_id = ? AND event_id IN (SELECT id FROM events WHERE workspace_id = ? AND created_at < ?)", ws, ws, cutoff)); err != nil {
					return err
				}
				_, err := q.Exec(wctx, d.Bind(`DELETE FROM events WHERE workspace_id = ? AND created_at < ?
AND NOT EXISTS (SELECT 1 FROM event_queue q WHERE q.workspace_id = events.workspace_id AND q.id = events.id)`, ws, cutoff))
				return err
			})
			if err != nil {
				return fmt.Errorf("workspace %s: delete events past retention: %w", ws, err)
			}
		}
	}
	return nil
}

// Hub lets readers wait for a workspace's next numbered events.
type Hub struct {
	mu    sync.Mutex
	waits map[string]chan struct{}
}

// NewHub returns a Hub.
func NewHub() *Hub { return &Hub{waits: map[string]chan struct{}{}} }

// Wait returns a channel closed when workspace's next events are numbered (or, on PostgreSQL, when any
// server announces events of any workspace: the reader then looks again).
func (h *Hub) Wait(workspace string) <-chan struct{} {
	h.mu.Lock()
	defer h.mu.Unlock()
	c := h.waits[workspace]
	if c == nil {
		c = make(chan struct{})
		h.waits[workspace] = c
	}
	return c
}

// Publish wakes the readers of workspace.
func (h *Hub) Publish(workspace string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if c := h.waits[workspace]; c != nil {
		close(c)
		delete(h.waits, workspace)
	}
}

// PublishAll wakes every reader (a notification from another server names no workspace).
func (h *Hub) PublishAll() {
	h.mu.Lock()
	defer h.mu.Unlock()
	for ws, c := range h.waits {
		close(c)
		delete(h.waits, ws)
	}
}

// marks is n comma-separated placeholders.
func marks(n int) string { return strings.TrimSuffix(strings.Repeat("?, ", n), ", ") }

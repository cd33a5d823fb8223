// Package feed reads the change feed (GET /v1/events, webhook payloads) as one reader may see it:
// events of resources and records out of their sight left out, masked fields masked, hidden ones and
// links to records they do not see withheld. The record service says who the reader is (Viewer);
// runtime/events writes and numbers the events.
package feed

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/workspace-records/records/engine/access"
	"github.com/workspace-records/records/engine/apierr"
	"github.com/workspace-records/records/engine/field"
	"github.com/workspace-records/records/engine/listplan"
	"github.com/workspace-records/records/engine/model"
	"github.com/workspace-records/records/runtime/audit"
	"github.com/workspace-records/records/runtime/events"
	"github.com/workspace-records/records/runtime/store"
)

// Bounds of the change feed (GET /v1/events).
const (
	DefaultPage = listplan.DefaultEventPage
	MaxPage     = listplan.MaxEventPage
	MaxWait     = listplan.MaxEventWait
	// feedScanFactor bounds how many events one page reads, as a multiple of its size, looking for events
	// the reader may see; past it the page ends short, its cursor after what was read.
	feedScanFactor = 20
)

// Query selects a page of the change feed.
type Query struct {
	// Cursor is "start" (or ""), "latest" (only events after the newest one now), or the sequence of the
	// last event the reader has seen: the page holds the events after it.
	Cursor    string
	Resources []string // only events of these resources (nil: all the reader may read)
	Types     []string // only events of these types, "<resource>.<action>" (nil: all)
	Limit     *int     // 1..MaxPage; nil = DefaultPage
	// Wait, when the page would be empty, waits up to this long for events to arrive (0..MaxWait).
	Wait time.Duration
}

// Event is one event of the feed as its reader may see it.
type Event struct {
	ID        string         `json:"id"`
	Sequence  int64          `json:"sequence"`
	Type      string         `json:"type"`
	Resource  string         `json:"resource"`
	RecordID  *string        `json:"record_id"`
	ModelID   *string        `json:"model_id"`
	Actor     Actor          `json:"actor"`
	Data      map[string]any `json:"data"`
	Previous  map[string]any `json:"previous"`
	Withheld  []string       `json:"withheld"`
	CreatedAt string         `json:"created_at"`
}

// Actor is who caused an event; every member is nil on the admin path (recordsctl).
type Actor struct {
	MemberID  *string `json:"member_id"`
	KeyID     *string `json:"key_id"`
	RequestID *string `json:"request_id"`
}

// Page is one page of the feed. Cursor continues after it: the sequence of the last event read
// (seen by the reader or not), or the query's own position when nothing was read.
type Page struct {
	Events  []Event
	Cursor  int64
	HasMore bool
}

// ErrOff is the feed asked for on a server whose writes record no events.
var ErrOff = fmt.Errorf("the change feed is off on this server")

// Reader reads the change feed of one definitions version's resources.
type Reader struct {
	st     store.Store
	cat    *model.Catalog
	events *events.Sequencer
}

// NewReader returns the reader of the feed in st, whose events seq numbers (nil: the feed is off, and
// every read is ErrOff).
func NewReader(st store.Store, cat *model.Catalog, seq *events.Sequencer) *Reader {
	return &Reader{st: st, cat: cat, events: seq}
}

// Viewer is who reads the feed, as the record service sees them. Manages tells one who manages the
// workspace's API (every notice is theirs to see); Reaches whether a resource is within their reach (key
// allowlist, plan, role); Policy their policy on a resource; Visible whether a record is inside their
// record rule and Linked whether a link may name record id of other to them — both remembering, in
// seen, what one page has already asked.
type Viewer struct {
	Workspace, Member string
	Manages           bool
	Reaches           func(*model.Resource) bool
	Policy            func(*model.Resource) *access.Policy
	Visible           func(ctx context.Context, pol *access.Policy, id string, seen map[string]bool) (bool, error)
	Linked            func(ctx context.Context, other *model.Resource, id string, seen map[string]bool) (bool, error)
}

// Page returns one page of a's workspace's change feed, in sequence order, as a may see it: events of
// resources a cannot reach (key allowlist, plan, role) and of records outside a's record rule (as the
// record is now, as for a read of it) are left out; values of fields a's role masks are masked, those
// it hides removed and named in withheld; a link or unlink whose other record a does not see (its
// resource out of a's reach, or the record outside a's record rule: linkShown) is withheld.
func (s *Reader) Page(ctx context.Context, a Viewer, q Query) (*Page, error) {
	if s.events == nil {
		return nil, ErrOff
	}
	f, errs := s.filter(a, q)
	if errs != nil {
		return nil, apierr.Invalid("", errs)
	}
	after := int64(0)
	switch q.Cursor {
	case "", "start":
	case "latest":
		var err error
		if after, err = events.Latest(ctx, s.st, a.Workspace); err != nil {
			return nil, err
		}
	default:
		n, err := strconv.ParseInt(q.Cursor, 10, 64)
		if err != nil || n < 0 {
			return nil, apierr.InvalidField(field.CodeInvalid, "cursor", `must be "start", "latest" or the sequence of an event (a whole number ≥ 0)`)
		}
		after = n
	}
	deadline := time.Now().Add(q.Wait)
	for {
		// Listen before reading, so that events numbered while the page is read wake the wait.
		woken := s.events.Hub().Wait(a.Workspace)
		page, err := s.page(ctx, a, f, after)
		if err != nil || len(page.Events) > 0 || page.Cursor != after || q.Wait <= 0 {
			return page, err
		}
		left := time.Until(deadline)
		if left <= 0 {
			return page, nil
		}
		// Look again at least every second: an announcement from another server may have been lost.
		t := time.NewTimer(min(left, time.Second))
		select {
		case <-woken:
			t.Stop()
		case <-t.C:
			if left <= time.Second {
				return page, nil
			}
		case <-ctx.Done():
			t.Stop()
			return nil, ctx.Err()
		}
	}
}

// eventFilter checks q and returns the store filter of what a may read of it.
func (s *Reader) filter(a Viewer, q Query) (events.Filter, field.ErrorList) {
	var errs field.ErrorList
	f := events.Filter{Limit: DefaultPage}
	if q.Limit != nil {
		f.Limit = *q.Limit
	}
	if f.Limit < 1 || f.Limit > MaxPage {
		errs = append(errs, field.New(field.CodeRange, field.NewPath("limit"), fmt.Sprintf("must be between 1 and %d", MaxPage)))
	}
	if q.Wait < 0 || q.Wait > MaxWait {
		errs = append(errs, field.New(field.CodeRange, field.NewPath("wait"), fmt.Sprintf("must be between 0s and %s", MaxWait)))
	}
	named := map[string]bool{}
	for _, name := range q.Resources {
		if _, ok := s.cat.Resource(name); !ok && !events.IsNoticeResource(name) {
			errs = append(errs, field.New(field.CodeOption, field.NewPath("resource"), fmt.Sprintf("%q is not a resource", name)))
		}
		named[name] = true
	}
	for _, t := range q.Types {
		if !events.KnownType(t, s.isResource) {
			errs = append(errs, field.New(field.CodeOption, field.NewPath("type"), fmt.Sprintf("%q is not an event type (<resource>.created, .updated, .archived, .restored, .linked or .unlinked)", t)))
		}
	}
	f.Types = q.Types
	// Resources the reader cannot read are left out by the query, so that they never thin a page.
	f.Resources = []string{}
	for _, r := range s.cat.Resources {
		if (len(named) == 0 || named[r.Name]) && a.Reaches(r) && a.Policy(r).Level != access.None {
			f.Resources = append(f.Resources, r.Name)
		}
	}
	// Notices (a key about to expire, an endpoint disabled) concern a member: the query keeps them, and
	// eventFor shows each to its member and to those who manage the workspace's API.
	for _, name := range events.NoticeResources {
		if len(named) == 0 || named[name] {
			f.Resources = append(f.Resources, name)
		}
	}
	return f, errs
}

func (s *Reader) isResource(name string) bool {
	_, ok := s.cat.Resource(name)
	return ok
}

// page reads one page after sequence after.
func (s *Reader) page(ctx context.Context, a Viewer, f events.Filter, after int64) (*Page, error) {
	limit := f.Limit
	f.Limit = limit + 1
	page := &Page{Events: []Event{}, Cursor: after}
	visible := map[string]bool{} // resource/record -> inside a's record rule (the events' records and the links' other records)
	scanned := 0
	for {
		f.After = page.Cursor
		rows, err := events.Read(ctx, s.st, a.Workspace, f)
		if err != nil {
			return nil, err
		}
		for _, e := range rows {
			if len(page.Events) == limit {
				page.HasMore = true
				return page, nil
			}
			ev, ok, err := s.event(ctx, a, e, visible)
			if err != nil {
				return nil, err
			}
			if ok {
				page.Events = append(page.Events, ev)
			}
			page.Cursor = e.Seq
		}
		scanned += len(rows)
		if len(rows) < f.Limit {
			return page, nil // the end of the feed, for now
		}
		if scanned >= feedScanFactor*f.Limit {
			// Most of what was read is out of the reader's sight: end the page short rather than read
			// the whole feed; the next page resumes after what was read.
			page.HasMore = true
			return page, nil
		}
	}
}

// Event is e as a may see it (a webhook endpoint's payload, as its owner sees it), or false when a may
// not see it: the rules of the feed (Page).
func (s *Reader) Event(ctx context.Context, a Viewer, e events.Stored) (Event, bool, error) {
	return s.event(ctx, a, e, map[string]bool{})
}

// event is e as a may see it, or false when a may not see it.
func (s *Reader) event(ctx context.Context, a Viewer, e events.Stored, visible map[string]bool) (Event, bool, error) {
	if events.IsNoticeResource(e.Resource) {
		if owner, _ := e.Data["member_id"].(string); !a.Manages && (owner == "" || owner != a.Member) {
			return Event{}, false, nil
		}
		return shape(e), true, nil
	}
	r, ok := s.cat.Resource(e.Resource)
	if !ok || !a.Reaches(r) {
		return Event{}, false, nil // a resource no longer defined, or out of the caller's reach
	}
	pol := a.Policy(r)
	if pol.Level == access.None {
		return Event{}, false, nil
	}
	if e.RecordID != "" && pol.Rule != access.All {
		seen, err := a.Visible(ctx, pol, e.RecordID, visible)
		if err != nil {
			return Event{}, false, fmt.Errorf("event %d: %w", e.Seq, err)
		}
		if !seen {
			return Event{}, false, nil
		}
	}
	out := shape(e)
	link := strings.HasSuffix(e.Type, "."+events.Linked) || strings.HasSuffix(e.Type, "."+events.Unlinked)
	w, err := audit.Redact(pol, link, func(other *model.Resource, id string) (bool, error) {
		return a.Linked(ctx, other, id, visible)
	}, s.cat, out.Data, out.Previous)
	if err != nil {
		return Event{}, false, fmt.Errorf("event %d: %w", e.Seq, err)
	}
	if w != nil {
		out.Withheld = w
	}
	return out, true, nil
}

// shape is e in the feed's form, before any redaction.
func shape(e events.Stored) Event {
	out := Event{ID: e.ID, Sequence: e.Seq, Type: e.Type, Resource: e.Resource, RecordID: opt(e.RecordID), ModelID: opt(e.ModelID),
		Actor: Actor{MemberID: opt(e.MemberID), KeyID: opt(e.KeyID), RequestID: opt(e.RequestID)},
		Data:  e.Data, Previous: e.Previous, Withheld: []string{},
		CreatedAt: e.CreatedAt.UTC().Format(store.TimeLayout)}
	if out.Data == nil {
		out.Data = map[string]any{}
	}
	return out
}

func opt(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// Package events keeps the change feed: an outbox of one event per committed write, written in the
// write's own transaction (so a write that rolls back leaves none), and numbered after commit with a
// per-workspace sequence that consumers resume from.
//
// Numbering. A write inserts its events (table events, written once) and their ids in event_queue. The
// Sequencer then takes each workspace's queued events that committed, deletes them from the queue and
// gives them the next numbers of event_sequences (event_numbers: seq, event id), in the order of their
// ids (time-ordered UUIDs), in one transaction that holds the workspace's counter row: numbers are
// assigned once, only to committed events, and strictly grow in the order they are assigned. So a
// consumer that has seen every event up to sequence N and asks for those after N misses none, whatever
// order concurrent writes committed in — which numbering inside the write transaction (a bigserial)
// cannot promise, and a counter row updated by every write would serialise the workspace's writes.
// Numbering writes two narrow rows per event and never rewrites one. The writer kicks its server's
// sequencer after commit; a periodic sweep numbers what a server that died between commit and
// numbering left behind.
//
// Reading. Page returns stored events after a sequence, unredacted; runtime/records applies the
// reader's permissions, record rules and field masks to each, as to a read of the record.
package events

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/workspace-records/records/engine/sqlgen"
	"github.com/workspace-records/records/runtime/jsonenc"
	"github.com/workspace-records/records/runtime/store"
)

// Event type suffixes: a record event's type is "<resource>.<action>".
const (
	Created  = "created"
	Updated  = "updated"
	Archived = "archived"
	Restored = "restored"
	Linked   = "linked"
	Unlinked = "unlinked"
)

// Notices: events that are about no record but concern a member (who may read them, as may the members
// who manage the workspace's API). Their data names the member as "member_id".
const (
	KeyExpiring      = "api_keys.expiring"          // a key expires soon (the reminders of recordsctl key create)
	EndpointDisabled = "webhook_endpoints.disabled" // an endpoint failed for a day and was disabled
	// KeysResource and EndpointsResource are the resources of the notices.
	KeysResource      = "api_keys"
	EndpointsResource = "webhook_endpoints"
)

// NoticeResources are the resource names of notices.
var NoticeResources = []string{KeysResource, EndpointsResource}

// KnownType reports whether typ is an event type: a notice's, or "<resource>.<action>" of a resource
// isResource knows and one of the record actions.
func KnownType(typ string, isResource func(name string) bool) bool {
	if IsNotice(typ) {
		return true
	}
	name, action, _ := strings.Cut(typ, ".")
	switch action {
	case Created, Updated, Archived, Restored, Linked, Unlinked:
		return isResource(name)
	}
	return false
}

// IsNotice reports whether typ is a notice's type.
func IsNotice(typ string) bool { return typ == KeyExpiring || typ == EndpointDisabled }

// IsNoticeResource reports whether name is the resource of notices.
func IsNoticeResource(name string) bool { return name == KeysResource || name == EndpointsResource }

// Event is one event to write.
type Event struct {
	Type     string // e.g. "companies.updated"
	Resource string // "" for events that are not about a record
	RecordID string
	ModelID  string
	// Data is the subject as stored after the change (for a record, the whole record, unredacted; for a
	// link or unlink, the association name → the other record's id, and its "attributes").
	Data map[string]any
	// Previous holds, for an update, the values the changed fields had before (same keys as in Data;
	// custom fields under "custom_fields"); nil otherwise.
	Previous map[string]any
}

// Actor is who caused events: member, key and request id, each "" on the admin path.
type Actor struct {
	Workspace, Member, Key, RequestID string
}

// columns of the events table.
var columns = []string{"workspace_id", "id", "type", "resource", "record_id", "model_id", "member_id", "key_id", "request_id", "data", "previous", "created_at"}

// Rows are the events table's rows of evs, caused by who at time at.
func Rows(d sqlgen.Dialect, who Actor, at time.Time, evs []Event) (sqlgen.Rows, error) {
	rows := sqlgen.Rows{Table: "events", Columns: columns, Values: make([][]any, len(evs))}
	flat := make([]any, len(evs)*len(columns))
	ws, member, key, request, when := d.Arg(who.Workspace), d.Arg(store.Nullable(who.Member)), d.Arg(store.Nullable(who.Key)), d.Arg(store.Nullable(who.RequestID)), d.Arg(at)
	for i, e := range evs {
		data, err := jsonenc.Marshal(e.Data)
		if err != nil {
			return rows, fmt.Errorf("event %s: %w", e.Type, err)
		}
		var previous any
		if e.Previous != nil {
			p, err := jsonenc.Marshal(e.Previous)
			if err != nil {
				return rows, fmt.Errorf("event %s: %w", e.Type, err)
			}
			previous = string(p)
		}
		v := flat[i*len(columns) : (i+1)*len(columns) : (i+1)*len(columns)]
		v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7], v[8], v[9], v[10], v[11] = ws, store.NewID(), e.Type,
			e.Resource, store.Nullable(e.RecordID), store.Nullable(e.ModelID), member, key, request, string(data), previous, when
		rows.Values[i] = v
	}
	return rows, nil
}

// Write inserts evs, and their places in the queue of events to number, inside the write's transaction
// q, queued with its next statement or its COMMIT.
func Write(ctx context.Context, q store.Querier, d sqlgen.Dialect, who Actor, at time.Time, evs []Event) error {
	if len(evs) == 0 {
		return nil
	}
	rows, err := Rows(d, who, at, evs)
	if err != nil {
		return err
	}
	wrap := func(err error) error { return fmt.Errorf("events: %w", err) }
	if err := store.LaterRows(ctx, q, d, rows, wrap); err != nil {
		return err
	}
	return store.LaterRows(ctx, q, d, queueRows(rows), wrap)
}

// Copy inserts evs as Write does, with the bulk path's store.Copy: for the many events of an import.
func Copy(ctx context.Context, q store.Querier, d sqlgen.Dialect, who Actor, at time.Time, evs []Event) error {
	if len(evs) == 0 {
		return nil
	}
	rows, err := Rows(d, who, at, evs)
	if err != nil {
		return err
	}
	for _, r := range []sqlgen.Rows{rows, queueRows(rows)} {
		if _, err := store.Copy(ctx, q, d, r); err != nil {
			return fmt.Errorf("events: %w", err)
		}
	}
	return nil
}

// queueRows are the event_queue rows of events' rows (workspace and id, their first two columns).
func queueRows(events sqlgen.Rows) sqlgen.Rows {
	out := sqlgen.Rows{Table: "event_queue", Columns: []string{"workspace_id", "id"}, Values: make([][]any, len(events.Values))}
	for i, v := range events.Values {
		out.Values[i] = v[:2:2]
	}
	return out
}

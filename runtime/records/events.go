package records

import (
	"context"
	"maps"
	"time"

	"github.com/workspace-records/records/engine/access"
	"github.com/workspace-records/records/runtime/audit"
	"github.com/workspace-records/records/runtime/events"
	"github.com/workspace-records/records/runtime/store"
)

// eventActions are the event type suffixes of the audit actions.
var eventActions = map[string]string{
	audit.ActionCreate: events.Created, audit.ActionUpdate: events.Updated, audit.ActionArchive: events.Archived,
	audit.ActionRestore: events.Restored, audit.ActionLink: events.Linked, audit.ActionUnlink: events.Unlinked,
	audit.ActionImport: events.Created,
}

func (a Actor) eventActor() events.Actor {
	return events.Actor{Workspace: a.Workspace, Member: a.Member, Key: a.Key, RequestID: a.RequestID}
}

// stored is rec (a row as read or returned by a write) as the feed keeps it: custom fields by key, no
// field withheld.
func stored(c *Collection, rec Record) Record {
	full := maps.Clone(rec)
	present(c.Fields, full)
	return access.Unrestricted(c.Resource).Apply(full)
}

// recordEvent is the event of a write of record id of c: data is the record as stored after it (for a
// link or unlink, the audit changes), previous the values an update replaced.
func recordEvent(c *Collection, id, action string, data, previous map[string]any) events.Event {
	return events.Event{Type: c.Resource.Name + "." + eventActions[action], Resource: c.Resource.Name, RecordID: id,
		ModelID: c.ModelID, Data: data, Previous: previous}
}

// writeEvents queues evs in the write's transaction q; nothing when the feed is off.
func (s *Service) writeEvents(ctx context.Context, q store.Querier, a Actor, at time.Time, evs ...events.Event) error {
	if s.events == nil {
		return nil
	}
	return events.Write(ctx, q, s.d, a.eventActor(), at, evs)
}

// numberEvents asks for workspace's events, just committed, to be numbered.
func (s *Service) numberEvents(workspace string) {
	if s.events != nil {
		s.events.Kick(workspace)
	}
}

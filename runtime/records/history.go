package records

import (
	"context"
	"errors"
	"strconv"

	"github.com/workspace-records/records/engine/access"
	"github.com/workspace-records/records/engine/apierr"
	"github.com/workspace-records/records/engine/field"
	"github.com/workspace-records/records/engine/listplan"
	"github.com/workspace-records/records/engine/model"
	"github.com/workspace-records/records/runtime/audit"
	"github.com/workspace-records/records/runtime/feed"
)

// HistoryEntry is one audit entry of a record as its reader may see it (GET /v1/{resource}/{id}/history):
// the audit trail's entry (runtime/audit.Row: action, changes, previous, withheld) with who wrote it
// grouped as the change feed groups it (actor).
type HistoryEntry struct {
	ID       string     `json:"id"`
	Resource string     `json:"resource"`
	RecordID string     `json:"record_id"`
	Action   string     `json:"action"`
	Actor    feed.Actor `json:"actor"`
	// Changes are the values written: for a create (or import) the record's values, for an update the
	// changed fields only, for a link or unlink the association -> the other record's id (and the link's
	// attributes).
	Changes map[string]any `json:"changes"`
	// Previous are the values an update replaced (and a link's former attributes); nil otherwise.
	Previous map[string]any `json:"previous"`
	// Withheld names what the reader's role hides, left out of Changes and Previous.
	Withheld  []string `json:"withheld"`
	CreatedAt string   `json:"created_at"`
}

// HistoryPage is one page of a record's history, newest first.
type HistoryPage struct {
	Entries    []HistoryEntry
	PageSize   int
	NextCursor *string // nil at the end of the history
}

// historyParams reads page_size and cursor of a history page, with the bounds of record lists.
func historyParams(q map[string][]string) (size int, cursor string, err error) {
	size = listplan.DefaultSize
	var errs field.ErrorList
	for k, vals := range q {
		if len(vals) != 1 {
			errs = append(errs, field.New(field.CodeInvalid, field.NewPath(k), "must be given once"))
			continue
		}
		switch k {
		case "page_size":
			n, err := strconv.Atoi(vals[0])
			switch {
			case err != nil:
				errs = append(errs, field.New(field.CodeType, field.NewPath(k), "must be an integer"))
			case n < 1 || n > listplan.MaxPageSize:
				errs = append(errs, field.New(field.CodeRange, field.NewPath(k), "must be between 1 and "+strconv.Itoa(listplan.MaxPageSize)))
			default:
				size = n
			}
		case "cursor":
			cursor = vals[0]
		default:
			errs = append(errs, field.New(field.CodeUnknown, field.NewPath(k), "is not a parameter of a record's history (page_size, cursor)"))
		}
	}
	if len(errs) > 0 {
		return 0, "", apierr.Invalid("", errs)
	}
	if cursor == "start" {
		cursor = ""
	}
	return size, cursor, nil
}

// History returns one page of the audit entries of record id of c, newest first, as a may see them: the
// record must be one a may read now (archived or not; record rule applied: 404 otherwise, exactly as a
// get), and the entries' values go through a's field rules as the audit trail's reader applies them
// (audit.Reader.Page: masked fields masked, hidden ones left out and named in withheld; a link names
// the other record only when a sees it, linkShown). query holds page_size and cursor.
func (s *Service) History(ctx context.Context, a Actor, c *Collection, id string, query map[string][]string) (*HistoryPage, error) {
	size, cursor, err := historyParams(query)
	if err != nil {
		return nil, err
	}
	if _, err := s.Get(ctx, c, id, nil); err != nil {
		return nil, err
	}
	seen := map[string]bool{} // the links' other records: resource/record -> inside a's record rule
	v := audit.Viewer{Workspace: a.Workspace, Member: a.Member, Role: a.Role,
		// A resource a does not reach (key allowlist, plan) is one it cannot read: a link to it is withheld,
		// as in the change feed.
		Policy: func(r *model.Resource) *access.Policy {
			if !a.reaches(r) {
				return &access.Policy{Resource: r, Level: access.None}
			}
			return a.Policy(r)
		},
		// The record is inside a's record rule: the get above found it under c's policy.
		Visible: func(context.Context, *access.Policy, string) (bool, error) { return true, nil },
		// A link names the other record only when a sees it where the link is listed.
		Linked: func(ctx context.Context, other *model.Resource, id string) (bool, error) {
			return s.linkShown(ctx, a, other, id, seen)
		},
	}
	p, err := s.trail.Page(ctx, v, audit.Query{Resource: c.Resource.Name, RecordID: id, Limit: size, Cursor: cursor})
	var fl field.ErrorList
	if errors.As(err, &fl) {
		// The parameters were checked above but for the cursor: one this history did not issue (another
		// record, workspace, member or role), or an edited one, is a malformed parameter, 400 like a
		// record list's.
		if cursor != "" {
			return nil, apierr.InvalidField(field.CodeInvalid, "cursor", "is not a cursor of this record's history; start again without one (or with cursor=start)")
		}
		return nil, apierr.Invalid("", fl)
	}
	if err != nil {
		return nil, err
	}
	out := &HistoryPage{Entries: make([]HistoryEntry, len(p.Entries)), PageSize: size, NextCursor: p.NextCursor}
	for i, e := range p.Entries {
		withheld := e.Withheld
		if withheld == nil {
			withheld = []string{}
		}
		out.Entries[i] = HistoryEntry{ID: e.ID, Resource: e.Resource, RecordID: e.RecordID, Action: e.Action,
			Actor:   feed.Actor{MemberID: e.MemberID, KeyID: e.KeyID, RequestID: e.RequestID},
			Changes: e.Changes, Previous: e.Previous, Withheld: withheld, CreatedAt: e.CreatedAt}
	}
	return out, nil
}

package audit

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/workspace-records/records/engine/access"
	"github.com/workspace-records/records/engine/field"
	"github.com/workspace-records/records/engine/listplan"
	"github.com/workspace-records/records/engine/model"
	"github.com/workspace-records/records/engine/sqlgen"
	"github.com/workspace-records/records/runtime/store"
)

// Bounds of a page of the audit trail.
const (
	DefaultPage = 50
	MaxPage     = 1000
)

// Query selects entries of one workspace's audit trail, newest first.
type Query struct {
	Resource string    // only entries of this resource ("" = every resource)
	RecordID string    // only entries of this record ("" = every record)
	Since    time.Time // only entries written at or after Since (zero = all)
	Limit    int       // entries per page, 1..MaxPage; 0 = DefaultPage
	Cursor   string    // NextCursor of the previous page of the same query; "" = the newest entries
}

// Row is one write of the audit trail as its reader may see it.
type Row struct {
	ID        string         `json:"id"`
	Resource  string         `json:"resource"`
	RecordID  string         `json:"record_id"`
	Action    string         `json:"action"`
	MemberID  *string        `json:"member_id"`  // nil on the admin path
	KeyID     *string        `json:"key_id"`     // nil on the admin path
	RequestID *string        `json:"request_id"` // X-Request-Id of the API request; nil on the admin path
	Changes   map[string]any `json:"changes"`
	Previous  map[string]any `json:"previous"`
	// Withheld names the fields left out of Changes and Previous because the reader's role hides them
	// (or, for a link, the association, because the reader does not see the other record: Viewer.Linked).
	Withheld  []string `json:"withheld,omitempty"`
	CreatedAt string   `json:"created_at"`
}

// Page is one page of the audit trail.
type Page struct {
	Entries []Row
	// NextCursor continues the walk; nil at its end.
	NextCursor *string
}

// auditScanFactor bounds how many entries one page reads, as a multiple of its size, looking for
// entries the reader may see; past it the page ends short, with a cursor to go on.
const auditScanFactor = 20

// Reader reads the audit trail.
type Reader struct {
	st     store.Store
	d      sqlgen.Dialect
	cat    *model.Catalog
	secret []byte
}

// NewReader returns a reader of the trail in st; secret signs its cursors.
func NewReader(st store.Store, cat *model.Catalog, secret []byte) *Reader {
	return &Reader{st: st, d: st.Dialect(), cat: cat, secret: secret}
}

// Viewer is who reads the trail. Role nil is the operator's view (recordsctl): every entry with its
// values as stored. With a role, Policy gives the member's policy on a resource, Visible reports
// whether a record is inside its record rule, and Linked whether a link may name record id of other
// to the member: exactly when the member sees that record among the linked records (the association
// list, expand), so a record outside its record rule is withheld as one of a resource it cannot read.
// Linked nil withholds every link.
type Viewer struct {
	Workspace, Member string
	Role              *model.Role
	Policy            func(*model.Resource) *access.Policy
	Visible           func(ctx context.Context, pol *access.Policy, id string) (bool, error)
	Linked            func(ctx context.Context, other *model.Resource, id string) (bool, error)
}

// Page returns one page of v's workspace's audit trail, newest first, in (created_at, id) order.
//
// With a role, the trail is shown as v.Member would see it: entries of resources the role cannot read
// and of records outside its record rule are left out; values of fields it masks are masked as in API
// responses (access.Policy.Apply), fields it hides are left out and named in Withheld, and so is a
// link's association when v.Linked refuses the record at its other end.
func (s *Reader) Page(ctx context.Context, a Viewer, q Query) (*Page, error) {
	ctx = store.WithWorkspace(ctx, a.Workspace)
	var errs field.ErrorList
	if q.Resource != "" && !IsAdminResource(q.Resource) {
		if _, ok := s.cat.Resource(q.Resource); !ok {
			errs = append(errs, field.New(field.CodeOption, field.NewPath("resource"), fmt.Sprintf("%q is not a resource", q.Resource)))
		}
	}
	if q.RecordID != "" && !model.IsUUID(q.RecordID) {
		errs = append(errs, field.New(field.CodeFormat, field.NewPath("record_id"), "must be a UUID"))
	}
	limit := q.Limit
	if limit == 0 {
		limit = DefaultPage
	}
	if limit < 1 || limit > MaxPage {
		errs = append(errs, field.New(field.CodeRange, field.NewPath("limit"), fmt.Sprintf("must be between 1 and %d", MaxPage)))
	}
	recordID := strings.ToLower(q.RecordID)
	// Since is left out: it only bounds where the walk ends, and "24h ago" moves between pages.
	scope := listplan.WalkScope("audit", a.Workspace, q.Resource, recordID, a.Member, roleName(a.Role))
	var afterTime time.Time
	var afterID string
	if q.Cursor != "" {
		var err error
		if afterTime, afterID, err = listplan.DecodeTimeKeyset(s.secret, scope, q.Cursor); err != nil {
			errs = append(errs, field.New(field.CodeInvalid, field.NewPath("cursor"), "is not a cursor of this query"))
		}
	}
	if errs != nil {
		return nil, errs
	}

	where, args := "workspace_id = ?", []any{a.Workspace}
	policies := map[string]*access.Policy{}
	if a.Role != nil {
		// Resources the role cannot read are left out by the query, so that they never thin a page.
		var readable []string
		for _, r := range s.cat.Resources {
			if pol := a.Policy(r); pol.Level != access.None {
				policies[r.Name] = pol
				readable = append(readable, r.Name)
			}
		}
		// The admin API's entries: to readers whose role holds api.manage, values as written (they hold
		// no secret).
		admin := readsAdmin(a.Role)
		if admin {
			readable = append(readable, AdminResources...)
		}
		if q.Resource != "" && policies[q.Resource] == nil && !(admin && IsAdminResource(q.Resource)) {
			return &Page{Entries: []Row{}}, nil
		}
		// A role that reads every resource (and, holding api.manage, the admin entries) is not filtered
		// by resource at all: an IN list of every resource makes PostgreSQL plan the walk through the
		// resource index and sort, where the time index reads the newest entries in order.
		everything := len(policies) == len(s.cat.Resources) && admin
		if q.Resource == "" && !everything {
			if len(readable) == 0 {
				return &Page{Entries: []Row{}}, nil
			}
			where += " AND resource IN (" + strings.TrimSuffix(strings.Repeat("?, ", len(readable)), ", ") + ")"
			for _, n := range readable {
				args = append(args, n)
			}
		}
	}
	if q.Resource != "" {
		where += " AND resource = ?"
		args = append(args, q.Resource)
	}
	if recordID != "" {
		where += " AND record_id = ?"
		args = append(args, recordID)
	}
	if !q.Since.IsZero() {
		where += " AND created_at >= ?"
		args = append(args, q.Since.UTC())
	}

	page := &Page{Entries: []Row{}}
	visible := map[string]bool{} // resource/record -> inside the reader's record rule
	batch := limit + 1
	scanned := 0
	var lastTime time.Time // the last entry on the page
	var lastID string
	for {
		sql := "SELECT id, resource, record_id, action, member_id, key_id, request_id, CAST(changes AS TEXT), CAST(previous AS TEXT), created_at FROM audit_log WHERE " + where
		bargs := append([]any{}, args...)
		if afterID != "" {
			sql += " AND (created_at, id) < (?, ?)"
			bargs = append(bargs, afterTime, afterID)
		}
		sql += fmt.Sprintf(" ORDER BY created_at DESC, id DESC LIMIT %d", batch)
		var rows []Row
		var times []time.Time
		err := s.st.Query(ctx, s.d.Bind(sql, bargs...), func(row []any) error {
			e, at, err := scanAudit(row)
			if err != nil {
				return err
			}
			rows, times = append(rows, e), append(times, at)
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("audit log: %w", err)
		}
		for i := range rows {
			e := &rows[i]
			if a.Role != nil && !IsAdminResource(e.Resource) {
				if policies[e.Resource] == nil {
					continue // a resource the definitions no longer declare
				}
				ok, err := s.visible(ctx, a, policies[e.Resource], e, visible)
				if err != nil {
					return nil, err
				}
				if !ok {
					continue
				}
			}
			if len(page.Entries) == limit {
				// One more entry follows: the page is full and the walk goes on after its last entry.
				c := listplan.EncodeTimeKeyset(s.secret, scope, lastTime, lastID)
				page.NextCursor = &c
				return page, nil
			}
			if a.Role != nil && !IsAdminResource(e.Resource) {
				if err := s.redact(ctx, a, policies[e.Resource], e); err != nil {
					return nil, err
				}
			}
			page.Entries = append(page.Entries, *e)
			lastTime, lastID = times[i], e.ID
		}
		scanned += len(rows)
		if len(rows) < batch {
			return page, nil // the end of the trail
		}
		// Go on after the last row read, seen or not.
		afterTime, afterID = times[len(rows)-1], rows[len(rows)-1].ID
		if scanned >= auditScanFactor*batch {
			// Most of what was read is out of the reader's sight: end the page short rather than scan
			// the whole trail; the walk resumes after what was read.
			c := listplan.EncodeTimeKeyset(s.secret, scope, afterTime, afterID)
			page.NextCursor = &c
			return page, nil
		}
	}
}

func roleName(r *model.Role) string {
	if r == nil {
		return ""
	}
	return r.Name
}

// scanAudit reads a row of AuditLog's query.
func scanAudit(row []any) (Row, time.Time, error) {
	e := Row{ID: store.UUIDText(row[0]), Resource: store.Text(row[1]), RecordID: store.UUIDText(row[2]), Action: store.Text(row[3]),
		MemberID: optText(store.UUIDText(row[4])), KeyID: optText(store.UUIDText(row[5])), RequestID: optText(store.Text(row[6]))}
	var err error
	if e.Changes, err = store.JSONObject(row[7]); err != nil {
		return e, time.Time{}, fmt.Errorf("audit entry %s changes: %w", e.ID, err)
	}
	if e.Changes == nil {
		e.Changes = map[string]any{}
	}
	if e.Previous, err = store.JSONObject(row[8]); err != nil {
		return e, time.Time{}, fmt.Errorf("audit entry %s previous: %w", e.ID, err)
	}
	at, err := store.Time(row[9])
	if err != nil {
		return e, time.Time{}, fmt.Errorf("audit entry %s: %w", e.ID, err)
	}
	e.CreatedAt = at.UTC().Format(store.TimeLayout)
	return e, at, nil
}

func optText(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// visible reports whether the record of e is inside the record rule of pol (remembered in seen).
func (s *Reader) visible(ctx context.Context, a Viewer, pol *access.Policy, e *Row, seen map[string]bool) (bool, error) {
	if pol == nil {
		return false, nil
	}
	k := e.Resource + "/" + e.RecordID
	if ok, done := seen[k]; done {
		return ok, nil
	}
	ok, err := a.Visible(ctx, pol, e.RecordID)
	if err != nil {
		return false, fmt.Errorf("audit log: %w", err)
	}
	seen[k] = ok
	return ok, nil
}

// redact applies pol's field rules to e's values: masked fields are masked as in responses, hidden
// ones removed and named in e.Withheld. A link names the other record by association: it is withheld
// when a.Linked refuses that record.
func (s *Reader) redact(ctx context.Context, a Viewer, pol *access.Policy, e *Row) error {
	linked := func(other *model.Resource, id string) (bool, error) {
		if a.Linked == nil {
			return false, nil
		}
		return a.Linked(ctx, other, id)
	}
	w, err := Redact(pol, e.Action == ActionLink || e.Action == ActionUnlink, linked, s.cat, e.Changes, e.Previous)
	if err != nil {
		return fmt.Errorf("audit entry %s: %w", e.ID, err)
	}
	e.Withheld = w
	return nil
}

// Redact applies pol's field rules to the values of one write (the audit trail's changes and previous,
// the change feed's data and previous), in place: masked fields are masked as in responses, hidden ones
// removed. For a link (link true) the values name the other record by association (its name -> the
// other record's id): an association whose record linked refuses — asked with the other resource and
// the id, and answering whether the reader sees that record where its links are listed (its resource
// readable, the record inside the reader's record rule) — is removed instead. It returns what it
// removed, sorted (nil: none), or linked's error.
func Redact(pol *access.Policy, link bool, linked func(other *model.Resource, id string) (bool, error), cat *model.Catalog, values ...map[string]any) ([]string, error) {
	withheld := map[string]bool{}
	for _, m := range values {
		if m == nil {
			continue
		}
		if link {
			for k, v := range m {
				assoc, ok := pol.Resource.Association(k)
				if !ok {
					continue // the link's attributes
				}
				other, ok := cat.Resource(assoc.Target)
				id, _ := v.(string)
				shown := false
				if ok && id != "" {
					var err error
					if shown, err = linked(other, id); err != nil {
						return nil, err
					}
				}
				if !shown {
					delete(m, k)
					withheld[k] = true
				}
			}
			continue
		}
		for k := range m {
			if pol.Visibility(k) == access.Hidden {
				withheld[k] = true
			}
		}
		pol.Apply(m)
	}
	var out []string
	for k := range withheld {
		out = append(out, k)
	}
	sort.Strings(out)
	return out, nil
}

package records

// The audit trail. Every write of a record or an association leaves one row in audit_log, written
// inside the write's own transaction, so a write that rolls back leaves none. A row names who wrote
// (member, key and request id; none of them on the admin path), what (resource, record, action) and
// when, with the values:
//
//	changes   the values written, JSON-shaped, by field key; custom fields by write key under
//	          "custom_fields"; for link and unlink the association name -> the other record's id, and
//	          the link's "attributes". An update keeps only the fields whose value changed.
//	previous  for an update, the values those changes replaced (same keys); for a link that replaced
//	          attributes, and an unlink, the link's former "attributes"; otherwise null.
//
// Values are stored in full. AuditLog applies a reader's field rules when it reads them.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"sort"
	"strings"
	"time"

	"github.com/workspace-records/records/engine/access"
	"github.com/workspace-records/records/engine/field"
	"github.com/workspace-records/records/engine/listplan"
	"github.com/workspace-records/records/engine/model"
	"github.com/workspace-records/records/engine/sqlgen"
	"github.com/workspace-records/records/runtime/customfields"
	"github.com/workspace-records/records/runtime/store"
)

// Audit actions.
const (
	ActionCreate  = "create"
	ActionUpdate  = "update"
	ActionArchive = "archive"
	ActionRestore = "restore"
	ActionLink    = "link"
	ActionUnlink  = "unlink"
	ActionImport  = "import" // the admin bulk path (recordsctl records import, seed)
)

// auditEntry is one audit row to write.
type auditEntry struct {
	resource, recordID, action string
	changes                    map[string]any // JSON-shaped
	previous                   map[string]any // JSON-shaped; nil when the action has none
}

// auditColumns is the number of placeholders of one audit row.
const auditColumns = 11

// writeAudit inserts entries, written by a at time at, inside the write's transaction q, in multi-row
// statements.
func (s *Service) writeAudit(ctx context.Context, q store.Querier, a Actor, at time.Time, entries []auditEntry) error {
	per := maxParams / auditColumns
	for start := 0; start < len(entries); start += per {
		chunk := entries[start:min(start+per, len(entries))]
		var sql strings.Builder
		sql.WriteString("INSERT INTO audit_log (workspace_id, id, resource, record_id, action, member_id, key_id, request_id, changes, previous, created_at) VALUES ")
		args := make([]any, 0, len(chunk)*auditColumns)
		for i, e := range chunk {
			if i > 0 {
				sql.WriteString(", ")
			}
			sql.WriteString("(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)")
			if e.changes == nil {
				e.changes = map[string]any{}
			}
			changes, err := json.Marshal(e.changes)
			if err != nil {
				return fmt.Errorf("audit %s: %w", e.resource, err)
			}
			var previous any
			if e.previous != nil {
				data, err := json.Marshal(e.previous)
				if err != nil {
					return fmt.Errorf("audit %s: %w", e.resource, err)
				}
				previous = string(data)
			}
			args = append(args, a.Workspace, NewID(), e.resource, e.recordID, e.action, nullable(a.Member), nullable(a.Key), nullable(a.RequestID), string(changes), previous, at)
		}
		if _, err := q.Exec(ctx, s.d.Bind(sql.String(), args...)); err != nil {
			return fmt.Errorf("audit %s: %w", chunk[0].resource, err)
		}
	}
	return nil
}

// auditValues returns canonical values by field key in their JSON shape.
func auditValues(r *model.Resource, values map[string]any) map[string]any {
	out := make(map[string]any, len(values)+1)
	for k, v := range values {
		if f, ok := r.Field(k); ok {
			out[k] = model.JSONValue(f, v)
		} else {
			out[k] = v
		}
	}
	return out
}

// auditCustom returns stored custom values (definition id -> value) of ids by write key; a definition
// no longer active keeps its id.
func auditCustom(fs *customfields.Fields, stored map[string]any, ids []string) map[string]any {
	out := make(map[string]any, len(ids))
	for _, id := range ids {
		key := id
		if d, ok := fs.ByID(id); ok {
			key = d.Key
		}
		out[key] = stored[id]
	}
	return out
}

// createdValues is the changes of a new record of c: its declared values and, when any, its custom values.
func createdValues(c *Collection, values, custom map[string]any) map[string]any {
	out := auditValues(c.Resource, values)
	if len(custom) > 0 {
		out["custom_fields"] = auditCustom(c.Fields, custom, keysOf(custom))
	}
	return out
}

// editValues is the audit entry of e applied to cur: for an update only what changed, with the values
// it replaced.
func editValues(c *Collection, cur Record, e *edit) (changes, previous map[string]any) {
	update := e.action == ActionUpdate
	changes = map[string]any{}
	if update {
		previous = map[string]any{}
	}
	for k, v := range e.changes {
		if k == "custom_fields" {
			continue // from e.custom below
		}
		f, ok := c.Resource.Field(k)
		if !ok {
			continue
		}
		nv := model.JSONValue(f, v)
		if update {
			if sameValue(cur[k], nv) {
				continue
			}
			previous[k] = cur[k]
		}
		changes[k] = nv
	}
	old, _ := cur["custom_fields"].(map[string]any)
	var ids []string
	for _, id := range e.customIDs {
		if !sameValue(old[id], e.custom[id]) {
			ids = append(ids, id)
		}
	}
	if len(ids) > 0 {
		changes["custom_fields"] = auditCustom(c.Fields, e.custom, ids)
		if update {
			previous["custom_fields"] = auditCustom(c.Fields, old, ids)
		}
	}
	return changes, previous
}

// sameValue reports whether two JSON-shaped values are equal: numbers by value (a stored decimal may
// come back as float64 or json.Number), anything else by its JSON text.
func sameValue(a, b any) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	if x, ok := number(a); ok {
		if y, ok := number(b); ok {
			return x.Cmp(y) == 0
		}
	}
	ja, errA := json.Marshal(a)
	jb, errB := json.Marshal(b)
	return errA == nil && errB == nil && bytes.Equal(ja, jb)
}

func number(v any) (*big.Rat, bool) {
	switch v.(type) {
	case json.Number, float64, float32, int, int32, int64:
		return new(big.Rat).SetString(fmt.Sprint(v))
	}
	return nil, false
}

// Bounds of a page of the audit trail.
const (
	DefaultAuditPage = 50
	MaxAuditPage     = 1000
)

// AuditQuery selects entries of one workspace's audit trail, newest first.
type AuditQuery struct {
	Resource string    // only entries of this resource ("" = every resource)
	RecordID string    // only entries of this record ("" = every record)
	Since    time.Time // only entries written at or after Since (zero = all)
	Limit    int       // entries per page, 1..MaxAuditPage; 0 = DefaultAuditPage
	Cursor   string    // NextCursor of the previous page of the same query; "" = the newest entries
}

// AuditEntry is one write of the audit trail as its reader may see it.
type AuditEntry struct {
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
	// (or, for a link, because it cannot read the other resource).
	Withheld  []string `json:"withheld,omitempty"`
	CreatedAt string   `json:"created_at"`
}

// AuditPage is one page of the audit trail.
type AuditPage struct {
	Entries []AuditEntry
	// NextCursor continues the walk; nil at its end.
	NextCursor *string
}

// auditScanFactor bounds how many entries one page reads, as a multiple of its size, looking for
// entries the reader may see; past it the page ends short, with a cursor to go on.
const auditScanFactor = 20

// AuditLog returns one page of a's workspace's audit trail, newest first, in (created_at, id) order.
//
// a.Role nil is the operator's view (recordsctl): every entry with its values as stored. With a role,
// the trail is shown as a.Member would see it: entries of resources the role cannot read and of
// records outside its record rule are left out; values of fields it masks are masked as in API
// responses (access.Policy.Apply), fields it hides are left out and named in Withheld.
func (s *Service) AuditLog(ctx context.Context, a Actor, q AuditQuery) (*AuditPage, error) {
	ctx = store.WithWorkspace(ctx, a.Workspace)
	var errs field.ErrorList
	if q.Resource != "" {
		if _, ok := s.cat.Resource(q.Resource); !ok {
			errs = append(errs, field.New(field.CodeOption, field.NewPath("resource"), fmt.Sprintf("%q is not a resource", q.Resource)))
		}
	}
	if q.RecordID != "" && !model.IsUUID(q.RecordID) {
		errs = append(errs, field.New(field.CodeFormat, field.NewPath("record_id"), "must be a UUID"))
	}
	limit := q.Limit
	if limit == 0 {
		limit = DefaultAuditPage
	}
	if limit < 1 || limit > MaxAuditPage {
		errs = append(errs, field.New(field.CodeRange, field.NewPath("limit"), fmt.Sprintf("must be between 1 and %d", MaxAuditPage)))
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
		if q.Resource != "" && policies[q.Resource] == nil {
			return &AuditPage{Entries: []AuditEntry{}}, nil
		}
		if q.Resource == "" {
			if len(readable) == 0 {
				return &AuditPage{Entries: []AuditEntry{}}, nil
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

	page := &AuditPage{Entries: []AuditEntry{}}
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
		var rows []AuditEntry
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
			if a.Role != nil {
				ok, err := s.auditVisible(ctx, a, policies[e.Resource], e, visible)
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
			if a.Role != nil {
				s.redactAudit(a, policies[e.Resource], e)
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
func scanAudit(row []any) (AuditEntry, time.Time, error) {
	e := AuditEntry{ID: store.UUIDText(row[0]), Resource: store.Text(row[1]), RecordID: store.UUIDText(row[2]), Action: store.Text(row[3]),
		MemberID: optText(store.UUIDText(row[4])), KeyID: optText(store.UUIDText(row[5])), RequestID: optText(store.Text(row[6]))}
	var err error
	if e.Changes, err = decodeAuditValues(row[7]); err != nil {
		return e, time.Time{}, fmt.Errorf("audit entry %s changes: %w", e.ID, err)
	}
	if e.Changes == nil {
		e.Changes = map[string]any{}
	}
	if e.Previous, err = decodeAuditValues(row[8]); err != nil {
		return e, time.Time{}, fmt.Errorf("audit entry %s previous: %w", e.ID, err)
	}
	at, err := store.Time(row[9])
	if err != nil {
		return e, time.Time{}, fmt.Errorf("audit entry %s: %w", e.ID, err)
	}
	e.CreatedAt = at.UTC().Format(store.TimeLayout)
	return e, at, nil
}

// decodeAuditValues reads a JSON column read as text, keeping numbers exact.
func decodeAuditValues(v any) (map[string]any, error) {
	if v == nil {
		return nil, nil
	}
	dec := json.NewDecoder(bytes.NewReader(store.JSON(v)))
	dec.UseNumber()
	var out map[string]any
	if err := dec.Decode(&out); err != nil {
		return nil, err
	}
	return out, nil
}

func optText(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// auditVisible reports whether the record of e is inside the record rule of pol (remembered in seen).
func (s *Service) auditVisible(ctx context.Context, a Actor, pol *access.Policy, e *AuditEntry, seen map[string]bool) (bool, error) {
	if pol == nil {
		return false, nil
	}
	k := e.Resource + "/" + e.RecordID
	if ok, done := seen[k]; done {
		return ok, nil
	}
	ok, err := s.Visible(ctx, a, pol, e.RecordID)
	if err != nil {
		return false, fmt.Errorf("audit log: %w", err)
	}
	seen[k] = ok
	return ok, nil
}

// Visible reports whether record id of pol's resource exists in a's workspace inside pol's record rule
// (archived or not). A policy without a record rule costs no query.
func (s *Service) Visible(ctx context.Context, a Actor, pol *access.Policy, id string) (bool, error) {
	if pol.Rule == access.All {
		return true, nil
	}
	ctx = store.WithWorkspace(ctx, a.Workspace)
	r := pol.Resource
	key := sqlgen.Key{Workspace: a.Workspace, ID: id, Policy: pol}
	if r.ModelScoped {
		found, err := store.QueryOne(ctx, s.st, s.d.Bind("SELECT model_id FROM "+sqlgen.Quote(r.Table)+" WHERE workspace_id = ? AND id = ?", a.Workspace, id), func(row []any) error {
			key.ModelID = store.UUIDText(row[0])
			return nil
		})
		if err != nil || !found {
			return false, err
		}
	}
	_, err := s.get(ctx, s.st, r, key, false)
	switch {
	case errors.Is(err, ErrNotFound):
		return false, nil
	case err != nil:
		return false, err
	}
	return true, nil
}

// redactAudit applies pol's field rules to e's values: masked fields are masked as in responses, hidden
// ones removed and named in e.Withheld. A link names the other record by association: it is withheld
// when the reader cannot read the other resource.
func (s *Service) redactAudit(a Actor, pol *access.Policy, e *AuditEntry) {
	withheld := map[string]bool{}
	for _, m := range []map[string]any{e.Changes, e.Previous} {
		if m == nil {
			continue
		}
		if e.Action == ActionLink || e.Action == ActionUnlink {
			for k := range m {
				if assoc, ok := pol.Resource.Association(k); ok {
					if other, ok := s.cat.Resource(assoc.Target); ok && a.Policy(other).Level == access.None {
						delete(m, k)
						withheld[k] = true
					}
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
	for k := range withheld {
		e.Withheld = append(e.Withheld, k)
	}
	sort.Strings(e.Withheld)
}

// ErrMemberNotFound is a member that is not in the workspace.
var ErrMemberNotFound = errors.New("member not found in this workspace")

// MemberActor returns the actor member of workspace is, with its current role and department, to read
// as that member outside a request (recordsctl audit list --as-member).
func (s *Service) MemberActor(ctx context.Context, workspace, member string) (Actor, error) {
	workspace, member = strings.ToLower(workspace), strings.ToLower(member)
	if !model.IsUUID(member) {
		return Actor{}, field.ErrorList{field.New(field.CodeFormat, field.NewPath("member"), "must be a UUID")}
	}
	a := Actor{Workspace: workspace, Member: member}
	var name string
	var def any
	found, err := store.QueryOne(ctx, s.st, s.d.Bind(`SELECT m.role, m.department_id, wr.definition FROM members m
LEFT JOIN workspace_roles wr ON wr.workspace_id = m.workspace_id AND wr.name = m.role
WHERE m.workspace_id = ? AND m.id = ?`, workspace, member), func(row []any) error {
		name, a.Department, def = store.Text(row[0]), store.UUIDText(row[1]), row[2]
		return nil
	})
	if err != nil {
		return Actor{}, fmt.Errorf("member %s: %w", member, err)
	}
	if !found {
		return Actor{}, fmt.Errorf("member %s: %w", member, ErrMemberNotFound)
	}
	if role, ok := s.cat.Role(name); ok {
		a.Role = role
		return a, nil
	}
	if def == nil {
		return Actor{}, fmt.Errorf("member %s: role %q is not defined", member, name)
	}
	var role model.Role
	if err := json.Unmarshal(store.JSON(def), &role); err != nil {
		return Actor{}, fmt.Errorf("member %s: role %s: %w", member, name, err)
	}
	role.Name = name
	a.Role = &role
	return a, nil
}

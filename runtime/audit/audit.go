// Package audit keeps the audit trail. Every write of a record or an association leaves one row in
// audit_log, written inside the write's own transaction, so a write that rolls back leaves none. A row names who wrote
// (member, key and request id; none of them on the admin path), what (resource, record, action) and
// when, with the values:
//
//	changes   the values written, JSON-shaped, by field key; custom fields by write key under
//	          "custom_fields"; for link and unlink the association name -> the other record's id, and
//	          the link's "attributes". An update keeps only the fields whose value changed.
//	previous  for an update, the values those changes replaced (same keys); for a link that replaced
//	          attributes, and an unlink, the link's former "attributes"; otherwise null.
//
// Values are stored in full. Reader.Page applies a reader's field rules when it reads them. The record
// service (runtime/records) writes entries inside each write's transaction with Write, and reads the
// trail for a member through a Reader, with the member's policies and record-rule check.
package audit

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/big"
	"time"

	"github.com/workspace-records/records/engine/model"
	"github.com/workspace-records/records/engine/sqlgen"
	"github.com/workspace-records/records/runtime/customfields"
	"github.com/workspace-records/records/runtime/jsonenc"
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

// Entry is one audit row to write: changes and previous are JSON-shaped, by field key.
type Entry struct {
	Resource, RecordID, Action string
	Changes                    map[string]any
	Previous                   map[string]any // nil when the action has none
}

// Author is who wrote: member, key and request id, each "" on the admin path.
type Author struct {
	Workspace, Member, Key, RequestID string
}

// Write inserts entries, written by who at time at, inside the write's transaction q, in multi-row
// statements queued with the transaction's next statement or its COMMIT.
func Write(ctx context.Context, q store.Querier, d sqlgen.Dialect, who Author, at time.Time, entries []Entry) error {
	rows, err := Rows(d, who, at, entries)
	if err != nil {
		return err
	}
	per := rows.RowsPerStatement()
	for start := 0; start < len(rows.Values); start += per {
		part := rows
		part.Values = rows.Values[start:min(start+per, len(rows.Values))]
		resource := entries[start].Resource
		if err := store.Later(ctx, q, d.InsertRows(part), false, func(err error) error {
			return fmt.Errorf("audit %s: %w", resource, err)
		}); err != nil {
			return err
		}
	}
	return nil
}

// Copy inserts entries as Write does, with the bulk path's store.Copy: for the many entries of an
// import.
func Copy(ctx context.Context, q store.Querier, d sqlgen.Dialect, who Author, at time.Time, entries []Entry) error {
	rows, err := Rows(d, who, at, entries)
	if err != nil {
		return err
	}
	if _, err := store.Copy(ctx, q, d, rows); err != nil {
		return fmt.Errorf("audit: %w", err)
	}
	return nil
}

// Rows are the audit_log rows of entries, written by who at time at.
func Rows(d sqlgen.Dialect, who Author, at time.Time, entries []Entry) (sqlgen.Rows, error) {
	cols := []string{"workspace_id", "id", "resource", "record_id", "action", "member_id", "key_id", "request_id", "changes", "previous", "created_at"}
	rows := sqlgen.Rows{Table: "audit_log", Columns: cols, Values: make([][]any, len(entries))}
	flat := make([]any, len(entries)*len(cols))
	ws, member, key, request, when := d.Arg(who.Workspace), d.Arg(store.Nullable(who.Member)), d.Arg(store.Nullable(who.Key)), d.Arg(store.Nullable(who.RequestID)), d.Arg(at)
	for i, e := range entries {
		if e.Changes == nil {
			e.Changes = map[string]any{}
		}
		changes, err := jsonenc.Marshal(e.Changes)
		if err != nil {
			return rows, fmt.Errorf("audit %s: %w", e.Resource, err)
		}
		var previous any
		if e.Previous != nil {
			data, err := jsonenc.Marshal(e.Previous)
			if err != nil {
				return rows, fmt.Errorf("audit %s: %w", e.Resource, err)
			}
			previous = string(data)
		}
		v := flat[i*len(cols) : (i+1)*len(cols) : (i+1)*len(cols)]
		v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7], v[8], v[9], v[10] = ws, store.NewID(), e.Resource, e.RecordID, e.Action, member, key, request, string(changes), previous, when
		rows.Values[i] = v
	}
	return rows, nil
}

// Values returns canonical values by field key in their JSON shape.
func Values(r *model.Resource, values map[string]any) map[string]any {
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

// Custom returns stored custom values (definition id -> value) of ids by write key; a definition
// no longer active keeps its id.
func Custom(fs *customfields.Fields, stored map[string]any, ids []string) map[string]any {
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

// Same reports whether two JSON-shaped values are equal: numbers by value (a stored decimal may
// come back as float64 or json.Number), anything else by its JSON text.
func Same(a, b any) bool {
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

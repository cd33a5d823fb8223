package records

import (
	"context"
	"fmt"
	"slices"

	"github.com/workspace-records/records/engine/model"
	"github.com/workspace-records/records/engine/sqlgen"
	"github.com/workspace-records/records/runtime/customfields"
	"github.com/workspace-records/records/runtime/store"
)

// syncCustom rewrites the custom_values rows of fieldIDs of one record from stored (definition id ->
// stored JSON value), inside the write's transaction, so that filters see exactly what was written.
func (s *Service) syncCustom(ctx context.Context, q store.Querier, workspace, recordID string, fs *customfields.Fields, stored map[string]any, fieldIDs []string) error {
	if len(fieldIDs) == 0 {
		return nil
	}
	// Both go with the transaction's next statement (store.Later).
	if err := store.Later(ctx, q, s.d.DeleteCustomValues(workspace, recordID, fieldIDs), false, nil); err != nil {
		return err
	}
	rows, err := s.customRows(nil, recordID, fs, stored, fieldIDs)
	if err != nil || len(rows) == 0 {
		return err
	}
	return store.Later(ctx, q, s.d.InsertCustomValues(workspace, rows), false, nil)
}

// customRows appends to rows the custom_values rows of fieldIDs of record recordID.
func (s *Service) customRows(rows []sqlgen.CustomRow, recordID string, fs *customfields.Fields, stored map[string]any, fieldIDs []string) ([]sqlgen.CustomRow, error) {
	for _, id := range fieldIDs {
		d, ok := fs.ByID(id)
		v := stored[id]
		if !ok || v == nil {
			continue
		}
		f := fs.Field(d)
		if f.Type == model.MultiSelect {
			for _, o := range options(v) {
				rows = append(rows, sqlgen.CustomRow{RecordID: recordID, FieldID: id, Text: o})
			}
			continue
		}
		cv, err := model.Canonical(f, v)
		if err != nil {
			return nil, err
		}
		rows = append(rows, sqlgen.CustomRow{RecordID: recordID, FieldID: id, Text: sqlgen.CustomIndexText(sqlgen.CustomText(cv)), Number: s.d.CustomNumber(f, cv)})
	}
	return rows, nil
}

func options(v any) []string {
	switch x := v.(type) {
	case []string:
		return x
	case []any:
		out := make([]string, 0, len(x))
		for _, o := range x {
			if s, ok := o.(string); ok {
				out = append(out, s)
			}
		}
		return out
	}
	return nil
}

func keysOf(m map[string]any) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

// checkCustomKeys refuses, inside a write's transaction, custom values of record recordID that another
// active record of c already holds for a unique custom field (409 conflict naming `cf__<key>`); ids are
// the definitions the write stored, stored the record's custom values after it. custom_values has no
// archived flag for a partial unique index, so the check is a read under a lock: on PostgreSQL a
// transaction-scoped advisory lock on (workspace, field, value), taken before the read and held until
// commit, so that of two writers of one value the second reads after the first committed; on SQLite
// every write transaction already runs alone on the one writer connection.
func (s *Service) checkCustomKeys(ctx context.Context, q store.Querier, c *Collection, recordID string, stored map[string]any, ids []string) error {
	var keyed []string
	for _, id := range ids {
		if d, ok := c.Fields.ByID(id); ok && d.Unique && stored[id] != nil {
			keyed = append(keyed, id)
		}
	}
	if len(keyed) == 0 {
		return nil
	}
	slices.Sort(keyed) // one lock order for every writer
	rows, err := s.customRows(nil, recordID, c.Fields, stored, keyed)
	if err != nil {
		return err
	}
	for _, row := range rows {
		if s.d.Kind() == sqlgen.Postgres {
			lock := c.Workspace + "/" + row.FieldID + "/" + row.Text // two UUIDs, then the value: unambiguous
			if _, err := q.Exec(ctx, s.d.Bind("SELECT pg_advisory_xact_lock(hashtextextended(?, 0))", lock)); err != nil {
				return fmt.Errorf("lock unique custom value: %w", err)
			}
		}
		held, err := store.QueryOne(ctx, q, s.d.Bind(fmt.Sprintf(`SELECT 1 FROM custom_values cv JOIN %s r ON r.workspace_id = cv.workspace_id AND r.id = cv.record_id
WHERE cv.workspace_id = ? AND cv.field_id = ? AND cv.t = ? AND cv.record_id <> ? AND NOT r.archived LIMIT 1`, sqlgen.Quote(c.Resource.Table)),
			c.Workspace, row.FieldID, row.Text, recordID), func([]any) error { return nil })
		if err != nil {
			return fmt.Errorf("look for unique custom value: %w", err)
		}
		if held {
			d, _ := c.Fields.ByID(row.FieldID)
			return uniqueRefusal("cf__"+d.Key, nil)
		}
	}
	return nil
}

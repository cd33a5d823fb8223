package records

import (
	"context"

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
	if _, err := q.Exec(ctx, s.d.DeleteCustomValues(workspace, recordID, fieldIDs)); err != nil {
		return err
	}
	rows, err := s.customRows(nil, recordID, fs, stored, fieldIDs)
	if err != nil || len(rows) == 0 {
		return err
	}
	_, err = q.Exec(ctx, s.d.InsertCustomValues(workspace, rows))
	return err
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

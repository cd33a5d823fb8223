package records

import (
	"errors"
	"fmt"

	"github.com/workspace-records/records/engine/model"
	"github.com/workspace-records/records/engine/sqlgen"
	"github.com/workspace-records/records/runtime/store"
)

// ErrTenancy is a row of another workspace reaching a reader: a bug, answered 500 and logged, never shown.
var ErrTenancy = errors.New("tenancy guard")

// toRecord converts a row read with sqlgen.SelectColumns into a JSON-shaped record. It accepts the value
// types of both drivers: pgx (uuid as [16]byte, numeric as a Valuer, date and timestamptz as time.Time,
// jsonb decoded) and SQLite (text, integer and real).
func (s *Service) toRecord(r *model.Resource, row []any, workspace, modelID string) (Record, error) {
	cols := sqlgen.SelectColumns(r)
	if len(row) != len(cols)+1 {
		return nil, fmt.Errorf("%s: row has %d columns, want %d", r.Name, len(row), len(cols)+1)
	}
	if err := guardRow(r, row, workspace); err != nil {
		return nil, err
	}
	row = row[1:]
	rec := make(Record, len(cols)+1)
	for i, f := range cols {
		v, err := store.FieldValue(f, row[i])
		if err != nil {
			return nil, fmt.Errorf("%s.%s: %w", r.Name, f.Key, err)
		}
		rec[f.Key] = v
	}
	if r.ModelScoped {
		rec["model_id"] = modelID
	}
	return rec, nil
}

// guardRow fails (ErrTenancy) when row, read for workspace, is another workspace's: its first column is
// the row's workspace_id.
func guardRow(r *model.Resource, row []any, workspace string) error {
	if got := store.UUIDText(row[0]); got != workspace {
		return fmt.Errorf("%s: %w: row of workspace %s read for workspace %s", r.Name, ErrTenancy, got, workspace)
	}
	return nil
}

package records

import (
	"database/sql/driver"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/workspace-records/records/engine/model"
	"github.com/workspace-records/records/engine/sqlgen"
	"github.com/workspace-records/records/runtime/store"
)

const timeLayout = "2006-01-02T15:04:05.000000Z07:00"

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
	if got := store.UUIDText(row[0]); got != workspace {
		return nil, fmt.Errorf("%s: %w: row of workspace %s read for workspace %s", r.Name, ErrTenancy, got, workspace)
	}
	row = row[1:]
	rec := make(Record, len(cols)+1)
	for i, f := range cols {
		v, err := fromDB(f, row[i])
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

func fromDB(f *model.Field, v any) (any, error) {
	if v == nil {
		if f.Type == model.Object {
			return map[string]any{}, nil
		}
		return nil, nil
	}
	switch f.Type {
	case model.UUID, model.Reference:
		return store.UUIDText(v), nil
	case model.Integer:
		if n, ok := v.(int64); ok {
			return n, nil
		}
	case model.Decimal:
		switch x := v.(type) {
		case float64:
			return json.Number(strconv.FormatFloat(x, 'f', -1, 64)), nil
		case int64:
			return json.Number(strconv.FormatInt(x, 10)), nil
		case driver.Valuer:
			dv, err := x.Value()
			if err != nil {
				return nil, err
			}
			text, ok := dv.(string)
			if !ok {
				return nil, fmt.Errorf("numeric value %T", dv)
			}
			canon, err := model.CanonicalDecimal(text)
			if err != nil {
				return nil, err
			}
			return json.Number(canon), nil
		}
	case model.Boolean:
		switch x := v.(type) {
		case bool:
			return x, nil
		case int64:
			return x != 0, nil
		}
	case model.Date:
		switch x := v.(type) {
		case time.Time:
			return x.Format(time.DateOnly), nil
		case string:
			return x, nil
		}
	case model.DateTime:
		switch x := v.(type) {
		case time.Time:
			return x.UTC().Format(timeLayout), nil
		case string:
			t, err := time.Parse(time.RFC3339Nano, x)
			if err != nil {
				return nil, err
			}
			return t.UTC().Format(timeLayout), nil
		}
	case model.Object:
		switch x := v.(type) {
		case map[string]any:
			return x, nil
		case string:
			return decodeObject([]byte(x))
		case []byte:
			return decodeObject(x)
		}
	default:
		switch x := v.(type) {
		case string:
			return x, nil
		case []byte:
			return string(x), nil
		}
	}
	return nil, fmt.Errorf("unexpected %s value of type %T", f.Type, v)
}

func decodeObject(data []byte) (map[string]any, error) {
	out := map[string]any{}
	if err := json.Unmarshal(data, &out); err != nil {
		return nil, err
	}
	return out, nil
}

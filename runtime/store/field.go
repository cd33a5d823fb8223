package store

import (
	"database/sql/driver"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/workspace-records/records/engine/model"
)

// TimeLayout is how datetimes appear in records: RFC 3339 in UTC with microseconds.
const TimeLayout = "2006-01-02T15:04:05.000000Z07:00"

// FieldValue converts a column value of field f, as either driver returns it, into its JSON-shaped
// record value: pgx gives uuid as [16]byte, numeric as a Valuer, date and timestamptz as time.Time and
// jsonb decoded; SQLite gives text, integer and real.
func FieldValue(f *model.Field, v any) (any, error) {
	if v == nil {
		if f.Type == model.Object {
			return map[string]any{}, nil
		}
		return nil, nil
	}
	switch f.Type {
	case model.UUID, model.Reference:
		return UUIDText(v), nil
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
			return x.UTC().Format(TimeLayout), nil
		case string:
			t, err := time.Parse(time.RFC3339Nano, x)
			if err != nil {
				return nil, err
			}
			return t.UTC().Format(TimeLayout), nil
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

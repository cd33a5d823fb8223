package store

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"

	"github.com/google/uuid"
)

// NewID returns a new row id: a time-ordered UUID (version 7), which keeps primary key inserts local.
// Every row id the server generates (records, workspaces, keys, audit entries, events, deliveries) comes
// from here.
func NewID() string { return uuid.Must(uuid.NewV7()).String() }

// Nullable makes an optional text argument of a statement: "" is SQL NULL.
func Nullable(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// Row values differ by driver: pgx returns uuid as [16]byte, timestamptz as time.Time, booleans as
// bool; SQLite returns TEXT and INTEGER. These helpers read either.

// Text reads a text value; NULL is "".
func Text(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case []byte:
		return string(x)
	case nil:
		return ""
	case [16]byte:
		return UUIDText(x)
	}
	return fmt.Sprint(v)
}

// UUIDText reads a uuid value as its hyphenated lowercase text.
func UUIDText(v any) string {
	b, ok := v.([16]byte)
	if !ok {
		return Text(v)
	}
	const hex = "0123456789abcdef"
	buf := make([]byte, 0, 36)
	for i, c := range b {
		if i == 4 || i == 6 || i == 8 || i == 10 {
			buf = append(buf, '-')
		}
		buf = append(buf, hex[c>>4], hex[c&0xf])
	}
	return string(buf)
}

// Bool reads a boolean value (SQLite stores 0 or 1).
func Bool(v any) bool {
	switch x := v.(type) {
	case bool:
		return x
	case int64:
		return x != 0
	}
	return false
}

// Times reads the timestamps of row into dst, in order (Time each).
func Times(row []any, dst ...*time.Time) error {
	for i, p := range dst {
		t, err := Time(row[i])
		if err != nil {
			return err
		}
		*p = t
	}
	return nil
}

// Time reads a timestamp value (SQLite stores RFC 3339 text).
func Time(v any) (time.Time, error) {
	switch x := v.(type) {
	case time.Time:
		return x.UTC(), nil
	case string:
		return time.Parse(time.RFC3339Nano, x)
	}
	return time.Time{}, fmt.Errorf("unexpected time value %T", v)
}

// Int reads an integer value (PostgreSQL INTEGER arrives as int32, BIGINT and SQLite as int64).
func Int(v any) int64 {
	switch x := v.(type) {
	case int64:
		return x
	case int32:
		return int64(x)
	case int16:
		return int64(x)
	case int:
		return int64(x)
	}
	return 0
}

// JSON reads a JSON column as bytes: pgx decodes jsonb into Go values, SQLite returns the text.
func JSON(v any) []byte {
	switch x := v.(type) {
	case string:
		return []byte(x)
	case []byte:
		return x
	}
	data, _ := json.Marshal(v)
	return data
}

// JSONObject decodes a JSON object column (read as text), keeping numbers exact (json.Number); nil for
// SQL NULL.
func JSONObject(v any) (map[string]any, error) {
	if v == nil {
		return nil, nil
	}
	dec := json.NewDecoder(bytes.NewReader(JSON(v)))
	dec.UseNumber()
	var out map[string]any
	if err := dec.Decode(&out); err != nil {
		return nil, err
	}
	return out, nil
}

package jobs

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"unicode"
	"unicode/utf8"
)

// An export's CSV is written by hand rather than by encoding/csv, whose Writer takes a []string per row
// (a string made for every number): appendCSVField quotes exactly as csv.Writer does with its defaults
// (FuzzAppendCSVField holds the two to the same bytes).

// csvHeader appends the header row of columns.
func csvHeader(buf []byte, columns []string) []byte {
	vals := make([]any, len(columns))
	for i, c := range columns {
		vals[i] = c
	}
	return appendCSVValues(buf, vals)
}

// appendCSVField appends s as one CSV field: as it is, or in double quotes (a quote doubled) when it
// holds a comma, a quote, a CR or LF, begins with a space, or is `\.` — encoding/csv's rule.
func appendCSVField(buf []byte, s string) []byte {
	if !needsQuotes(s) {
		return append(buf, s...)
	}
	buf = append(buf, '"')
	for i := 0; i < len(s); i++ {
		if s[i] == '"' {
			buf = append(buf, '"')
		}
		buf = append(buf, s[i])
	}
	return append(buf, '"')
}

func needsQuotes(s string) bool {
	if s == "" {
		return false
	}
	if s == `\.` {
		return true
	}
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '\n', '\r', '"', ',':
			return true
		}
	}
	r, _ := utf8.DecodeRuneInString(s)
	return unicode.IsSpace(r)
}

// appendCSVValues appends vals as one CSV row, each as appendCell writes it.
func appendCSVValues(buf []byte, vals []any) []byte {
	for i, v := range vals {
		if i > 0 {
			buf = append(buf, ',')
		}
		buf = appendCell(buf, v)
	}
	return append(buf, '\n')
}

// appendCell appends the CSV field of value v: text as it is, numbers and booleans as JSON writes them,
// a list joined by ";", an object as JSON, null as an empty field.
func appendCell(buf []byte, v any) []byte {
	switch x := v.(type) {
	case nil:
		return buf
	case string:
		return appendCSVField(buf, x)
	case int64:
		return strconv.AppendInt(buf, x, 10)
	case bool:
		return strconv.AppendBool(buf, x)
	case json.Number:
		return appendCSVField(buf, string(x))
	case float64:
		// encoding/json's form for the magnitudes it writes without an exponent.
		if a := math.Abs(x); a == 0 || (a >= 1e-6 && a < 1e21) {
			return strconv.AppendFloat(buf, x, 'f', -1, 64)
		}
	case []any:
		parts := make([]byte, 0, 32)
		for i, p := range x {
			if i > 0 {
				parts = append(parts, ';')
			}
			parts = fmt.Append(parts, p)
		}
		return appendCSVField(buf, string(parts))
	}
	b, err := json.Marshal(v)
	if err != nil {
		return appendCSVField(buf, fmt.Sprint(v))
	}
	return appendCSVField(buf, string(b))
}

// Package jsonenc encodes the values of decoded JSON documents — records, pages, envelopes — byte for
// byte as encoding/json.Marshal does (object keys sorted, HTML characters escaped), without reflection:
// map[string]any, []any, string, json.Number, float64, the integer types and bool are written
// directly, anything else through json.Marshal. It exists because encoding/json's map encoder (reflect,
// sort of reflect.Values) was the main CPU cost of answering reads and batches.
package jsonenc

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"sync/atomic"
	"unicode/utf8"
)

// Marshal returns the encoding of v: json.Marshal(v), faster for the types of decoded JSON.
func Marshal(v any) ([]byte, error) { return Append(make([]byte, 0, 256), v) }

// Append appends the encoding of v to dst.
func Append(dst []byte, v any) ([]byte, error) {
	switch x := v.(type) {
	case nil:
		return append(dst, "null"...), nil
	case string:
		return appendString(dst, x), nil
	case map[string]any:
		if x == nil {
			return append(dst, "null"...), nil
		}
		return appendObject(dst, x)
	case []any:
		return appendArray(dst, x, Append)
	case bool:
		if x {
			return append(dst, "true"...), nil
		}
		return append(dst, "false"...), nil
	case json.Number:
		return appendNumber(dst, x)
	case float64:
		return appendFloat(dst, x, 64)
	case float32:
		return appendFloat(dst, float64(x), 32)
	case int:
		return strconv.AppendInt(dst, int64(x), 10), nil
	case int64:
		return strconv.AppendInt(dst, x, 10), nil
	case int32:
		return strconv.AppendInt(dst, int64(x), 10), nil
	case uint64:
		return strconv.AppendUint(dst, x, 10), nil
	case []string:
		return appendArray(dst, x, func(dst []byte, s string) ([]byte, error) { return appendString(dst, s), nil })
	case map[string]string:
		if x == nil {
			return append(dst, "null"...), nil
		}
		keys := sortedKeys(x)
		dst = append(dst, '{')
		for i, k := range keys {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = append(appendString(dst, k), ':')
			dst = appendString(dst, x[k])
		}
		return append(dst, '}'), nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return dst, err
	}
	return append(dst, b...), nil
}

// appendArray writes xs as an array of the encodings elem makes (a nil slice as null).
func appendArray[T any](dst []byte, xs []T, elem func([]byte, T) ([]byte, error)) ([]byte, error) {
	if xs == nil {
		return append(dst, "null"...), nil
	}
	dst = append(dst, '[')
	for i, e := range xs {
		if i > 0 {
			dst = append(dst, ',')
		}
		var err error
		if dst, err = elem(dst, e); err != nil {
			return dst, err
		}
	}
	return append(dst, ']'), nil
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// orders holds, per object size, the sorted keys of the last object of that size encoded: the records
// of one resource share their key set, so the sort is usually skipped (an object whose keys are all in
// the list, with as many keys, has exactly those keys).
var orders [64]atomic.Pointer[[]string]

func appendObject(dst []byte, m map[string]any) ([]byte, error) {
	start := len(dst)
	slot := &orders[len(m)%len(orders)]
	if keys := slot.Load(); keys != nil && len(*keys) == len(m) {
		out, ok, err := appendFields(dst, m, *keys)
		if ok || err != nil {
			return out, err
		}
		dst = out[:start]
	}
	keys := sortedKeys(m)
	slot.Store(&keys)
	out, _, err := appendFields(dst, m, keys)
	return out, err
}

// appendFields writes m as an object with keys in the order given; ok is false when a key is not in m.
func appendFields(dst []byte, m map[string]any, keys []string) ([]byte, bool, error) {
	dst = append(dst, '{')
	for i, k := range keys {
		v, ok := m[k]
		if !ok {
			return dst, false, nil
		}
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(appendString(dst, k), ':')
		var err error
		if dst, err = Append(dst, v); err != nil {
			return dst, true, err
		}
	}
	return append(dst, '}'), true, nil
}

// appendFloat writes f as encoding/json's float encoder does: 'f' format, or 'e' for very small and
// very large magnitudes, with a two-digit negative exponent shortened (1e-07 → 1e-7).
func appendFloat(dst []byte, f float64, bits int) ([]byte, error) {
	if math.IsInf(f, 0) || math.IsNaN(f) {
		return dst, &json.UnsupportedValueError{Str: strconv.FormatFloat(f, 'g', -1, bits)}
	}
	format := byte('f')
	if abs := math.Abs(f); abs != 0 {
		if bits == 64 && (abs < 1e-6 || abs >= 1e21) || bits == 32 && (float32(abs) < 1e-6 || float32(abs) >= 1e21) {
			format = 'e'
		}
	}
	start := len(dst)
	dst = strconv.AppendFloat(dst, f, format, -1, bits)
	if format == 'e' {
		n := len(dst) - start
		b := dst[start:]
		if n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			dst = dst[:len(dst)-1]
		}
	}
	return dst, nil
}

var errNumber = errors.New("invalid number literal")

// appendNumber writes a json.Number as is ("" as 0), refusing what is not a JSON number literal.
func appendNumber(dst []byte, n json.Number) ([]byte, error) {
	if n == "" {
		return append(dst, '0'), nil
	}
	if !validNumber(string(n)) {
		return dst, fmt.Errorf("json: invalid number literal %q: %w", string(n), errNumber)
	}
	return append(dst, n...), nil
}

// validNumber reports whether s is a JSON number literal.
func validNumber(s string) bool {
	if s == "" {
		return false
	}
	if s[0] == '-' {
		s = s[1:]
		if s == "" {
			return false
		}
	}
	switch {
	case s[0] == '0':
		s = s[1:]
	case '1' <= s[0] && s[0] <= '9':
		s = s[1:]
		for len(s) > 0 && '0' <= s[0] && s[0] <= '9' {
			s = s[1:]
		}
	default:
		return false
	}
	if len(s) >= 2 && s[0] == '.' && '0' <= s[1] && s[1] <= '9' {
		s = s[2:]
		for len(s) > 0 && '0' <= s[0] && s[0] <= '9' {
			s = s[1:]
		}
	}
	if len(s) >= 2 && (s[0] == 'e' || s[0] == 'E') {
		s = s[1:]
		if s[0] == '+' || s[0] == '-' {
			s = s[1:]
			if s == "" {
				return false
			}
		}
		for len(s) > 0 && '0' <= s[0] && s[0] <= '9' {
			s = s[1:]
		}
	}
	return s == ""
}

const hex = "0123456789abcdef"

// safe marks the ASCII bytes written as they are: printable, not '"', '\\' or (HTML) '<', '>', '&'.
var safe = func() (t [utf8.RuneSelf]bool) {
	for b := 0x20; b < utf8.RuneSelf; b++ {
		t[b] = b != '"' && b != '\\' && b != '<' && b != '>' && b != '&'
	}
	return t
}()

// appendString writes s quoted and escaped as encoding/json does with HTML escaping: invalid UTF-8 as
// U+FFFD, U+2028 and U+2029 escaped.
func appendString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		if b := s[i]; b < utf8.RuneSelf {
			if safe[b] {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch b {
			case '\\', '"':
				dst = append(dst, '\\', b)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hex[b>>4], hex[b&0xF])
			}
			i++
			start = i
			continue
		}
		c, size := utf8.DecodeRuneInString(s[i:])
		if c == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if c == '\u2028' || c == '\u2029' {
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hex[c&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

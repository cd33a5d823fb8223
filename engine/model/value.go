package model

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// Canonical values are what the engine hands to SQL and stores in cursors:
//
//	string, text, email, url, phone  string (valid UTF-8, no NUL)
//	integer                          int64
//	decimal                          string holding a plain decimal number ("12.5", "-3")
//	boolean                          bool
//	date                             string "YYYY-MM-DD", year 0001..9999
//	datetime                         time.Time in UTC, truncated to microseconds
//	reference, uuid                  lowercase hyphenated UUID string
//
// Canonical converts a JSON-shaped value (as decoded with json.Decoder.UseNumber) to the canonical value
// for f, checking its type and format but not options, bounds or lengths (see Check).
func Canonical(f *Field, v any) (any, error) {
	switch f.Type {
	case String, Text, Email, URL, Phone:
		s, ok := v.(string)
		if !ok {
			return nil, errors.New("must be a string")
		}
		if strings.IndexByte(s, 0) >= 0 || !utf8.ValidString(s) {
			return nil, errors.New("must be valid UTF-8 text without NUL characters")
		}
		return s, nil
	case Integer:
		_, text, ok := jsonNumber(v)
		if !ok {
			return nil, errors.New("must be an integer")
		}
		if !SaneNumber(text) {
			return nil, ErrNumberSize
		}
		if n, ok := plainInteger(text); ok {
			return n, nil
		}
		r, ok := new(big.Rat).SetString(text)
		if !ok || !r.IsInt() || !r.Num().IsInt64() {
			return nil, errors.New("must be an integer")
		}
		return r.Num().Int64(), nil
	case Decimal:
		_, text, ok := jsonNumber(v)
		if !ok {
			return nil, errors.New("must be a number")
		}
		if !SaneNumber(text) {
			return nil, ErrNumberSize
		}
		return CanonicalDecimal(text)
	case Boolean:
		b, ok := v.(bool)
		if !ok {
			return nil, errors.New("must be a boolean")
		}
		return b, nil
	case Date:
		s, ok := v.(string)
		if !ok {
			return nil, errors.New("must be a date string YYYY-MM-DD")
		}
		t, err := time.Parse(time.DateOnly, s)
		if err != nil || t.Year() < 1 {
			return nil, errors.New("must be a date YYYY-MM-DD")
		}
		return t.Format(time.DateOnly), nil
	case DateTime:
		s, ok := v.(string)
		if !ok {
			return nil, errors.New("must be an RFC 3339 date-time string")
		}
		t, err := time.Parse(time.RFC3339Nano, s)
		if err != nil || t.UTC().Year() < 1 || t.UTC().Year() > 9999 {
			return nil, errors.New("must be an RFC 3339 date-time such as 2026-01-31T09:30:00Z")
		}
		return t.UTC().Truncate(time.Microsecond), nil
	case Reference, UUID:
		s, ok := v.(string)
		if !ok || !IsUUID(s) {
			return nil, errors.New("must be a UUID")
		}
		return strings.ToLower(s), nil
	case MultiSelect:
		list, ok := v.([]any)
		if !ok {
			if s, isStr := v.(string); isStr { // a single option, as a filter value
				return s, nil
			}
			return nil, errors.New("must be an array of options")
		}
		out := make([]string, 0, len(list))
		seen := map[string]bool{}
		for _, x := range list {
			s, ok := x.(string)
			if !ok {
				return nil, errors.New("must be an array of strings")
			}
			if !seen[s] {
				seen[s] = true
				out = append(out, s)
			}
		}
		return out, nil
	}
	return nil, fmt.Errorf("cannot hold a value of type %s", f.Type)
}

var uuidRE = regexp.MustCompile(`^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`)

// IsUUID reports whether s is a hyphenated UUID.
func IsUUID(s string) bool { return len(s) == 36 && uuidRE.MatchString(s) }

// Bounds of the JSON numbers the engine converts exactly. math/big's cost grows with a number's
// exponent, not its length: the nine bytes 1e-999999 cost about 20 ms of big.Rat work (fifty filters of
// a hundred such values, 100 s of CPU), and big.Rat refuses 1e9999999 outright, which made jsonschema's
// integer check dereference nil. Numbers beyond them are refused before any arithmetic.
const (
	MaxNumberLen = 100 // characters of a number's JSON text
	MaxExponent  = 100 // magnitude of its exponent
)

// ErrNumberSize refuses a number beyond MaxNumberLen or MaxExponent.
var ErrNumberSize = fmt.Errorf("must be a number of at most %d characters with an exponent between -%d and %d", MaxNumberLen, MaxExponent, MaxExponent)

// SaneNumber reports whether text, a JSON number, is at most MaxNumberLen characters long with an
// exponent (if any) between -MaxExponent and MaxExponent.
func SaneNumber(text string) bool {
	if len(text) > MaxNumberLen {
		return false
	}
	i := strings.IndexAny(text, "eE")
	if i < 0 {
		return true
	}
	e, err := strconv.Atoi(text[i+1:])
	return err == nil && e >= -MaxExponent && e <= MaxExponent
}

var decimalRE = regexp.MustCompile(`^-?[0-9]{1,30}(\.[0-9]{1,20})?$`)

// CanonicalDecimal normalises a JSON number to a plain decimal string of at most 30 integer and 20
// fraction digits (exponents are expanded; larger values are refused).
func CanonicalDecimal(text string) (string, error) {
	if s, ok := plainDecimal(text); ok {
		return s, nil
	}
	r, ok := new(big.Rat).SetString(text)
	if !ok {
		return "", errors.New("must be a number")
	}
	s := r.FloatString(20)
	if strings.Contains(s, ".") {
		s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	}
	if s == "-0" {
		s = "0"
	}
	if !decimalRE.MatchString(s) {
		return "", errors.New("must be a number with at most 30 integer and 20 fraction digits")
	}
	return s, nil
}

// Check verifies a canonical value against f's options, bounds and lengths.
func Check(f *Field, v any) error {
	switch x := v.(type) {
	case string:
		if f.Type.Textual() {
			n := utf8.RuneCountInString(x)
			if f.MaxLength > 0 && n > f.MaxLength {
				return fmt.Errorf("must be at most %d characters", f.MaxLength)
			}
			if n < f.MinLength {
				return fmt.Errorf("must be at least %d characters", f.MinLength)
			}
			if len(f.Options) > 0 && !contains(f.Options, x) {
				return fmt.Errorf("must be one of %s", strings.Join(f.Options, ", "))
			}
			if f.Type == URL {
				if err := CheckURL(x); err != nil {
					return err
				}
			}
		}
		if f.Type == Decimal {
			r, _ := new(big.Rat).SetString(x)
			if f.Minimum != nil && r.Cmp(new(big.Rat).SetFloat64(*f.Minimum)) < 0 {
				return fmt.Errorf("must be at least %v", *f.Minimum)
			}
			if f.Maximum != nil && r.Cmp(new(big.Rat).SetFloat64(*f.Maximum)) > 0 {
				return fmt.Errorf("must be at most %v", *f.Maximum)
			}
		}
	case []string:
		for _, o := range x {
			if !contains(f.Options, o) {
				return fmt.Errorf("%q is not one of %s", o, strings.Join(f.Options, ", "))
			}
		}
	case int64:
		if f.Minimum != nil && float64(x) < *f.Minimum {
			return fmt.Errorf("must be at least %v", *f.Minimum)
		}
		if f.Maximum != nil && float64(x) > *f.Maximum {
			return fmt.Errorf("must be at most %v", *f.Maximum)
		}
	}
	return nil
}

// URLPattern is the JSON Schema pattern of a url value: an http or https scheme (any letter case) and a
// host. CheckURL holds the whole rule; the pattern tells clients the same in the schema documents.
const URLPattern = `^[Hh][Tt][Tt][Pp][Ss]?://[^/?#@\s]`

// ErrURL refuses a url value that is not an absolute http or https address with a host.
var ErrURL = errors.New("must be an absolute http:// or https:// URL with a host")

// CheckURL verifies that s is a web address a browser opens as a page: an absolute URL whose scheme is
// http or https and which names a host. Every other scheme is refused (javascript:, data:, vbscript:,
// file:, ftp:, mailto: …), so a stored value is safe to render as a link; the model has no mailto type
// (email fields hold bare addresses).
func CheckURL(s string) error {
	u, err := url.Parse(s)
	if err != nil || u.Opaque != "" || u.Host == "" || u.Hostname() == "" {
		return ErrURL
	}
	if scheme := strings.ToLower(u.Scheme); scheme != "http" && scheme != "https" {
		return ErrURL
	}
	return nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// JSONValue converts a canonical value to its JSON-shaped form for responses and cursors.
func JSONValue(f *Field, v any) any {
	switch x := v.(type) {
	case time.Time:
		return x.UTC().Format("2006-01-02T15:04:05.000000Z07:00")
	case string:
		if f.Type == Decimal {
			return json.Number(x)
		}
	}
	return v
}

// plainInteger converts text when it is a plain integer (an optional minus sign and at most 18
// digits: within int64), as math/big would, without it.
func plainInteger(text string) (int64, bool) {
	digits := strings.TrimPrefix(text, "-")
	if len(digits) == 0 || len(digits) > 18 || strings.Trim(digits, "0123456789") != "" {
		return 0, false
	}
	n, err := strconv.ParseInt(text, 10, 64)
	return n, err == nil
}

// plainDecimal is CanonicalDecimal of text when it is a plain decimal (an optional minus sign, at most
// 30 integer digits, and at most 20 fraction digits after a point, no exponent): what math/big would
// give, leading zeros of the integer part and trailing zeros of the fraction dropped, without it.
func plainDecimal(text string) (string, bool) {
	neg := strings.HasPrefix(text, "-")
	whole, frac, point := strings.Cut(strings.TrimPrefix(text, "-"), ".")
	if whole == "" || len(whole) > 30 || len(frac) > 20 || (point && frac == "") ||
		strings.Trim(whole, "0123456789") != "" || strings.Trim(frac, "0123456789") != "" {
		return "", false
	}
	whole = strings.TrimLeft(whole, "0")
	if whole == "" {
		whole = "0"
	}
	frac = strings.TrimRight(frac, "0")
	out := whole
	if frac != "" {
		out += "." + frac
	}
	if neg && out != "0" {
		out = "-" + out
	}
	return out, true
}

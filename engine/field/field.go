// Package field holds the error type every validator in the engine returns: a list of problems, each
// tied to the path of the value it is about, so that callers can report every problem at once.
package field

import (
	"strconv"
	"strings"
)

// Code is the machine-readable kind of a validation problem. It appears as `code` in API error details.
type Code string

// The codes a validator may report.
const (
	CodeRequired     Code = "required"
	CodeUnknown      Code = "unknown_field"
	CodeReadOnly     Code = "read_only"
	CodeType         Code = "invalid_type"
	CodeFormat       Code = "invalid_format"
	CodeTooLong      Code = "too_long"
	CodeTooShort     Code = "too_short"
	CodeOption       Code = "invalid_option"
	CodeRange        Code = "out_of_range"
	CodeNotFound     Code = "reference_not_found"
	CodeDuplicate    Code = "duplicate"
	CodeConflicting  Code = "conflicting"
	CodeInvalid      Code = "invalid"
	CodeNotPermitted Code = "not_permitted"
)

// Path is a dotted location inside a document, e.g. `fields.stage_id.target` or `filters[2].op`.
// The zero value is the root.
type Path struct {
	parts []string
}

// NewPath returns a path starting at name.
func NewPath(name string) Path {
	if name == "" {
		return Path{}
	}
	return Path{parts: []string{name}}
}

// Child returns the path of member name below p.
func (p Path) Child(name string) Path {
	parts := make([]string, len(p.parts), len(p.parts)+1)
	copy(parts, p.parts)
	return Path{parts: append(parts, name)}
}

// Index returns the path of element i below p.
func (p Path) Index(i int) Path {
	idx := "[" + strconv.Itoa(i) + "]"
	if len(p.parts) == 0 {
		return Path{parts: []string{idx}}
	}
	parts := make([]string, len(p.parts))
	copy(parts, p.parts)
	parts[len(parts)-1] += idx
	return Path{parts: parts}
}

// String renders the path with dots; the root renders as "".
func (p Path) String() string { return strings.Join(p.parts, ".") }

// Error is one problem found at Field.
type Error struct {
	Code    Code
	Field   string
	Message string
}

func (e *Error) Error() string {
	if e.Field == "" {
		return e.Message
	}
	return e.Field + ": " + e.Message
}

// New returns an error of code at path.
func New(code Code, path Path, message string) *Error {
	return &Error{Code: code, Field: path.String(), Message: message}
}

// ErrorList is every problem a validation found, in the order found.
type ErrorList []*Error

// Error joins the problems one per line.
func (l ErrorList) Error() string {
	lines := make([]string, len(l))
	for i, e := range l {
		lines[i] = e.Error()
	}
	return strings.Join(lines, "\n")
}

// Err returns l as an error, or nil when l is empty.
func (l ErrorList) Err() error {
	if len(l) == 0 {
		return nil
	}
	return l
}

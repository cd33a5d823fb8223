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
//
// A problem of a definitions file also names the File, and, once the loader has placed it, the Line and
// Column where the value at Field (or the nearest enclosing one) begins in it.
type Error struct {
	Code    Code
	Field   string
	Message string

	File         string // the definitions file, relative to the definitions directory; "" elsewhere
	Line, Column int    // 1-based place in File; 0 when not known
	// Within is the place of the problem inside the text of the value at Field (a formula's token),
	// counted in that text's own lines and characters; zero for the value as a whole. The loader adds it
	// to where the value's text begins in File.
	Within Offset
}

// Offset is a 1-based line and column (in characters) inside a text.
type Offset struct {
	Line, Column int
}

// Error renders `file: path: message` (parts that are empty left out), with no position: the rendering
// of every error before positions existed, which API answers and tests rely on. Located adds the place.
func (e *Error) Error() string {
	s := e.Message
	if e.Field != "" {
		s = e.Field + ": " + s
	}
	if e.File != "" {
		s = e.File + ": " + s
	}
	return s
}

// Located renders the error the way compilers, go vet and eslint's unix format do, which editors and
// CI annotations read: `file:line:column: path: message`, where file is prefix followed by File (prefix
// is the definitions directory as the user wrote it, with its separator: the engine reads definitions
// through an fs.FS and knows no directory). Without a known line it is `file: path: message`.
func (e *Error) Located(prefix string) string {
	s := e.Message
	if e.Field != "" {
		s = e.Field + ": " + s
	}
	file := ""
	if e.File != "" {
		file = prefix + e.File
	}
	switch {
	case file == "":
	case e.Line > 0:
		s = file + ":" + strconv.Itoa(e.Line) + ":" + strconv.Itoa(max(e.Column, 1)) + ": " + s
	default:
		s = file + ": " + s
	}
	return s
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

// Located renders every error with Error.Located(prefix), one line each.
func (l ErrorList) Located(prefix string) []string {
	lines := make([]string, len(l))
	for i, e := range l {
		lines[i] = e.Located(prefix)
	}
	return lines
}

// Err returns l as an error, or nil when l is empty.
func (l ErrorList) Err() error {
	if len(l) == 0 {
		return nil
	}
	return l
}

// Package apierr is the one table of the API's error codes: each code's HTTP status, error type and
// meaning. The error envelope (runtime/httpapi), the OpenAPI document (engine/catalog) and the code list
// of docs/errors.md (make errors-doc) all come from it, so they cannot disagree.
//
// Every layer that refuses a request returns an *Error naming a code and never a status: the status
// follows from the code. A field.ErrorList returned on its own is the workspace refusing values (422
// validation_failed); a malformed parameter or body is Invalid (400 invalid_request), whichever layer
// finds it.
package apierr

import (
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/workspace-records/records/engine/field"
)

// Code is an error code of SPEC.md, the envelope's `code`.
type Code string

// The codes of SPEC.md, in its order.
const (
	InvalidRequest       Code = "invalid_request"
	InvalidAPIKey        Code = "invalid_api_key"
	ExpiredAPIKey        Code = "expired_api_key"
	KeyAssuranceStale    Code = "key_assurance_stale"
	IPNotAllowed         Code = "ip_not_allowed"
	PermissionDenied     Code = "permission_denied"
	PlanUpgradeRequired  Code = "plan_upgrade_required"
	InsufficientScope    Code = "insufficient_scope"
	FeatureUnavailable   Code = "feature_unavailable"
	Forbidden            Code = "forbidden"
	NotFound             Code = "not_found"
	UnknownResource      Code = "unknown_resource"
	RouteNotFound        Code = "route_not_found"
	MethodNotAllowed     Code = "method_not_allowed"
	Conflict             Code = "conflict"
	IdempotencyKeyInUse  Code = "idempotency_key_in_use"
	PreconditionFailed   Code = "precondition_failed"
	BatchAborted         Code = "batch_aborted"
	PayloadTooLarge      Code = "payload_too_large"
	ValidationFailed     Code = "validation_failed"
	BatchFailed          Code = "batch_failed"
	IdempotencyKeyReused Code = "idempotency_key_reused"
	RateLimited          Code = "rate_limited"
	QuotaExceeded        Code = "quota_exceeded"
	InternalError        Code = "internal_error"
	ServiceUnavailable   Code = "service_unavailable"
)

// Entry is one row of the table.
type Entry struct {
	Code    Code
	Status  int
	Type    string // the envelope's `type`
	Meaning string // one line for the docs
}

// Table lists every code, in SPEC.md's order.
var Table = []Entry{
	{InvalidRequest, 400, "invalid_request_error", "Malformed parameters or body; `details.errors` names the parameter or field."},
	{InvalidAPIKey, 401, "authentication_error", "The key is missing, malformed, unknown or revoked."},
	{ExpiredAPIKey, 401, "authentication_error", "The key has expired; create a replacement."},
	{KeyAssuranceStale, 401, "authentication_error", "A new MFA factor was verified after the key was created; create a replacement after a fresh MFA sign-in."},
	{IPNotAllowed, 403, "permission_error", "The key has an IP allowlist that does not include the client address."},
	{PermissionDenied, 403, "permission_error", "The key's owner no longer holds the permission the key needs."},
	{PlanUpgradeRequired, 403, "permission_error", "The workspace's plan does not include API access."},
	{InsufficientScope, 403, "permission_error", "The key's access level or resource restriction does not allow this request."},
	{FeatureUnavailable, 403, "permission_error", "The resource needs a feature the workspace's plan does not include."},
	{Forbidden, 403, "permission_error", "The owner's role does not give this access to the resource."},
	{NotFound, 404, "not_found_error", "No such record (or data model, or link) in this workspace, including records the caller may not see."},
	{UnknownResource, 404, "not_found_error", "No resource of that name."},
	{RouteNotFound, 404, "not_found_error", "No route matches the method and path."},
	{MethodNotAllowed, 405, "invalid_request_error", "The path exists but not with this method; `Allow` lists the methods that do."},
	{Conflict, 409, "conflict_error", "The write conflicts with the record's state or an existing record."},
	{IdempotencyKeyInUse, 409, "conflict_error", "A request with the same `Idempotency-Key` is still running."},
	{PreconditionFailed, 412, "conflict_error", "An `If-Match` precondition did not hold: the record changed since the caller read it; nothing was written."},
	{PayloadTooLarge, 413, "invalid_request_error", "The body is larger than 1 MiB."},
	{ValidationFailed, 422, "validation_error", "The workspace refused the values; `details.errors` lists each field."},
	{BatchFailed, 422, "validation_error", "An atomic batch wrote nothing because at least one item was refused; `details.results` has every item's result."},
	{IdempotencyKeyReused, 422, "validation_error", "The `Idempotency-Key` was used for a different request."},
	{BatchAborted, 424, "invalid_request_error", "Only as an item's result in a failed atomic batch: this item was not written because another item was refused."},
	{RateLimited, 429, "rate_limit_error", "The key's rate limit is used up; wait `Retry-After` seconds."},
	{QuotaExceeded, 429, "rate_limit_error", "The workspace's monthly quota is used up."},
	{InternalError, 500, "api_error", "An unexpected failure; the request id identifies it in the server's log."},
	{ServiceUnavailable, 503, "api_error", "The service cannot check the key, reach its data or run a rule right now; retry after `Retry-After` seconds."},
}

var byCode = func() map[Code]Entry {
	m := make(map[Code]Entry, len(Table))
	for _, e := range Table {
		m[e.Code] = e
	}
	return m
}()

// Lookup returns the table's row of c.
func Lookup(c Code) (Entry, bool) {
	e, ok := byCode[c]
	return e, ok
}

// Status is the HTTP status of c; 500 for a code that is not in the table.
func (c Code) Status() int {
	if e, ok := byCode[c]; ok {
		return e.Status
	}
	return 500
}

// Type is the envelope type of c.
func (c Code) Type() string {
	if e, ok := byCode[c]; ok {
		return e.Type
	}
	return "api_error"
}

// Codes returns every code, in the table's order.
func Codes() []string {
	out := make([]string, len(Table))
	for i, e := range Table {
		out[i] = string(e.Code)
	}
	return out
}

// Types returns every error type, in the order of their first code.
func Types() []string {
	var out []string
	seen := map[string]bool{}
	for _, e := range Table {
		if !seen[e.Type] {
			seen[e.Type] = true
			out = append(out, e.Type)
		}
	}
	return out
}

// OfStatus returns the codes answered with status, in the table's order.
func OfStatus(status int) []Code {
	var out []Code
	for _, e := range Table {
		if e.Status == status {
			out = append(out, e.Code)
		}
	}
	return out
}

// Statuses returns the statuses of the table, ascending.
func Statuses() []int {
	seen := map[int]bool{}
	var out []int
	for _, e := range Table {
		if !seen[e.Status] {
			seen[e.Status] = true
			out = append(out, e.Status)
		}
	}
	sort.Ints(out)
	return out
}

// Error is a refusal of a request: its code, the message for the caller, and optionally the field
// errors (`details.errors`), other details and response headers (Allow, Retry-After).
type Error struct {
	Code    Code
	Message string
	Errors  field.ErrorList
	Details map[string]any
	Header  map[string][]string
	Err     error // the cause, for logs; never shown to the caller
}

func (e *Error) Error() string { return string(e.Code) + ": " + e.Message }

func (e *Error) Unwrap() error { return e.Err }

// Status is the HTTP status of the error's code.
func (e *Error) Status() int { return e.Code.Status() }

// MaxListed is how many field errors an error response lists in `details.errors`; the number of the
// others is `details.errors_omitted`. A 1 MiB body of unknown members would otherwise be answered with
// an error list larger than itself.
const MaxListed = 100

// MaxEchoed is how many characters of a field path an error response repeats; a longer path (a member
// name of a megabyte) is cut there and ends with "…".
const MaxEchoed = 200

// Listed returns the field errors an error response shows, at most MaxListed with their paths cut to
// MaxEchoed characters, and how many it leaves out.
func (e *Error) Listed() (field.ErrorList, int) {
	n := min(len(e.Errors), MaxListed)
	out := make(field.ErrorList, n)
	for i, fe := range e.Errors[:n] {
		out[i] = &field.Error{Code: fe.Code, Field: Clip(fe.Field), Message: fe.Message}
	}
	return out, len(e.Errors) - n
}

// Clip cuts s to MaxEchoed characters, marking the cut with "…".
func Clip(s string) string {
	if len(s) <= MaxEchoed {
		return s
	}
	n := 0
	for i := range s {
		if n == MaxEchoed {
			return s[:i] + "…"
		}
		n++
	}
	return s
}

// New returns an error of code with message.
func New(code Code, message string) *Error { return &Error{Code: code, Message: message} }

// Invalid is a malformed request (400 invalid_request). With errs and no message, the message is the
// first field error.
func Invalid(message string, errs field.ErrorList) *Error {
	e := &Error{Code: InvalidRequest, Message: message, Errors: errs}
	if message == "" && len(errs) > 0 {
		e.Message = firstError(errs)
	}
	return e
}

// InvalidField is Invalid with one field error.
func InvalidField(code field.Code, name, message string) *Error {
	return Invalid("", field.ErrorList{{Code: code, Field: name, Message: message}})
}

// Refused is the workspace refusing values (422 validation_failed) with the field errors.
func Refused(errs field.ErrorList) *Error {
	e := &Error{Code: ValidationFailed, Errors: errs, Message: "The workspace refused the values."}
	switch {
	case len(errs) == 1:
		e.Message = "The workspace refused the values: " + firstError(errs)
	case len(errs) > 1:
		e.Message = "The workspace refused the values of " + strconv.Itoa(len(errs)) + " fields; see details.errors."
	}
	return e
}

// firstError is the text of errs[0] for a message, its path cut as in details.errors.
func firstError(errs field.ErrorList) string {
	return (&field.Error{Code: errs[0].Code, Field: Clip(errs[0].Field), Message: errs[0].Message}).Error()
}

// As returns err's *Error, if it has one.
func As(err error) (*Error, bool) {
	var e *Error
	ok := errors.As(err, &e)
	return e, ok
}

// Markdown renders the table for docs/errors.md: one row a code, with its status, type and meaning.
func Markdown() string {
	var b strings.Builder
	b.WriteString("| code | status | type | meaning |\n|---|---|---|---|\n")
	for _, e := range Table {
		fmt.Fprintf(&b, "| `%s` | %d | `%s` | %s |\n", e.Code, e.Status, e.Type, e.Meaning)
	}
	return b.String()
}

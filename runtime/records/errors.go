package records

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/workspace-records/records/engine/apierr"
	"github.com/workspace-records/records/engine/field"
	"github.com/workspace-records/records/engine/model"
	"github.com/workspace-records/records/engine/sqlgen"
	"github.com/workspace-records/records/runtime/plugins"
	"github.com/workspace-records/records/runtime/store"
)

// Errors the service reports. Explain turns them, and the errors of the layers below, into API errors.
var (
	ErrNotFound     = errors.New("record not found")
	ErrLinkNotFound = errors.New("link not found")
)

// ConflictError is a write that contradicts the record's state.
type ConflictError struct{ Message string }

func (e *ConflictError) Error() string { return e.Message }

// Explain returns the API error err stands for: err itself when it is one, the refusal of values for
// a field.ErrorList, and for the errors of the service and of the store and plugins below it their
// code; anything else is internal_error, with err kept as the cause for the log.
func Explain(err error) *apierr.Error {
	if ae, ok := apierr.As(err); ok {
		return ae
	}
	var fl field.ErrorList
	if errors.As(err, &fl) && len(fl) > 0 {
		return apierr.Refused(fl)
	}
	retry := map[string][]string{"Retry-After": {"1"}}
	var conflict *ConflictError
	switch {
	case errors.As(err, &conflict):
		return apierr.New(apierr.Conflict, conflict.Message)
	case errors.Is(err, ErrPreconditionFailed):
		return apierr.New(apierr.PreconditionFailed, "The record changed since the If-Match tag was issued; nothing was written. Read it again and retry with its new ETag.")
	case errors.Is(err, ErrLinkNotFound):
		return apierr.New(apierr.NotFound, "These records are not linked.")
	case errors.Is(err, ErrNotFound):
		return apierr.New(apierr.NotFound, "No such record in this workspace.")
	case errors.Is(err, store.ErrConflict):
		return &apierr.Error{Code: apierr.Conflict, Message: "The write conflicts with an existing record.", Err: err}
	case errors.Is(err, store.ErrInvalid):
		return &apierr.Error{Code: apierr.ValidationFailed, Message: "A value is outside what the workspace can store.", Err: err}
	case errors.Is(err, plugins.ErrUnavailable):
		return &apierr.Error{Code: apierr.ServiceUnavailable, Message: "A rule this write must pass cannot run right now; nothing was written. Retry with backoff.", Err: err, Header: retry}
	case errors.Is(err, store.ErrUnavailable), errors.Is(err, context.DeadlineExceeded):
		return &apierr.Error{Code: apierr.ServiceUnavailable, Message: "The service cannot reach its data right now; retry with backoff.", Err: err, Header: retry}
	}
	return &apierr.Error{Code: apierr.InternalError, Message: "An unexpected error occurred; the request id identifies it in our logs.", Err: err}
}

// keyConflict turns a write of r refused by the unique index of one of its declared unique fields into
// 409 conflict naming that field (`details.unique_key`, and `details.errors` with code duplicate). It
// never names the record holding the value: the caller's record rules may hide it, and the key alone
// lets a caller who can read it find it with a filter. Other errors are returned as they are.
func keyConflict(r *model.Resource, err error) error {
	if !errors.Is(err, store.ErrConflict) {
		return err
	}
	msg := err.Error()
	for _, f := range r.Fields {
		if !f.Unique || f.Custom {
			continue
		}
		// PostgreSQL names the index; SQLite lists the index's columns, "table.column[, ...]".
		col := r.Table + "." + f.Column
		i := strings.Index(msg, col)
		sqliteHit := i >= 0 && (i+len(col) == len(msg) || msg[i+len(col)] == ',' || msg[i+len(col)] == ' ' || msg[i+len(col)] == ')')
		if strings.Contains(msg, `"`+sqlgen.UniqueIndexName(r, f)+`"`) || sqliteHit {
			return uniqueRefusal(f.Key, err)
		}
	}
	return err
}

// uniqueRefusal is the 409 of a value of unique key key already held by another active record.
func uniqueRefusal(key string, err error) *apierr.Error {
	text := fmt.Sprintf("another active record of this workspace already has this %s", key)
	return &apierr.Error{
		Code:    apierr.Conflict,
		Message: fmt.Sprintf("%s is a unique key and %s.", key, text),
		Errors:  field.ErrorList{field.New(field.CodeDuplicate, field.NewPath(key), text)},
		Details: map[string]any{"unique_key": key},
		Err:     err,
	}
}

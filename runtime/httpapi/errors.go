package httpapi

import (
	"context"
	"errors"
	"net/http"
	"strconv"

	"github.com/workspace-records/records/engine/field"
	"github.com/workspace-records/records/runtime/auth"
	"github.com/workspace-records/records/runtime/plugins"
	"github.com/workspace-records/records/runtime/records"
	"github.com/workspace-records/records/runtime/store"
)

// Error is an API error: the single type handlers return for anything that is not a 2xx answer.
type Error struct {
	Status  int
	Type    string
	Code    string
	Message string
	Details map[string]any
	Header  http.Header
	Err     error // the cause, for logs
}

func (e *Error) Error() string { return e.Code + ": " + e.Message }

func (e *Error) Unwrap() error { return e.Err }

var typeOfStatus = map[int]string{
	400: "invalid_request_error", 401: "authentication_error", 403: "permission_error", 404: "not_found_error",
	405: "invalid_request_error", 409: "conflict_error", 413: "invalid_request_error", 422: "validation_error",
	429: "rate_limit_error", 500: "api_error", 503: "api_error",
}

func apiError(status int, code, message string) *Error {
	return &Error{Status: status, Type: typeOfStatus[status], Code: code, Message: message}
}

func invalidRequest(message string, errs field.ErrorList) *Error {
	e := apiError(400, "invalid_request", message)
	if len(errs) > 0 {
		e.Details = map[string]any{"errors": errorItems(errs)}
		if message == "" {
			e.Message = errs[0].Error()
		}
	}
	return e
}

func errorItems(errs field.ErrorList) []map[string]any {
	out := make([]map[string]any, len(errs))
	for i, e := range errs {
		out[i] = map[string]any{"field": e.Field, "code": string(e.Code), "message": e.Message}
	}
	return out
}

// translate maps any error a handler returns to the API error it stands for. It is the only place that
// decides statuses for errors from lower layers.
func translate(err error) *Error {
	var ae *Error
	if errors.As(err, &ae) {
		if ae.Type == "" {
			ae.Type = typeOfStatus[ae.Status]
		}
		return ae
	}
	var authErr *auth.Error
	if errors.As(err, &authErr) {
		return apiError(authErr.Status, authErr.Code, authErr.Message)
	}
	var fl field.ErrorList
	if errors.As(err, &fl) {
		e := apiError(422, "validation_failed", "The workspace refused the values: "+fl[0].Error())
		if len(fl) > 1 {
			e.Message = "The workspace refused the values of " + plural(len(fl), "field") + "; see details.errors."
		}
		e.Details = map[string]any{"errors": errorItems(fl)}
		return e
	}
	var conflict *records.ConflictError
	switch {
	case errors.As(err, &conflict):
		return apiError(409, "conflict", conflict.Message)
	case errors.Is(err, records.ErrLinkNotFound):
		return apiError(404, "not_found", "These records are not linked.")
	case errors.Is(err, records.ErrNotFound):
		return apiError(404, "not_found", "No such record in this workspace.")
	case errors.Is(err, records.ErrModelRequired):
		return apiError(400, "invalid_request", "model_id is required for data_model_records (query parameter, or body member on create and query).")
	case errors.Is(err, records.ErrModelNotFound):
		return apiError(404, "not_found", "No such data model in this workspace.")
	case errors.Is(err, store.ErrConflict):
		return &Error{Status: 409, Type: "conflict_error", Code: "conflict", Message: "The write conflicts with an existing record.", Err: err}
	case errors.Is(err, store.ErrInvalid):
		return &Error{Status: 422, Type: "validation_error", Code: "validation_failed", Message: "A value is outside what the workspace can store.", Err: err}
	case errors.Is(err, plugins.ErrUnavailable):
		return &Error{Status: 503, Type: "api_error", Code: "service_unavailable", Message: "A rule this write must pass cannot run right now; nothing was written. Retry with backoff.", Err: err,
			Header: http.Header{"Retry-After": []string{"1"}}}
	case errors.Is(err, store.ErrUnavailable), errors.Is(err, context.DeadlineExceeded):
		return &Error{Status: 503, Type: "api_error", Code: "service_unavailable", Message: "The service cannot reach its data right now; retry with backoff.", Err: err,
			Header: http.Header{"Retry-After": []string{"1"}}}
	}
	return &Error{Status: 500, Type: "api_error", Code: "internal_error", Message: "An unexpected error occurred; the request id identifies it in our logs.", Err: err}
}

func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return strconv.Itoa(n) + " " + word + "s"
}

package httpapi

import (
	"github.com/workspace-records/records/engine/apierr"
	"github.com/workspace-records/records/engine/field"
	"github.com/workspace-records/records/runtime/records"
)

// translate maps any error a handler returns to the API error it stands for: records.Explain knows the
// errors of the service and the layers below it; statuses and types follow from the code (engine/apierr).
func translate(err error) *apierr.Error { return records.Explain(err) }

// envelope is the body of an error response.
func envelope(e *apierr.Error, requestID string) map[string]any {
	body := map[string]any{"type": e.Code.Type(), "code": e.Code, "message": e.Message, "request_id": requestID}
	details := e.Details
	if len(e.Errors) > 0 {
		details = make(map[string]any, len(e.Details)+2)
		for k, v := range e.Details {
			details[k] = v
		}
		listed, omitted := e.Listed()
		details["errors"] = errorItems(listed)
		if omitted > 0 {
			details["errors_omitted"] = omitted
		}
	}
	if details != nil {
		body["details"] = details
	}
	return map[string]any{"error": body}
}

func errorItems(errs field.ErrorList) []map[string]any {
	out := make([]map[string]any, len(errs))
	for i, e := range errs {
		out[i] = map[string]any{"field": e.Field, "code": string(e.Code), "message": e.Message}
	}
	return out
}

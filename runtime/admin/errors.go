package admin

import (
	"errors"
	"strings"

	"github.com/workspace-records/records/engine/apierr"
	"github.com/workspace-records/records/engine/field"
	"github.com/workspace-records/records/runtime/auth"
	"github.com/workspace-records/records/runtime/customfields"
	"github.com/workspace-records/records/runtime/members"
)

// explain turns an error of the layers below into the API error it stands for: kind names the object
// ("custom field", "data model", "member", "role") in a 404. Errors it does not know pass through (the
// handler's records.Explain answers them: 503 for an unavailable store, else 500).
func explain(kind string, err error) error {
	if err == nil {
		return nil
	}
	if _, ok := apierr.As(err); ok {
		return err
	}
	var list field.ErrorList
	var dupField *customfields.DuplicateError
	var exists *members.ExistsError
	var modelExists *customfields.ExistsError
	switch {
	case errors.Is(err, auth.ErrNotFound), errors.Is(err, customfields.ErrNotFound), errors.Is(err, customfields.ErrModelNotFound),
		errors.Is(err, customfields.ErrModelWorkspaceNotFound):
		return &apierr.Error{Code: apierr.NotFound, Message: "No such " + kind + " in this workspace.", Err: err}
	case errors.As(err, &dupField):
		return &apierr.Error{Code: apierr.Conflict, Message: dupField.Resource + " already has a custom field with key " + dupField.Key + ".",
			Errors: field.ErrorList{field.New(field.CodeDuplicate, field.NewPath("key"), "another custom field of "+dupField.Resource+" has this key")}, Err: err}
	case errors.As(err, &exists):
		return &apierr.Error{Code: apierr.Conflict, Message: upperFirst(exists.Message) + ".",
			Errors: field.ErrorList{field.New(field.CodeDuplicate, field.NewPath("name"), exists.Message)}, Err: err}
	case errors.As(err, &modelExists):
		return &apierr.Error{Code: apierr.Conflict, Message: upperFirst(modelExists.Message) + ".",
			Errors: field.ErrorList{field.New(field.CodeDuplicate, field.NewPath("name"), modelExists.Message)}, Err: err}
	case errors.Is(err, members.ErrLastManager):
		return &apierr.Error{Code: apierr.Conflict, Message: "This would leave the workspace without an active member holding api.manage; give another member such a role first.", Err: err}
	case errors.As(err, &list) && len(list) > 0:
		return apierr.Refused(list)
	case errors.Is(err, auth.ErrInvalid), errors.Is(err, customfields.ErrInvalid), errors.Is(err, customfields.ErrInvalidModel):
		msg := err.Error()
		for _, sentinel := range []error{auth.ErrInvalid, customfields.ErrInvalid, customfields.ErrInvalidModel} {
			msg = strings.TrimPrefix(msg, sentinel.Error()+": ")
		}
		return apierr.Refused(field.ErrorList{field.New(field.CodeInvalid, field.Path{}, msg)})
	}
	return err
}

func upperFirst(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// denied is the 403 of an admin write that would grant more than the admin holds.
func denied(what string) error {
	return apierr.New(apierr.PermissionDenied, what)
}

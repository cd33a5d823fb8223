package httpapi

import (
	"errors"

	"github.com/workspace-records/records/engine/field"
)

func fieldErr(code, name, message string) field.ErrorList {
	return field.ErrorList{{Code: field.Code(code), Field: name, Message: message}}
}

func validation(name, code, message string) error {
	return fieldErr(code, name, message)
}

func fieldList(err error) field.ErrorList {
	var fl field.ErrorList
	if errors.As(err, &fl) {
		return fl
	}
	return nil
}

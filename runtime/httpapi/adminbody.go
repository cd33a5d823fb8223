package httpapi

import (
	"encoding/json"
	"reflect"
	"sort"
	"strings"

	"github.com/uptrace/bunrouter"

	"github.com/workspace-records/records/engine/apierr"
	"github.com/workspace-records/records/engine/field"
)

// decodeInput reads the JSON object body of an admin request into dst, a pointer to a struct whose json
// tags name the members it takes: the body is read and decoded as every body is (readBody, DecodeObject:
// at most 1 MiB, strict JSON), a member dst does not name is 422 unknown_field, and a member of the wrong
// JSON type is 422 invalid_type naming it. All the members' errors come in one answer. An empty body is
// an empty object when empty is true, else 400.
func decodeInput(req bunrouter.Request, dst any, empty bool) error {
	errs, err := decodeFields(req, dst, empty)
	if err != nil {
		return err
	}
	if errs != nil {
		return apierr.Refused(errs)
	}
	return nil
}

// decodeFields is decodeInput returning the members' problems (unknown members, wrong types) rather than
// answering them, for a handler that checks the values too and answers every problem at once.
func decodeFields(req bunrouter.Request, dst any, empty bool) (field.ErrorList, error) {
	data, err := readBody(req.Request)
	if err != nil {
		return nil, err
	}
	if len(strings.TrimSpace(string(data))) == 0 {
		if empty {
			return nil, nil
		}
		return nil, apierr.New(apierr.InvalidRequest, "The request needs a JSON object body.")
	}
	obj, err := DecodeObject(data)
	if err != nil {
		return nil, malformedBody(err)
	}
	t := reflect.TypeOf(dst).Elem()
	fields := map[string]reflect.StructField{}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name != "" && name != "-" {
			fields[name] = f
		}
	}
	names := make([]string, 0, len(obj))
	for k := range obj {
		names = append(names, k)
	}
	sort.Strings(names)
	var errs field.ErrorList
	out := reflect.ValueOf(dst).Elem()
	for _, k := range names {
		f, ok := fields[k]
		if !ok {
			errs = append(errs, field.New(field.CodeUnknown, field.NewPath(k), "is not a member of this body"))
			continue
		}
		if obj[k] == nil {
			continue // null: as if absent
		}
		raw, err := json.Marshal(obj[k])
		if err != nil {
			return nil, apierr.New(apierr.InvalidRequest, "Malformed body: "+err.Error()+".")
		}
		v := reflect.New(f.Type)
		if err := json.Unmarshal(raw, v.Interface()); err != nil {
			errs = append(errs, field.New(field.CodeType, field.NewPath(k), "must be "+jsonTypeName(f.Type)))
			continue
		}
		out.FieldByIndex(f.Index).Set(v.Elem())
	}
	return errs, nil
}

// jsonTypeName names the JSON type of t for an error message.
func jsonTypeName(t reflect.Type) string {
	switch t.Kind() {
	case reflect.Pointer:
		return jsonTypeName(t.Elem())
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int64, reflect.Int32:
		return "an integer"
	case reflect.Float64:
		return "a number"
	case reflect.Slice:
		return "an array of " + strings.TrimPrefix(strings.TrimPrefix(jsonTypeName(t.Elem()), "a "), "an ") + "s"
	case reflect.Map, reflect.Struct:
		return "an object"
	}
	return "a JSON value"
}

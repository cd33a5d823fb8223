package records

import (
	"context"
	"errors"
	"sort"

	"github.com/workspace-records/records/engine/field"
	"github.com/workspace-records/records/engine/model"
	"github.com/workspace-records/records/engine/schema"
	"github.com/workspace-records/records/runtime/store"
)

// customInput is the custom field values of one write, validated against the collection's custom
// field schema once, before any transaction opens.
type customInput struct {
	values map[string]any    // by write key, canonical; nil value: clear the field
	refs   map[string]any    // the reference-type values given, by key, checked inside the transaction
	given  bool              // the body named custom fields (an empty object counts)
	form   schema.CustomForm // how the body named them, for the paths of errors
}

// checkCustom validates custom field values given by write key (in, from either body form, nil when the
// body names no custom field), reporting each problem at the path the client wrote (form). On create,
// required custom fields must be present.
func (c *Collection) checkCustom(in map[string]any, form schema.CustomForm, m schema.Mode) (*customInput, field.ErrorList) {
	ci := &customInput{refs: map[string]any{}, given: in != nil, form: form}
	if in == nil && m == schema.Update {
		return ci, nil
	}
	if in == nil {
		in = map[string]any{}
	}
	fs := c.Fields
	if fs.Schema == nil && len(in) == 0 {
		return ci, nil
	}
	var b *schema.Body
	var errs field.ErrorList
	if fs.Schema != nil {
		b, errs = fs.Schema.Validate(in, m)
	} else {
		for k := range in {
			errs = append(errs, field.New(field.CodeUnknown, field.NewPath(k), ""))
		}
	}
	if errs != nil {
		for _, e := range errs {
			if e.Code == field.CodeUnknown {
				e.Message = "is not a custom field of " + c.Resource.Name
			}
			e.Field = form.Path(e.Field).String()
		}
		sort.Slice(errs, func(i, j int) bool { return errs[i].Field < errs[j].Field })
		return nil, errs
	}
	ci.values = b.Values
	for key, v := range b.Values {
		d, _ := fs.ByKey(key)
		if v != nil && fs.Field(d).Type == model.Reference {
			ci.refs[key] = v
		}
	}
	return ci, nil
}

// stored returns the record's stored custom values (definition id -> JSON value) with ci applied to
// current.
func (c *Collection) stored(ci *customInput, current map[string]any) map[string]any {
	out := make(map[string]any, len(current)+len(ci.values))
	for k, v := range current {
		out[k] = v
	}
	for key, v := range ci.values {
		d, _ := c.Fields.ByKey(key)
		if v == nil {
			delete(out, d.ID)
			continue
		}
		out[d.ID] = model.JSONValue(c.Fields.Field(d), v)
	}
	return out
}

// ids returns the definition ids ci writes.
func (c *Collection) ids(ci *customInput) []string {
	var out []string
	for key := range ci.values {
		if d, ok := c.Fields.ByKey(key); ok {
			out = append(out, d.ID)
		}
	}
	return out
}

// checkAllReferences verifies, inside a write's transaction, the declared references in values and the
// custom ones ci gives, and reports the missing records of both in one list.
func (s *Service) checkAllReferences(ctx context.Context, q store.Querier, a Actor, c *Collection, values map[string]any, ci *customInput) error {
	var errs field.ErrorList
	for _, check := range []func() error{
		func() error { return s.checkReferences(ctx, q, a, c.Resource, c.Workspace, values) },
		func() error { return s.checkCustomReferences(ctx, q, a, c, ci) },
	} {
		var fl field.ErrorList
		switch err := check(); {
		case err == nil:
		case errors.As(err, &fl):
			errs = append(errs, fl...)
		default:
			return err
		}
	}
	return errs.Err()
}

// checkCustomReferences verifies, inside a write's transaction, that the reference-type custom values
// ci gives name records of the same workspace.
func (s *Service) checkCustomReferences(ctx context.Context, q store.Querier, a Actor, c *Collection, ci *customInput) error {
	if len(ci.refs) == 0 {
		return nil
	}
	err := s.checkReferences(ctx, q, a, c.Fields.Set, c.Workspace, ci.refs)
	var fl field.ErrorList
	if errors.As(err, &fl) {
		for _, e := range fl {
			e.Field = ci.form.Path(e.Field).String()
		}
	}
	return err
}

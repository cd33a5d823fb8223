package records

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	"github.com/workspace-records/records/engine/access"
	"github.com/workspace-records/records/engine/apierr"
	"github.com/workspace-records/records/engine/field"
	"github.com/workspace-records/records/engine/model"
	"github.com/workspace-records/records/engine/schema"
	"github.com/workspace-records/records/runtime/store"
)

// checkBody validates a write body of c for mode m in one pass, before any transaction: the fields a may
// not write (its role's field rules, and references into resources a does not reach), the declared
// fields (the resource's schema) and the custom fields (the collection's), so that one answer lists every
// problem, each at the path the client wrote (cf__<key> or custom_fields.<key>). A field a may not write
// is refused for that alone, whatever its value, so the answer says nothing of the records it names. It
// returns the declared values and the custom input, or the problems.
//
// A create's body is also checked against the resource's rules (model.Rule) here, in the same pass:
// the record it makes is the body's values with the defaults, so its rule failures join the schema's
// problems in one answer (a rule reading a refused member is not checked). An update's rules need the
// stored record: they are checked in the write's transaction, on the locked read (updateEdit), and
// with the schema's problems by withRules when the body is refused here.
func (s *Service) checkBody(a Actor, c *Collection, body map[string]any, m schema.Mode) (*schema.Body, *customInput, error) {
	custom, form := schema.CustomOf(body)
	b, verrs := s.schemas.Resource(c.Resource.Name).ValidateAll(body, m)
	if m != schema.Update && b != nil {
		verrs = append(verrs, c.Resource.CheckRules(model.RuleCheck{Self: b.Values, Refused: refusedFields(verrs)})...)
	}
	ci, cerrs := c.checkCustom(custom, form, m)
	errs := firstPerField(writableErrors(c.Policy, body), reachErrors(a, s.cat, c.Resource, body),
		c.customReachErrors(a, s.cat, custom, form), verrs, cerrs)
	if len(errs) > 0 {
		sortErrors(c.Resource, errs)
		return nil, nil, errs
	}
	return b, ci, nil
}

// firstPerField joins lists of problems, keeping for each field those of the first list that has any:
// a field the caller may not write is refused for that alone.
func firstPerField(lists ...field.ErrorList) field.ErrorList {
	var out field.ErrorList
	seen := map[string]int{} // field -> the list that reported it first
	for i, l := range lists {
		for _, e := range l {
			if first, ok := seen[e.Field]; ok && first != i {
				continue
			}
			seen[e.Field] = i
			out = append(out, e)
		}
	}
	return out
}

// reachErrors refuses the body members naming reference fields of r whose target resource a does not
// reach (see Actor.Reach), null included: the key must be allowed both sides, as for a link.
func reachErrors(a Actor, cat *model.Catalog, r *model.Resource, body map[string]any) field.ErrorList {
	var errs field.ErrorList
	for k := range body {
		if f, ok := r.Field(k); ok && f.Type == model.Reference && f.Writable() {
			if t, ok := cat.Resource(f.Target); ok && !a.reaches(t) {
				errs = append(errs, field.New(field.CodeNotPermitted, field.NewPath(k), unreachable(t)))
			}
		}
	}
	return errs
}

// customReachErrors is reachErrors for the custom fields given (by key, in form).
func (c *Collection) customReachErrors(a Actor, cat *model.Catalog, given map[string]any, form schema.CustomForm) field.ErrorList {
	var errs field.ErrorList
	for key := range given {
		d, ok := c.Fields.ByKey(key)
		if !ok {
			continue
		}
		if f := c.Fields.Field(d); f.Type == model.Reference {
			if t, ok := cat.Resource(f.Target); ok && !a.reaches(t) {
				errs = append(errs, field.New(field.CodeNotPermitted, form.Path(key), unreachable(t)))
			}
		}
	}
	return errs
}

func unreachable(t *model.Resource) string {
	return "refers to " + t.Name + ", which this key may not use; a reference, like a link, needs access to both resources"
}

// writableErrors refuses the body members naming declared fields the policy does not let the caller
// write.
func writableErrors(pol *access.Policy, body map[string]any) field.ErrorList {
	var errs field.ErrorList
	for k := range body {
		if f, ok := pol.Resource.Field(k); ok && f.Writable() && !pol.Writable(f) {
			errs = append(errs, field.New(field.CodeNotPermitted, field.NewPath(k), "your role may not write this field"))
		}
	}
	return errs
}

// sortErrors orders the problems of one body as a client reads them: declared fields in the resource's
// order, then members that are no field of it (by name), then custom fields (by path); each field's
// problems in the order found.
func sortErrors(r *model.Resource, errs field.ErrorList) {
	rank := make(map[string]int, len(r.Fields))
	for i, f := range r.Fields {
		rank[f.Key] = i
	}
	of := func(e *field.Error) int {
		if i, ok := rank[e.Field]; ok {
			return i
		}
		if strings.HasPrefix(e.Field, schema.CustomPrefix) || strings.HasPrefix(e.Field, "custom_fields.") {
			return len(r.Fields) + 1
		}
		return len(r.Fields)
	}
	sort.SliceStable(errs, func(i, j int) bool {
		ri, rj := of(errs[i]), of(errs[j])
		if ri != rj {
			return ri < rj
		}
		return ri >= len(r.Fields) && errs[i].Field < errs[j].Field
	})
}

// refusedFields are the fields errs refuses, by path.
func refusedFields(errs field.ErrorList) map[string]bool {
	if len(errs) == 0 {
		return nil
	}
	out := make(map[string]bool, len(errs))
	for _, e := range errs {
		out[e.Field] = true
	}
	return out
}

// updateCheck is an update of the stored record cur of r with the canonical values (by key; nil
// clears) as r's rules see it, for a writer under pol: the stored record before, and with values over
// it after; the fields a rule reads that pol masks or hides are blind (model.RuleCheck.Blind).
func updateCheck(r *model.Resource, pol *access.Policy, cur Record, values map[string]any, refused map[string]bool) model.RuleCheck {
	old := model.RuleValues(r, cur)
	self := maps.Clone(old)
	for k, v := range values {
		if v == nil {
			delete(self, k)
		} else {
			self[k] = v
		}
	}
	return model.RuleCheck{Self: self, Old: old, Changed: values, Refused: refused, Blind: blindInputs(r, pol)}
}

// blindInputs names the fields r's rules read that pol does not let its holder read (masked or hidden);
// nil when there are none.
func blindInputs(r *model.Resource, pol *access.Policy) map[string]bool {
	if pol == nil || !pol.Restricted() {
		return nil
	}
	var out map[string]bool
	for _, ru := range r.Rules {
		for _, in := range ru.Inputs {
			if !pol.Readable(in.Key) {
				if out == nil {
					out = map[string]bool{}
				}
				out[in.Key] = true
			}
		}
	}
	return out
}

// blindRefusal is the refusal of an update whose rules read fields its writer cannot read: the same
// whatever the stored values, so that it tells nothing of them.
func blindRefusal(r *model.Resource, rules []*model.Rule, blind map[string]bool) error {
	var keys []string
	for _, ru := range rules {
		for _, in := range ru.Inputs {
			if blind[in.Key] && !slices.Contains(keys, in.Key) {
				keys = append(keys, in.Key)
			}
		}
	}
	sort.Strings(keys)
	return apierr.New(apierr.Forbidden, fmt.Sprintf("This change to %s is checked by a rule that reads %s, which your role cannot read: a member whose role can read it must make it.",
		r.Name, strings.Join(keys, ", ")))
}

// withRules adds to err, the refusal of an update body of record id of c before any transaction, the
// failures of c's rules against the record the body's valid members would make of the stored one, so
// that one answer lists the schema's problems and the rules'. The record is read without a lock, inside
// the caller's record rule; when it cannot be read (or err is no refusal of values), err stands as it
// is. Only a refused body pays for the read: an accepted one is checked on the locked read.
func (s *Service) withRules(ctx context.Context, c *Collection, id string, body map[string]any, err error) error {
	var errs field.ErrorList
	if len(c.Resource.Rules) == 0 || !errors.As(err, &errs) || !model.IsUUID(id) {
		return err
	}
	b, verrs := s.schemas.Resource(c.Resource.Name).ValidateAll(body, schema.Update)
	if b == nil {
		return err
	}
	cur, gerr := s.get(store.WithWorkspace(ctx, c.Workspace), s.st, c.Resource, c.key(id, c.Policy), false)
	if gerr != nil || cur["archived"] == true {
		return err // a missing record is 404 only once the body is valid; an archived one, 409
	}
	refused := refusedFields(errs)
	for k := range refusedFields(verrs) {
		refused[k] = true
	}
	chk := updateCheck(c.Resource, c.Policy, cur, b.Values, refused)
	if len(c.Resource.BlindRules(chk)) > 0 {
		return err // the valid body is refused for those rules on its own (updateEdit), whatever the values
	}
	rerrs := c.Resource.CheckRules(chk)
	if len(rerrs) == 0 {
		return err
	}
	all := append(slices.Clone(errs), rerrs...)
	sortErrors(c.Resource, all)
	return all
}

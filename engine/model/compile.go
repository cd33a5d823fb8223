package model

import (
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/workspace-records/records/engine/field"
	"github.com/workspace-records/records/engine/spec"
)

// Default maximum lengths per textual type, when a definition gives none.
var defaultMaxLength = map[Type]int{String: 255, Text: 100000, Email: 254, URL: 2048, Phone: 50}

// Compile resolves set into a Catalog, returning every cross-reference problem at once, each placed in
// its file (spec.Set.Locate): a set whose files the meta-schema refused in part compiles as far as it
// goes, and the problems inside the refused entries are left to the meta-schema's report.
func Compile(set *spec.Set) (*Catalog, field.ErrorList) {
	var errs field.ErrorList
	c := &Catalog{byName: map[string]*Resource{}}
	specs := map[string]*spec.Resource{}
	for _, sr := range set.Resources {
		specs[sr.Name] = sr
	}
	for _, sr := range set.Resources {
		r, errl := compileResource(sr, specs)
		errs = append(errs, errl...)
		c.Resources = append(c.Resources, r)
		c.byName[r.Name] = r
	}
	sort.Slice(c.Resources, func(i, j int) bool { return c.Resources[i].Name < c.Resources[j].Name })
	errs = append(errs, checkInverses(c, specs)...)
	linkAttributes(c)
	errs = append(errs, checkRelations(c, specs)...)
	errs = append(errs, checkRequiredCycles(c, specs)...)

	roles, rerrs := c.CompileRoles("roles.yaml", set.Roles)
	errs = append(errs, rerrs...)
	c.Roles = roles
	c.Plans = set.Plans
	return c, set.Locate(errs)
}

// CompileRoles checks roles (from file) against the catalog's resources and fields.
func (c *Catalog) CompileRoles(file string, roles []*spec.Role) ([]*Role, field.ErrorList) {
	var errs field.ErrorList
	var out []*Role
	for _, sr := range roles {
		role := new(Role)
		*role = *sr // the catalog's own copy; its slices and maps are the definition's
		p := field.NewPath("roles").Child(sr.Name)
		for name := range sr.Resources {
			if _, ok := c.byName[name]; !ok && name != "*" {
				errs = append(errs, field.New(field.CodeNotFound, p.Child("resources").Child(name), "unknown resource"))
			}
		}
		for name := range sr.RecordRules {
			if _, ok := c.byName[name]; !ok && name != "*" {
				errs = append(errs, field.New(field.CodeNotFound, p.Child("record_rules").Child(name), "unknown resource"))
			}
		}
		for name, rules := range sr.FieldRules {
			res, ok := c.byName[name]
			if !ok {
				errs = append(errs, field.New(field.CodeNotFound, p.Child("field_rules").Child(name), "unknown resource"))
				continue
			}
			for key, vis := range rules {
				if f, ok := res.Field(key); !ok || key == "id" || f.Managed {
					errs = append(errs, field.New(field.CodeNotFound, p.Child("field_rules").Child(name).Child(key), "unknown field of "+name))
					continue
				}
				if ru := res.ruleReading(key); ru != nil && writes(sr.Resources, name) {
					errs = append(errs, field.New(field.CodeConflicting, p.Child("field_rules").Child(name).Child(key),
						fmt.Sprintf("the role writes %s and %s %s, which the rule %q reads: whether the rule passes would tell its writers the value; let the role read the field, or make it read-only on %s",
							name, vis, key, ru.Expr, name)))
				}
			}
		}
		out = append(out, role)
	}
	inFile(file, errs)
	return out, errs
}

// ruleReading returns the first of r's rules that reads the field key, or nil.
func (r *Resource) ruleReading(key string) *Rule {
	for _, ru := range r.Rules {
		for _, in := range ru.Inputs {
			if in.Key == key {
				return ru
			}
		}
	}
	return nil
}

// writes reports whether a role's resource levels (resource or "*" → level) give write access to name.
func writes(levels map[string]string, name string) bool {
	if v, ok := levels[name]; ok {
		return v == "write"
	}
	return levels["*"] == "write"
}

func compileResource(sr *spec.Resource, specs map[string]*spec.Resource) (*Resource, field.ErrorList) {
	var errs field.ErrorList
	defer func() { inFile(sr.File, errs) }()
	root := field.Path{}
	r := &Resource{
		Name: sr.Name, Label: sr.Label, LabelPlural: sr.LabelPlural, Group: sr.Group, Description: sr.Description,
		ModelScoped: sr.ModelScoped, Feature: sr.Feature, Hooks: sr.Hooks, Table: "rec_" + sr.Name,
		byKey: map[string]*Field{}, assocBy: map[string]*Association{},
	}
	if r.LabelPlural == "" {
		r.LabelPlural = r.Label
	}
	if ReservedNames[r.Name] {
		errs = append(errs, field.New(field.CodeInvalid, root.Child("name"), "is reserved: /v1/"+r.Name+" is a route of the API itself"))
	}
	for _, o := range sr.Operations {
		op, _ := ParseOperation(o)
		r.Ops |= 1 << op
	}
	if !r.Ops.Has(OpList) || !r.Ops.Has(OpGet) {
		errs = append(errs, field.New(field.CodeInvalid, root.Child("operations"), "list and get are required"))
	}
	formulas := map[string]string{}
	for _, sf := range sr.Fields {
		p := root.Child("fields").Child(sf.Key)
		if IsManaged(sf.Key) {
			errs = append(errs, field.New(field.CodeInvalid, p, "is reserved for an engine-managed field"))
			continue
		}
		f, errl := compileField(sf, p, specs)
		errs = append(errs, errl...)
		r.Fields = append(r.Fields, f)
		r.byKey[f.Key] = f
		if sf.Formula != "" {
			formulas[f.Key] = sf.Formula
			if sf.Required || sf.HasDefault || sf.ReadOnly {
				errs = append(errs, field.New(field.CodeInvalid, p, "a formula field is computed: it takes no required, default or read_only"))
			}
		}
	}
	for _, f := range managedFields(r) {
		r.Fields = append(r.Fields, f)
		r.byKey[f.Key] = f
	}
	errs = append(errs, compileFormulas(r, formulas)...)
	errs = append(errs, compileRules(r, sr.Rules)...)
	for i, key := range sr.Search {
		f, ok := r.byKey[key]
		switch {
		case !ok || f.Managed:
			errs = append(errs, field.New(field.CodeNotFound, root.Child("search").Index(i), fmt.Sprintf("unknown field %q", key)))
		case !f.Type.Textual():
			errs = append(errs, field.New(field.CodeInvalid, root.Child("search").Index(i), fmt.Sprintf("field %q is %s; only text fields can be searched", key, f.Type)))
		default:
			r.Search = append(r.Search, f)
		}
	}
	for _, sa := range sr.Associations {
		p := root.Child("associations").Child(sa.Name)
		a := &Association{Name: sa.Name, Label: sa.Label, Description: sa.Description, Target: sa.Target, Inverse: sa.Inverse}
		if a.Label == "" {
			a.Label = sa.Name
		}
		if _, ok := specs[sa.Target]; !ok {
			errs = append(errs, field.New(field.CodeNotFound, p.Child("target"), fmt.Sprintf("unknown resource %q", sa.Target)))
		}
		for _, sf := range sa.Attributes {
			ap := p.Child("attributes").Child(sf.Key)
			if sf.Sortable || sf.Filterable || sf.Unique {
				errs = append(errs, field.New(field.CodeInvalid, ap, "association attributes cannot be sortable, filterable or unique"))
			}
			f, errl := compileField(sf, ap, specs)
			errs = append(errs, errl...)
			a.Attributes = append(a.Attributes, f)
		}
		a.Owner = a.Inverse == "" || sr.Name+"."+sa.Name <= sa.Target+"."+sa.Inverse
		if reservedAssociation[sa.Name] {
			errs = append(errs, field.New(field.CodeInvalid, p, "is a reserved path segment"))
		}
		r.Associations = append(r.Associations, a)
		r.assocBy[a.Name] = a
	}
	return r, errs
}

// inFile names file as the file of errs (which then read `file: path: message`).
func inFile(file string, errs field.ErrorList) field.ErrorList {
	for _, e := range errs {
		if e.File == "" {
			e.File = file
		}
	}
	return errs
}

func compileField(sf *spec.Field, p field.Path, specs map[string]*spec.Resource) (*Field, field.ErrorList) {
	var errs field.ErrorList
	t, _ := ParseType(sf.Type)
	f := &Field{
		Key: sf.Key, Label: sf.Label, Description: sf.Description, Type: t, Required: sf.Required,
		ReadOnly: sf.ReadOnly, Sortable: sf.Sortable, Filterable: sf.Filterable, Unique: sf.Unique, Options: sf.Options,
		Target: sf.Target, Minimum: sf.Minimum, Maximum: sf.Maximum, Column: sf.Key,
	}
	if f.Label == "" {
		f.Label = strings.ReplaceAll(sf.Key, "_", " ")
	}
	if t.Textual() {
		f.MaxLength = defaultMaxLength[t]
		if sf.MaxLength != nil {
			f.MaxLength = *sf.MaxLength
		}
		if sf.MinLength != nil {
			f.MinLength = *sf.MinLength
		}
		if f.MinLength > f.MaxLength {
			errs = append(errs, field.New(field.CodeInvalid, p.Child("min_length"), "is greater than max_length"))
		}
	}
	if t == Integer {
		lo, hi := -float64(maxSafeInt), float64(maxSafeInt)
		if f.Minimum == nil {
			f.Minimum = &lo
		}
		if f.Maximum == nil {
			f.Maximum = &hi
		}
	}
	if f.Minimum != nil && f.Maximum != nil && *f.Minimum > *f.Maximum {
		errs = append(errs, field.New(field.CodeInvalid, p.Child("minimum"), "is greater than maximum"))
	}
	if t == Reference {
		if _, ok := specs[sf.Target]; !ok {
			errs = append(errs, field.New(field.CodeNotFound, p.Child("target"), fmt.Sprintf("unknown resource %q", sf.Target)))
		}
	}
	if sf.Unique {
		switch {
		case t == Text || t == Boolean:
			errs = append(errs, field.New(field.CodeInvalid, p.Child("unique"), fmt.Sprintf("a %s field cannot be unique", t)))
		case sf.HasDefault:
			errs = append(errs, field.New(field.CodeInvalid, p.Child("unique"), "a unique field cannot have a default (every record created without it would collide)"))
		case sf.Formula != "":
			errs = append(errs, field.New(field.CodeInvalid, p.Child("unique"), "a formula field cannot be unique (a formula never refuses a write)"))
		}
	}
	if sf.HasDefault {
		v, err := Canonical(f, sf.Default)
		if err == nil {
			err = Check(f, v)
		}
		if err != nil {
			errs = append(errs, field.New(field.CodeInvalid, p.Child("default"), err.Error()))
		} else {
			f.Default = v
		}
	}
	return f, errs
}

// maxSafeInt is the largest integer every JSON client can represent exactly (2^53 - 1).
const maxSafeInt = 1<<53 - 1

func checkInverses(c *Catalog, specs map[string]*spec.Resource) field.ErrorList {
	var errs field.ErrorList
	for _, r := range c.Resources {
		for _, a := range r.Associations {
			if a.Inverse == "" {
				continue
			}
			p := field.NewPath("associations").Child(a.Name).Child("inverse")
			t, ok := c.byName[a.Target]
			if !ok {
				continue
			}
			inv, ok := t.assocBy[a.Inverse]
			switch {
			case !ok:
				errs = append(errs, inFile(specs[r.Name].File, field.ErrorList{field.New(field.CodeNotFound, p, fmt.Sprintf("%s has no association %q", a.Target, a.Inverse))})...)
			case inv.Target != r.Name || inv.Inverse != a.Name:
				errs = append(errs, inFile(specs[r.Name].File, field.ErrorList{field.New(field.CodeInvalid, p, fmt.Sprintf("%s.%s must have target %q and inverse %q", a.Target, a.Inverse, r.Name, a.Name))})...)
			case len(a.Attributes) > 0 && len(inv.Attributes) > 0 && !sameAttributes(a.Attributes, inv.Attributes):
				errs = append(errs, inFile(specs[r.Name].File, field.ErrorList{field.New(field.CodeInvalid, p, fmt.Sprintf("attributes differ from %s.%s; declare them on one side", a.Target, a.Inverse))})...)
			}
		}
	}
	// Attributes declared on one side belong to both.
	for _, r := range c.Resources {
		for _, a := range r.Associations {
			if a.Inverse == "" || len(a.Attributes) > 0 {
				continue
			}
			if t, ok := c.byName[a.Target]; ok {
				if inv, ok := t.assocBy[a.Inverse]; ok {
					a.Attributes = inv.Attributes
				}
			}
		}
	}
	return errs
}

func sameAttributes(a, b []*Field) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Key != b[i].Key || a[i].Type != b[i].Type {
			return false
		}
	}
	return true
}

// ReservedNames are the first path segments under /v1 that the API's own routes use (engine/route's
// fixed routes, and those of later versions planned), and the resources of the change feed's notices
// (runtime/events): no resource may be named after them.
var ReservedNames = map[string]bool{"resources": true, "me": true, "events": true, "openapi.json": true, "admin": true, "webhooks": true, "jobs": true,
	"api_keys": true, "webhook_endpoints": true}

// reservedAssociation are path segments an association may not be named after.
var reservedAssociation = map[string]bool{"restore": true, "query": true, "history": true}

// NewFieldSet returns a resource made only of fields, for validating values that are not a record's
// declared fields (association attributes, a workspace's custom fields).
func NewFieldSet(name string, fields []*Field) *Resource {
	r := &Resource{Name: name, byKey: map[string]*Field{}, assocBy: map[string]*Association{}}
	for _, f := range fields {
		r.Fields = append(r.Fields, f)
		r.byKey[f.Key] = f
	}
	return r
}

// linkAttributes builds the attribute resources of every association, after inverses shared them.
func linkAttributes(c *Catalog) {
	for _, r := range c.Resources {
		for _, a := range r.Associations {
			a.Attrs = NewFieldSet(r.Name+"."+a.Name, a.Attributes)
			a.Attrs.Label = a.Label
		}
	}
}

// checkRequiredCycles refuses required references that form a cycle: no record on it could be created first.
func checkRequiredCycles(c *Catalog, specs map[string]*spec.Resource) field.ErrorList {
	const (
		unseen = iota
		active
		done
	)
	state := map[string]int{}
	var errs field.ErrorList
	var visit func(r *Resource, trail []string)
	visit = func(r *Resource, trail []string) {
		state[r.Name] = active
		for _, f := range r.Declared() {
			if f.Type != Reference || !f.Required {
				continue
			}
			t, ok := c.byName[f.Target]
			if !ok {
				continue
			}
			switch state[t.Name] {
			case active:
				p := field.NewPath("fields").Child(f.Key)
				errs = append(errs, inFile(specs[r.Name].File, field.ErrorList{field.New(field.CodeInvalid, p, "required references form a cycle: "+strings.Join(append(trail, r.Name, t.Name), " -> "))})...)
			case unseen:
				visit(t, append(trail, r.Name))
			}
		}
		state[r.Name] = done
	}
	for _, r := range c.Resources {
		if state[r.Name] == unseen {
			visit(r, nil)
		}
	}
	return errs
}

// CreationOrder returns the resources ordered so that every required reference points to an earlier one.
func (c *Catalog) CreationOrder() []*Resource {
	var out []*Resource
	seen := map[string]bool{}
	var visit func(r *Resource)
	visit = func(r *Resource) {
		if seen[r.Name] {
			return
		}
		seen[r.Name] = true
		for _, f := range r.Declared() {
			if f.Type == Reference && f.Required {
				if t, ok := c.byName[f.Target]; ok {
					visit(t)
				}
			}
		}
		out = append(out, r)
	}
	for _, r := range c.Resources {
		visit(r)
	}
	return out
}

// jsonNumber extracts a float from a JSON-shaped number.
func jsonNumber(v any) (float64, string, bool) {
	switch n := v.(type) {
	case json.Number:
		f, err := n.Float64()
		return f, n.String(), err == nil && !math.IsInf(f, 0)
	case float64:
		return n, fmt.Sprint(n), true
	case int:
		return float64(n), fmt.Sprint(n), true
	case int64:
		return float64(n), fmt.Sprint(n), true
	}
	return 0, "", false
}

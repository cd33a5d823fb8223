// Package model compiles a spec.Set into an immutable Catalog: references and inverses resolved,
// engine-managed fields added, and the sort, filter and search key sets fixed. Everything downstream
// (schemas, list plans, SQL, catalog documents, routes) reads only this package's types.
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

// Type is the kind of value a field holds.
type Type uint8

// Field types. UUID and Object are engine-managed only.
const (
	String Type = iota + 1
	Text
	Email
	URL
	Phone
	Integer
	Decimal
	Boolean
	Date
	DateTime
	Reference
	UUID
	Object
	MultiSelect // custom fields only: a set of strings from Options
)

var typeNames = map[Type]string{
	String: "string", Text: "text", Email: "email", URL: "url", Phone: "phone", Integer: "integer",
	Decimal: "decimal", Boolean: "boolean", Date: "date", DateTime: "datetime", Reference: "reference",
	UUID: "uuid", Object: "object", MultiSelect: "multi_select",
}

func (t Type) String() string { return typeNames[t] }

// ParseType returns the Type named s.
func ParseType(s string) (Type, bool) {
	for t, n := range typeNames {
		if n == s && t != UUID && t != Object && t != MultiSelect {
			return t, true
		}
	}
	return 0, false
}

// Textual reports whether values of t are strings compared as text.
func (t Type) Textual() bool {
	switch t {
	case String, Text, Email, URL, Phone:
		return true
	}
	return false
}

// Operation is one of the seven record operations.
type Operation uint8

// The record operations, in the order the spec lists them.
const (
	OpList Operation = iota
	OpQuery
	OpGet
	OpCreate
	OpUpdate
	OpArchive
	OpRestore
)

var opNames = [...]string{"list", "query", "get", "create", "update", "archive", "restore"}

func (o Operation) String() string { return opNames[o] }

// Write reports whether o needs write access.
func (o Operation) Write() bool { return o >= OpCreate }

// ParseOperation returns the Operation named s.
func ParseOperation(s string) (Operation, bool) {
	for i, n := range opNames {
		if n == s {
			return Operation(i), true
		}
	}
	return 0, false
}

// OpSet is a set of operations.
type OpSet uint8

// Has reports whether o is in s.
func (s OpSet) Has(o Operation) bool { return s&(1<<o) != 0 }

// List returns the operations of s in spec order.
func (s OpSet) List() []Operation {
	var out []Operation
	for o := OpList; o <= OpRestore; o++ {
		if s.Has(o) {
			out = append(out, o)
		}
	}
	return out
}

// Field is a resolved field: declared or engine-managed.
type Field struct {
	Key         string
	Label       string
	Description string
	Type        Type
	Required    bool
	ReadOnly    bool // never writable through the API
	Managed     bool // engine-managed (id, created_at, ...)
	Sortable    bool
	Filterable  bool
	Default     any // canonical value, nil when none
	MaxLength   int // 0 when not textual
	MinLength   int
	Minimum     *float64
	Maximum     *float64
	Options     []string
	Target      string   // for Reference
	Column      string   // storage column name; for a custom field, its definition id in custom_fields
	Custom      bool     // a workspace custom field, stored in the custom_fields JSON column
	Formula     *Formula // set for a computed field (always read-only)
}

// Writable reports whether the API may set the field.
func (f *Field) Writable() bool { return !f.ReadOnly && !f.Managed }

// Ops returns the filter operators the field accepts.
func (f *Field) Ops() []string {
	switch {
	case f.Type.Textual():
		return []string{"eq", "ne", "in", "not_in", "contains", "not_contains", "starts_with", "is_empty", "is_not_empty"}
	case f.Type == Integer || f.Type == Decimal || f.Type == Date || f.Type == DateTime:
		return []string{"eq", "ne", "lt", "lte", "gt", "gte", "in", "not_in", "is_empty", "is_not_empty"}
	case f.Type == Boolean:
		return []string{"eq", "ne", "is_empty", "is_not_empty"}
	case f.Type == MultiSelect:
		return []string{"contains", "not_contains", "is_empty", "is_not_empty"}
	case f.Type == Reference || f.Type == UUID:
		return []string{"eq", "ne", "in", "not_in", "is_empty", "is_not_empty"}
	}
	return nil
}

// AcceptsOp reports whether op is one of f's filter operators.
func (f *Field) AcceptsOp(op string) bool {
	for _, o := range f.Ops() {
		if o == op {
			return true
		}
	}
	return false
}

// Nullable reports whether stored values may be NULL.
func (f *Field) Nullable() bool {
	switch f.Key {
	case "id", "created_at", "updated_at", "archived", "custom_fields":
		return false
	}
	return true
}

// Association is a resolved association.
type Association struct {
	Name        string
	Label       string
	Description string
	Target      string
	Inverse     string // "" when one-way
	Attributes  []*Field
	// Owner is true for the side that stores the link rows (the side that sorts first by
	// resource+association name); both sides read the same rows.
	Owner bool
	// Attrs presents the attributes as a resource of their own, so that the schema machinery validates
	// link bodies like record bodies. Its name is "<resource>.<association>".
	Attrs *Resource
}

// StoredAs returns how links of a are stored: the owning side's resource and association name, and
// whether the caller's record is that owning side.
func (a *Association) StoredAs(from string) (resource, name string, fromOwner bool) {
	if a.Owner {
		return from, a.Name, true
	}
	return a.Target, a.Inverse, false
}

// Resource is a resolved resource.
type Resource struct {
	Name         string
	Label        string
	LabelPlural  string
	Group        string
	Description  string
	Ops          OpSet
	ModelScoped  bool
	Feature      string   // plan feature the resource needs
	Fields       []*Field // declared fields then managed fields
	Search       []*Field
	Associations []*Association
	Hooks        []string
	Table        string
	Computed     []*Field // declared fields with a formula, in declaration order of their keys

	byKey   map[string]*Field
	assocBy map[string]*Association
}

// Field returns the field named key.
func (r *Resource) Field(key string) (*Field, bool) {
	f, ok := r.byKey[key]
	return f, ok
}

// Association returns the association named name.
func (r *Resource) Association(name string) (*Association, bool) {
	a, ok := r.assocBy[name]
	return a, ok
}

// Declared returns the declared (not engine-managed) fields.
func (r *Resource) Declared() []*Field {
	var out []*Field
	for _, f := range r.Fields {
		if !f.Managed {
			out = append(out, f)
		}
	}
	return out
}

// SortKeys returns the keys accepted by `sort`.
func (r *Resource) SortKeys() []string {
	var out []string
	for _, f := range r.Fields {
		if f.Sortable {
			out = append(out, f.Key)
		}
	}
	return out
}

// FilterFields returns the fields accepted as filter keys.
func (r *Resource) FilterFields() []*Field {
	var out []*Field
	for _, f := range r.Fields {
		if f.Filterable {
			out = append(out, f)
		}
	}
	return out
}

// ReadOnly reports whether the resource takes no writes at all.
func (r *Resource) ReadOnly() bool {
	return !r.Ops.Has(OpCreate) && !r.Ops.Has(OpUpdate) && !r.Ops.Has(OpArchive) && !r.Ops.Has(OpRestore)
}

// Role is a resolved role.
type Role struct {
	Name        string
	Label       string
	Description string
	Permissions []string
	Resources   map[string]string
	RecordRules map[string]string
	FieldRules  map[string]map[string]string
}

// Plan is a plan from plans.yaml.
type Plan = spec.Plan

// Catalog is the compiled, immutable set of definitions.
type Catalog struct {
	Resources []*Resource // sorted by name
	Roles     []*Role
	Plans     []*Plan

	byName map[string]*Resource
}

// Resource returns the resource named name.
func (c *Catalog) Resource(name string) (*Resource, bool) {
	r, ok := c.byName[name]
	return r, ok
}

// Role returns the role named name.
func (c *Catalog) Role(name string) (*Role, bool) {
	for _, r := range c.Roles {
		if r.Name == name {
			return r, true
		}
	}
	return nil, false
}

// Plan returns the plan named name.
func (c *Catalog) Plan(name string) (*Plan, bool) {
	for _, p := range c.Plans {
		if p.Name == name {
			return p, true
		}
	}
	return nil, false
}

// Managed field keys, in the order they follow declared fields.
var managedKeys = []string{"id", "owner_id", "created_at", "updated_at", "archived", "archived_at", "archive_reason", "custom_fields"}

// IsManaged reports whether key is reserved for an engine-managed field.
func IsManaged(key string) bool {
	for _, k := range managedKeys {
		if k == key {
			return true
		}
	}
	return key == "model_id" || strings.HasPrefix(key, "cf__")
}

func managedFields(r *Resource) []*Field {
	return []*Field{
		{Key: "id", Label: "ID", Type: UUID, Managed: true, ReadOnly: true, Filterable: true, Column: "id"},
		{Key: "owner_id", Label: "Owner", Type: Reference, Target: "entity_members", Managed: true, ReadOnly: true, Filterable: true, Column: "owner_id"},
		{Key: "created_at", Label: "Created at", Type: DateTime, Managed: true, ReadOnly: true, Sortable: true, Filterable: true, Column: "created_at"},
		{Key: "updated_at", Label: "Updated at", Type: DateTime, Managed: true, ReadOnly: true, Sortable: true, Filterable: true, Column: "updated_at"},
		{Key: "archived", Label: "Archived", Type: Boolean, Managed: true, ReadOnly: true, Filterable: true, Column: "archived"},
		{Key: "archived_at", Label: "Archived at", Type: DateTime, Managed: true, ReadOnly: true, Filterable: true, Column: "archived_at"},
		{Key: "archive_reason", Label: "Archive reason", Type: Text, Managed: true, ReadOnly: true, MaxLength: 1000, Column: "archive_reason"},
		{Key: "custom_fields", Label: "Custom fields", Type: Object, Managed: true, ReadOnly: true, Column: "custom_fields"},
	}
}

// Default maximum lengths per textual type, when a definition gives none.
var defaultMaxLength = map[Type]int{String: 255, Text: 100000, Email: 254, URL: 2048, Phone: 50}

// Compile resolves set into a Catalog, returning every cross-reference problem at once.
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
	errs = append(errs, checkRequiredCycles(c, specs)...)

	roles, rerrs := c.CompileRoles("roles.yaml", set.Roles)
	errs = append(errs, rerrs...)
	c.Roles = roles
	c.Plans = set.Plans
	return c, errs
}

// CompileRoles checks roles (from file) against the catalog's resources and fields.
func (c *Catalog) CompileRoles(file string, roles []*spec.Role) ([]*Role, field.ErrorList) {
	var errs field.ErrorList
	var out []*Role
	for _, sr := range roles {
		role := &Role{Name: sr.Name, Label: sr.Label, Description: sr.Description, Permissions: sr.Permissions,
			Resources: sr.Resources, RecordRules: sr.RecordRules, FieldRules: sr.FieldRules}
		p := field.NewPath(file + ": roles").Child(sr.Name)
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
			for key := range rules {
				if f, ok := res.Field(key); !ok || key == "id" || f.Managed {
					errs = append(errs, field.New(field.CodeNotFound, p.Child("field_rules").Child(name).Child(key), "unknown field of "+name))
				}
			}
		}
		out = append(out, role)
	}
	return out, errs
}

func compileResource(sr *spec.Resource, specs map[string]*spec.Resource) (*Resource, field.ErrorList) {
	var errs field.ErrorList
	defer func() { prefixFile(sr.File, errs) }()
	root := field.Path{}
	r := &Resource{
		Name: sr.Name, Label: sr.Label, LabelPlural: sr.LabelPlural, Group: sr.Group, Description: sr.Description,
		ModelScoped: sr.ModelScoped, Feature: sr.Feature, Hooks: sr.Hooks, Table: "rec_" + sr.Name,
		byKey: map[string]*Field{}, assocBy: map[string]*Association{},
	}
	if r.LabelPlural == "" {
		r.LabelPlural = r.Label
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
			if sf.Sortable || sf.Filterable {
				errs = append(errs, field.New(field.CodeInvalid, ap, "association attributes cannot be sortable or filterable"))
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

// prefixFile makes error paths read `file: path`.
func prefixFile(file string, errs field.ErrorList) {
	for _, e := range errs {
		if e.Field == "" {
			e.Field = file
		} else {
			e.Field = file + ": " + e.Field
		}
	}
}

func compileField(sf *spec.Field, p field.Path, specs map[string]*spec.Resource) (*Field, field.ErrorList) {
	var errs field.ErrorList
	t, _ := ParseType(sf.Type)
	f := &Field{
		Key: sf.Key, Label: sf.Label, Description: sf.Description, Type: t, Required: sf.Required,
		ReadOnly: sf.ReadOnly, Sortable: sf.Sortable, Filterable: sf.Filterable, Options: sf.Options,
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
			p := field.NewPath(specs[r.Name].File + ": associations").Child(a.Name).Child("inverse")
			t, ok := c.byName[a.Target]
			if !ok {
				continue
			}
			inv, ok := t.assocBy[a.Inverse]
			switch {
			case !ok:
				errs = append(errs, field.New(field.CodeNotFound, p, fmt.Sprintf("%s has no association %q", a.Target, a.Inverse)))
			case inv.Target != r.Name || inv.Inverse != a.Name:
				errs = append(errs, field.New(field.CodeInvalid, p, fmt.Sprintf("%s.%s must have target %q and inverse %q", a.Target, a.Inverse, r.Name, a.Name)))
			case len(a.Attributes) > 0 && len(inv.Attributes) > 0 && !sameAttributes(a.Attributes, inv.Attributes):
				errs = append(errs, field.New(field.CodeInvalid, p, fmt.Sprintf("attributes differ from %s.%s; declare them on one side", a.Target, a.Inverse)))
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

// reservedAssociation are path segments an association may not be named after.
var reservedAssociation = map[string]bool{"restore": true, "query": true}

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
				p := field.NewPath(specs[r.Name].File + ": fields").Child(f.Key)
				errs = append(errs, field.New(field.CodeInvalid, p, "required references form a cycle: "+strings.Join(append(trail, r.Name, t.Name), " -> ")))
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

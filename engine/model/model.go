// Package model compiles a spec.Set into an immutable Catalog: references and inverses resolved,
// engine-managed fields added, and the sort, filter and search key sets fixed. Everything downstream
// (schemas, list plans, SQL, catalog documents, routes) reads only this package's types.
package model

import (
	"strings"

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
	Unique      bool // at most one active (non-archived) record of the workspace holds each value
	Default     any  // canonical value, nil when none
	MaxLength   int  // 0 when not textual
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
	Rules        []*Rule  // declarative rules (CheckRules), in the definition's order

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

// Role is a role of roles.yaml, checked against the catalog's resources and fields (CompileRoles).
type Role = spec.Role

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

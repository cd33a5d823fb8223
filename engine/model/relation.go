package model

import (
	"fmt"
	"strings"

	"github.com/workspace-records/records/engine/field"
	"github.com/workspace-records/records/engine/spec"
)

// A Relation is what one segment of an expansion (expand=company) or a filter path
// (company.city, contacts.email) names from a resource: a declared reference field, named by its key
// without the "_id" suffix (company_id → company), or an association, named as declared (contacts).
type Relation struct {
	Name   string
	Target string       // the resource on the other side
	Field  *Field       // the reference field; nil for an association
	Assoc  *Association // the association; nil for a reference
}

// Many reports whether the relation leads to any number of records (an association) rather than
// at most one (a reference).
func (r Relation) Many() bool { return r.Assoc != nil }

// RelationName is the relation name of the reference field key: the key without its "_id" suffix.
func RelationName(key string) string { return strings.TrimSuffix(key, "_id") }

// Relation returns the relation named name: a declared reference field or an association.
func (r *Resource) Relation(name string) (Relation, bool) {
	for _, rel := range r.Relations() {
		if rel.Name == name {
			return rel, true
		}
	}
	return Relation{}, false
}

// Relations returns the resource's relations: its declared reference fields in field order, then its
// associations in declaration order.
func (r *Resource) Relations() []Relation {
	var out []Relation
	for _, f := range r.Fields {
		if f.Type == Reference && !f.Managed && !f.Custom {
			out = append(out, Relation{Name: RelationName(f.Key), Target: f.Target, Field: f})
		}
	}
	for _, a := range r.Associations {
		out = append(out, Relation{Name: a.Name, Target: a.Target, Assoc: a})
	}
	return out
}

// checkRelations refuses a relation name that is also another field's key or another relation's name:
// expansions appear in a record beside its fields, and a path's first segment must name one thing.
func checkRelations(c *Catalog, specs map[string]*spec.Resource) field.ErrorList {
	var errs field.ErrorList
	for _, r := range c.Resources {
		seen := map[string]bool{}
		for _, rel := range r.Relations() {
			p := field.NewPath("associations").Child(rel.Name)
			if rel.Field != nil {
				p = field.NewPath("fields").Child(rel.Field.Key)
			}
			file := specs[r.Name].File
			if f, ok := r.byKey[rel.Name]; ok && (rel.Field == nil || f != rel.Field) {
				errs = append(errs, inFile(file, field.ErrorList{field.New(field.CodeConflicting, p, fmt.Sprintf("its relation name %q (for expand and filter paths) is also a field of %s", rel.Name, r.Name))})...)
			}
			if seen[rel.Name] {
				errs = append(errs, inFile(file, field.ErrorList{field.New(field.CodeConflicting, p, fmt.Sprintf("its relation name %q (for expand and filter paths) is taken by another reference or association of %s", rel.Name, r.Name))})...)
			}
			seen[rel.Name] = true
		}
	}
	return errs
}

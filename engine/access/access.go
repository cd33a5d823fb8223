// Package access turns a role into what a caller may do with one resource: its access level, the record
// rule that limits which records it sees, and which fields are masked or hidden. The engine applies a
// Policy everywhere a value could leak: responses, field selection, filters, sort, search and cursors.
package access

import (
	"strings"
	"unicode/utf8"

	"github.com/workspace-records/records/engine/model"
)

// Level is what a caller may do with a resource.
type Level uint8

// Access levels, in increasing order.
const (
	None Level = iota
	Read
	Write
)

func (l Level) String() string { return [...]string{"none", "read", "write"}[l] }

// ParseLevel reads "none", "read" or "write".
func ParseLevel(s string) Level {
	switch s {
	case "write":
		return Write
	case "read":
		return Read
	}
	return None
}

// Rule limits which records of a resource a caller sees.
type Rule uint8

// Record rules.
const (
	All        Rule = iota // every record of the workspace
	Owned                  // records whose owner_id is the caller
	Department             // records owned by the caller or by a member of the caller's department
)

func (r Rule) String() string { return [...]string{"all", "owned", "department"}[r] }

// Visibility is how a field appears to a caller.
type Visibility uint8

// Field visibilities.
const (
	Visible Visibility = iota
	Masked             // present, value redacted
	Hidden             // absent
)

func (v Visibility) String() string { return [...]string{"visible", "masked", "hidden"}[v] }

// Policy is what one caller may do with one resource. The zero Policy of a resource (see Unrestricted)
// allows everything; it is what admin tools use.
type Policy struct {
	Resource   *model.Resource
	Level      Level
	Rule       Rule
	Member     string // the caller, for Owned and Department
	Department string // the caller's department, for Department ("" = only the caller's own records)
	fields     map[string]Visibility
}

// Unrestricted is the policy of the admin path: write access, every record, every field.
func Unrestricted(r *model.Resource) *Policy { return &Policy{Resource: r, Level: Write} }

// For returns role's policy on r for member (in department). A nil role is unrestricted.
func For(role *model.Role, r *model.Resource, member, department string) *Policy {
	if role == nil {
		return Unrestricted(r)
	}
	p := &Policy{Resource: r, Member: member, Department: department}
	p.Level = ParseLevel(lookup(role.Resources, r.Name))
	switch lookup(role.RecordRules, r.Name) {
	case "owned":
		p.Rule = Owned
	case "department":
		p.Rule = Department
	}
	for key, v := range role.FieldRules[r.Name] {
		if p.fields == nil {
			p.fields = map[string]Visibility{}
		}
		switch v {
		case "masked":
			p.fields[key] = Masked
		case "hidden":
			p.fields[key] = Hidden
		}
	}
	// A formula would leak what it reads: it is at least as restricted as its most restricted input.
	for _, f := range r.Computed {
		for _, in := range f.Formula.Inputs {
			if v := p.fields[in.Key]; v > p.fields[f.Key] {
				p.fields[f.Key] = v
			}
		}
	}
	return p
}

func lookup(m map[string]string, name string) string {
	if v, ok := m[name]; ok {
		return v
	}
	return m["*"]
}

// Visibility returns how the field key appears.
func (p *Policy) Visibility(key string) Visibility { return p.fields[key] }

// Readable reports whether the caller may see the value of key (and so filter, sort or search on it).
func (p *Policy) Readable(key string) bool { return p.fields[key] == Visible }

// Writable reports whether the caller may write the field key.
func (p *Policy) Writable(f *model.Field) bool {
	return p.Level == Write && f.Writable() && p.fields[f.Key] == Visible
}

// Restricted reports whether any field is masked or hidden.
func (p *Policy) Restricted() bool { return len(p.fields) > 0 }

// Apply redacts rec in place: masked values are replaced, hidden ones removed.
func (p *Policy) Apply(rec map[string]any) map[string]any {
	for key, v := range p.fields {
		switch v {
		case Hidden:
			delete(rec, key)
		case Masked:
			if val, ok := rec[key]; ok {
				f, _ := p.Resource.Field(key)
				rec[key] = Mask(f, val)
			}
		}
	}
	return rec
}

// Mask redacts one value. Strings keep their shape but not their content (an email keeps its form,
// j•••@•••.com); numbers, dates, booleans and references become null.
func Mask(f *model.Field, v any) any {
	s, ok := v.(string)
	if !ok || v == nil || f == nil || !f.Type.Textual() {
		return nil
	}
	if s == "" {
		return ""
	}
	first, _ := utf8.DecodeRuneInString(s)
	if f.Type == model.Email {
		if at := strings.LastIndexByte(s, '@'); at > 0 {
			tld := ""
			if dot := strings.LastIndexByte(s[at:], '.'); dot > 0 {
				tld = s[at+dot:]
			}
			return string(first) + "•••@•••" + tld
		}
	}
	return string(first) + "•••"
}

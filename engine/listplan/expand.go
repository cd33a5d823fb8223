package listplan

import (
	"fmt"
	"strings"

	"github.com/workspace-records/records/engine/access"
	"github.com/workspace-records/records/engine/apierr"
	"github.com/workspace-records/records/engine/field"
	"github.com/workspace-records/records/engine/model"
	"github.com/workspace-records/records/engine/suggest"
)

// Limits of expansions (expand= on list and get, "expand" in a query body).
const (
	// MaxExpansions bounds the expansions of one request, counted after duplicates collapse and with
	// the first segment a two-level path implies (expand=deal.company is two: deal and deal.company).
	// Each is one statement per page, so this also bounds a page's statements.
	MaxExpansions = 10
	// MaxExpandDepth is the most segments an expand path has (deal.company).
	MaxExpandDepth = 2
	// ExpandedLinks is how many linked records an association expansion holds, oldest link first; its
	// has_more says whether more follow, and its url (the association list endpoint) pages through all.
	ExpandedLinks = 5
)

// An Expansion is one resolved expand path: the relation Relation of From, read for each record into
// the member named Relation.Name, with the expansions through it (the second segment of two-level paths)
// as Children.
type Expansion struct {
	Path     string // as sent, normalised: company, deal.company
	From     *model.Resource
	Relation model.Relation
	Target   *model.Resource
	// Fields selects inside the expanded records (fields=company.name); nil keeps every field. Set by
	// SplitFields.
	Fields   []string
	Children []*Expansion
}

// Count returns the number of expansions in exps, children included: the statements they cost a page.
func Count(exps []*Expansion) int {
	n := 0
	for _, e := range exps {
		n += 1 + Count(e.Children)
	}
	return n
}

// SplitExpand reads the value of the expand query parameter: comma-separated paths. An empty value
// names none.
func SplitExpand(v string) []string {
	if v == "" {
		return []string{}
	}
	parts := strings.Split(v, ",")
	for i, p := range parts {
		parts[i] = strings.TrimSpace(p)
	}
	return parts
}

// Expand resolves expand paths from res in cat. policy returns the caller's policy on a resource (a
// nil policy function, or a nil policy, is unrestricted): a reference whose field the caller cannot read
// (masked: the field would be revealed by its expansion; hidden: the relation is reported unknown, as a
// hidden field is) cannot be expanded. Duplicates collapse; every problem is returned at once, each
// under the path "expand".
func Expand(cat *model.Catalog, res *model.Resource, paths []string, policy func(*model.Resource) *access.Policy) ([]*Expansion, field.ErrorList) {
	var errs field.ErrorList
	at := field.NewPath("expand")
	var roots []*Expansion
	find := func(list []*Expansion, name string) *Expansion {
		for _, e := range list {
			if e.Relation.Name == name {
				return e
			}
		}
		return nil
	}
	for _, path := range paths {
		segs := strings.Split(path, ".")
		bad := false
		for _, s := range segs {
			if s == "" {
				errs = append(errs, field.New(field.CodeInvalid, at, fmt.Sprintf("%q has an empty segment; name relations as company or deal.company", apierr.Clip(path))))
				bad = true
				break
			}
		}
		if bad {
			continue
		}
		if len(segs) > MaxExpandDepth {
			errs = append(errs, field.New(field.CodeInvalid, at, fmt.Sprintf("%q is %d levels deep; at most %d (deal.company)", apierr.Clip(path), len(segs), MaxExpandDepth)))
			continue
		}
		list, from, prefix := &roots, res, ""
		for _, s := range segs {
			e := find(*list, s)
			if e == nil {
				rel, err := relation(cat, from, s, policy)
				if err != "" {
					errs = append(errs, field.New(field.CodeInvalid, at, fmt.Sprintf("%q: %s", apierr.Clip(path), err)))
					break
				}
				target, _ := cat.Resource(rel.Target)
				e = &Expansion{Path: prefix + s, From: from, Relation: rel, Target: target}
				*list = append(*list, e)
			}
			list, from, prefix = &e.Children, e.Target, e.Path+"."
		}
	}
	if n := Count(roots); n > MaxExpansions {
		errs = append(errs, field.New(field.CodeTooLong, at, fmt.Sprintf("names %d expansions; at most %d (a two-level path counts its first segment too)", n, MaxExpansions)))
	}
	if len(errs) > 0 {
		return nil, errs
	}
	return roots, nil
}

// relation resolves one segment name from r, or says why it cannot be expanded.
func relation(cat *model.Catalog, r *model.Resource, name string, policy func(*model.Resource) *access.Policy) (model.Relation, string) {
	var pol *access.Policy
	if policy != nil {
		pol = policy(r)
	}
	var names []string
	for _, rel := range Expandable(cat, r, pol) {
		if rel.Name == name {
			if rel.Field != nil && pol != nil && !pol.Readable(rel.Field.Key) {
				return model.Relation{}, fmt.Sprintf("%s is not readable with your role, so %s cannot be expanded", rel.Field.Key, name)
			}
			return rel, ""
		}
		names = append(names, rel.Name)
	}
	return model.Relation{}, suggest.Unknown("relation of "+r.Name, name, names)
}

// Expandable returns the relations of r that a caller with policy pol (nil: unrestricted) may name in
// expand: every relation but those into a model-scoped resource (whose records need a data model) and
// references through a field pol hides, which are not shown to exist. A reference through a masked
// field is listed, and refused when expanded: its field cannot be read.
func Expandable(cat *model.Catalog, r *model.Resource, pol *access.Policy) []model.Relation {
	var out []model.Relation
	for _, rel := range r.Relations() {
		t, ok := cat.Resource(rel.Target)
		if !ok || t.ModelScoped {
			continue
		}
		if rel.Field != nil && pol != nil && pol.Visibility(rel.Field.Key) == access.Hidden {
			continue
		}
		out = append(out, rel)
	}
	return out
}

// SplitFields divides the fields selection names among a record and its expansions exps: a name P.f,
// where P is an expansion path, selects f inside P's records (the longest such P), which sets that
// Expansion's Fields; a name without a dot selects a property of the record. It returns the record's
// names (nil when names is nil) and the dotted names that select nothing: no expansion path leads them,
// or more than one segment follows the path. An expansion is returned whatever the record's names; its
// records keep every field unless a name selects inside it.
func SplitFields(names []string, exps []*Expansion) (top, unmatched []string) {
	if names == nil {
		return nil, nil
	}
	top = []string{}
	for _, n := range names {
		if !strings.Contains(n, ".") {
			top = append(top, n)
			continue
		}
		e := longest(exps, n)
		if e == nil || strings.Contains(n[len(e.Path)+1:], ".") {
			unmatched = append(unmatched, n)
			continue
		}
		if e.Fields == nil {
			e.Fields = []string{}
		}
		e.Fields = append(e.Fields, n[len(e.Path)+1:])
	}
	return top, unmatched
}

// longest returns the expansion of exps (children included) with the longest path P such that name
// begins with P and a dot.
func longest(exps []*Expansion, name string) *Expansion {
	var best *Expansion
	for _, e := range exps {
		if strings.HasPrefix(name, e.Path+".") {
			best = e
			if c := longest(e.Children, name); c != nil {
				best = c
			}
		}
	}
	return best
}

// expandMember reads the expand member of a query body: an array of paths.
func expandMember(path field.Path, v any, errs field.ErrorList) ([]string, field.ErrorList) {
	items, ok := v.([]any)
	if !ok {
		return nil, append(errs, field.New(field.CodeType, path, "must be an array of strings"))
	}
	if len(items) > MaxFields {
		return nil, append(errs, field.New(field.CodeTooLong, path, fmt.Sprintf("must have at most %d items", MaxFields)))
	}
	out := make([]string, 0, len(items))
	for i, it := range items {
		s, ok := it.(string)
		if !ok {
			errs = append(errs, field.New(field.CodeType, path.Index(i), "must be a string"))
			continue
		}
		out = append(out, strings.TrimSpace(s))
	}
	return out, errs
}

package listplan

import (
	"fmt"
	"strings"

	"github.com/workspace-records/records/engine/access"
	"github.com/workspace-records/records/engine/field"
	"github.com/workspace-records/records/engine/model"
)

// The filter grammar. A list's filters are a tree: the top-level items are joined by the join parameter
// (and by default), and an item is either a condition {"field", "op", "value"} or a group
// {"join": "and"|"or", "filters": [...]} whose items are joined by its own join (and by default).
// Groups nest at most MaxFilterDepth deep below the top level; the whole tree holds at most MaxFilters
// conditions and MaxFilterItems items (conditions and groups). A group must hold at least one item.
// Errors name the item by its path in the tree: filters[2].filters[0].op.
const (
	// MaxFilterDepth is how deep groups nest below the top level: filters[0].filters[0].filters[0].filters[0]
	// is a condition (or a group of conditions) at the deepest level.
	MaxFilterDepth = 4
	// MaxFilterItems bounds the items of the whole tree, groups included.
	MaxFilterItems = 2 * MaxFilters
)

// Filter is one resolved condition of the filter tree.
type Filter struct {
	Field  *model.Field // the resource's field, or with Path the related resource's
	Op     string
	Value  any   // canonical; for is_empty / is_not_empty unused
	Values []any // canonical, for in / not_in
	// Path is the relation a path condition (company.city, contacts.email) crosses; nil for a condition
	// on the resource's own field.
	Path *Path
}

// Key is the filter key the condition was given with.
func (f Filter) Key() string {
	if f.Path != nil {
		return f.Path.Relation.Name + "." + f.Field.Key
	}
	return f.Field.Key
}

// A Path condition is about the records a relation leads to, as the caller may read them: the active
// (not archived) records of the target in the workspace, under the caller's record rule on it. Across a
// reference (company.city) a record matches when its referenced record matches the condition; across
// an association (contacts.email) when at least one linked record does. The condition is the target
// field's own, so negative operators keep their meaning there: company.city ne Berlin is "the company's
// city is not Berlin (or empty)", and a record with no company, or none the caller can read, never
// matches a path condition. Paths cross one relation.
type Path struct {
	Relation model.Relation
	Target   *model.Resource
	Policy   *access.Policy // the caller's on Target; nil is unrestricted
}

// Target is what a filter path may reach on the other side of a relation: the related resource, the
// caller's policy on it and its custom fields as filter fields (as Scope.Custom).
type Target struct {
	Resource *model.Resource
	Policy   *access.Policy // nil is unrestricted
	Custom   []*model.Field
}

// PathTargets returns the names of the resources the path conditions of the raw filter tree lead to
// from res (each once), so that the caller can look up their policies and custom fields for
// Scope.Targets. It reads at most the items Build would, and ignores what Build refuses.
func PathTargets(res *model.Resource, raw []any) []string {
	var out []string
	seen := map[string]bool{}
	n := 0
	var walk func(items []any, depth int)
	walk = func(items []any, depth int) {
		for _, x := range items {
			if n++; n > MaxFilterItems || depth > MaxFilterDepth {
				return
			}
			item, _ := x.(map[string]any)
			if sub, ok := item["filters"].([]any); ok {
				walk(sub, depth+1)
				continue
			}
			key, _ := item["field"].(string)
			name, _, ok := strings.Cut(key, ".")
			if !ok {
				continue
			}
			if rel, ok := res.Relation(name); ok && !seen[rel.Target] {
				seen[rel.Target] = true
				out = append(out, rel.Target)
			}
		}
	}
	walk(raw, 0)
	return out
}

// Group is a filter group: its items joined with and, or with or when Or is set. The top-level group of
// a plan (Plan.Filter) is joined by the join parameter; an empty top-level group filters nothing.
type Group struct {
	Or    bool
	Items []Item
}

// Item is one item of a group: a condition or a nested group (exactly one is set).
type Item struct {
	Filter *Filter
	Group  *Group
}

// Empty reports whether the group holds no item.
func (g Group) Empty() bool { return len(g.Items) == 0 }

// Conditions returns the conditions of the tree, depth first in the order given.
func (g Group) Conditions() []Filter {
	var out []Filter
	var walk func(g Group)
	walk = func(g Group) {
		for _, it := range g.Items {
			if it.Group != nil {
				walk(*it.Group)
				continue
			}
			out = append(out, *it.Filter)
		}
	}
	walk(g)
	return out
}

// RuleNarrows reports whether a record rule of the caller narrows the rows of p: its rule on the
// resource, or on the target of one of its filter paths (whose matches are the target records the
// caller can see). A planner's estimate of such a plan would tell about records the caller cannot see.
func (p *Plan) RuleNarrows() bool {
	if p.Policy != nil && p.Policy.Rule != access.All {
		return true
	}
	for _, c := range p.Filter.Conditions() {
		if c.Path != nil && c.Path.Policy != nil && c.Path.Policy.Rule != access.All {
			return true
		}
	}
	return false
}

// TenancyOnly reports whether the plan selects its workspace's records with no other condition than
// the tenancy scope and the archived flag: no filter, filter path, search, record rule or data model.
func (p *Plan) TenancyOnly() bool {
	return p.Filter.Empty() && len(p.Search) == 0 && !p.RuleNarrows() && !p.Resource.ModelScoped
}

// resolver resolves the filter keys of one plan: the resource's declared filterable fields and custom
// fields, each readable under the caller's policy.
type resolver struct {
	res    *model.Resource
	custom []*model.Field
	policy *access.Policy // nil: unrestricted
	// targets are the resources paths may lead to, by name (Scope.Targets).
	targets map[string]Target
}

func (r *resolver) readable(p *access.Policy, key string) bool { return p == nil || p.Readable(key) }

// own resolves key among the fields of r.res: a custom field's filter key or a declared filterable field.
func (r *resolver) own(key string) (*model.Field, bool) {
	for _, f := range r.custom {
		if f.Key == key {
			return f, true
		}
	}
	f, ok := r.res.Field(key)
	return f, ok && f.Filterable
}

// resolve returns the condition's field for key, or an error about the item's "field" member.
func (r *resolver) resolve(key string, out *Filter) *field.Error {
	if name, rest, ok := strings.Cut(key, "."); ok {
		return r.path(key, name, rest, out)
	}
	f, ok := r.own(key)
	if !ok {
		msg := fmt.Sprintf("%q is not a filter key of %s", key, r.res.Name)
		if strings.HasPrefix(key, "cf__") {
			msg += "; filter a custom field by its filter_key (cfv:<id>) from the catalog"
		}
		return &field.Error{Code: field.CodeInvalid, Field: "field", Message: msg}
	}
	if !r.readable(r.policy, f.Key) {
		return &field.Error{Code: field.CodeInvalid, Field: "field", Message: fmt.Sprintf("%q is not readable with your role; it cannot be filtered on", key)}
	}
	out.Field = f
	return nil
}

// path resolves the path key relation.rest: the relation must be a filterable reference the caller can
// read or an association, leading to a resource the caller may read (in Targets), and rest one of its
// filter keys the caller can read there.
func (r *resolver) path(key, relation, rest string, out *Filter) *field.Error {
	refuse := func(msg string) *field.Error {
		return &field.Error{Code: field.CodeInvalid, Field: "field", Message: msg}
	}
	rel, ok := r.res.Relation(relation)
	if !ok {
		var names []string
		for _, rel := range r.res.Relations() {
			if rel.Field == nil || rel.Field.Filterable {
				names = append(names, rel.Name)
			}
		}
		return refuse(fmt.Sprintf("%q is not a filter key of %s: %q is not one of its relations (%s)", key, r.res.Name, relation, strings.Join(names, ", ")))
	}
	if strings.Contains(rest, ".") {
		return refuse(fmt.Sprintf("%q crosses more than one relation; a filter path is relation.field", key))
	}
	if rel.Field != nil {
		if !rel.Field.Filterable {
			return refuse(fmt.Sprintf("%q is not a filter key of %s: %s is not filterable", key, r.res.Name, rel.Field.Key))
		}
		if !r.readable(r.policy, rel.Field.Key) {
			return refuse(fmt.Sprintf("%q is not readable with your role; it cannot be filtered on", key))
		}
	}
	t, ok := r.targets[rel.Target]
	if !ok || (t.Policy != nil && t.Policy.Level == access.None) {
		return refuse(fmt.Sprintf("%q leads to %s, which this key cannot read; it cannot be filtered on", key, rel.Target))
	}
	if t.Resource.ModelScoped {
		return refuse(fmt.Sprintf("%q leads to %s, whose records live in data models; it cannot be filtered on", key, rel.Target))
	}
	target := &resolver{res: t.Resource, custom: t.Custom, policy: t.Policy}
	f, ok := target.own(rest)
	if !ok {
		return refuse(fmt.Sprintf("%q is not a filter key of %s: %q is not a filter key of %s", key, r.res.Name, rest, t.Resource.Name))
	}
	if !r.readable(t.Policy, f.Key) {
		return refuse(fmt.Sprintf("%q is not readable with your role; it cannot be filtered on", key))
	}
	out.Field, out.Path = f, &Path{Relation: rel, Target: t.Resource, Policy: t.Policy}
	return nil
}

// treeParser walks the raw filter tree, counting conditions and items against the caps.
type treeParser struct {
	r     *resolver
	errs  field.ErrorList
	conds int
	items int
	full  bool // a cap was passed: the walk stops
}

// parseTree resolves the raw top-level filter items.
func parseTree(r *resolver, raw []any) ([]Item, field.ErrorList) {
	p := &treeParser{r: r}
	items := p.group(field.NewPath("filters"), raw, 0)
	if len(p.errs) > 0 {
		return nil, p.errs
	}
	return items, nil
}

// group resolves the items of the group at path, depth groups below the top level.
func (p *treeParser) group(path field.Path, raw []any, depth int) []Item {
	if depth > 0 && len(raw) == 0 {
		p.errs = append(p.errs, field.New(field.CodeRequired, path, "a filter group must hold at least one item"))
		return nil
	}
	out := make([]Item, 0, len(raw))
	for i, x := range raw {
		if p.full {
			return nil
		}
		ip := path.Index(i)
		p.items++
		if p.items > MaxFilterItems {
			p.over()
			return nil
		}
		item, ok := x.(map[string]any)
		if !ok {
			p.errs = append(p.errs, field.New(field.CodeType, ip, `must be an object: a condition {"field", "op", "value"} or a group {"join", "filters"}`))
			continue
		}
		_, hasFilters := item["filters"]
		_, hasJoin := item["join"]
		if hasFilters || hasJoin {
			if g := p.subgroup(ip, item, depth+1); g != nil {
				out = append(out, Item{Group: g})
			}
			continue
		}
		p.conds++
		if p.conds > MaxFilters {
			p.over()
			return nil
		}
		f, err := parseFilter(p.r, item)
		if err != nil {
			err.Field = ip.String() + "." + err.Field
			p.errs = append(p.errs, err)
			continue
		}
		out = append(out, Item{Filter: &f})
	}
	return out
}

func (p *treeParser) over() {
	p.full = true
	p.errs = append(p.errs, field.New(field.CodeTooLong, field.NewPath("filters"), fmt.Sprintf("must hold at most %d conditions and %d items in all, nested groups included", MaxFilters, MaxFilterItems)))
}

// subgroup resolves the group item at path, depth groups below the top level; nil when it is refused.
func (p *treeParser) subgroup(path field.Path, item map[string]any, depth int) *Group {
	if depth > MaxFilterDepth {
		p.errs = append(p.errs, field.New(field.CodeInvalid, path, fmt.Sprintf("filter groups nest at most %d deep below the top level", MaxFilterDepth)))
		return nil
	}
	bad := false
	for k := range item {
		if k != "join" && k != "filters" {
			p.errs = append(p.errs, field.New(field.CodeUnknown, path.Child(k), "is not a filter group member (join, filters); a condition has field, op and value"))
			bad = true
		}
	}
	g := &Group{}
	if v, ok := item["join"]; ok {
		switch v {
		case "and":
		case "or":
			g.Or = true
		default:
			p.errs = append(p.errs, field.New(field.CodeOption, path.Child("join"), "must be and or or"))
			bad = true
		}
	}
	raw, ok := item["filters"].([]any)
	if !ok {
		p.errs = append(p.errs, field.New(field.CodeType, path.Child("filters"), "must be an array of filter items"))
		return nil
	}
	g.Items = p.group(path.Child("filters"), raw, depth)
	if bad || len(g.Items) != len(raw) {
		return nil
	}
	return g
}

func parseFilter(r *resolver, item map[string]any) (Filter, *field.Error) {
	for k := range item {
		if k != "field" && k != "op" && k != "value" {
			return Filter{}, &field.Error{Code: field.CodeUnknown, Field: k, Message: "is not a filter member (field, op, value)"}
		}
	}
	key, ok := item["field"].(string)
	if !ok {
		return Filter{}, &field.Error{Code: field.CodeRequired, Field: "field", Message: "must be a filter key string"}
	}
	var out Filter
	if err := r.resolve(key, &out); err != nil {
		return Filter{}, err
	}
	f := out.Field
	op, ok := item["op"].(string)
	if !ok {
		return Filter{}, &field.Error{Code: field.CodeRequired, Field: "op", Message: "must be an operator string"}
	}
	if !f.AcceptsOp(op) {
		return Filter{}, &field.Error{Code: field.CodeOption, Field: "op", Message: fmt.Sprintf("%q is not accepted for %s; accepted: %s", op, key, strings.Join(f.Ops(), ", "))}
	}
	out.Op = op
	raw, hasValue := item["value"]
	switch op {
	case "is_empty", "is_not_empty":
		if hasValue && raw != nil {
			return Filter{}, &field.Error{Code: field.CodeInvalid, Field: "value", Message: op + " takes no value"}
		}
		return out, nil
	case "in", "not_in":
		list, ok := raw.([]any)
		if !ok || len(list) == 0 || len(list) > MaxInValues {
			return Filter{}, &field.Error{Code: field.CodeType, Field: "value", Message: fmt.Sprintf("%s needs an array of 1 to %d values", op, MaxInValues)}
		}
		for i, v := range list {
			cv, err := model.Canonical(f, v)
			if err != nil {
				return Filter{}, &field.Error{Code: field.CodeType, Field: fmt.Sprintf("value[%d]", i), Message: err.Error()}
			}
			if err := checkLength(cv); err != nil {
				err.Field = fmt.Sprintf("value[%d]", i)
				return Filter{}, err
			}
			out.Values = append(out.Values, cv)
		}
		return out, nil
	}
	if !hasValue || raw == nil {
		return Filter{}, &field.Error{Code: field.CodeRequired, Field: "value", Message: op + " needs a value (use is_empty for missing values)"}
	}
	cv, err := model.Canonical(f, raw)
	if err != nil {
		return Filter{}, &field.Error{Code: field.CodeType, Field: "value", Message: err.Error()}
	}
	if err := checkLength(cv); err != nil {
		return Filter{}, err
	}
	out.Value = cv
	return out, nil
}

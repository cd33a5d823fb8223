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
	Field  *model.Field
	Op     string
	Value  any   // canonical; for is_empty / is_not_empty unused
	Values []any // canonical, for in / not_in
}

// Key is the filter key the condition was given with.
func (f Filter) Key() string { return f.Field.Key }

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

// resolver resolves the filter keys of one plan: the resource's declared filterable fields and custom
// fields, each readable under the caller's policy.
type resolver struct {
	res    *model.Resource
	custom []*model.Field
	policy *access.Policy // nil: unrestricted
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

// Package listplan turns list and query parameters into a typed Plan: sort key, direction, filters,
// search terms, field selection, page or keyset position. Every key in a request is resolved against the
// model; nothing a caller sends reaches SQL except as a placeholder value.
package listplan

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/workspace-records/records/engine/access"
	"github.com/workspace-records/records/engine/field"
	"github.com/workspace-records/records/engine/fulltext"
	"github.com/workspace-records/records/engine/model"
	"github.com/workspace-records/records/engine/strictjson"
)

// Limits of list requests.
// What count= takes.
const (
	CountNone      = "none"
	CountExact     = "exact"
	CountEstimated = "estimated"
	// EstimateExactCap bounds the exact count that stands in for an estimate where the planner's cannot
	// be used (a record rule narrows the rows, or SQLite): past it, the count is the cap, said estimated.
	EstimateExactCap = 10000
)

// Bounds of the change feed (GET /v1/events; runtime/records.Service.Events).
const (
	DefaultEventPage = 100
	MaxEventPage     = 1000
	// MaxEventWait is the longest a reader of the feed may wait for events (wait=…).
	MaxEventWait = 30 * time.Second
)

const (
	MaxPage        = 10000
	PageWindow     = 10000 // page mode reaches only the first PageWindow records
	MaxPageSize    = 100
	DefaultSize    = 25
	MaxFields      = 100
	MaxFilters     = 50
	MaxInValues    = 100
	MaxSearchTerms = 16
	MaxSearchLen   = 500
	MaxValueLen    = 1000 // characters of one text filter value
)

// Params are the raw list parameters, from a URL query or a query body.
type Params struct {
	Page            *int
	Cursor          *string
	PageSize        *int
	Sort            string
	Order           string
	Search          string
	IncludeArchived bool
	Filters         []any // raw filter items
	Join            string
	Fields          []string
	HasFields       bool
	ModelID         string
	Count           string // count=exact|estimated|none ("" = none)
	// Expand are the expand paths as sent (resolved by Expand, not by Build: they name other
	// resources, and change what each record holds, not which records a page has).
	Expand []string
	// MaxPage is the largest page_size allowed: 0 is MaxPageSize, the API's; an export job walks in
	// larger pages (no request sets it).
	MaxPage int
}

// Position is where a keyset walk resumes: after the row with sort value Key (nil for NULL) and ID.
type Position struct {
	Key any
	ID  string
}

// Plan is a resolved list request.
type Plan struct {
	Resource        *model.Resource
	Sort            *model.Field
	Desc            bool
	Filter          Group // the filter tree: top-level items joined by join (Filter.Or), nested groups
	Search          []string
	IncludeArchived bool
	Fields          []string // nil means every field
	PageSize        int
	Page            int // 0 in cursor mode
	Offset          int
	Limit           int // rows the page may hold (page mode: clipped to the window)
	After           *Position
	ModelID         string
	Fingerprint     string
	// Policy limits the records and fields the plan may touch; nil is unrestricted.
	Policy *access.Policy
	// Count asks for the number of records the plan selects (every page): CountExact, CountEstimated,
	// or "" / CountNone.
	Count string
}

// CursorMode reports whether the plan walks with a keyset cursor.
func (p *Plan) CursorMode() bool { return p.Page == 0 }

// FromQuery reads Params from a URL query. Unknown parameters are refused.
func FromQuery(q url.Values) (Params, field.ErrorList) {
	var p Params
	var errs field.ErrorList
	for key, vals := range q {
		path := field.NewPath(key)
		if len(vals) != 1 {
			errs = append(errs, field.New(field.CodeInvalid, path, "must be given once"))
			continue
		}
		v := vals[0]
		switch key {
		case "page", "page_size":
			n, err := strconv.Atoi(v)
			if err != nil {
				errs = append(errs, field.New(field.CodeType, path, "must be an integer"))
				continue
			}
			if key == "page" {
				p.Page = &n
			} else {
				p.PageSize = &n
			}
		case "cursor":
			p.Cursor = &v
		case "sort":
			p.Sort = v
		case "order":
			p.Order = v
		case "search":
			p.Search = v
		case "count":
			p.Count = v
		case "include_archived":
			b, err := strconv.ParseBool(v)
			if err != nil || (v != "true" && v != "false") {
				errs = append(errs, field.New(field.CodeType, path, "must be true or false"))
				continue
			}
			p.IncludeArchived = b
		case "filter":
			items, err := decodeFilterArray([]byte(v))
			if err != nil {
				code := field.CodeType
				var dup *strictjson.DuplicateError
				if errors.As(err, &dup) {
					code = field.CodeDuplicate
				}
				errs = append(errs, field.New(code, path, err.Error()))
				continue
			}
			p.Filters = items
		case "join":
			p.Join = v
		case "fields":
			p.HasFields = true
			if v != "" {
				p.Fields = strings.Split(v, ",")
			}
		case "model_id":
			p.ModelID = v
		case "expand":
			p.Expand = SplitExpand(v)
		default:
			errs = append(errs, field.New(field.CodeUnknown, path, "is not a list parameter"))
		}
	}
	return p, errs
}

// decodeFilterArray reads the filter parameter as strictly as a body: a filter item naming a member
// twice ({"field":"name",…,"field":"email"}) is refused, not read as its last value.
func decodeFilterArray(data []byte) ([]any, error) {
	v, err := strictjson.Decode(data)
	var dup *strictjson.DuplicateError
	if errors.As(err, &dup) {
		return nil, fmt.Errorf("must name each member of a filter item once: %w", err)
	}
	if err != nil {
		return nil, fmt.Errorf("must be a JSON array of filter items")
	}
	items, ok := v.([]any)
	if !ok {
		return nil, fmt.Errorf("must be a JSON array of filter items")
	}
	return items, nil
}

// FromBody reads Params from a decoded query body. Only the members SPEC.md lists are allowed.
func FromBody(body map[string]any) (Params, field.ErrorList) {
	var p Params
	var errs field.ErrorList
	intOf := func(path field.Path, v any) (int, bool) {
		n, ok := v.(json.Number)
		if !ok {
			errs = append(errs, field.New(field.CodeType, path, "must be an integer"))
			return 0, false
		}
		i, err := strconv.Atoi(n.String())
		if err != nil {
			errs = append(errs, field.New(field.CodeType, path, "must be an integer"))
			return 0, false
		}
		return i, true
	}
	strOf := func(path field.Path, v any) (string, bool) {
		s, ok := v.(string)
		if !ok {
			errs = append(errs, field.New(field.CodeType, path, "must be a string"))
		}
		return s, ok
	}
	for key, v := range body {
		path := field.NewPath(key)
		switch key {
		case "page":
			if n, ok := intOf(path, v); ok {
				p.Page = &n
			}
		case "page_size":
			if n, ok := intOf(path, v); ok {
				p.PageSize = &n
			}
		case "cursor":
			if s, ok := strOf(path, v); ok {
				p.Cursor = &s
			}
		case "sort":
			p.Sort, _ = strOf(path, v)
		case "order":
			p.Order, _ = strOf(path, v)
		case "search":
			p.Search, _ = strOf(path, v)
		case "join":
			p.Join, _ = strOf(path, v)
		case "model_id":
			p.ModelID, _ = strOf(path, v)
		case "count":
			p.Count, _ = strOf(path, v)
		case "include_archived":
			b, ok := v.(bool)
			if !ok {
				errs = append(errs, field.New(field.CodeType, path, "must be a boolean"))
			}
			p.IncludeArchived = b
		case "filters":
			items, ok := v.([]any)
			if !ok {
				errs = append(errs, field.New(field.CodeType, path, "must be an array of filter items"))
			}
			p.Filters = items
		case "fields":
			items, ok := v.([]any)
			if !ok {
				errs = append(errs, field.New(field.CodeType, path, "must be an array of strings"))
				continue
			}
			if len(items) > MaxFields {
				errs = append(errs, field.New(field.CodeTooLong, path, fmt.Sprintf("must have at most %d items", MaxFields)))
				continue
			}
			p.HasFields = true
			for i, it := range items {
				s, ok := it.(string)
				if !ok {
					errs = append(errs, field.New(field.CodeType, path.Index(i), "must be a string"))
					continue
				}
				p.Fields = append(p.Fields, s)
			}
		case "expand":
			p.Expand, errs = expandMember(path, v, errs)
		default:
			errs = append(errs, field.New(field.CodeUnknown, path, "is not a query member"))
		}
	}
	return p, errs
}

// Scope binds a plan to its caller so that a cursor cannot be replayed elsewhere.
type Scope struct {
	Workspace string
	Secret    []byte         // cursor signing key
	Policy    *access.Policy // the caller's policy on the resource; nil is unrestricted
	// Custom are the workspace's custom fields of the resource as filter fields: Key is the filter key
	// (cfv:<definition id>), Column the definition id, Custom set.
	Custom []*model.Field
	// Targets are the resources filter paths may lead to, by name: for each, the caller's policy and the
	// workspace's custom fields there (see PathTargets). A path to a resource missing here is refused.
	Targets map[string]Target
}

// Build resolves p against res. Every problem is returned at once.
func Build(res *model.Resource, p Params, scope Scope) (*Plan, field.ErrorList) {
	var errs field.ErrorList
	plan := &Plan{Resource: res, PageSize: DefaultSize, IncludeArchived: p.IncludeArchived, ModelID: p.ModelID, Policy: scope.Policy, Count: p.Count}
	switch p.Count {
	case "", CountNone, CountExact, CountEstimated:
	default:
		errs = append(errs, field.New(field.CodeOption, field.NewPath("count"), "must be exact, estimated or none"))
	}
	readable := func(key string) bool { return scope.Policy == nil || scope.Policy.Readable(key) }

	if p.PageSize != nil {
		maxPage := MaxPageSize
		if p.MaxPage > 0 {
			maxPage = p.MaxPage
		}
		if *p.PageSize < 1 || *p.PageSize > maxPage {
			errs = append(errs, field.New(field.CodeRange, field.NewPath("page_size"), fmt.Sprintf("must be between 1 and %d", maxPage)))
		} else {
			plan.PageSize = *p.PageSize
		}
	}
	if p.Page != nil && p.Cursor != nil {
		errs = append(errs, field.New(field.CodeConflicting, field.NewPath("page"), "cannot be combined with cursor"))
	}
	if p.Cursor == nil {
		plan.Page = 1
		if p.Page != nil {
			last := PageWindow/plan.PageSize + 1
			switch {
			case *p.Page < 1 || *p.Page > MaxPage:
				errs = append(errs, field.New(field.CodeRange, field.NewPath("page"), fmt.Sprintf("must be between 1 and %d", MaxPage)))
			case *p.Page > last:
				errs = append(errs, field.New(field.CodeRange, field.NewPath("page"), fmt.Sprintf("must be at most %d with page_size %d (page mode reaches the first %d records; use cursor to go deeper)", last, plan.PageSize, PageWindow)))
			default:
				plan.Page = *p.Page
			}
		}
		plan.Offset = (plan.Page - 1) * plan.PageSize
		plan.Limit = min(plan.PageSize, max(PageWindow-plan.Offset, 0))
	} else {
		plan.Limit = plan.PageSize
	}

	plan.Sort, _ = res.Field("created_at")
	plan.Desc = true
	if p.Sort != "" {
		f, ok := res.Field(p.Sort)
		for _, cf := range scope.Custom {
			if cf.Key == p.Sort {
				f, ok = cf, true
			}
		}
		switch {
		case ok && f.Sortable && !readable(f.Key):
			errs = append(errs, field.New(field.CodeInvalid, field.NewPath("sort"), fmt.Sprintf("%q is not readable with your role; it cannot be a sort key", p.Sort)))
		case !ok || !f.Sortable:
			errs = append(errs, field.New(field.CodeInvalid, field.NewPath("sort"), fmt.Sprintf("%q is not a sort key of %s; sort keys: %s", p.Sort, res.Name, strings.Join(res.SortKeys(), ", "))))
		default:
			plan.Sort = f
		}
	}
	switch p.Order {
	case "", "desc":
	case "asc":
		plan.Desc = false
	default:
		errs = append(errs, field.New(field.CodeOption, field.NewPath("order"), "must be asc or desc"))
	}
	switch p.Join {
	case "", "and":
	case "or":
		plan.Filter.Or = true
	default:
		errs = append(errs, field.New(field.CodeOption, field.NewPath("join"), "must be and or or"))
	}
	if p.Search != "" {
		var hidden []string
		for _, f := range res.Search {
			if !readable(f.Key) {
				hidden = append(hidden, f.Key)
			}
		}
		if len(res.Search) == 0 {
			errs = append(errs, field.New(field.CodeInvalid, field.NewPath("search"), res.Name+" is not full-text searchable"))
		} else if len(hidden) > 0 {
			errs = append(errs, field.New(field.CodeInvalid, field.NewPath("search"), "searches fields your role cannot read ("+strings.Join(hidden, ", ")+"); use filters instead"))
		} else if terms, err := SearchTerms(p.Search); err != nil {
			errs = append(errs, field.New(field.CodeInvalid, field.NewPath("search"), err.Error()))
		} else {
			plan.Search = terms
		}
	}
	items, ferrs := parseTree(&resolver{res: res, custom: scope.Custom, policy: scope.Policy, targets: scope.Targets}, p.Filters)
	errs = append(errs, ferrs...)
	plan.Filter.Items = items
	if p.HasFields {
		plan.Fields = []string{}
		for _, name := range p.Fields {
			if name = strings.TrimSpace(name); name != "" {
				plan.Fields = append(plan.Fields, name)
			}
		}
	}
	if len(errs) > 0 {
		return nil, errs
	}
	plan.Fingerprint = fingerprint(plan, scope.Workspace)
	if p.Cursor != nil && *p.Cursor != "start" {
		pos, err := DecodeCursor(scope.Secret, *p.Cursor, plan)
		if err != nil {
			return nil, field.ErrorList{field.New(field.CodeInvalid, field.NewPath("cursor"), err.Error())}
		}
		plan.After = pos
	}
	return plan, nil
}

// SearchTerms splits free text into at most MaxSearchTerms tokens by the rule records are indexed with
// (engine/fulltext): each must be a prefix of one of a matching record's tokens.
func SearchTerms(s string) ([]string, error) {
	if len(s) > MaxSearchLen {
		return nil, fmt.Errorf("must be at most %d characters", MaxSearchLen)
	}
	words := fulltext.Tokens(s)
	if len(words) == 0 {
		return nil, fmt.Errorf("must contain at least one letter or digit")
	}
	if len(words) > MaxSearchTerms {
		words = words[:MaxSearchTerms]
	}
	return words, nil
}

// checkLength refuses a text filter value longer than MaxValueLen characters.
func checkLength(v any) *field.Error {
	if s, ok := v.(string); ok && utf8.RuneCountInString(s) > MaxValueLen {
		return &field.Error{Code: field.CodeTooLong, Field: "value", Message: fmt.Sprintf("must be at most %d characters", MaxValueLen)}
	}
	return nil
}

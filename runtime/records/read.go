package records

import (
	"context"
	"fmt"
	"strings"

	"github.com/workspace-records/records/engine/access"
	"github.com/workspace-records/records/engine/apierr"
	"github.com/workspace-records/records/engine/catalog"
	"github.com/workspace-records/records/engine/field"
	"github.com/workspace-records/records/engine/listplan"
	"github.com/workspace-records/records/engine/model"
	"github.com/workspace-records/records/engine/sqlgen"
	"github.com/workspace-records/records/runtime/customfields"
	"github.com/workspace-records/records/runtime/store"
)

// Get returns one record of c as the caller sees it, with only the properties named in fields (nil: all).
func (s *Service) Get(ctx context.Context, c *Collection, id string, fields []string) (Record, error) {
	rec, _, err := s.GetVersioned(ctx, c, id, fields)
	return rec, err
}

// GetVersioned is Get with the record's version (see VersionOf), read before fields are selected.
func (s *Service) GetVersioned(ctx context.Context, c *Collection, id string, fields []string) (Record, int64, error) {
	ctx = store.WithWorkspace(ctx, c.Workspace)
	if !model.IsUUID(id) {
		return nil, 0, ErrNotFound
	}
	rec, err := s.get(ctx, s.st, c.Resource, c.key(id, c.Policy), false)
	if err != nil {
		return nil, 0, err
	}
	v, _ := VersionOf(rec)
	return selectFields(c.view(rec), fields, nil), v, nil
}

// GetSelected is GetVersioned for a's get request with query (fields=, expand=): the record with its
// expansions, its fields selected, and the names of fields that selected nothing (see UnknownFields).
func (s *Service) GetSelected(ctx context.Context, a Actor, c *Collection, id string, query map[string][]string) (Record, int64, []string, error) {
	fields, err := Fieldset(query)
	if err != nil {
		return nil, 0, nil, err
	}
	var paths []string
	if vals, ok := query["expand"]; ok {
		if len(vals) != 1 {
			return nil, 0, nil, apierr.Invalid("expand must be given once.", nil)
		}
		paths = listplan.SplitExpand(vals[0])
	}
	exps, err := s.expandPaths(a, c.Resource, paths)
	if err != nil {
		return nil, 0, nil, err
	}
	ctx = store.WithWorkspace(ctx, c.Workspace)
	if !model.IsUUID(id) {
		return nil, 0, nil, ErrNotFound
	}
	rec, err := s.get(ctx, s.st, c.Resource, c.key(id, c.Policy), false)
	if err != nil {
		return nil, 0, nil, err
	}
	v, _ := VersionOf(rec)
	top, unmatched := listplan.SplitFields(fields, exps)
	rec = c.view(rec)
	if err := s.expand(ctx, a, c.Workspace, []Record{rec}, exps); err != nil {
		return nil, 0, nil, err
	}
	return selectFields(rec, top, exps), v, s.unknownSelected(a, c, fields, top, unmatched, exps), nil
}

// key addresses record id of c, inside pol's record rule (nil: any record of the workspace).
func (c *Collection) key(id string, pol *access.Policy) sqlgen.Key {
	return sqlgen.Key{Workspace: c.Workspace, ModelID: c.ModelID, ID: strings.ToLower(id), Policy: pol}
}

// view turns a stored record into what the caller sees: custom field values keyed by their write key
// (archived definitions left out), and the caller's field rules applied.
func (c *Collection) view(rec Record) Record {
	present(c.Fields, rec)
	return c.Policy.Apply(rec)
}

func present(fs *customfields.Fields, rec Record) {
	stored, _ := rec["custom_fields"].(map[string]any)
	out := make(map[string]any, len(fs.Defs))
	for id, v := range stored {
		if d, ok := fs.ByID(id); ok {
			out[d.Key] = v
		}
	}
	rec["custom_fields"] = out
}

// Fieldset reads the fields parameter of a get: the top-level properties to return (nil: all).
func Fieldset(q map[string][]string) ([]string, error) {
	vals, ok := q["fields"]
	if !ok {
		return nil, nil
	}
	if len(vals) != 1 {
		return nil, apierr.Invalid("fields must be given once.", nil)
	}
	out := []string{}
	for _, f := range strings.Split(vals[0], ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	if len(out) > listplan.MaxFields {
		return nil, apierr.Invalid(fmt.Sprintf("fields may name at most %d properties.", listplan.MaxFields), nil)
	}
	return out, nil
}

// UnknownFields returns the names of a fields selection that no record of c carries as the caller sees
// it, once each, in the order given: names the resource lacks and fields the caller's role hides, alike,
// so that the answer never tells a hidden field from one that does not exist. (A masked field is carried,
// with its value masked, as in a full read.)
func (c *Collection) UnknownFields(names []string) []string {
	var out []string
	seen := map[string]bool{}
	for _, n := range names {
		if seen[n] {
			continue
		}
		seen[n] = true
		f, ok := c.Resource.Field(n)
		known := n == "id" || (n == "model_id" && c.Resource.ModelScoped) || (ok && c.Policy.Visibility(f.Key) != access.Hidden)
		if !known {
			out = append(out, n)
		}
	}
	return out
}

// selectFields keeps the named top-level properties, id and the members of the expansions exps; nil
// names keep everything.
func selectFields(rec Record, names []string, exps []*listplan.Expansion) Record {
	if names == nil {
		return rec
	}
	out := Record{"id": rec["id"]}
	for _, n := range names {
		if v, ok := rec[n]; ok {
			out[n] = v
		}
	}
	for _, e := range exps {
		if v, ok := rec[e.Relation.Name]; ok {
			out[e.Relation.Name] = v
		}
	}
	return out
}

func (s *Service) get(ctx context.Context, q store.Querier, r *model.Resource, k sqlgen.Key, lock bool) (Record, error) {
	stmt := s.d.Get(r, k)
	if lock {
		stmt = s.d.GetForUpdate(r, k)
	}
	var rec Record
	found, err := store.QueryOne(ctx, q, stmt, func(row []any) error {
		var err error
		rec, err = s.toRecord(r, row, k.Workspace, k.ModelID)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("get %s %s: %w", r.Name, k.ID, err)
	}
	if !found {
		return nil, ErrNotFound
	}
	return rec, nil
}

// Page is one page of a list.
type Page struct {
	Records    []Record
	HasMore    bool
	NextCursor *string
	PageSize   int
	// Page is the page number in page mode; 0 in cursor mode.
	Page int
	// UnknownFields are the names of the fields selection no record carries (Collection.UnknownFields).
	UnknownFields []string
	// TotalCount is the number of records the list selects, every page (count=exact|estimated); nil
	// when not asked. TotalEstimated says it is an estimate.
	TotalCount     *int64
	TotalEstimated bool
}

// ListRequest is a list as the caller asked for it: the query string of GET /v1/{resource}, or the
// body of POST /v1/{resource}/query.
type ListRequest struct {
	Query map[string][]string
	Body  map[string]any // nil: the parameters are in Query
}

// ListQuery is a list's parameters, read and checked (ReadList): the data model they name picks the
// collection (Collection), then List runs them on it.
type ListQuery struct {
	params listplan.Params
}

// ModelID is the data model the parameters name ("" for none).
func (q *ListQuery) ModelID() string { return q.params.ModelID }

// Walk returns q for one page of a walk through every record it selects: size records (up to 10,000:
// an export's pages, larger than the API's) after cursor ("" for the first page). The sort, filters,
// search and fields stay q's.
func (q *ListQuery) Walk(cursor string, size int) *ListQuery {
	p := q.params
	p.Page, p.Count, p.MaxPage = nil, "", 10_000
	p.PageSize = &size
	if cursor == "" {
		cursor = "start"
	}
	p.Cursor = &cursor
	return &ListQuery{params: p}
}

// ReadList reads a list's parameters from the query string, or from a query's JSON body (which then
// takes no query string).
func ReadList(lr ListRequest) (*ListQuery, error) {
	if lr.Body != nil {
		for k := range lr.Query {
			return nil, apierr.InvalidField("unknown_field", k, "query takes its parameters in the JSON body")
		}
		p, fl := listplan.FromBody(lr.Body)
		if len(fl) > 0 {
			return nil, apierr.Invalid("", fl)
		}
		return &ListQuery{params: p}, nil
	}
	p, fl := listplan.FromQuery(lr.Query)
	if len(fl) > 0 {
		return nil, apierr.Invalid("", fl)
	}
	return &ListQuery{params: p}, nil
}

// List returns one page of collection c as a may see it: it plans q under the caller's policy and runs
// it. c is the collection of q's data model (ListQuery.ModelID).
func (s *Service) List(ctx context.Context, a Actor, c *Collection, q *ListQuery) (*Page, error) {
	plan, exps, err := s.plan(ctx, a, c, q)
	if err != nil {
		return nil, err
	}
	page, err := s.list(ctx, c, plan)
	if err != nil {
		return nil, err
	}
	top, unmatched := listplan.SplitFields(plan.Fields, exps)
	if err := s.expand(store.WithWorkspace(ctx, c.Workspace), a, c.Workspace, page.Records, exps); err != nil {
		return nil, err
	}
	for i, rec := range page.Records {
		page.Records[i] = selectFields(rec, top, exps)
	}
	page.PageSize, page.Page = plan.PageSize, plan.Page
	page.UnknownFields = s.unknownSelected(a, c, plan.Fields, top, unmatched, exps)
	if err := s.count(ctx, c, plan, page); err != nil {
		return nil, err
	}
	return page, nil
}

// plan plans q on c under a's policy: the plan and the expansions q asks for (400 for what is refused).
func (s *Service) plan(ctx context.Context, a Actor, c *Collection, q *ListQuery) (*listplan.Plan, []*listplan.Expansion, error) {
	params := q.params
	params.ModelID = c.ModelID
	r := c.Resource
	targets, err := s.pathTargets(ctx, a, r, params.Filters)
	if err != nil {
		return nil, nil, err
	}
	plan, fl := listplan.Build(r, params, listplan.Scope{Workspace: c.Workspace, Secret: s.secret, Policy: c.Policy, Custom: c.Fields.FilterFields(), Targets: targets})
	var exps []*listplan.Expansion
	if len(params.Expand) > 0 {
		var efl field.ErrorList
		exps, efl = listplan.Expand(s.cat, r, params.Expand, a.Policy)
		fl = append(fl, efl...)
	}
	if len(fl) > 0 {
		return nil, nil, apierr.Invalid("", fl)
	}
	return plan, exps, nil
}

// pathTargets returns what the filter paths of the raw filter tree may reach from r for a: each related
// resource a may read (its key's allowlist, the plan's features and its role's level: Actor.Reach), with
// a's policy there and the workspace's custom fields of it. A resource a cannot read is left out, and
// listplan refuses the paths that lead to it.
func (s *Service) pathTargets(ctx context.Context, a Actor, r *model.Resource, filters []any) (map[string]listplan.Target, error) {
	names := listplan.PathTargets(r, filters)
	if len(names) == 0 {
		return nil, nil
	}
	out := make(map[string]listplan.Target, len(names))
	for _, name := range names {
		t, ok := s.cat.Resource(name)
		if !ok || !a.reaches(t) {
			continue
		}
		pol := a.Policy(t)
		if pol.Level == access.None {
			continue
		}
		var custom []*model.Field
		if !t.ModelScoped {
			fs, err := s.customFields(ctx, a.Workspace, t)
			if err != nil {
				return nil, err
			}
			custom = fs.FilterFields()
		}
		out[name] = listplan.Target{Resource: t, Policy: pol, Custom: custom}
	}
	return out, nil
}

// list returns one page of plan in c.
func (s *Service) list(ctx context.Context, c *Collection, plan *listplan.Plan) (*Page, error) {
	ctx = store.WithWorkspace(ctx, c.Workspace)
	page := &Page{Records: []Record{}}
	want := plan.Limit + 1
	read := func(stmt sqlgen.Stmt) error {
		err := s.st.Query(ctx, stmt, func(row []any) error {
			if len(page.Records) >= want {
				return nil
			}
			rec, err := s.toRecord(plan.Resource, row, c.Workspace, plan.ModelID)
			if err != nil {
				return err
			}
			page.Records = append(page.Records, rec)
			return nil
		})
		if err != nil {
			return fmt.Errorf("list %s: %w", plan.Resource.Name, err)
		}
		return nil
	}
	for _, stmt := range s.d.List(plan, c.Workspace) {
		if len(page.Records) >= want {
			break
		}
		if err := read(stmt); err != nil {
			return nil, err
		}
	}
	if plan.Sort.Custom && !plan.CursorMode() && plan.Limit > 0 && len(page.Records) < want {
		if err := s.emptyBandPage(ctx, plan, c.Workspace, page, read); err != nil {
			return nil, err
		}
	}
	if len(page.Records) > plan.Limit {
		page.Records = page.Records[:plan.Limit]
		page.HasMore = true
	}
	if page.HasMore && len(page.Records) > 0 {
		last := page.Records[len(page.Records)-1]
		pos := listplan.Position{ID: last["id"].(string)}
		v := last[plan.Sort.Key]
		if plan.Sort.Custom {
			stored, _ := last["custom_fields"].(map[string]any)
			v = stored[plan.Sort.Column]
		}
		if v != nil {
			key, err := model.Canonical(plan.Sort, v)
			if err != nil {
				return nil, fmt.Errorf("list %s: cursor from %s: %w", plan.Resource.Name, plan.Sort.Key, err)
			}
			pos.Key = key
		}
		cur := listplan.EncodeCursor(s.secret, plan, pos)
		page.NextCursor = &cur
	}
	for _, rec := range page.Records {
		present(c.Fields, rec)
		if plan.Policy != nil {
			plan.Policy.Apply(rec)
		}
	}
	return page, nil
}

// emptyBandPage completes a page-mode page over a custom sort key with records that have no value,
// which follow all the values: the page's offset into them is its offset less the number of values.
func (s *Service) emptyBandPage(ctx context.Context, plan *listplan.Plan, workspace string, page *Page, read func(sqlgen.Stmt) error) error {
	values := plan.Offset + len(page.Records)
	if len(page.Records) == 0 && plan.Offset > 0 {
		found, err := store.QueryOne(ctx, s.st, s.d.CustomValueCount(plan, workspace, plan.Offset), func(row []any) error {
			values = int(store.Int(row[0]))
			return nil
		})
		if err != nil || !found {
			return fmt.Errorf("list %s: count values: %w", plan.Resource.Name, err)
		}
	}
	return read(s.d.CustomPage(plan, workspace, true, max(0, plan.Offset-values), plan.Limit+1-len(page.Records)))
}

// Describe returns the catalog document of c (GET /v1/resources/{resource}) for a: the resource's
// declared fields as a's policy shows them, and the workspace's custom fields (or the data model's
// fields) with their write, filter and sort keys. A field, custom field, association or association
// attribute is writable only when a may write it: a read-only key, a role that reads the resource, a
// read-only resource and a reference into a resource a does not reach (see Actor.Reach) write nothing.
func (s *Service) Describe(a Actor, c *Collection) map[string]any {
	r := c.Resource
	reach := func(name string) bool {
		t, ok := s.cat.Resource(name)
		return !ok || a.reaches(t)
	}
	doc := catalog.Document(r, s.schemas.Resource(r.Name), c.Policy, reach)
	custom := make([]any, 0, len(c.Fields.Defs))
	sortKeys, _ := doc["sort_keys"].([]string)
	filterKeys, _ := doc["filter_keys"].([]any)
	uniqueKeys, _ := doc["unique_keys"].([]string)
	for _, d := range c.Fields.Defs {
		f := c.Fields.Field(d)
		entry := catalog.Field(f)
		entry["id"], entry["write_key"], entry["filter_key"], entry["custom_type"] = d.ID, "cf__"+d.Key, d.FilterKey(), d.Type
		writable := c.Policy.Level == access.Write && !r.ReadOnly() && (f.Type != model.Reference || reach(f.Target))
		entry["writable"], entry["read_only"] = writable, !writable
		if f.Sortable {
			entry["sort_key"] = d.FilterKey()
			sortKeys = append(sortKeys, d.FilterKey())
		}
		if f.Unique {
			uniqueKeys = append(uniqueKeys, "cf__"+d.Key)
		}
		filterKeys = append(filterKeys, map[string]any{"key": d.FilterKey(), "field": "cf__" + d.Key, "type": f.Type.String(), "ops": f.Ops()})
		custom = append(custom, entry)
	}
	doc["sort_keys"], doc["filter_keys"], doc["unique_keys"] = sortKeys, filterKeys, uniqueKeys
	expand := []any{}
	for _, rel := range listplan.Expandable(s.cat, r, c.Policy) {
		entry := map[string]any{"name": rel.Name, "kind": "association", "target": rel.Target, "expandable": true}
		if rel.Field != nil {
			entry["kind"], entry["field"], entry["expandable"] = "reference", rel.Field.Key, c.Policy.Readable(rel.Field.Key)
		}
		expand = append(expand, entry)
	}
	doc["expand"] = expand
	doc["custom_fields"] = custom
	return doc
}

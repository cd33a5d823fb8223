package sqlgen

import (
	"fmt"
	"strings"

	"github.com/workspace-records/records/engine/listplan"
	"github.com/workspace-records/records/engine/model"
)

// List returns the statements that read one page of plan for workspace. Run them in order and stop
// once plan.Limit+1 rows have been read in all: the extra row tells whether more follow.
//
// Page mode is one statement with OFFSET. A cursor walk resumes after a position with a row-value
// comparison on (sort key, id), which each database serves as an index range scan; for a nullable sort
// key, the rows whose key is NULL form a separate band (after the others in PostgreSQL ascending order,
// before them in SQLite's), so a walk may need a second statement when it crosses from one band to the next.
func (d Dialect) List(plan *listplan.Plan, workspace string) []Stmt {
	if plan.Sort.Custom && plan.Limit > 0 {
		return d.customList(plan, workspace)
	}
	col := Quote(plan.Sort.Column)
	id := Quote("id")
	dir, cmp := "ASC", ">"
	if plan.Desc {
		dir, cmp = "DESC", "<"
	}
	limit := plan.Limit + 1
	build := func(extra func(a *args) string, order string, offset int) Stmt {
		a := &args{d: d}
		where := d.where(plan, workspace, a)
		if extra != nil {
			where += " AND " + extra(a)
		}
		sql := fmt.Sprintf("SELECT %s FROM %s WHERE %s ORDER BY %s LIMIT %s", d.selectList(plan.Resource), Quote(plan.Resource.Table), where, order, a.add(int64(limit)))
		if offset > 0 {
			sql += " OFFSET " + a.add(int64(offset))
		}
		return Stmt{SQL: sql, Args: a.vals}
	}
	full := col + " " + dir + ", " + id + " " + dir
	if plan.Limit == 0 {
		return nil
	}
	if !plan.CursorMode() || plan.After == nil {
		return []Stmt{build(nil, full, plan.Offset)}
	}
	after := plan.After
	if !plan.Sort.Nullable() {
		return []Stmt{build(func(a *args) string {
			return fmt.Sprintf("(%s, %s) %s (%s, %s)", col, id, cmp, a.add(after.Key), a.add(after.ID))
		}, full, 0)}
	}
	nullsFirst := plan.Desc == d.NullsLargest()
	nullBand := func(a *args) string {
		return fmt.Sprintf("%s IS NULL AND %s %s %s", col, id, cmp, a.add(after.ID))
	}
	allNulls := func(*args) string { return col + " IS NULL" }
	allValues := func(*args) string { return col + " IS NOT NULL" }
	valueBand := func(a *args) string {
		return fmt.Sprintf("(%s, %s) %s (%s, %s)", col, id, cmp, a.add(after.Key), a.add(after.ID))
	}
	// Within the NULL band, ordering by (key, id) equals ordering by id, and lets the index serve it.
	nullOrder := full
	switch {
	case after.Key == nil && nullsFirst:
		return []Stmt{build(nullBand, nullOrder, 0), build(allValues, full, 0)}
	case after.Key == nil:
		return []Stmt{build(nullBand, nullOrder, 0)}
	case nullsFirst:
		return []Stmt{build(valueBand, full, 0)}
	default:
		return []Stmt{build(valueBand, full, 0), build(allNulls, nullOrder, 0)}
	}
}

// where renders the scope, archived flag, filters and search of plan.
func (d Dialect) where(plan *listplan.Plan, workspace string, a *args) string {
	r := plan.Resource
	parts := []string{a.scope(Quote("workspace_id"), workspace)}
	if r.ModelScoped {
		parts = append(parts, Quote("model_id")+" = "+a.add(plan.ModelID))
	}
	if !plan.IncludeArchived {
		parts = append(parts, Quote("archived")+" = "+a.add(false))
	}
	if rule := d.rule(plan.Policy, workspace, a, ""); rule != "" {
		parts = append(parts, rule)
	}
	if !plan.Filter.Empty() {
		parts = append(parts, "("+d.group(r, plan.Filter, workspace, a)+")")
	}
	if len(plan.Search) > 0 {
		parts = append(parts, d.search(r, plan.Search, a))
	}
	return strings.Join(parts, " AND ")
}

// group renders the items of a filter group of r's records joined by its join; nested groups in
// parentheses.
func (d Dialect) group(r *model.Resource, g listplan.Group, workspace string, a *args) string {
	conds := make([]string, len(g.Items))
	for i, it := range g.Items {
		if it.Group != nil {
			conds[i] = "(" + d.group(r, *it.Group, workspace, a) + ")"
			continue
		}
		conds[i] = d.condition(r, *it.Filter, workspace, a)
	}
	join := " AND "
	if g.Or {
		join = " OR "
	}
	return strings.Join(conds, join)
}

// condition renders one condition of a filter tree on r's records.
func (d Dialect) condition(r *model.Resource, f listplan.Filter, workspace string, a *args) string {
	if f.Path != nil {
		return d.pathFilter(r, f, workspace, a)
	}
	if f.Field.Custom {
		return d.customFilter(f, workspace, a)
	}
	return d.filter(f, a)
}

// pathFilter renders a path condition of r's records as a semi-join on indexed columns. The target's
// records that match are selected under the same guards as a list of them: the workspace predicate,
// active records only, and the caller's record rule on the target. Across a reference, the reference
// column is among their ids (its (workspace_id, column, id) index serves the outer side); across an
// association, the record's id is among the links (by the associations indexes on (workspace_id,
// owner_resource, name, owner_id|target_id)) whose other end is among them. Each subquery names only
// its own table, so unqualified columns resolve to it.
func (d Dialect) pathFilter(r *model.Resource, f listplan.Filter, workspace string, a *args) string {
	p := f.Path
	cond := f
	cond.Path = nil
	targets := func() string {
		parts := []string{a.scope(Quote("workspace_id"), workspace), Quote("archived") + " = " + a.add(false), d.condition(p.Target, cond, workspace, a)}
		if rule := d.rule(p.Policy, workspace, a, ""); rule != "" {
			parts = append(parts, rule)
		}
		return fmt.Sprintf("SELECT %s FROM %s WHERE %s", Quote("id"), Quote(p.Target.Table), strings.Join(parts, " AND "))
	}
	if p.Relation.Field != nil {
		return Quote(p.Relation.Field.Column) + " IN (" + targets() + ")"
	}
	owner, name, fromOwner := p.Relation.Assoc.StoredAs(r.Name)
	from, other := "target_id", "owner_id"
	if fromOwner {
		from, other = "owner_id", "target_id"
	}
	return fmt.Sprintf(`%s IN (SELECT %s FROM "associations" WHERE %s AND "owner_resource" = %s AND "name" = %s AND %s IN (%s))`,
		Quote("id"), Quote(from), a.scope(Quote("workspace_id"), workspace), a.add(owner), a.add(name), Quote(other), targets())
}

func (d Dialect) search(r *model.Resource, terms []string, a *args) string {
	// The terms are tokens of engine/fulltext (letters, digits and marks only), matched as prefixes of
	// the stored tokens, unparsed: a tsquery written as lexemes; FTS5 strings its ascii tokenizer keeps
	// whole.
	if d.kind == Postgres {
		q := make([]string, len(terms))
		for i, t := range terms {
			q[i] = "'" + t + "':*"
		}
		return fmt.Sprintf("%s @@ %s::tsquery", Quote(searchVector), a.add(strings.Join(q, " & ")))
	}
	q := make([]string, len(terms))
	for i, t := range terms {
		q[i] = `"` + t + `"*`
	}
	fts := Quote(SearchName(r.Table))
	return fmt.Sprintf("%s.rowid IN (SELECT rowid FROM %s WHERE %s MATCH %s)", Quote(r.Table), fts, fts, a.add(strings.Join(q, " AND ")))
}

func (d Dialect) filter(f listplan.Filter, a *args) string {
	col := Quote(f.Field.Column)
	like := "LIKE"
	if d.kind == Postgres {
		like = "ILIKE"
	}
	switch f.Op {
	case "eq":
		return col + " = " + a.add(f.Value)
	case "ne":
		if d.kind == Postgres {
			return col + " IS DISTINCT FROM " + a.add(f.Value)
		}
		return col + " IS NOT " + a.add(f.Value)
	case "lt":
		return col + " < " + a.add(f.Value)
	case "lte":
		return col + " <= " + a.add(f.Value)
	case "gt":
		return col + " > " + a.add(f.Value)
	case "gte":
		return col + " >= " + a.add(f.Value)
	case "in", "not_in":
		ph := make([]string, len(f.Values))
		for i, v := range f.Values {
			ph[i] = a.add(v)
		}
		if f.Op == "in" {
			return col + " IN (" + strings.Join(ph, ", ") + ")"
		}
		return "(" + col + " NOT IN (" + strings.Join(ph, ", ") + ") OR " + col + " IS NULL)"
	case "contains":
		return col + " " + like + " " + a.add("%"+escapeLike(f.Value.(string))+"%") + ` ESCAPE '\'`
	case "not_contains":
		return "(" + col + " NOT " + like + " " + a.add("%"+escapeLike(f.Value.(string))+"%") + ` ESCAPE '\' OR ` + col + " IS NULL)"
	case "starts_with":
		return col + " " + like + " " + a.add(escapeLike(f.Value.(string))+"%") + ` ESCAPE '\'`
	case "is_empty":
		if f.Field.Type.Textual() {
			return "(" + col + " IS NULL OR " + col + " = '')"
		}
		return col + " IS NULL"
	case "is_not_empty":
		if f.Field.Type.Textual() {
			return "(" + col + " IS NOT NULL AND " + col + " <> '')"
		}
		return col + " IS NOT NULL"
	}
	panic("sqlgen: unknown filter op " + f.Op) // listplan only admits the ops above
}

func escapeLike(s string) string {
	return strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`).Replace(s)
}

// Count counts the records plan selects in workspace, every page of it (the cursor's position and the
// page are left out), under the same predicate as List: tenancy, the record rule, archived records,
// search and filters. limit > 0 stops counting at limit.
func (d Dialect) Count(plan *listplan.Plan, workspace string, limit int) Stmt {
	a := &args{d: d}
	inner := fmt.Sprintf("SELECT 1 FROM %s WHERE %s", Quote(plan.Resource.Table), d.where(plan, workspace, a))
	if limit > 0 {
		inner += " LIMIT " + a.add(int64(limit))
	}
	return Stmt{SQL: "SELECT count(*) FROM (" + inner + ") AS counted", Args: a.vals}
}

// Estimate asks PostgreSQL's planner how many rows of table workspace holds, archived or not (EXPLAIN in
// JSON: the top plan node's "Plan Rows"). The predicate is the workspace's alone: every other clause
// (a filter, a search, the archived flag) would be estimated from statistics of the whole table, every
// workspace's rows together, and answer from them (see records.Service.count).
func (d Dialect) Estimate(table, workspace string) Stmt {
	a := &args{d: d}
	return Stmt{SQL: fmt.Sprintf("EXPLAIN (FORMAT JSON) SELECT 1 FROM %s WHERE %s", Quote(table), a.scope(Quote("workspace_id"), workspace)), Args: a.vals}
}

// Stream returns the one statement that reads every record plan selects for workspace, in the plan's
// order, with no page: an export's read, one snapshot however many rows it holds. Each database's
// natural NULL order under ORDER BY is the band order List walks, so the rows come in the order a cursor
// walk would give them. A plan sorted by a custom field has no such statement (ok false): its values
// live in another table, and its walk goes band by band (customList).
//
// fields are the columns it reads after workspace_id (nil: every field, as List reads them).
func (d Dialect) Stream(plan *listplan.Plan, workspace string, fields []*model.Field) (Stmt, bool) {
	if plan.Sort.Custom {
		return Stmt{}, false
	}
	dir := "ASC"
	if plan.Desc {
		dir = "DESC"
	}
	a := &args{d: d}
	where := d.where(plan, workspace, a)
	list := d.selectList(plan.Resource)
	if fields != nil {
		cols := make([]string, len(fields)+1)
		cols[0] = Quote("workspace_id")
		for i, f := range fields {
			cols[i+1] = Quote(f.Column)
		}
		list = strings.Join(cols, ", ")
	}
	sql := fmt.Sprintf("SELECT %s FROM %s WHERE %s ORDER BY %s %s, %s %s", list, Quote(plan.Resource.Table), where,
		Quote(plan.Sort.Column), dir, Quote("id"), dir)
	return Stmt{SQL: sql, Args: a.vals}, true
}

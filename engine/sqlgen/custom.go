package sqlgen

import (
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/workspace-records/records/engine/listplan"
	"github.com/workspace-records/records/engine/model"
)

// Custom field values are read from each record's custom_fields document, and filtered through the
// custom_values side table, which holds every value typed and B-tree indexed: t is its canonical text
// (ISO dates sort as text), n its number. Filters are semi-joins on that table. Plain comparisons of
// text, numbers and UUIDs are leakproof, so PostgreSQL uses these indexes under row-level security,
// where it would not use any index on a JSONB expression.

// CustomText is the canonical text of a custom value (a canonical value, see model.Canonical).
func CustomText(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case int64:
		return strconv.FormatInt(x, 10)
	case bool:
		return strconv.FormatBool(x)
	case time.Time:
		return x.UTC().Format(SQLiteTime)
	}
	return fmt.Sprint(v)
}

// IndexedPrefix is how many bytes of a custom value's text custom_values keeps: a B-tree entry holds
// at most about 2,700 bytes on PostgreSQL, and long text or a long URL can be far longer.
const IndexedPrefix = 1024

// CustomIndexText is the text custom_values keeps for canonical text s: s itself, or its first
// IndexedPrefix bytes cut at a character boundary.
func CustomIndexText(s string) string {
	if len(s) <= IndexedPrefix {
		return s
	}
	cut := IndexedPrefix
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut]
}

// LongCustom reports whether values of custom field f may be longer than IndexedPrefix: such a field's
// text filters check the full value in the custom_fields document, narrowed by the indexed prefix
// where the operator allows.
func LongCustom(f *model.Field) bool {
	return f.Type.Textual() && f.MaxLength*utf8.UTFMax > IndexedPrefix
}

// CustomNumber is the number of a numeric custom value, for range filters; nil otherwise.
func (d Dialect) CustomNumber(f *model.Field, v any) any {
	if f.Type != model.Integer && f.Type != model.Decimal {
		return nil
	}
	if d.kind == SQLite {
		n, _ := strconv.ParseFloat(CustomText(v), 64)
		return n
	}
	return CustomText(v)
}

// CustomRow is one row of custom_values.
type CustomRow struct {
	RecordID string
	FieldID  string
	Text     string
	Number   any
}

// DeleteCustomValues removes the side-table values of fields of one record.
func (d Dialect) DeleteCustomValues(workspace, recordID string, fieldIDs []string) Stmt {
	a := &args{d: d}
	ph := make([]string, len(fieldIDs))
	w, r := a.scope(`"workspace_id"`, workspace), a.add(recordID)
	for i, id := range fieldIDs {
		ph[i] = a.add(id)
	}
	return Stmt{SQL: fmt.Sprintf(`DELETE FROM "custom_values" WHERE %s AND "record_id" = %s AND "field_id" IN (%s)`, w, r, strings.Join(ph, ", ")), Args: a.vals}
}

// InsertCustomValues writes side-table rows (of one record or of many: the bulk path) in one statement.
func (d Dialect) InsertCustomValues(workspace string, rows []CustomRow) Stmt {
	return d.InsertRows(d.CustomValueRows(workspace, rows))
}

// CustomValueRows are side-table rows of workspace, for InsertRows or the bulk path; a row already
// stored is skipped.
func (d Dialect) CustomValueRows(workspace string, rows []CustomRow) Rows {
	out := Rows{Table: "custom_values", Columns: []string{"workspace_id", "field_id", "record_id", "t", "n"}, Values: make([][]any, len(rows)), IgnoreConflicts: true}
	flat := make([]any, 5*len(rows))
	for i, row := range rows {
		v := flat[5*i : 5*i+5 : 5*i+5]
		v[0], v[1], v[2], v[3], v[4] = d.Arg(workspace), d.Arg(row.FieldID), d.Arg(row.RecordID), d.Arg(row.Text), d.Arg(row.Number)
		out.Values[i] = v
	}
	return out
}

func (d Dialect) customFilter(f listplan.Filter, workspace string, a *args) string {
	fld := f.Field
	// having binds its arguments when called: callers build the text in argument order.
	having := func(cond func() string) string {
		return fmt.Sprintf(`%s IN (SELECT "record_id" FROM "custom_values" WHERE %s AND "field_id" = %s AND %s)`,
			Quote("id"), a.scope(`"workspace_id"`, workspace), a.add(fld.Column), cond())
	}
	present := func() string {
		return fmt.Sprintf(`%s IN (SELECT "record_id" FROM "custom_values" WHERE %s AND "field_id" = %s)`, Quote("id"), a.scope(`"workspace_id"`, workspace), a.add(fld.Column))
	}
	text := func(v any) func() string { return func() string { return `"t" = ` + a.add(CustomText(v)) } }
	numeric := fld.Type == model.Integer || fld.Type == model.Decimal
	like := "LIKE"
	if d.kind == Postgres {
		like = "ILIKE"
	}
	if LongCustom(fld) {
		if cond, ok := d.longCustomFilter(f, workspace, a, like); ok {
			return cond
		}
	}
	switch f.Op {
	case "eq":
		return having(text(f.Value))
	case "ne":
		return "NOT " + having(text(f.Value))
	case "in", "not_in":
		cond := func() string {
			ph := make([]string, len(f.Values))
			for i, v := range f.Values {
				ph[i] = a.add(CustomText(v))
			}
			return `"t" IN (` + strings.Join(ph, ", ") + ")"
		}
		if f.Op == "in" {
			return having(cond)
		}
		return "NOT " + having(cond)
	case "lt", "lte", "gt", "gte":
		op := map[string]string{"lt": "<", "lte": "<=", "gt": ">", "gte": ">="}[f.Op]
		if numeric {
			return having(func() string { return `"n" ` + op + " " + a.add(d.CustomNumber(fld, f.Value)) })
		}
		return having(func() string { return `"t" ` + op + " " + a.add(CustomText(f.Value)) })
	case "contains":
		if fld.Type == model.MultiSelect {
			return having(text(f.Value))
		}
		return having(func() string {
			return `"t" ` + like + " " + a.add("%"+escapeLike(f.Value.(string))+"%") + ` ESCAPE '\'`
		})
	case "not_contains":
		if fld.Type == model.MultiSelect {
			return "NOT " + having(text(f.Value))
		}
		return "NOT " + having(func() string {
			return `"t" ` + like + " " + a.add("%"+escapeLike(f.Value.(string))+"%") + ` ESCAPE '\'`
		})
	case "starts_with":
		return having(func() string { return `"t" ` + like + " " + a.add(escapeLike(f.Value.(string))+"%") + ` ESCAPE '\'` })
	case "is_empty":
		return "NOT " + present()
	case "is_not_empty":
		return present()
	}
	panic("sqlgen: unknown filter op " + f.Op)
}

// longCustomFilter renders the text operators of a field whose values may outgrow the indexed prefix:
// eq and in narrow by the prefix on the index, then compare the whole value in the record's
// custom_fields document; contains and starts_with read the document (a pattern scan either way).
func (d Dialect) longCustomFilter(f listplan.Filter, workspace string, a *args, like string) (string, bool) {
	fld := f.Field
	doc := func() string {
		if d.kind == Postgres {
			return `("custom_fields" ->> ` + a.add(fld.Column) + ")"
		}
		return `json_extract("custom_fields", ` + a.add(`$."`+fld.Column+`"`) + ")"
	}
	// Arguments are added in the order they appear in the text (SQLite binds ? by position).
	prefixed := func(values []any) string {
		cond := fmt.Sprintf(`%s IN (SELECT "record_id" FROM "custom_values" WHERE %s AND "field_id" = %s AND "t" IN (`,
			Quote("id"), a.scope(`"workspace_id"`, workspace), a.add(fld.Column))
		pre := make([]string, len(values))
		for i, v := range values {
			pre[i] = a.add(CustomIndexText(CustomText(v)))
		}
		cond += strings.Join(pre, ", ") + ")) AND " + doc() + " IN ("
		full := make([]string, len(values))
		for i, v := range values {
			full[i] = a.add(CustomText(v))
		}
		return "(" + cond + strings.Join(full, ", ") + "))"
	}
	pattern := func(p string) string { return doc() + " " + like + " " + a.add(p) + ` ESCAPE '\'` }
	switch f.Op {
	case "eq":
		return prefixed([]any{f.Value}), true
	case "ne":
		return "NOT " + prefixed([]any{f.Value}), true
	case "in":
		return prefixed(f.Values), true
	case "not_in":
		return "NOT " + prefixed(f.Values), true
	case "contains":
		return pattern("%" + escapeLike(f.Value.(string)) + "%"), true
	case "not_contains":
		return "(" + doc() + " IS NULL OR NOT " + pattern("%"+escapeLike(f.Value.(string))+"%") + ")", true
	case "starts_with":
		return pattern(escapeLike(f.Value.(string)) + "%"), true
	}
	return "", false
}

// CustomSortable reports whether a custom field can be a sort key: a single value whose indexed text
// (or number) is the whole value, so that the custom_values index orders records by it.
func CustomSortable(f *model.Field) bool {
	return f.Type != model.MultiSelect && f.Type != model.Reference && !LongCustom(f)
}

// customKey converts a cursor position's canonical value into the custom_values column it compares with.
func (d Dialect) customKey(f *model.Field, v any) any {
	if f.Type == model.Integer || f.Type == model.Decimal {
		return d.CustomNumber(f, v)
	}
	return CustomText(v)
}

// A custom field sort key orders records by the custom_values index (workspace_id, field_id, t|n,
// record_id) joined to the records: the value band. Records without a value form the empty band, read
// by an anti-join in id order, and come last in both orders (an empty value is not a value), so a
// walk reaches them only once the values are exhausted: a first page never scans the records without
// a value. Each band is one index walk.

// customBand renders one band's SELECT: values (after position after, nil from the start) or, with
// empty set, the records without a value (after record id afterID, "" from the start).
func (d Dialect) customBand(plan *listplan.Plan, workspace string, a *args, empty bool, after *listplan.Position, afterID string, offset, limit int, count bool) string {
	r, f := plan.Resource, plan.Sort
	table := Quote(r.Table)
	keyCol := `"t"`
	if f.Type == model.Integer || f.Type == model.Decimal {
		keyCol = `"n"`
	}
	dir, cmp := "ASC", ">"
	if plan.Desc {
		dir, cmp = "DESC", "<"
	}
	kind := "INNER"
	if empty {
		kind = "LEFT"
	}
	from := fmt.Sprintf(`%s %s JOIN (SELECT "record_id" AS "_cv_id", %s AS "_cv_key" FROM "custom_values" WHERE %s AND "field_id" = %s) AS "_cv" ON "_cv"."_cv_id" = %s."id"`,
		table, kind, keyCol, a.scope(`"workspace_id"`, workspace), a.add(f.Column), table)
	where := d.where(plan, workspace, a)
	var order string
	if empty {
		where += ` AND "_cv"."_cv_id" IS NULL`
		if afterID != "" {
			where += fmt.Sprintf(" AND %s.%s %s %s", table, Quote("id"), cmp, a.add(afterID))
		}
		order = fmt.Sprintf("%s.%s %s", table, Quote("id"), dir)
	} else {
		if after != nil {
			where += fmt.Sprintf(` AND ("_cv"."_cv_key", "_cv"."_cv_id") %s (%s, %s)`, cmp, a.add(d.customKey(f, after.Key)), a.add(after.ID))
		}
		order = fmt.Sprintf(`"_cv"."_cv_key" %s, "_cv"."_cv_id" %s`, dir, dir)
	}
	cols := d.selectList(r)
	if count {
		cols = "1"
	}
	sql := fmt.Sprintf("SELECT %s FROM %s WHERE %s ORDER BY %s LIMIT %s", cols, from, where, order, a.add(int64(limit)))
	if offset > 0 {
		sql += " OFFSET " + a.add(int64(offset))
	}
	if count {
		sql = "SELECT count(*) FROM (" + sql + ") AS " + Quote("_c")
	}
	return sql
}

func (d Dialect) customStmt(fn func(a *args) string) Stmt {
	a := &args{d: d}
	sql := fn(a)
	return Stmt{SQL: sql, Args: a.vals}
}

// customList is List for a custom field sort key in cursor mode: the rest of the value band after the
// cursor, then the empty band.
func (d Dialect) customList(plan *listplan.Plan, workspace string) []Stmt {
	limit := plan.Limit + 1
	if !plan.CursorMode() {
		// Page mode needs the number of values before the page (see CustomPage); the first statement
		// alone is right whenever the page lies within the values.
		return []Stmt{d.CustomPage(plan, workspace, false, plan.Offset, limit)}
	}
	values := d.customStmt(func(a *args) string { return d.customBand(plan, workspace, a, false, plan.After, "", 0, limit, false) })
	empty := func(afterID string) Stmt {
		return d.customStmt(func(a *args) string { return d.customBand(plan, workspace, a, true, nil, afterID, 0, limit, false) })
	}
	switch {
	case plan.After == nil:
		return []Stmt{values, empty("")}
	case plan.After.Key == nil:
		return []Stmt{empty(plan.After.ID)}
	default:
		return []Stmt{values, empty("")}
	}
}

// CustomPage returns, for page mode over a custom sort key, the statement reading limit rows from
// offset within the value band, or (empty) within the empty band.
func (d Dialect) CustomPage(plan *listplan.Plan, workspace string, empty bool, offset, limit int) Stmt {
	return d.customStmt(func(a *args) string { return d.customBand(plan, workspace, a, empty, nil, "", offset, limit, false) })
}

// CustomValueCount returns the statement counting the records with a value for plan's custom sort
// key, up to upTo (page mode is bounded, so the count is too).
func (d Dialect) CustomValueCount(plan *listplan.Plan, workspace string, upTo int) Stmt {
	return d.customStmt(func(a *args) string { return d.customBand(plan, workspace, a, false, nil, "", 0, upTo, true) })
}

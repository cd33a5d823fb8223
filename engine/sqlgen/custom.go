package sqlgen

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/workspace-records/records/engine/listplan"
	"github.com/workspace-records/records/engine/model"
)

// CustomIndex is the index serving custom field filters on PostgreSQL: a GIN index over the
// custom_fields document with jsonb_path_ops, which answers containment (@>) — what eq and in compile to —
// as an index scan whatever the field, with one index per table instead of one per custom field.
func (d Dialect) customIndex(r *model.Resource) []Index {
	if d.kind != Postgres {
		return nil
	}
	name := IndexName(r.Table, "custom")
	return []Index{{Name: name, SQL: fmt.Sprintf("CREATE INDEX IF NOT EXISTS %s ON %s USING gin (%s jsonb_path_ops)", Quote(name), Quote(r.Table), Quote("custom_fields"))}}
}

// customValue is the extracted, typed value of a custom field.
func (d Dialect) customValue(f *model.Field, a *args) string {
	if d.kind == SQLite {
		return fmt.Sprintf("json_extract(%s, %s)", Quote("custom_fields"), a.add(`$."`+f.Column+`"`))
	}
	text := fmt.Sprintf("(%s->>(%s::text))", Quote("custom_fields"), a.add(f.Column))
	switch f.Type {
	case model.Integer, model.Decimal:
		return text + "::numeric"
	case model.Boolean:
		return text + "::boolean"
	case model.Date:
		return text + "::date"
	case model.DateTime:
		return text + "::timestamptz"
	}
	return text
}

// customArg is a filter value placed for comparison with customValue.
func (d Dialect) customArg(f *model.Field, v any, a *args) string {
	ph := a.add(v)
	if d.kind == SQLite && f.Type == model.Decimal {
		return "CAST(" + ph + " AS REAL)"
	}
	return ph
}

// contains renders "custom_fields contains {id: value}" (PostgreSQL, index-served).
func (d Dialect) containsJSON(f *model.Field, v any, a *args) string {
	doc, _ := json.Marshal(map[string]any{f.Column: model.JSONValue(f, v)})
	return fmt.Sprintf("%s @> %s::jsonb", Quote("custom_fields"), a.add(string(doc)))
}

func (d Dialect) customFilter(f listplan.Filter, a *args) string {
	fld := f.Field
	if fld.Type == model.MultiSelect {
		return d.multiSelectFilter(f, a)
	}
	if d.kind == Postgres && (f.Op == "eq" || f.Op == "in") {
		vals := f.Values
		if f.Op == "eq" {
			vals = []any{f.Value}
		}
		parts := make([]string, len(vals))
		for i, v := range vals {
			parts[i] = d.containsJSON(fld, v, a)
		}
		return "(" + strings.Join(parts, " OR ") + ")"
	}
	// val() binds its own arguments each time it is used: SQLite placeholders are positional.
	val := func() string { return d.customValue(fld, a) }
	like := "LIKE"
	if d.kind == Postgres {
		like = "ILIKE"
	}
	switch f.Op {
	case "eq":
		return val() + " = " + d.customArg(fld, f.Value, a)
	case "ne":
		return "(" + val() + " IS NULL OR " + val() + " <> " + d.customArg(fld, f.Value, a) + ")"
	case "lt", "lte", "gt", "gte":
		op := map[string]string{"lt": "<", "lte": "<=", "gt": ">", "gte": ">="}[f.Op]
		return val() + " " + op + " " + d.customArg(fld, f.Value, a)
	case "in", "not_in":
		// Arguments are bound in the order they appear in the text.
		prefix := val() + " IN ("
		if f.Op == "not_in" {
			prefix = "(" + val() + " IS NULL OR " + val() + " NOT IN ("
		}
		ph := make([]string, len(f.Values))
		for i, v := range f.Values {
			ph[i] = d.customArg(fld, v, a)
		}
		if f.Op == "in" {
			return prefix + strings.Join(ph, ", ") + ")"
		}
		return prefix + strings.Join(ph, ", ") + "))"
	case "contains":
		return val() + " " + like + " " + a.add("%"+escapeLike(f.Value.(string))+"%") + ` ESCAPE '\'`
	case "not_contains":
		return "(" + val() + " IS NULL OR " + val() + " NOT " + like + " " + a.add("%"+escapeLike(f.Value.(string))+"%") + ` ESCAPE '\')`
	case "starts_with":
		return val() + " " + like + " " + a.add(escapeLike(f.Value.(string))+"%") + ` ESCAPE '\'`
	case "is_empty":
		if fld.Type.Textual() {
			return "(" + val() + " IS NULL OR " + val() + " = '')"
		}
		return val() + " IS NULL"
	case "is_not_empty":
		if fld.Type.Textual() {
			return "(" + val() + " IS NOT NULL AND " + val() + " <> '')"
		}
		return val() + " IS NOT NULL"
	}
	panic("sqlgen: unknown filter op " + f.Op)
}

// multiSelectFilter: contains / not_contains test one option; is_empty tests for no option. Only the
// expression the operator needs is built, since building one binds its arguments.
func (d Dialect) multiSelectFilter(f listplan.Filter, a *args) string {
	has := func() string {
		option, _ := f.Value.(string)
		if d.kind == Postgres {
			doc, _ := json.Marshal(map[string]any{f.Field.Column: []string{option}})
			return fmt.Sprintf("%s @> %s::jsonb", Quote("custom_fields"), a.add(string(doc)))
		}
		return fmt.Sprintf("EXISTS (SELECT 1 FROM json_each(%s, %s) WHERE value = %s)", Quote("custom_fields"), a.add(`$."`+f.Field.Column+`"`), a.add(option))
	}
	count := func() string {
		if d.kind == Postgres {
			return fmt.Sprintf("coalesce(jsonb_array_length(%s->(%s::text)), 0)", Quote("custom_fields"), a.add(f.Field.Column))
		}
		return fmt.Sprintf("coalesce(json_array_length(%s, %s), 0)", Quote("custom_fields"), a.add(`$."`+f.Field.Column+`"`))
	}
	switch f.Op {
	case "contains":
		return has()
	case "not_contains":
		return "NOT " + has()
	case "is_empty":
		return count() + " = 0"
	}
	return count() + " > 0"
}

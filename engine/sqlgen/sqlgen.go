// Package sqlgen builds SQL for resources as (text, args) pairs for PostgreSQL or SQLite. Identifiers
// come only from the model and are quoted; caller values only ever travel as placeholders. Every
// statement filters on workspace_id first. The builder never executes anything.
package sqlgen

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/workspace-records/records/engine/access"
	"github.com/workspace-records/records/engine/listplan"
	"github.com/workspace-records/records/engine/model"
)

// Stmt is one SQL statement with its arguments.
type Stmt struct {
	SQL  string
	Args []any
}

// Kind names a SQL dialect.
type Kind uint8

// The supported dialects.
const (
	Postgres Kind = iota + 1
	SQLite
)

// Dialect builds SQL for one database kind. Choose it once, at start.
type Dialect struct{ kind Kind }

// New returns the dialect of kind.
func New(kind Kind) Dialect { return Dialect{kind: kind} }

// Kind returns the dialect's kind.
func (d Dialect) Kind() Kind { return d.kind }

func (d Dialect) String() string {
	if d.kind == Postgres {
		return "postgres"
	}
	return "sqlite"
}

// Quote quotes an identifier: NUL bytes are dropped and double quotes doubled (as pgx's Identifier.Sanitize).
func Quote(ident string) string {
	ident = strings.ReplaceAll(ident, "\x00", "")
	return `"` + strings.ReplaceAll(ident, `"`, `""`) + `"`
}

// NullsLargest reports whether NULL sorts after every value in ascending order (PostgreSQL) rather than
// before it (SQLite). Keyset pagination follows each database's native order so that indexes serve it.
func (d Dialect) NullsLargest() bool { return d.kind == Postgres }

// args accumulates placeholder arguments.
type args struct {
	d    Dialect
	vals []any
}

func (a *args) add(v any) string {
	a.vals = append(a.vals, a.d.Arg(v))
	if a.d.kind == Postgres {
		return "$" + strconv.Itoa(len(a.vals))
	}
	return "?"
}

// SQLiteTime is how SQLite stores datetimes: fixed-width UTC text, so text order is time order.
const SQLiteTime = "2006-01-02T15:04:05.000000Z"

// Arg converts a canonical value to what the driver of d takes.
func (d Dialect) Arg(v any) any {
	if d.kind == SQLite {
		switch x := v.(type) {
		case time.Time:
			return x.UTC().Format(SQLiteTime)
		case bool:
			if x {
				return int64(1)
			}
			return int64(0)
		}
	}
	return v
}

// ColumnType returns the storage type of f.
func (d Dialect) ColumnType(f *model.Field) string {
	if d.kind == Postgres {
		switch f.Type {
		case model.Integer:
			return "bigint"
		case model.Decimal:
			return "numeric"
		case model.Boolean:
			return "boolean"
		case model.Date:
			return "date"
		case model.DateTime:
			return "timestamptz"
		case model.Reference, model.UUID:
			return "uuid"
		case model.Object:
			return "jsonb"
		}
		return "text"
	}
	switch f.Type {
	case model.Integer, model.Boolean:
		return "INTEGER"
	case model.Decimal:
		return "REAL"
	}
	return "TEXT"
}

// Column is one column of a table.
type Column struct {
	Name    string
	Type    string
	NotNull bool
	Default string // SQL text, "" for none
}

// Index is one index of a table.
type Index struct {
	Name string
	SQL  string
}

// Table is the storage layout of one resource.
type Table struct {
	Name    string
	Columns []Column
	Indexes []Index
	// Search is the list of full-text columns; SearchDDL creates what serves them.
	Search []string
}

// IdentMax is PostgreSQL's identifier length limit.
const IdentMax = 63

// IndexName returns a name for an index of table over suffix, shortened with a hash when too long.
func IndexName(table, suffix string) string {
	name := table + "_" + suffix + "_idx"
	if len(name) <= IdentMax {
		return name
	}
	sum := sha256.Sum256([]byte(name))
	return name[:IdentMax-9] + "_" + hex.EncodeToString(sum[:4])
}

func scopeCols(r *model.Resource) []string {
	if r.ModelScoped {
		return []string{"workspace_id", "model_id"}
	}
	return []string{"workspace_id"}
}

// TableOf returns the storage layout of r.
func (d Dialect) TableOf(r *model.Resource) Table {
	t := Table{Name: r.Table}
	idType := d.ColumnType(&model.Field{Type: model.UUID})
	t.Columns = append(t.Columns, Column{Name: "workspace_id", Type: idType, NotNull: true}, Column{Name: "id", Type: idType, NotNull: true})
	if r.ModelScoped {
		t.Columns = append(t.Columns, Column{Name: "model_id", Type: idType, NotNull: true})
	}
	for _, f := range r.Fields {
		if f.Key == "id" {
			continue
		}
		c := Column{Name: f.Column, Type: d.ColumnType(f), NotNull: !f.Nullable()}
		switch f.Key {
		case "archived":
			c.Default = "false"
			if d.kind == SQLite {
				c.Default = "0"
			}
		case "custom_fields":
			c.Default = "'{}'"
		}
		t.Columns = append(t.Columns, c)
	}
	scope := scopeCols(r)
	lead := strings.Join(quoteAll(scope), ", ")
	for _, f := range r.Fields {
		if f.Key == "id" {
			continue
		}
		if f.Sortable || (f.Filterable && (f.Type == model.Reference)) {
			t.Indexes = append(t.Indexes, Index{
				Name: IndexName(r.Table, f.Column),
				SQL:  fmt.Sprintf("CREATE INDEX IF NOT EXISTS %s ON %s (%s, %s, %s)", Quote(IndexName(r.Table, f.Column)), Quote(r.Table), lead, Quote(f.Column), Quote("id")),
			})
		}
	}
	for _, f := range r.Search {
		t.Search = append(t.Search, f.Column)
	}
	return t
}

func quoteAll(names []string) []string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = Quote(n)
	}
	return out
}

// CreateTable returns the statement creating t with its primary key.
func (d Dialect) CreateTable(t Table, r *model.Resource) string {
	var b strings.Builder
	fmt.Fprintf(&b, "CREATE TABLE IF NOT EXISTS %s (\n", Quote(t.Name))
	for _, c := range t.Columns {
		fmt.Fprintf(&b, "  %s,\n", d.columnDef(c))
	}
	fmt.Fprintf(&b, "  PRIMARY KEY (%s, %s)\n)", Quote("workspace_id"), Quote("id"))
	if d.kind == SQLite {
		b.WriteString(" STRICT")
	}
	return b.String()
}

func (d Dialect) columnDef(c Column) string {
	s := Quote(c.Name) + " " + c.Type
	if c.NotNull {
		s += " NOT NULL"
	}
	if c.Default != "" {
		s += " DEFAULT " + c.Default
	}
	return s
}

// AddColumn returns the statement adding c to table. A NOT NULL column needs a default to be added to a
// table that has rows; declared fields are nullable in storage, so this only matters for managed ones.
func (d Dialect) AddColumn(table string, c Column) string {
	return fmt.Sprintf("ALTER TABLE %s ADD COLUMN %s", Quote(table), d.columnDef(c))
}

// DropColumn returns the statement dropping column name (destructive).
func (d Dialect) DropColumn(table, name string) string {
	return fmt.Sprintf("ALTER TABLE %s DROP COLUMN %s", Quote(table), Quote(name))
}

// CreatedIndex returns the index every resource has for its default order.
func (d Dialect) baseIndexes(r *model.Resource) []Index {
	lead := strings.Join(quoteAll(scopeCols(r)), ", ")
	name := IndexName(r.Table, "archived_created")
	return []Index{{Name: name, SQL: fmt.Sprintf("CREATE INDEX IF NOT EXISTS %s ON %s (%s, %s, %s, %s)", Quote(name), Quote(r.Table), lead, Quote("archived"), Quote("created_at"), Quote("id"))}}
}

// Indexes returns every index of r.
func (d Dialect) Indexes(r *model.Resource) []Index {
	return append(d.baseIndexes(r), d.TableOf(r).Indexes...)
}

// PolicyName names the row-level security policy of record tables.
const PolicyName = "workspace_isolation"

// RowSecurity returns the statements that make PostgreSQL itself refuse rows of other workspaces: the
// policy admits only rows whose workspace_id equals the transaction's records.workspace_id setting, and
// FORCE applies it to the table owner too (superusers still bypass it). SQLite has no equivalent.
func (d Dialect) RowSecurity(table string) []string {
	if d.kind != Postgres {
		return nil
	}
	cond := "workspace_id = NULLIF(current_setting('records.workspace_id', true), '')::uuid"
	return []string{
		fmt.Sprintf("ALTER TABLE %s ENABLE ROW LEVEL SECURITY", Quote(table)),
		fmt.Sprintf("ALTER TABLE %s FORCE ROW LEVEL SECURITY", Quote(table)),
		fmt.Sprintf("CREATE POLICY %s ON %s USING (%s) WITH CHECK (%s)", Quote(PolicyName), Quote(table), cond, cond),
	}
}

// SearchName is the name of the full-text object of a table (FTS5 table or tsvector column).
func SearchName(table string) string { return table + "_fts" }

// SearchDDL returns the statements that create full-text search over cols of table, and the ones that
// drop it. PostgreSQL: a generated tsvector column with a GIN index. SQLite: an external-content FTS5
// table kept in step by triggers.
func (d Dialect) SearchDDL(table string, cols []string) (create, drop []string) {
	fts := SearchName(table)
	if d.kind == Postgres {
		parts := make([]string, len(cols))
		for i, c := range cols {
			parts[i] = "coalesce(" + Quote(c) + ", '')"
		}
		idx := IndexName(table, "search")
		create = []string{
			fmt.Sprintf("ALTER TABLE %s ADD COLUMN %s tsvector GENERATED ALWAYS AS (to_tsvector('simple'::regconfig, %s)) STORED", Quote(table), Quote("_search"), strings.Join(parts, " || ' ' || ")),
			fmt.Sprintf("CREATE INDEX IF NOT EXISTS %s ON %s USING gin (%s)", Quote(idx), Quote(table), Quote("_search")),
		}
		drop = []string{fmt.Sprintf("ALTER TABLE %s DROP COLUMN IF EXISTS %s", Quote(table), Quote("_search"))}
		return create, drop
	}
	q := quoteAll(cols)
	newVals := make([]string, len(cols))
	oldVals := make([]string, len(cols))
	for i, c := range q {
		newVals[i] = "new." + c
		oldVals[i] = "old." + c
	}
	colList := strings.Join(q, ", ")
	create = []string{
		fmt.Sprintf("CREATE VIRTUAL TABLE %s USING fts5(%s, content=%s, content_rowid='rowid', tokenize='unicode61 remove_diacritics 2')", Quote(fts), colList, sqlString(table)),
		fmt.Sprintf("CREATE TRIGGER %s AFTER INSERT ON %s BEGIN INSERT INTO %s(rowid, %s) VALUES (new.rowid, %s); END", Quote(fts+"_ai"), Quote(table), Quote(fts), colList, strings.Join(newVals, ", ")),
		fmt.Sprintf("CREATE TRIGGER %s AFTER DELETE ON %s BEGIN INSERT INTO %s(%s, rowid, %s) VALUES ('delete', old.rowid, %s); END", Quote(fts+"_ad"), Quote(table), Quote(fts), Quote(fts), colList, strings.Join(oldVals, ", ")),
		fmt.Sprintf("CREATE TRIGGER %s AFTER UPDATE ON %s BEGIN INSERT INTO %s(%s, rowid, %s) VALUES ('delete', old.rowid, %s); INSERT INTO %s(rowid, %s) VALUES (new.rowid, %s); END", Quote(fts+"_au"), Quote(table), Quote(fts), Quote(fts), colList, strings.Join(oldVals, ", "), Quote(fts), colList, strings.Join(newVals, ", ")),
		fmt.Sprintf("INSERT INTO %s(%s) VALUES ('rebuild')", Quote(fts), Quote(fts)),
	}
	drop = []string{
		fmt.Sprintf("DROP TRIGGER IF EXISTS %s", Quote(fts+"_ai")),
		fmt.Sprintf("DROP TRIGGER IF EXISTS %s", Quote(fts+"_ad")),
		fmt.Sprintf("DROP TRIGGER IF EXISTS %s", Quote(fts+"_au")),
		fmt.Sprintf("DROP TABLE IF EXISTS %s", Quote(fts)),
	}
	return create, drop
}

func sqlString(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

// SelectColumns returns the fields a record select reads, in order. A row holds workspace_id first, then
// these fields: the reader checks the workspace of every row it is handed (a second guard behind the
// workspace predicate of every statement).
func SelectColumns(r *model.Resource) []*model.Field {
	return r.Fields
}

func (d Dialect) selectList(r *model.Resource) string {
	cols := SelectColumns(r)
	parts := make([]string, len(cols)+1)
	parts[0] = Quote("workspace_id")
	for i, f := range cols {
		parts[i+1] = Quote(f.Column)
	}
	return strings.Join(parts, ", ")
}

// Key identifies one record.
type Key struct {
	Workspace string
	ModelID   string // for model-scoped resources
	ID        string
	// Policy's record rule limits which records the key can reach; nil is unrestricted.
	Policy *access.Policy
}

func (d Dialect) whereKey(r *model.Resource, k Key, a *args) string {
	w := a.scope(Quote("workspace_id"), k.Workspace)
	if r.ModelScoped {
		w += " AND " + Quote("model_id") + " = " + a.add(k.ModelID)
	}
	w += " AND " + Quote("id") + " = " + a.add(k.ID)
	if rule := d.rule(k.Policy, k.Workspace, a, ""); rule != "" {
		w += " AND " + rule
	}
	return w
}

// rule renders p's record rule over the record columns qualified by alias ("" or "o."), or "" when
// every record is visible.
func (d Dialect) rule(p *access.Policy, workspace string, a *args, alias string) string {
	if p == nil || p.Rule == access.All {
		return ""
	}
	owner := alias + Quote("owner_id")
	own := owner + " = " + a.add(p.Member)
	if p.Rule == access.Owned || p.Department == "" {
		return own
	}
	return fmt.Sprintf("(%s OR %s IN (SELECT %s FROM %s WHERE %s AND %s = %s))", own, owner,
		Quote("id"), Quote("members"), a.scope(Quote("workspace_id"), workspace), Quote("department_id"), a.add(p.Department))
}

// Get reads one record.
func (d Dialect) Get(r *model.Resource, k Key) Stmt {
	a := &args{d: d}
	sql := fmt.Sprintf("SELECT %s FROM %s WHERE %s", d.selectList(r), Quote(r.Table), d.whereKey(r, k, a))
	return Stmt{SQL: sql, Args: a.vals}
}

// GetForUpdate reads one record and locks it until the transaction ends (PostgreSQL; SQLite has a
// single writer, so the transaction already excludes others).
func (d Dialect) GetForUpdate(r *model.Resource, k Key) Stmt {
	s := d.Get(r, k)
	if d.kind == Postgres {
		s.SQL += " FOR UPDATE"
	}
	return s
}

// Insert writes a new record. values holds canonical values keyed by column; managed columns are
// included by the caller (id, owner_id, created_at, updated_at, custom_fields).
func (d Dialect) Insert(r *model.Resource, k Key, values map[string]any) Stmt {
	return d.InsertMany(r, k.Workspace, k.ModelID, []map[string]any{values}, []string{k.ID})
}

// InsertMany writes several records of one workspace in one statement.
func (d Dialect) InsertMany(r *model.Resource, workspace, modelID string, rows []map[string]any, ids []string) Stmt {
	a := &args{d: d}
	cols := []string{"workspace_id", "id"}
	if r.ModelScoped {
		cols = append(cols, "model_id")
	}
	var fields []*model.Field
	for _, f := range r.Fields {
		if f.Key != "id" && f.Key != "archived" {
			fields = append(fields, f)
			cols = append(cols, f.Column)
		}
	}
	tuples := make([]string, len(rows))
	for i, row := range rows {
		vals := []string{a.add(workspace), a.add(ids[i])}
		if r.ModelScoped {
			vals = append(vals, a.add(modelID))
		}
		for _, f := range fields {
			vals = append(vals, a.add(row[f.Column]))
		}
		tuples[i] = "(" + strings.Join(vals, ", ") + ")"
	}
	sql := fmt.Sprintf("INSERT INTO %s (%s) VALUES %s", Quote(r.Table), strings.Join(quoteAll(cols), ", "), strings.Join(tuples, ", "))
	return Stmt{SQL: sql, Args: a.vals}
}

// Update sets the given columns of one record. values is keyed by column; updated_at must be included.
func (d Dialect) Update(r *model.Resource, k Key, values map[string]any) Stmt {
	a := &args{d: d}
	var sets []string
	for _, f := range r.Fields {
		if v, ok := values[f.Column]; ok {
			sets = append(sets, Quote(f.Column)+" = "+a.add(v))
		}
	}
	sql := fmt.Sprintf("UPDATE %s SET %s WHERE %s", Quote(r.Table), strings.Join(sets, ", "), d.whereKey(r, k, a))
	return Stmt{SQL: sql, Args: a.vals}
}

// ExistingIDs returns the statement selecting which of ids exist in r for workspace.
func (d Dialect) ExistingIDs(r *model.Resource, workspace string, ids []string) Stmt {
	a := &args{d: d}
	ph := make([]string, len(ids))
	w := a.scope(Quote("workspace_id"), workspace)
	for i, id := range ids {
		ph[i] = a.add(id)
	}
	sql := fmt.Sprintf("SELECT %s FROM %s WHERE %s AND %s IN (%s)", Quote("id"), Quote(r.Table), w, Quote("id"), strings.Join(ph, ", "))
	return Stmt{SQL: sql, Args: a.vals}
}

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
	if len(plan.Filters) > 0 {
		conds := make([]string, len(plan.Filters))
		for i, f := range plan.Filters {
			if f.Field.Custom {
				conds[i] = d.customFilter(f, workspace, a)
				continue
			}
			conds[i] = d.filter(f, a)
		}
		join := " AND "
		if plan.Or {
			join = " OR "
		}
		parts = append(parts, "("+strings.Join(conds, join)+")")
	}
	if len(plan.Search) > 0 {
		parts = append(parts, d.search(r, plan.Search, a))
	}
	return strings.Join(parts, " AND ")
}

func (d Dialect) search(r *model.Resource, terms []string, a *args) string {
	if d.kind == Postgres {
		q := make([]string, len(terms))
		for i, t := range terms {
			q[i] = t + ":*" // terms hold only letters and digits
		}
		return fmt.Sprintf("%s @@ to_tsquery('simple'::regconfig, %s)", Quote("_search"), a.add(strings.Join(q, " & ")))
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

// Bind returns a statement from constant SQL written with ? placeholders, numbering them for PostgreSQL.
// It is for fixed system queries only; resource SQL is built by the functions above.
func (d Dialect) Bind(sql string, args ...any) Stmt {
	conv := make([]any, len(args))
	for i, v := range args {
		conv[i] = d.Arg(v)
	}
	if d.kind != Postgres {
		return Stmt{SQL: sql, Args: conv}
	}
	var b strings.Builder
	n := 0
	for _, c := range sql {
		if c == '?' {
			n++
			b.WriteString("$" + strconv.Itoa(n))
			continue
		}
		b.WriteRune(c)
	}
	return Stmt{SQL: b.String(), Args: conv}
}

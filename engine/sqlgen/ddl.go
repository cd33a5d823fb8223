package sqlgen

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"

	"github.com/workspace-records/records/engine/fulltext"
	"github.com/workspace-records/records/engine/model"
)

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
	// Unique is the field whose key the index enforces (nil for a plain index); Duplicate finds, before
	// the index is built over existing rows, one value that is held by two active records.
	Unique    *model.Field
	Duplicate string
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
	for _, f := range r.Fields {
		if f.Unique && !f.Custom {
			t.Indexes = append(t.Indexes, d.uniqueIndex(r, f, scope))
		}
	}
	for _, f := range r.Search {
		t.Search = append(t.Search, f.Column)
	}
	return t
}

// UniqueIndexName names the index enforcing unique field f of r; a conflict naming it is that key's.
func UniqueIndexName(r *model.Resource, f *model.Field) string {
	return IndexName(r.Table, f.Column+"_unique")
}

// uniqueIndex is the partial unique index of a unique field: over (scope, column) of the active
// records holding a value, so archived records and nulls never collide. Both SQLite and PostgreSQL
// build partial unique indexes, and both check them at the statement, so concurrent writes of one
// value leave exactly one record.
func (d Dialect) uniqueIndex(r *model.Resource, f *model.Field, scope []string) Index {
	name := UniqueIndexName(r, f)
	col := Quote(f.Column)
	where := fmt.Sprintf("NOT %s AND %s IS NOT NULL", Quote("archived"), col)
	lead := strings.Join(quoteAll(scope), ", ")
	return Index{
		Name:      name,
		SQL:       fmt.Sprintf("CREATE UNIQUE INDEX IF NOT EXISTS %s ON %s (%s, %s) WHERE %s", Quote(name), Quote(r.Table), lead, col, where),
		Unique:    f,
		Duplicate: fmt.Sprintf("SELECT CAST(%s AS TEXT) FROM %s WHERE %s GROUP BY %s, %s HAVING COUNT(*) > 1 LIMIT 1", col, Quote(r.Table), where, lead, col),
	}
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
	// On SQLite a searched table is created with its SearchColumn: ALTER TABLE ADD COLUMN makes SQLite
	// parse the whole schema again, and adding it to each of the 44 new tables that way was a third of
	// a first migration's time. (SearchDDL's addColumn still serves tables made before, or that become
	// searched.)
	if d.kind == SQLite && len(t.Search) > 0 {
		fmt.Fprintf(&b, "  %s TEXT,\n", Quote(SearchColumn))
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

// SearchName is the name of the full-text table of a table (SQLite FTS5).
func SearchName(table string) string { return table + "_fts" }

// SearchColumn holds a searchable record's text for search: the tokens of its search fields by the one
// rule of engine/fulltext (SearchText), which both databases index as they are, without a parser of
// their own. It is written with every insert and with every update that changes a search field.
const SearchColumn = "_search_text"

// SearchVersion marks the layout of full-text search SearchDDL makes. It is stored with the searched
// columns (records_schema.search), so that a database searched in an older layout is rebuilt.
const SearchVersion = "v2:"

// searchVector is the PostgreSQL column holding the tsvector of a row's SearchColumn: its tokens as
// lexemes, unparsed (generated and stored, so that neither a scan nor a recheck recomputes it).
const searchVector = "_search"

// SearchText returns the SearchColumn value of a record of r whose column values value gives.
func SearchText(r *model.Resource, value func(f *model.Field) any) string {
	texts := make([]string, 0, len(r.Search))
	for _, f := range r.Search {
		switch v := value(f).(type) {
		case nil:
		case string:
			texts = append(texts, v)
		default:
			texts = append(texts, fmt.Sprint(v))
		}
	}
	return fulltext.Document(texts...)
}

// SearchDDL returns the statements of the full-text search of table: addColumn adds SearchColumn (run it
// when the column is missing, then fill the column), create builds what serves searches from the filled
// column, and drop removes what create built, in this layout or the one before it (PostgreSQL's `_search`
// column parsed from the searched columns; SQLite's FTS5 table over them). PostgreSQL: a stored generated
// tsvector column of the tokens, with a GIN index. SQLite: an external-content FTS5 table over the column,
// with the ascii tokenizer (the column holds tokens separated by spaces: it splits at the spaces and
// nowhere else), kept in step by triggers.
func (d Dialect) SearchDDL(table string) (addColumn string, create, drop []string) {
	fts := SearchName(table)
	col := Quote(SearchColumn)
	if d.kind == Postgres {
		idx := IndexName(table, "search")
		addColumn = fmt.Sprintf("ALTER TABLE %s ADD COLUMN IF NOT EXISTS %s text", Quote(table), col)
		create = []string{
			fmt.Sprintf("ALTER TABLE %s ADD COLUMN %s tsvector GENERATED ALWAYS AS (array_to_tsvector(string_to_array(coalesce(%s, ''), ' '))) STORED", Quote(table), Quote(searchVector), col),
			fmt.Sprintf("CREATE INDEX IF NOT EXISTS %s ON %s USING gin (%s)", Quote(idx), Quote(table), Quote(searchVector)),
		}
		drop = []string{
			fmt.Sprintf("DROP INDEX IF EXISTS %s", Quote(idx)),
			fmt.Sprintf("ALTER TABLE %s DROP COLUMN IF EXISTS %s", Quote(table), Quote(searchVector)),
		}
		return addColumn, create, drop
	}
	addColumn = fmt.Sprintf("ALTER TABLE %s ADD COLUMN %s TEXT", Quote(table), col)
	create = []string{
		fmt.Sprintf("CREATE VIRTUAL TABLE %s USING fts5(%s, content=%s, content_rowid='rowid', tokenize='ascii')", Quote(fts), col, sqlString(table)),
		fmt.Sprintf("CREATE TRIGGER %s AFTER INSERT ON %s BEGIN INSERT INTO %s(rowid, %s) VALUES (new.rowid, new.%s); END", Quote(fts+"_ai"), Quote(table), Quote(fts), col, col),
		fmt.Sprintf("CREATE TRIGGER %s AFTER DELETE ON %s BEGIN INSERT INTO %s(%s, rowid, %s) VALUES ('delete', old.rowid, old.%s); END", Quote(fts+"_ad"), Quote(table), Quote(fts), Quote(fts), col, col),
		fmt.Sprintf("CREATE TRIGGER %s AFTER UPDATE OF %s ON %s BEGIN INSERT INTO %s(%s, rowid, %s) VALUES ('delete', old.rowid, old.%s); INSERT INTO %s(rowid, %s) VALUES (new.rowid, new.%s); END",
			Quote(fts+"_au"), col, Quote(table), Quote(fts), Quote(fts), col, col, Quote(fts), col, col),
		fmt.Sprintf("INSERT INTO %s(%s) VALUES ('rebuild')", Quote(fts), Quote(fts)),
	}
	drop = []string{
		fmt.Sprintf("DROP TRIGGER IF EXISTS %s", Quote(fts+"_ai")),
		fmt.Sprintf("DROP TRIGGER IF EXISTS %s", Quote(fts+"_ad")),
		fmt.Sprintf("DROP TRIGGER IF EXISTS %s", Quote(fts+"_au")),
		fmt.Sprintf("DROP TABLE IF EXISTS %s", Quote(fts)),
	}
	return addColumn, create, drop
}

// DropSearchColumn returns the statement removing SearchColumn from table, once it searches nothing.
func (d Dialect) DropSearchColumn(table string) string {
	return fmt.Sprintf("ALTER TABLE %s DROP COLUMN %s", Quote(table), Quote(SearchColumn))
}

func sqlString(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

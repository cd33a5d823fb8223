package sqlgen

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"

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

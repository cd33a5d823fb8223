package sqlgen

import (
	"strconv"
	"strings"
)

// Rows are rows of one table in the shape of a multi-row INSERT: the same values whether one statement
// writes them (InsertRows: the API's writes) or the bulk path does (runtime/store.Copy: COPY on
// PostgreSQL, reused multi-row statements on SQLite). Values hold driver arguments (Dialect.Arg
// applied), one slice per row, in the order of Columns.
type Rows struct {
	Table   string
	Columns []string
	Values  [][]any
	// IgnoreConflicts skips a row whose key is already stored (ON CONFLICT DO NOTHING).
	IgnoreConflicts bool
}

// MaxParams keeps one multi-row statement under both databases' placeholder limits (PostgreSQL 65535,
// SQLite 32766).
const MaxParams = 30000

// RowsPerStatement is how many rows of rows one multi-row statement carries (at most MaxParams
// placeholders).
func (rows Rows) RowsPerStatement() int { return max(1, MaxParams/max(1, len(rows.Columns))) }

// InsertRows renders rows as one multi-row INSERT; it is the statement the bulk path's writes are
// equivalent to.
func (d Dialect) InsertRows(rows Rows) Stmt {
	args := make([]any, 0, len(rows.Values)*len(rows.Columns))
	for _, v := range rows.Values {
		args = append(args, v...)
	}
	return Stmt{SQL: d.InsertText(rows, len(rows.Values)), Args: args}
}

// InsertText is the text of the INSERT of n rows shaped as rows, with placeholders numbered from 1.
func (d Dialect) InsertText(rows Rows, n int) string { return d.insertText("INSERT INTO ", rows, n) }

// BulkInsertText is InsertText for a statement of the bulk path on SQLite, whose transaction ends at
// the first error: a constraint violation rolls back the whole transaction (INSERT OR ROLLBACK), so
// that SQLite keeps no statement journal to undo one statement alone. Rows that skip conflicts keep
// ON CONFLICT DO NOTHING.
func (d Dialect) BulkInsertText(rows Rows, n int) string {
	if d.kind != SQLite || rows.IgnoreConflicts {
		return d.InsertText(rows, n)
	}
	return d.insertText("INSERT OR ROLLBACK INTO ", rows, n)
}

func (d Dialect) insertText(verb string, rows Rows, n int) string {
	var b strings.Builder
	b.WriteString(verb)
	b.WriteString(Quote(rows.Table))
	b.WriteString(" (")
	b.WriteString(strings.Join(quoteAll(rows.Columns), ", "))
	b.WriteString(") VALUES ")
	p := 0
	for i := range n {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteByte('(')
		for j := range rows.Columns {
			if j > 0 {
				b.WriteString(", ")
			}
			p++
			if d.kind == Postgres {
				b.WriteString("$" + strconv.Itoa(p))
			} else {
				b.WriteByte('?')
			}
		}
		b.WriteByte(')')
	}
	if rows.IgnoreConflicts {
		b.WriteString(" ON CONFLICT DO NOTHING")
	}
	return b.String()
}

// StagedInsert returns the statements that move rows from stage, a table of rows' columns, into
// rows' table: PostgreSQL's bulk path COPYs into a temporary table (COPY FROM refuses a table under
// row-level security) and inserts from it, so that the policies check every row as they would an
// INSERT's. create makes stage (dropped at commit), insert moves its rows.
func StagedInsert(rows Rows, stage string) (create, insert string) {
	cols := strings.Join(quoteAll(rows.Columns), ", ")
	create = "CREATE TEMPORARY TABLE " + Quote(stage) + " ON COMMIT DROP AS SELECT " + cols + " FROM " + Quote(rows.Table) + " WITH NO DATA"
	insert = "INSERT INTO " + Quote(rows.Table) + " (" + cols + ") SELECT " + cols + " FROM pg_temp." + Quote(stage)
	if rows.IgnoreConflicts {
		insert += " ON CONFLICT DO NOTHING"
	}
	return create, insert
}

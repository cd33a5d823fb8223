package store

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/workspace-records/records/engine/sqlgen"
)

// Copy writes rows in the transaction q: the bulk path's writes (recordsctl records import, seed). The
// rows stored are those the statement Dialect.InsertRows(rows) would store, row-level security
// included; only the way they travel differs. On PostgreSQL they go by COPY into a temporary table,
// then one INSERT … SELECT moves them into rows.Table: COPY FROM refuses a table under row-level
// security, and the INSERT has the policies check every row as they would any INSERT's. On SQLite one
// prepared multi-row INSERT is reused for every full group of rows. It returns how many rows were
// written (fewer than given only when rows.IgnoreConflicts skipped some).
// Elsewhere (outside a transaction) it runs d's multi-row INSERTs.
func Copy(ctx context.Context, q Querier, d sqlgen.Dialect, rows sqlgen.Rows) (int64, error) {
	if len(rows.Values) == 0 {
		return 0, nil
	}
	switch t := q.(type) {
	case *pgTx:
		return t.copy(ctx, rows)
	case liteq:
		if tx, ok := t.q.(*sql.Tx); ok {
			return copySQLite(ctx, tx, rows)
		}
	}
	var n int64
	per := rows.RowsPerStatement()
	for start := 0; start < len(rows.Values); start += per {
		part := rows
		part.Values = rows.Values[start:min(start+per, len(rows.Values))]
		m, err := q.Exec(ctx, d.InsertRows(part))
		if err != nil {
			return n, err
		}
		n += m
	}
	return n, nil
}

// copy stages rows in a temporary table of the transaction (dropped once used, and at commit in any
// case), filled by COPY, and inserts them from it.
func (t *pgTx) copy(ctx context.Context, rows sqlgen.Rows) (int64, error) {
	// Named after the target table: pgx caches the column types of a COPY by its statement text.
	stage := "copy_" + rows.Table
	create, insert := sqlgen.StagedInsert(rows, stage)
	t.pending = append(t.pending, queued{s: sqlgen.Stmt{SQL: create}})
	// The stage's column types, sent with its creation: values are converted to what COPY's binary
	// format takes directly (a UUID's text would otherwise fail to encode, then be parsed, per value).
	var types []uint32
	err := t.Query(ctx, sqlgen.Stmt{SQL: stageTypes, Args: []any{"pg_temp." + sqlgen.Quote(stage)}}, func(row []any) error {
		oid, _ := row[0].(uint32)
		types = append(types, oid)
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("stage %s: %w", rows.Table, err)
	}
	if len(types) != len(rows.Columns) {
		return 0, fmt.Errorf("stage %s: %d columns, want %d", rows.Table, len(types), len(rows.Columns))
	}
	if _, err := t.conn.CopyFrom(ctx, pgx.Identifier{"pg_temp", stage}, rows.Columns, &copySource{rows: rows.Values, types: types}); err != nil {
		return 0, fmt.Errorf("copy %s: %w", rows.Table, mapPG(err))
	}
	n, err := t.Exec(ctx, sqlgen.Stmt{SQL: insert})
	if err != nil {
		return 0, err
	}
	// Queued: goes with the transaction's next statement or its COMMIT.
	t.pending = append(t.pending, queued{s: sqlgen.Stmt{SQL: "DROP TABLE pg_temp." + sqlgen.Quote(stage)}})
	return n, nil
}

const stageTypes = "SELECT atttypid FROM pg_attribute WHERE attrelid = $1::regclass AND attnum > 0 AND NOT attisdropped ORDER BY attnum"

// copySource hands pgx's CopyFrom the rows, a UUID column's text converted to its 16 bytes.
type copySource struct {
	rows  [][]any
	types []uint32
	i     int
	row   []any
	err   error
}

func (c *copySource) Next() bool {
	if c.err != nil || c.i >= len(c.rows) {
		return false
	}
	src := c.rows[c.i]
	c.i++
	if c.row == nil {
		c.row = make([]any, len(src))
	}
	for j, v := range src {
		if s, ok := v.(string); ok && c.types[j] == pgtype.UUIDOID {
			u, err := uuid.Parse(s)
			if err != nil {
				c.err = fmt.Errorf("column %d: %q is not a UUID", j+1, s)
				return false
			}
			v = [16]byte(u)
		}
		c.row[j] = v
	}
	return true
}

func (c *copySource) Values() ([]any, error) { return c.row, nil }

func (c *copySource) Err() error { return c.err }

// bulkCacheRows is the smallest load that gets SQLite's bulk page cache (copySQLite).
const bulkCacheRows = 5000

// sqliteCopyRows is how many rows one statement of copySQLite carries at most: large enough that the
// statement's overhead vanishes, small enough that its program stays small.
const sqliteCopyRows = 64

// copySQLite inserts rows with one prepared statement of sqliteCopyRows rows (fewer when the columns
// are many), reused for every full group, and one statement for the rest.
func copySQLite(ctx context.Context, tx *sql.Tx, rows sqlgen.Rows) (int64, error) {
	// A bulk load writes more pages than SQLite's default 2 MiB cache holds: spilled mid-transaction
	// to the WAL, then read back. A load of bulkCacheRows rows or more (recordsctl seed and import)
	// gives the writer (one connection) a 64 MiB cache from here on; recordsd's import jobs, whose
	// chunks are smaller, keep the default and its memory (the cache stayed allocated after the first
	// job: RSS 266 MB against the 250 MB the jobs are held to).
	if len(rows.Values) >= bulkCacheRows {
		if _, err := tx.ExecContext(ctx, "PRAGMA cache_size = -65536"); err != nil {
			return 0, fmt.Errorf("bulk cache: %w", err)
		}
	}
	d := sqlgen.New(sqlgen.SQLite)
	per := min(sqliteCopyRows, rows.RowsPerStatement())
	full := len(rows.Values) / per * per
	var n int64
	args := make([]any, 0, per*len(rows.Columns))
	if full > 0 {
		st, err := tx.PrepareContext(ctx, d.BulkInsertText(rows, per))
		if err != nil {
			return 0, fmt.Errorf("copy %s: %w", rows.Table, mapSQLite(err))
		}
		defer st.Close()
		for start := 0; start < full; start += per {
			args = args[:0]
			for _, v := range rows.Values[start : start+per] {
				args = append(args, v...)
			}
			res, err := st.ExecContext(ctx, args...)
			if err != nil {
				return n, fmt.Errorf("copy %s: %w", rows.Table, mapSQLite(err))
			}
			m, _ := res.RowsAffected()
			n += m
		}
	}
	if full < len(rows.Values) {
		part := rows
		part.Values = rows.Values[full:]
		m, err := liteq{tx}.Exec(ctx, sqlgen.Stmt{SQL: d.BulkInsertText(part, len(part.Values)), Args: d.InsertRows(part).Args})
		if err != nil {
			return n, fmt.Errorf("copy %s: %w", rows.Table, err)
		}
		n += m
	}
	return n, nil
}

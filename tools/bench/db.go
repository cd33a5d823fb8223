package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"net/url"
	"regexp"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"
	_ "modernc.org/sqlite"

	"github.com/workspace-records/records/engine/sqlgen"
)

// db is the hand-written data access the floor server and the raw-SQL phases share: plain SQL over
// pgx (PostgreSQL) or database/sql with the same pure-Go driver recordsd uses (SQLite), no engine code.
type db struct {
	pg   *pgxpool.Pool
	lite *sql.DB
	// columns lists each table's record columns (the full-text columns left out, as the API does).
	columns map[string][]string
}

// openDB connects to dsn (a recordsd --db value); conns bounds the pool (0: the driver's default, as
// recordsd has it).
func openDB(ctx context.Context, dsn string, conns int) (*db, error) {
	d := &db{columns: map[string][]string{}}
	if path, ok := strings.CutPrefix(dsn, "sqlite:"); ok {
		q := url.Values{}
		for _, p := range []string{"busy_timeout(10000)", "journal_mode(WAL)", "synchronous(NORMAL)"} {
			q.Add("_pragma", p)
		}
		lite, err := sql.Open("sqlite", "file:"+path+"?"+q.Encode())
		if err != nil {
			return nil, fmt.Errorf("open %s: %w", path, err)
		}
		lite.SetMaxOpenConns(max(conns, 4))
		lite.SetMaxIdleConns(max(conns, 4))
		d.lite = lite
	} else {
		cfg, err := pgxpool.ParseConfig(dsn)
		if err != nil {
			return nil, fmt.Errorf("parse %s: %w", dsn, err)
		}
		if conns > 0 {
			cfg.MaxConns = int32(conns)
		}
		if d.pg, err = pgxpool.NewWithConfig(ctx, cfg); err != nil {
			return nil, fmt.Errorf("connect: %w", err)
		}
	}
	for _, t := range []string{"rec_companies", "rec_deals"} {
		cols, err := d.tableColumns(ctx, t)
		if err != nil {
			d.close()
			return nil, err
		}
		d.columns[t] = cols
	}
	return d, nil
}

func (d *db) close() {
	if d.pg != nil {
		d.pg.Close()
	}
	if d.lite != nil {
		d.lite.Close()
	}
}

func (d *db) tableColumns(ctx context.Context, table string) ([]string, error) {
	q := "SELECT column_name FROM information_schema.columns WHERE table_name = $1 ORDER BY ordinal_position"
	if d.lite != nil {
		q = "SELECT name FROM pragma_table_info($1) ORDER BY cid"
	}
	var cols []string
	err := d.query(ctx, q, []any{table}, func(_ []string, vals []any) error {
		if name := fmt.Sprint(vals[0]); name != "_search" && name != "_search_text" {
			cols = append(cols, name)
		}
		return nil
	})
	if err == nil && len(cols) == 0 {
		err = fmt.Errorf("table %s not found", table)
	}
	if err != nil {
		return nil, fmt.Errorf("columns of %s: %w", table, err)
	}
	return cols, nil
}

var dollar = regexp.MustCompile(`\$(\d+)`)

// query runs q ($n placeholders) and calls fn with each row's column names and values.
func (d *db) query(ctx context.Context, q string, args []any, fn func(cols []string, vals []any) error) error {
	if d.lite != nil {
		rows, err := d.lite.QueryContext(ctx, dollar.ReplaceAllString(q, "?$1"), args...)
		if err != nil {
			return err
		}
		defer rows.Close()
		cols, err := rows.Columns()
		if err != nil {
			return err
		}
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		for rows.Next() {
			if err := rows.Scan(ptrs...); err != nil {
				return err
			}
			if err := fn(cols, vals); err != nil {
				return err
			}
		}
		return rows.Err()
	}
	rows, err := d.pg.Query(ctx, q, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	fds := rows.FieldDescriptions()
	cols := make([]string, len(fds))
	for i, f := range fds {
		cols[i] = f.Name
	}
	for rows.Next() {
		vals, err := rows.Values()
		if err != nil {
			return err
		}
		if err := fn(cols, vals); err != nil {
			return err
		}
	}
	return rows.Err()
}

// exec runs a statement that returns no rows.
func (d *db) exec(ctx context.Context, q string, args ...any) (int64, error) {
	if d.lite != nil {
		res, err := d.lite.ExecContext(ctx, dollar.ReplaceAllString(q, "?$1"), args...)
		if err != nil {
			return 0, err
		}
		return res.RowsAffected()
	}
	tag, err := d.pg.Exec(ctx, q, args...)
	return tag.RowsAffected(), err
}

// selectList is the column list of table, as the API reads it.
func (d *db) selectList(table string) string {
	cols := d.columns[table]
	quoted := make([]string, len(cols))
	for i, c := range cols {
		quoted[i] = sqlgen.Quote(c)
	}
	return strings.Join(quoted, ", ")
}

// The statements the floor server and the raw phases run: the same shapes as the engine's (workspace
// first, archived rows left out, newest first with the id as tie-breaker, one extra row for has_more).
func (d *db) getSQL(table string) string {
	return "SELECT " + d.selectList(table) + ` FROM "` + table + `" WHERE "workspace_id" = $1 AND "id" = $2`
}

func (d *db) pageSQL(table string, after bool) string {
	where := `"workspace_id" = $1 AND "archived" = $2`
	if after {
		where += ` AND ("created_at", "id") < ($4, $5)`
	}
	return "SELECT " + d.selectList(table) + ` FROM "` + table + `" WHERE ` + where + ` ORDER BY "created_at" DESC, "id" DESC LIMIT $3`
}

func (d *db) filterSQL(table, column string) string {
	return "SELECT " + d.selectList(table) + ` FROM "` + table + `" WHERE "workspace_id" = $1 AND "archived" = $2 AND ` +
		sqlgen.Quote(column) + ` = $4 ORDER BY "created_at" DESC, "id" DESC LIMIT $3`
}

func (d *db) customSQL(table string) string {
	return "SELECT " + d.selectList(table) + ` FROM "` + table + `" WHERE "workspace_id" = $1 AND "archived" = $2 AND "id" IN ` +
		`(SELECT "record_id" FROM "custom_values" WHERE "workspace_id" = $1 AND "field_id" = $4 AND "t" = $5) ORDER BY "created_at" DESC, "id" DESC LIMIT $3`
}

// archived is the stored false of the archived column.
func (d *db) archived() any {
	if d.lite != nil {
		return 0
	}
	return false
}

// now is a timestamp as the engine stores it.
func (d *db) now() any {
	t := time.Now().UTC().Truncate(time.Microsecond)
	if d.lite != nil {
		return t.Format(sqlgen.SQLiteTime)
	}
	return t
}

// insertSQL inserts one row of table with the given columns (a new id and timestamps added) and
// returns it.
func (d *db) insertSQL(table string, cols []string) string {
	all := append([]string{"workspace_id", "id", "created_at", "updated_at"}, cols...)
	ph := make([]string, len(all))
	for i := range all {
		ph[i] = fmt.Sprintf("$%d", i+1)
		all[i] = sqlgen.Quote(all[i])
	}
	return `INSERT INTO "` + table + `" (` + strings.Join(all, ", ") + ") VALUES (" + strings.Join(ph, ", ") + ") RETURNING " + d.selectList(table)
}

// insertManySQL inserts n rows of table with the given columns (each with a new id and timestamps) in one
// statement and returns them.
func (d *db) insertManySQL(table string, cols []string, n int) string {
	all := append([]string{"workspace_id", "id", "created_at", "updated_at"}, cols...)
	tuples := make([]string, n)
	k := 0
	for r := range tuples {
		ph := make([]string, len(all))
		for i := range all {
			k++
			ph[i] = fmt.Sprintf("$%d", k)
		}
		tuples[r] = "(" + strings.Join(ph, ", ") + ")"
	}
	quoted := make([]string, len(all))
	for i, c := range all {
		quoted[i] = sqlgen.Quote(c)
	}
	return `INSERT INTO "` + table + `" (` + strings.Join(quoted, ", ") + ") VALUES " + strings.Join(tuples, ", ") + " RETURNING " + d.selectList(table)
}

// updateSQL sets cols (and updated_at) of one row and returns it.
func (d *db) updateSQL(table string, cols []string) string {
	sets := []string{`"updated_at" = $3`}
	for i, c := range cols {
		sets = append(sets, fmt.Sprintf("%s = $%d", sqlgen.Quote(c), i+4))
	}
	return `UPDATE "` + table + `" SET ` + strings.Join(sets, ", ") + ` WHERE "workspace_id" = $1 AND "id" = $2 RETURNING ` + d.selectList(table)
}

// jsonValue makes a driver value JSON-friendly the way a hand-written server would: UUIDs as text,
// numerics as numbers, JSON columns inline.
func jsonValue(col string, v any) any {
	switch x := v.(type) {
	case [16]byte:
		return uuid.UUID(x).String()
	case pgtype.Numeric:
		f, _ := x.Float64Value()
		return f.Float64
	case []byte:
		return json.RawMessage(x)
	case string:
		if col == "custom_fields" {
			return json.RawMessage(x)
		}
	}
	return v
}

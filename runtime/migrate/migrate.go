// Package migrate brings a database in line with the definitions: it creates the system tables, creates
// or extends one table per resource, its indexes and its full-text search. Additive changes are applied
// automatically; destructive ones (dropping a column whose field left the definitions, changing a
// column's type) only when asked. Migrations run under a database-wide lock, so servers that start at
// the same time apply them one after another.
package migrate

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/workspace-records/records/engine/model"
	"github.com/workspace-records/records/engine/sqlgen"
	"github.com/workspace-records/records/runtime/store"
)

// Options control a migration.
type Options struct {
	// AllowDestructive drops columns that no field declares any more. Without it such columns are
	// reported in Result.Pending and left alone.
	AllowDestructive bool
	// DryRun runs the migration and rolls it back: Result says what it would apply (a plan).
	DryRun bool
	// Then runs in the migration's transaction once it has succeeded (not on a dry run): what must
	// change with the schema, such as the definitions version served (runtime/defset).
	Then func(q store.Querier) error
}

// errDryRun rolls back a dry run's transaction.
var errDryRun = errors.New("dry run")

// Result says what a migration did.
type Result struct {
	Applied []string // one line per change applied
	Pending []string // destructive changes left undone
}

// tenantSystemTables are the system tables that hold workspaces' data besides the record tables: they
// get the same row-level security.
var tenantSystemTables = []string{"associations", "audit_log", "custom_values", "events", "event_queue", "event_numbers", "event_sequences", "key_usage_daily", "job_data", "job_rows"}

// TenantSystemTables returns the system tables under row-level security (TestRowLevelSecurity checks them).
func TenantSystemTables() []string { return slices.Clone(tenantSystemTables) }

// Run migrates st to cat and records cat's Fingerprint.
func Run(ctx context.Context, st store.Store, cat *model.Catalog, opts Options) (*Result, error) {
	res := &Result{Applied: []string{}}
	d := st.Dialect()
	err := st.Lock(ctx, func(q store.Querier) error {
		for _, sys := range systemTables(d) {
			exists, err := tableExists(ctx, q, d, sys.name)
			if err != nil {
				return err
			}
			if exists {
				continue
			}
			for _, s := range sys.ddl {
				if _, err := q.Exec(ctx, sqlgen.Stmt{SQL: s}); err != nil {
					return fmt.Errorf("create %s: %w", sys.name, err)
				}
			}
			res.Applied = append(res.Applied, "create table "+sys.name)
		}
		for _, add := range systemAdditions(d) {
			if err := migrateSystemAddition(ctx, q, d, add, res); err != nil {
				return fmt.Errorf("migrate %s: %w", add.table, err)
			}
		}
		for _, table := range tenantSystemTables {
			if err := migrateRowSecurity(ctx, q, d, table, res); err != nil {
				return fmt.Errorf("migrate %s: %w", table, err)
			}
		}
		for _, r := range cat.Resources {
			if err := migrateResource(ctx, q, d, r, opts, res); err != nil {
				return fmt.Errorf("migrate %s: %w", r.Name, err)
			}
		}
		// What the schema leaves pending, recorded with the fingerprint (Unchanged reports it again);
		// the leakproof check is about the database, not the schema, and is made anew each time.
		schemaPending := slices.Clone(res.Pending)
		if err := checkLeakproof(ctx, q, d, res); err != nil {
			return err
		}
		if opts.DryRun {
			return errDryRun
		}
		if err := recordFingerprint(ctx, q, d, cat, schemaPending); err != nil {
			return err
		}
		if opts.Then != nil {
			return opts.Then(q)
		}
		return nil
	})
	if opts.DryRun && errors.Is(err, errDryRun) {
		return res, nil
	}
	if err != nil {
		return nil, err
	}
	return res, nil
}

func migrateResource(ctx context.Context, q store.Querier, d sqlgen.Dialect, r *model.Resource, opts Options, res *Result) error {
	t := d.TableOf(r)
	exists, err := tableExists(ctx, q, d, t.Name)
	if err != nil {
		return err
	}
	if !exists {
		if _, err := q.Exec(ctx, sqlgen.Stmt{SQL: d.CreateTable(t, r)}); err != nil {
			return fmt.Errorf("create table: %w", err)
		}
		res.Applied = append(res.Applied, "create table "+t.Name)
	} else {
		have, err := columns(ctx, q, d, t.Name)
		if err != nil {
			return err
		}
		want := map[string]bool{}
		for _, c := range t.Columns {
			want[c.Name] = true
			typ, ok := have[c.Name]
			switch {
			case !ok:
				if c.NotNull && c.Default == "" {
					res.Pending = append(res.Pending, fmt.Sprintf("add NOT NULL column %s.%s without default", t.Name, c.Name))
					continue
				}
				if _, err := q.Exec(ctx, sqlgen.Stmt{SQL: d.AddColumn(t.Name, c)}); err != nil {
					return fmt.Errorf("add column %s: %w", c.Name, err)
				}
				res.Applied = append(res.Applied, fmt.Sprintf("add column %s.%s %s", t.Name, c.Name, c.Type))
			case !sameType(typ, c.Type):
				res.Pending = append(res.Pending, fmt.Sprintf("change type of %s.%s from %s to %s (destructive; migrate the data by hand)", t.Name, c.Name, typ, c.Type))
			}
		}
		var extra []string
		for name := range have {
			if !want[name] && name != "_search" && name != sqlgen.SearchColumn {
				extra = append(extra, name)
			}
		}
		sort.Strings(extra)
		for _, name := range extra {
			if !opts.AllowDestructive {
				res.Pending = append(res.Pending, fmt.Sprintf("drop column %s.%s (no field declares it; run migrate --allow-destructive)", t.Name, name))
				continue
			}
			if err := dropIndexesOn(ctx, q, d, t.Name, name); err != nil {
				return err
			}
			if _, err := q.Exec(ctx, sqlgen.Stmt{SQL: d.DropColumn(t.Name, name)}); err != nil {
				return fmt.Errorf("drop column %s: %w", name, err)
			}
			res.Applied = append(res.Applied, fmt.Sprintf("drop column %s.%s", t.Name, name))
		}
	}
	idx, err := indexes(ctx, q, d, t.Name)
	if err != nil {
		return err
	}
	declared := map[string]bool{}
	for _, ix := range d.Indexes(r) {
		declared[ix.Name] = true
		if idx[ix.Name] {
			continue
		}
		if ix.Unique != nil {
			if err := checkDuplicates(ctx, q, d, r, ix); err != nil {
				return err
			}
		}
		if _, err := q.Exec(ctx, sqlgen.Stmt{SQL: ix.SQL}); err != nil {
			return fmt.Errorf("create index %s: %w", ix.Name, err)
		}
		res.Applied = append(res.Applied, "create index "+ix.Name)
	}
	if err := dropUndeclaredUnique(ctx, q, t.Name, idx, declared, res); err != nil {
		return err
	}
	recomputed, err := migrateFormulas(ctx, q, d, r, res)
	if err != nil {
		return err
	}
	// A searched formula field that was recomputed changed the records' search text.
	stale := false
	for _, f := range recomputed {
		stale = stale || slices.Contains(r.Search, f)
	}
	if err := migrateSearch(ctx, q, d, r, t, stale, res); err != nil {
		return err
	}
	return migrateRowSecurity(ctx, q, d, t.Name, res)
}

// migrateSystemAddition applies add unless the table already has it.
func migrateSystemAddition(ctx context.Context, q store.Querier, d sqlgen.Dialect, add systemAddition, res *Result) error {
	if add.storage != "" {
		var storage string
		if _, err := store.QueryOne(ctx, q, d.Bind("SELECT attstorage::text FROM pg_catalog.pg_attribute WHERE attrelid = to_regclass(?) AND attname = ?", add.table, add.storage), func(row []any) error {
			storage, _ = row[0].(string)
			return nil
		}); err != nil {
			return fmt.Errorf("inspect storage of %s.%s: %w", add.table, add.storage, err)
		}
		if storage == "e" {
			return nil
		}
		if _, err := q.Exec(ctx, sqlgen.Stmt{SQL: add.ddl}); err != nil {
			return fmt.Errorf("set storage of %s.%s: %w", add.table, add.storage, err)
		}
		res.Applied = append(res.Applied, fmt.Sprintf("set storage %s.%s external", add.table, add.storage))
		return nil
	}
	if add.column != "" {
		have, err := columns(ctx, q, d, add.table)
		if err != nil {
			return err
		}
		if _, ok := have[add.column]; ok {
			return nil
		}
		if _, err := q.Exec(ctx, sqlgen.Stmt{SQL: "ALTER TABLE " + sqlgen.Quote(add.table) + " ADD COLUMN " + sqlgen.Quote(add.column) + " " + add.typ}); err != nil {
			return fmt.Errorf("add column %s: %w", add.column, err)
		}
		res.Applied = append(res.Applied, fmt.Sprintf("add column %s.%s %s", add.table, add.column, add.typ))
		return nil
	}
	have, err := indexes(ctx, q, d, add.table)
	if err != nil {
		return err
	}
	if have[add.index] {
		return nil
	}
	if _, err := q.Exec(ctx, sqlgen.Stmt{SQL: add.ddl}); err != nil {
		return fmt.Errorf("create index %s: %w", add.index, err)
	}
	res.Applied = append(res.Applied, "create index "+add.index)
	return nil
}

// migrateRowSecurity installs the workspace isolation policy of a record table (PostgreSQL).
func migrateRowSecurity(ctx context.Context, q store.Querier, d sqlgen.Dialect, table string, res *Result) error {
	stmts := d.RowSecurity(table)
	if len(stmts) == 0 {
		return nil
	}
	found, err := store.QueryOne(ctx, q, d.Bind("SELECT 1 FROM pg_catalog.pg_policies WHERE schemaname = current_schema() AND tablename = ? AND policyname = ?", table, sqlgen.PolicyName), func([]any) error { return nil })
	if err != nil {
		return fmt.Errorf("inspect row security: %w", err)
	}
	if found {
		return nil
	}
	for _, s := range stmts {
		if _, err := q.Exec(ctx, sqlgen.Stmt{SQL: s}); err != nil {
			return fmt.Errorf("row security: %w", err)
		}
	}
	res.Applied = append(res.Applied, "enable row level security on "+table)
	return nil
}

// migrateSearch (re)creates full-text search when the searched columns or the layout of search
// (sqlgen.SearchVersion) changed since the last run: it drops what served the old search, adds the search
// text column when missing, fills it for every record, then builds the index over it. With stale, an
// unchanged search only has its text filled again.
func migrateSearch(ctx context.Context, q store.Querier, d sqlgen.Dialect, r *model.Resource, t sqlgen.Table, stale bool, res *Result) error {
	want := ""
	if len(t.Search) > 0 {
		want = sqlgen.SearchVersion + strings.Join(t.Search, ",")
	}
	var have string
	found, err := store.QueryOne(ctx, q, d.Bind("SELECT search FROM records_schema WHERE resource = ?", r.Name), func(row []any) error {
		have = store.Text(row[0])
		return nil
	})
	if err != nil {
		return fmt.Errorf("read search state: %w", err)
	}
	if found && have == want {
		if !stale || want == "" {
			return nil
		}
		n, err := fillSearch(ctx, q, d, r)
		if err != nil {
			return err
		}
		res.Applied = append(res.Applied, fmt.Sprintf("refill search text of %s for %d records", t.Name, n))
		return nil
	}
	addColumn, create, drop := d.SearchDDL(t.Name)
	if found && have != "" {
		for _, s := range drop {
			if _, err := q.Exec(ctx, sqlgen.Stmt{SQL: s}); err != nil {
				return fmt.Errorf("drop search: %w", err)
			}
		}
	}
	cols, err := columns(ctx, q, d, t.Name)
	if err != nil {
		return err
	}
	_, hasColumn := cols[sqlgen.SearchColumn]
	switch {
	case want != "":
		if !hasColumn {
			if _, err := q.Exec(ctx, sqlgen.Stmt{SQL: addColumn}); err != nil {
				return fmt.Errorf("add search column: %w", err)
			}
		}
		n, err := fillSearch(ctx, q, d, r)
		if err != nil {
			return err
		}
		for _, s := range create {
			if _, err := q.Exec(ctx, sqlgen.Stmt{SQL: s}); err != nil {
				return fmt.Errorf("create search: %w", err)
			}
		}
		res.Applied = append(res.Applied, fmt.Sprintf("create search on %s (%s) for %d records", t.Name, strings.Join(t.Search, ","), n))
	case hasColumn:
		if _, err := q.Exec(ctx, sqlgen.Stmt{SQL: d.DropSearchColumn(t.Name)}); err != nil {
			return fmt.Errorf("drop search column: %w", err)
		}
		res.Applied = append(res.Applied, "drop search on "+t.Name)
	}
	upsert := "INSERT INTO records_schema (resource, search) VALUES (?, ?) ON CONFLICT (resource) DO UPDATE SET search = excluded.search"
	if _, err := q.Exec(ctx, d.Bind(upsert, r.Name, want)); err != nil {
		return fmt.Errorf("record search state: %w", err)
	}
	return nil
}

// fillSearch writes the search text of every record of r.
func fillSearch(ctx context.Context, q store.Querier, d sqlgen.Dialect, r *model.Resource) (int, error) {
	return rewrite(ctx, q, d, r, func(f *model.Field) bool { return slices.Contains(r.Search, f) }, func(values map[string]any) ([]string, []any) {
		return []string{sqlgen.SearchColumn}, []any{sqlgen.SearchText(r, func(f *model.Field) any { return values[f.Key] })}
	})
}

func sameType(have, want string) bool {
	norm := func(s string) string {
		s = strings.ToLower(s)
		switch s {
		case "timestamp with time zone":
			return "timestamptz"
		}
		return s
	}
	return norm(have) == norm(want)
}

func tableExists(ctx context.Context, q store.Querier, d sqlgen.Dialect, name string) (bool, error) {
	s := sqlgen.Stmt{SQL: "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", Args: []any{name}}
	if d.Kind() == sqlgen.Postgres {
		s = sqlgen.Stmt{SQL: "SELECT 1 FROM pg_catalog.pg_tables WHERE schemaname = current_schema() AND tablename = $1", Args: []any{name}}
	}
	found, err := store.QueryOne(ctx, q, s, func([]any) error { return nil })
	if err != nil {
		return false, fmt.Errorf("inspect table %s: %w", name, err)
	}
	return found, nil
}

func columns(ctx context.Context, q store.Querier, d sqlgen.Dialect, table string) (map[string]string, error) {
	out := map[string]string{}
	s := sqlgen.Stmt{SQL: "SELECT name, type FROM pragma_table_info(?)", Args: []any{table}}
	if d.Kind() == sqlgen.Postgres {
		s = sqlgen.Stmt{SQL: "SELECT column_name, data_type FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = $1", Args: []any{table}}
	}
	err := q.Query(ctx, s, func(row []any) error {
		out[store.Text(row[0])] = store.Text(row[1])
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("inspect columns of %s: %w", table, err)
	}
	return out, nil
}

func indexes(ctx context.Context, q store.Querier, d sqlgen.Dialect, table string) (map[string]bool, error) {
	out := map[string]bool{}
	s := sqlgen.Stmt{SQL: "SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = ?", Args: []any{table}}
	if d.Kind() == sqlgen.Postgres {
		s = sqlgen.Stmt{SQL: "SELECT indexname FROM pg_catalog.pg_indexes WHERE schemaname = current_schema() AND tablename = $1", Args: []any{table}}
	}
	err := q.Query(ctx, s, func(row []any) error {
		out[store.Text(row[0])] = true
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("inspect indexes of %s: %w", table, err)
	}
	return out, nil
}

// dropIndexesOn drops the indexes that cover column (SQLite refuses to drop an indexed column).
func dropIndexesOn(ctx context.Context, q store.Querier, d sqlgen.Dialect, table, column string) error {
	if d.Kind() == sqlgen.Postgres {
		return nil // PostgreSQL drops dependent indexes with the column
	}
	var names []string
	s := sqlgen.Stmt{SQL: "SELECT il.name FROM pragma_index_list(?) il JOIN pragma_index_info(il.name) ii WHERE ii.name = ?", Args: []any{table, column}}
	if err := q.Query(ctx, s, func(row []any) error { names = append(names, store.Text(row[0])); return nil }); err != nil {
		return fmt.Errorf("inspect indexes on %s.%s: %w", table, column, err)
	}
	for _, n := range names {
		if _, err := q.Exec(ctx, sqlgen.Stmt{SQL: "DROP INDEX IF EXISTS " + sqlgen.Quote(n)}); err != nil {
			return fmt.Errorf("drop index %s: %w", n, err)
		}
	}
	return nil
}

// checkDuplicates refuses to build unique index ix over rows in which two active records of a
// workspace share a value: the migration fails naming the resource, the field and one such value, and
// its transaction leaves nothing applied. On PostgreSQL, row-level security shows the transaction one
// workspace at a time, so each workspace is looked at in turn.
func checkDuplicates(ctx context.Context, q store.Querier, d sqlgen.Dialect, r *model.Resource, ix sqlgen.Index) error {
	scopes := []string{""}
	if d.Kind() == sqlgen.Postgres {
		scopes = nil
		if err := q.Query(ctx, sqlgen.Stmt{SQL: "SELECT id FROM workspaces ORDER BY id"}, func(row []any) error {
			scopes = append(scopes, store.UUIDText(row[0]))
			return nil
		}); err != nil {
			return fmt.Errorf("list workspaces: %w", err)
		}
	}
	err := findDuplicate(ctx, q, d, r, ix, scopes)
	if len(scopes) > 0 && scopes[0] != "" {
		if _, rerr := q.Exec(ctx, sqlgen.Stmt{SQL: "SELECT set_config('records.workspace_id', '', true)"}); rerr != nil && err == nil {
			err = fmt.Errorf("leave the workspace scope: %w", rerr)
		}
	}
	return err
}

// findDuplicate runs ix's duplicate query in each of scopes (workspace ids; "" runs it unscoped).
func findDuplicate(ctx context.Context, q store.Querier, d sqlgen.Dialect, r *model.Resource, ix sqlgen.Index, scopes []string) error {
	for _, ws := range scopes {
		if ws != "" {
			if _, err := q.Exec(ctx, d.Bind("SELECT set_config('records.workspace_id', ?, true)", ws)); err != nil {
				return fmt.Errorf("scope to workspace %s: %w", ws, err)
			}
		}
		var dup *string
		err := q.Query(ctx, sqlgen.Stmt{SQL: ix.Duplicate}, func(row []any) error {
			v := store.Text(row[0])
			dup = &v
			return nil
		})
		if err != nil {
			return fmt.Errorf("look for duplicate %s.%s: %w", r.Name, ix.Unique.Key, err)
		}
		if dup != nil {
			return fmt.Errorf("cannot make %s.%s unique: active records of one workspace share the value %q; archive or change the duplicates, then migrate again", r.Name, ix.Unique.Key, *dup)
		}
	}
	return nil
}

// dropUndeclaredUnique drops the unique indexes of table whose field is no longer declared unique:
// dropping an index loses no data, and a key left enforced would refuse writes the definitions allow.
func dropUndeclaredUnique(ctx context.Context, q store.Querier, table string, have, declared map[string]bool, res *Result) error {
	var stale []string
	for name := range have {
		if strings.HasPrefix(name, table+"_") && strings.HasSuffix(name, "_unique_idx") && !declared[name] {
			stale = append(stale, name)
		}
	}
	sort.Strings(stale)
	for _, name := range stale {
		if _, err := q.Exec(ctx, sqlgen.Stmt{SQL: "DROP INDEX IF EXISTS " + sqlgen.Quote(name)}); err != nil {
			return fmt.Errorf("drop index %s: %w", name, err)
		}
		res.Applied = append(res.Applied, "drop index "+name)
	}
	return nil
}

// TableExists reports whether the database has the table name (a system table: whether a migration
// has created it yet).
func TableExists(ctx context.Context, st store.Store, name string) (bool, error) {
	return tableExists(ctx, st, st.Dialect(), name)
}

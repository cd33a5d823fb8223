package migrate

import (
	"context"
	"fmt"
	"strings"

	"github.com/workspace-records/records/engine/sqlgen"
	"github.com/workspace-records/records/runtime/store"
)

// NumericComparisons are PostgreSQL's numeric comparison functions. Under row-level security the
// planner uses a condition as an index condition only when its operator is leakproof, and these are
// not marked so (although they cannot fail or reveal anything), so a filter or a cursor position on a
// decimal column, or on the number of a custom value, cannot use an index. Marking them leakproof
// needs a superuser, once per database: LeakproofSQL.
var NumericComparisons = []string{"numeric_eq", "numeric_ne", "numeric_lt", "numeric_le", "numeric_gt", "numeric_ge"}

// LeakproofSQL is what a superuser runs, once per database, so that decimal filters use indexes.
func LeakproofSQL() string {
	stmts := make([]string, len(NumericComparisons))
	for i, f := range NumericComparisons {
		stmts[i] = fmt.Sprintf("ALTER FUNCTION pg_catalog.%s(numeric, numeric) LEAKPROOF;", f)
	}
	return strings.Join(stmts, " ")
}

// checkLeakproof reports, as a pending change, numeric comparisons that are not leakproof.
func checkLeakproof(ctx context.Context, q store.Querier, d sqlgen.Dialect, res *Result) error {
	if d.Kind() != sqlgen.Postgres {
		return nil
	}
	var missing []string
	err := q.Query(ctx, sqlgen.Stmt{SQL: "SELECT proname FROM pg_catalog.pg_proc WHERE proname = ANY($1) AND pronamespace = 'pg_catalog'::regnamespace AND NOT proleakproof ORDER BY proname",
		Args: []any{NumericComparisons}}, func(row []any) error {
		missing = append(missing, store.Text(row[0]))
		return nil
	})
	if err != nil {
		return fmt.Errorf("inspect numeric comparisons: %w", err)
	}
	if len(missing) > 0 {
		res.Pending = append(res.Pending, fmt.Sprintf("decimal filters cannot use indexes under row-level security (%s not leakproof): as a superuser, once, in this database run: %s",
			strings.Join(missing, ", "), LeakproofSQL()))
	}
	return nil
}

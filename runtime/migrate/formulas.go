package migrate

import (
	"context"
	"fmt"
	"strings"

	"github.com/workspace-records/records/engine/model"
	"github.com/workspace-records/records/engine/sqlgen"
	"github.com/workspace-records/records/runtime/store"
)

// recomputeBatch is how many records one read of a recomputation takes.
const recomputeBatch = 1000

// migrateFormulas recomputes the stored values of r's formula fields whose expression is new or changed
// since the last migration, in every workspace, and records the expressions it computed. It returns the
// fields it recomputed.
func migrateFormulas(ctx context.Context, q store.Querier, d sqlgen.Dialect, r *model.Resource, res *Result) ([]*model.Field, error) {
	if len(r.Computed) == 0 {
		return nil, nil
	}
	have := map[string]string{}
	err := q.Query(ctx, d.Bind("SELECT field, expr FROM formula_state WHERE resource = ?", r.Name), func(row []any) error {
		have[store.Text(row[0])] = store.Text(row[1])
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read formula state: %w", err)
	}
	var stale []*model.Field
	for _, f := range r.Computed {
		if have[f.Key] != f.Formula.Expr {
			stale = append(stale, f)
		}
	}
	if len(stale) == 0 {
		return nil, nil
	}
	inputs := map[string]*model.Field{}
	for _, f := range stale {
		for _, in := range f.Formula.Inputs {
			inputs[in.Key] = in
		}
	}
	n, err := rewrite(ctx, q, d, r, func(f *model.Field) bool { return inputs[f.Key] != nil }, func(values map[string]any) ([]string, []any) {
		cols, vals := make([]string, len(stale)), make([]any, len(stale))
		for i, f := range stale {
			cols[i], vals[i] = f.Column, f.Formula.Eval(values)
		}
		return cols, vals
	})
	if err != nil {
		return nil, err
	}
	keys := make([]string, len(stale))
	for i, f := range stale {
		keys[i] = f.Key
		upsert := "INSERT INTO formula_state (resource, field, expr) VALUES (?, ?, ?) ON CONFLICT (resource, field) DO UPDATE SET expr = excluded.expr"
		if _, err := q.Exec(ctx, d.Bind(upsert, r.Name, f.Key, f.Formula.Expr)); err != nil {
			return nil, fmt.Errorf("record formula state: %w", err)
		}
	}
	res.Applied = append(res.Applied, fmt.Sprintf("compute %s.{%s} for %d records", r.Table, strings.Join(keys, ","), n))
	return stale, nil
}

// rewrite sets columns of every record of r from the values of the declared fields read picks: set
// returns the columns and their values for one record's values (canonical, by field key). It goes
// workspace by workspace (row-level security shows a transaction one workspace at a time), in keyset
// batches by id, and returns how many records it rewrote.
func rewrite(ctx context.Context, q store.Querier, d sqlgen.Dialect, r *model.Resource, read func(*model.Field) bool, set func(values map[string]any) ([]string, []any)) (int, error) {
	cols := []string{sqlgen.Quote("id")}
	var order []*model.Field
	for _, f := range r.Declared() {
		if read(f) {
			cols = append(cols, sqlgen.Quote(f.Column))
			order = append(order, f)
		}
	}
	var workspaces []string
	if err := q.Query(ctx, sqlgen.Stmt{SQL: "SELECT id FROM workspaces ORDER BY id"}, func(row []any) error {
		workspaces = append(workspaces, store.UUIDText(row[0]))
		return nil
	}); err != nil {
		return 0, fmt.Errorf("list workspaces: %w", err)
	}
	total := 0
	for _, ws := range workspaces {
		if d.Kind() == sqlgen.Postgres {
			if _, err := q.Exec(ctx, d.Bind("SELECT set_config('records.workspace_id', ?, true)", ws)); err != nil {
				return 0, fmt.Errorf("scope to workspace %s: %w", ws, err)
			}
		}
		after := ""
		for {
			sql := fmt.Sprintf("SELECT %s FROM %s WHERE workspace_id = ?", strings.Join(cols, ", "), sqlgen.Quote(r.Table))
			args := []any{ws}
			if after != "" {
				sql += " AND id > ?"
				args = append(args, after)
			}
			sql += fmt.Sprintf(" ORDER BY id LIMIT %d", recomputeBatch)
			type update struct {
				id     string
				values map[string]any
			}
			var batch []update
			err := q.Query(ctx, d.Bind(sql, args...), func(row []any) error {
				u := update{id: store.UUIDText(row[0]), values: map[string]any{}}
				for i, in := range order {
					v, err := store.FieldValue(in, row[i+1])
					if err != nil {
						return fmt.Errorf("%s.%s: %w", r.Name, in.Key, err)
					}
					if v != nil {
						if v, err = model.Canonical(in, v); err != nil {
							return fmt.Errorf("%s.%s: %w", r.Name, in.Key, err)
						}
					}
					u.values[in.Key] = v
				}
				batch = append(batch, u)
				return nil
			})
			if err != nil {
				return 0, fmt.Errorf("read %s: %w", r.Name, err)
			}
			for _, u := range batch {
				names, args := set(u.values)
				sets := make([]string, len(names))
				for i, c := range names {
					sets[i] = sqlgen.Quote(c) + " = ?"
				}
				args = append(args, ws, u.id)
				stmt := d.Bind(fmt.Sprintf("UPDATE %s SET %s WHERE workspace_id = ? AND id = ?", sqlgen.Quote(r.Table), strings.Join(sets, ", ")), args...)
				if _, err := q.Exec(ctx, stmt); err != nil {
					return 0, fmt.Errorf("update %s %s: %w", r.Name, u.id, err)
				}
			}
			total += len(batch)
			if len(batch) < recomputeBatch {
				break
			}
			after = batch[len(batch)-1].id
		}
	}
	return total, nil
}

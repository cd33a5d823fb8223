package records

import (
	"context"
	"fmt"

	"github.com/workspace-records/records/engine/field"
	"github.com/workspace-records/records/engine/model"
	"github.com/workspace-records/records/engine/schema"
	"github.com/workspace-records/records/engine/sqlgen"
	"github.com/workspace-records/records/runtime/store"
)

// maxParams keeps one multi-row INSERT under both databases' placeholder limits.
const maxParams = 30000

// BatchSize returns how many rows of r one Import statement carries.
func BatchSize(r *model.Resource) int {
	return max(1, min(1000, maxParams/(len(r.Fields)+3)))
}

// Import validates bodies with the import schema (read-only declared fields allowed, as for an admin)
// and inserts them in one transaction, in multi-row statements. It is the bulk path of `recordsctl
// records import` and `recordsctl seed`, and works for read-only resources too. Nothing is written
// unless every body is valid; errors are prefixed with the body's index.
func (s *Service) Import(ctx context.Context, a Actor, r *model.Resource, modelID string, bodies []map[string]any) (int, error) {
	ctx = store.WithWorkspace(ctx, a.Workspace)
	ctx, err := s.pinFields(ctx, a.Workspace, r, modelID)
	if err != nil {
		return 0, err
	}
	sch := s.schemas.Resource(r.Name)
	rows := make([]map[string]any, len(bodies))
	values := make([]map[string]any, len(bodies))
	customRefs := make([]map[string]any, len(bodies))
	customs := make([]map[string]any, len(bodies))
	ids := make([]string, len(bodies))
	var errs field.ErrorList
	now := s.timestamp()
	for i, body := range bodies {
		b, verrs := sch.Validate(body, schema.Import)
		var custom, refs map[string]any
		if verrs == nil {
			var err error
			if custom, refs, err = s.customChanges(ctx, a.Workspace, r, modelID, b.Custom, schema.Create, nil); err != nil {
				fl, ok := err.(field.ErrorList)
				if !ok {
					return 0, err
				}
				verrs = fl
			}
		}
		for _, e := range verrs {
			errs = append(errs, &field.Error{Code: e.Code, Field: fmt.Sprintf("[%d].%s", i, e.Field), Message: e.Message})
		}
		if verrs != nil {
			continue
		}
		row := map[string]any{"owner_id": nullable(a.Member), "created_at": now, "updated_at": now, "custom_fields": jsonText(custom)}
		for k, v := range b.Values {
			f, _ := r.Field(k)
			row[f.Column] = v
		}
		if err := setComputed(r, nil, b.Values, row); err != nil {
			return 0, err
		}
		rows[i], values[i], ids[i] = row, b.Values, NewID()
		customRefs[i], customs[i] = refs, custom
	}
	if len(errs) > 0 {
		return 0, errs
	}
	// One audit entry per record, as for a create, written in the same transaction.
	var trail []auditEntry
	if !a.Synthetic {
		trail = make([]auditEntry, len(rows))
	}
	for i := range trail {
		if trail[i].changes, err = s.createdValues(ctx, a.Workspace, r, modelID, values[i], customs[i]); err != nil {
			return 0, err
		}
		trail[i].resource, trail[i].recordID, trail[i].action = r.Name, ids[i], ActionImport
	}
	err = s.st.Tx(ctx, func(q store.Querier) error {
		if err := s.checkReferences(ctx, q, r, a.Workspace, values...); err != nil {
			return err
		}
		for i, refs := range customRefs {
			if err := s.checkCustomReferences(ctx, q, a.Workspace, r, modelID, refs); err != nil {
				return fmt.Errorf("[%d]: %w", i, err)
			}
		}
		size := BatchSize(r)
		for start := 0; start < len(rows); start += size {
			end := min(start+size, len(rows))
			if _, err := q.Exec(ctx, s.d.InsertMany(r, a.Workspace, modelID, rows[start:end], ids[start:end])); err != nil {
				return fmt.Errorf("import %s: %w", r.Name, err)
			}
		}
		// New records have no side-table rows yet: their custom values go in multi-row statements too.
		fs, err := s.Fields(ctx, a.Workspace, r, modelID)
		if err != nil {
			return err
		}
		var values []sqlgen.CustomRow
		for i, custom := range customs {
			if values, err = s.customRows(values, ids[i], fs, custom, keysOf(custom)); err != nil {
				return fmt.Errorf("import %s custom values: %w", r.Name, err)
			}
		}
		const perRow = 5 // workspace, field, record, text, number
		for start := 0; start < len(values); start += maxParams / perRow {
			end := min(start+maxParams/perRow, len(values))
			if _, err := q.Exec(ctx, s.d.InsertCustomValues(a.Workspace, values[start:end])); err != nil {
				return fmt.Errorf("import %s custom values: %w", r.Name, err)
			}
		}
		return s.writeAudit(ctx, q, a, now, trail)
	})
	if err != nil {
		return 0, err
	}
	return len(rows), nil
}

func unique(ids []string) []string {
	seen := make(map[string]bool, len(ids))
	out := make([]string, 0, len(ids))
	for _, id := range ids {
		if !seen[id] {
			seen[id] = true
			out = append(out, id)
		}
	}
	return out
}

// IDs returns up to n ids of r in workspace (newest first), for tools that need reference targets.
func (s *Service) IDs(ctx context.Context, workspace string, r *model.Resource, modelID string, n int) ([]string, error) {
	ctx = store.WithWorkspace(ctx, workspace)
	sql := "SELECT id FROM " + sqlgen.Quote(r.Table) + " WHERE workspace_id = ?"
	args := []any{workspace}
	if r.ModelScoped {
		sql += " AND model_id = ?"
		args = append(args, modelID)
	}
	sql += fmt.Sprintf(" ORDER BY created_at DESC, id DESC LIMIT %d", n)
	var ids []string
	err := s.st.Query(ctx, s.d.Bind(sql, args...), func(row []any) error {
		ids = append(ids, store.UUIDText(row[0]))
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("ids of %s: %w", r.Name, err)
	}
	return ids, nil
}

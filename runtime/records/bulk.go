package records

import (
	"context"
	"fmt"

	"github.com/workspace-records/records/engine/field"
	"github.com/workspace-records/records/engine/model"
	"github.com/workspace-records/records/engine/schema"
	"github.com/workspace-records/records/engine/sqlgen"
	"github.com/workspace-records/records/runtime/audit"
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
	c, err := s.Collection(ctx, a, r, modelID)
	if err != nil {
		return 0, err
	}
	sch := s.schemas.Resource(r.Name)
	rows := make([]map[string]any, len(bodies))
	values := make([]map[string]any, len(bodies))
	inputs := make([]*customInput, len(bodies))
	customs := make([]map[string]any, len(bodies))
	ids := make([]string, len(bodies))
	var errs field.ErrorList
	now := s.timestamp()
	for i, body := range bodies {
		// Declared and custom fields in one pass, as for a create.
		b, verrs := sch.Validate(body, schema.Import)
		given, form := schema.CustomOf(body)
		ci, cerrs := c.checkCustom(given, form, schema.Create)
		verrs = append(verrs, cerrs...)
		inputs[i] = ci
		for _, e := range verrs {
			errs = append(errs, &field.Error{Code: e.Code, Field: fmt.Sprintf("[%d].%s", i, e.Field), Message: e.Message})
		}
		if verrs != nil {
			continue
		}
		custom := c.stored(inputs[i], nil)
		row := map[string]any{"owner_id": nullable(a.Member), "created_at": now, "updated_at": now, "custom_fields": jsonText(custom)}
		for k, v := range b.Values {
			f, _ := r.Field(k)
			row[f.Column] = v
		}
		if err := setComputed(r, nil, b.Values, row); err != nil {
			return 0, err
		}
		rows[i], values[i], ids[i], customs[i] = row, b.Values, NewID(), custom
	}
	if len(errs) > 0 {
		return 0, errs
	}
	// One audit entry per record, as for a create, written in the same transaction.
	var trail []audit.Entry
	if !a.Synthetic {
		trail = make([]audit.Entry, len(rows))
	}
	for i := range trail {
		trail[i] = audit.Entry{Resource: r.Name, RecordID: ids[i], Action: audit.ActionImport, Changes: createdValues(c, values[i], customs[i])}
	}
	_, err = s.commit(ctx, a, c, nil, func(ctx context.Context, q store.Querier) (*outcome, error) {
		if err := s.checkReferences(ctx, q, a, r, c.Workspace, values...); err != nil {
			return nil, err
		}
		for i, ci := range inputs {
			if err := s.checkCustomReferences(ctx, q, a, c, ci); err != nil {
				return nil, fmt.Errorf("[%d]: %w", i, err)
			}
		}
		size := BatchSize(r)
		for start := 0; start < len(rows); start += size {
			end := min(start+size, len(rows))
			if _, err := q.Exec(ctx, s.d.InsertMany(r, c.Workspace, c.ModelID, rows[start:end], ids[start:end])); err != nil {
				return nil, keyConflict(r, fmt.Errorf("import %s: %w", r.Name, err))
			}
		}
		// New records have no side-table rows yet: their custom values go in multi-row statements too.
		var cvs []sqlgen.CustomRow
		var err error
		for i, custom := range customs {
			if cvs, err = s.customRows(cvs, ids[i], c.Fields, custom, keysOf(custom)); err != nil {
				return nil, fmt.Errorf("import %s custom values: %w", r.Name, err)
			}
		}
		const perRow = 5 // workspace, field, record, text, number
		for start := 0; start < len(cvs); start += maxParams / perRow {
			end := min(start+maxParams/perRow, len(cvs))
			if _, err := q.Exec(ctx, s.d.InsertCustomValues(c.Workspace, cvs[start:end])); err != nil {
				return nil, fmt.Errorf("import %s custom values: %w", r.Name, err)
			}
		}
		for i, custom := range customs {
			if err := s.checkCustomKeys(ctx, q, c, ids[i], custom, keysOf(custom)); err != nil {
				return nil, fmt.Errorf("[%d]: %w", i, err)
			}
		}
		return &outcome{}, audit.Write(ctx, q, s.d, a.author(), now, trail)
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

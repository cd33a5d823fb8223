package records

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/workspace-records/records/engine/access"
	"github.com/workspace-records/records/engine/listplan"
	"github.com/workspace-records/records/engine/model"
	"github.com/workspace-records/records/runtime/store"
)

// ErrNotStreamed is a query that has no one-statement read: it expands relations, or sorts by a custom
// field (whose values live in another table). Walk it a page at a time (ListQuery.Walk).
var ErrNotStreamed = errors.New("records: the query is read a page at a time")

// Stream reads every record q selects in c as a would list it (filters, groups, paths, search, sort,
// include_archived; a's masks and record rules) in one statement, so from one snapshot of the
// collection however many records it holds, and calls fn with each record as a list shows it (its
// fields selection applied). It answers ErrNotStreamed, before reading anything, for a query that needs
// a walk.
func (s *Service) Stream(ctx context.Context, a Actor, c *Collection, q *ListQuery, fn func(rec Record) error) error {
	plan, top, err := s.streamPlan(ctx, a, c, q)
	if err != nil {
		return err
	}
	return s.stream(ctx, c, plan, nil, func(row []any) error {
		rec, err := s.toRecord(plan.Resource, row, c.Workspace, plan.ModelID)
		if err != nil {
			return err
		}
		present(c.Fields, rec)
		c.Policy.Apply(rec)
		return fn(selectFields(rec, top, nil))
	})
}

// StreamValues is Stream for a table: fn gets, for each record, the values of columns as the record
// Stream would give holds them — masked where a's role masks them; nil for a hidden field or a name that
// is no field — without building the record. A column is a declared field's key, model_id, or
// cf__<key> for a custom field. vals is reused from one call of fn to the next.
func (s *Service) StreamValues(ctx context.Context, a Actor, c *Collection, q *ListQuery, columns []string, fn func(vals []any) error) error {
	plan, _, err := s.streamPlan(ctx, a, c, q)
	if err != nil {
		return err
	}
	r := plan.Resource
	type source struct {
		field  *model.Field // a declared field, read from its column; nil for the rest
		index  int          // the field's place in the row (workspace_id first)
		masked bool
		custom string // a custom field's definition id
		keyed  bool   // the custom_fields object, keyed by write key (as a record shows it)
		model  bool
	}
	// The statement reads workspace_id, then only the fields some column needs (read: their places in
	// the row).
	read := []*model.Field{}
	place := map[string]int{}
	need := func(f *model.Field) int {
		if i, ok := place[f.Key]; ok {
			return i
		}
		read = append(read, f)
		place[f.Key] = len(read)
		return len(read)
	}
	customField, hasCustom := r.Field("custom_fields")
	cf := 0
	sources := make([]source, len(columns))
	for i, name := range columns {
		src := &sources[i]
		if key, ok := strings.CutPrefix(name, "cf__"); ok {
			if d, ok := c.Fields.ByKey(key); ok && hasCustom {
				src.custom, cf = d.ID, need(customField)
			}
			continue
		}
		if name == "model_id" && r.ModelScoped {
			src.model = true
			continue
		}
		f, ok := r.Field(name)
		vis := c.Policy.Visibility(name)
		if !ok || vis == access.Hidden {
			continue
		}
		if name == "custom_fields" {
			src.keyed, cf = true, need(customField)
			continue
		}
		src.field, src.index, src.masked = f, need(f), vis == access.Masked
	}
	vals := make([]any, len(columns))
	return s.stream(ctx, c, plan, read, func(row []any) error {
		if len(row) != len(read)+1 {
			return fmt.Errorf("%s: row has %d columns, want %d", r.Name, len(row), len(read)+1)
		}
		if err := guardRow(r, row, c.Workspace); err != nil {
			return err
		}
		var stored map[string]any
		if cf > 0 {
			v, err := store.FieldValue(customField, row[cf])
			if err != nil {
				return fmt.Errorf("%s.custom_fields: %w", r.Name, err)
			}
			stored, _ = v.(map[string]any)
		}
		for i, src := range sources {
			switch {
			case src.custom != "":
				vals[i] = stored[src.custom]
			case src.model:
				vals[i] = plan.ModelID
			case src.keyed:
				rec := Record{"custom_fields": stored}
				present(c.Fields, rec)
				vals[i] = rec["custom_fields"]
			case src.field != nil:
				v, err := store.FieldValue(src.field, row[src.index])
				if err != nil {
					return fmt.Errorf("%s.%s: %w", r.Name, src.field.Key, err)
				}
				if src.masked && v != nil {
					v = access.Mask(src.field, v)
				}
				vals[i] = v
			default:
				vals[i] = nil
			}
		}
		return fn(vals)
	})
}

// streamPlan plans q for a one-statement read: the plan and the top-level fields it selects.
func (s *Service) streamPlan(ctx context.Context, a Actor, c *Collection, q *ListQuery) (*listplan.Plan, []string, error) {
	if len(q.params.Expand) > 0 {
		return nil, nil, ErrNotStreamed
	}
	plan, _, err := s.plan(ctx, a, c, q)
	if err != nil {
		return nil, nil, err
	}
	if plan.Sort.Custom {
		return nil, nil, ErrNotStreamed
	}
	top, _ := listplan.SplitFields(plan.Fields, nil)
	return plan, top, nil
}

// stream runs plan's one statement in c's workspace, reading fields (nil: all), and calls fn with each
// row.
func (s *Service) stream(ctx context.Context, c *Collection, plan *listplan.Plan, fields []*model.Field, fn func(row []any) error) error {
	stmt, ok := s.d.Stream(plan, c.Workspace, fields)
	if !ok {
		return ErrNotStreamed
	}
	if err := s.st.Query(store.WithWorkspace(ctx, c.Workspace), stmt, fn); err != nil {
		return fmt.Errorf("stream %s: %w", plan.Resource.Name, err)
	}
	return nil
}

package records

import (
	"fmt"

	"github.com/workspace-records/records/engine/model"
	"github.com/workspace-records/records/engine/sqlgen"
)

// setComputed adds to cols (by column) the values of r's formula fields after a write: cur is the
// stored record (nil on create) and changes the canonical values the write sets, by field key. On
// update only the formulas that read a changed field are recomputed.
func setComputed(r *model.Resource, cur Record, changes map[string]any, cols map[string]any) error {
	if len(r.Computed) == 0 {
		return nil
	}
	values := changes
	if cur != nil {
		values = make(map[string]any, len(changes))
		for _, f := range r.Computed {
			if !f.Formula.ReadsAny(changes) {
				continue
			}
			for _, in := range f.Formula.Inputs {
				if _, done := values[in.Key]; done {
					continue
				}
				if v, ok := changes[in.Key]; ok {
					values[in.Key] = v
					continue
				}
				if cur[in.Key] == nil {
					values[in.Key] = nil
					continue
				}
				v, err := model.Canonical(in, cur[in.Key])
				if err != nil {
					return fmt.Errorf("formula %s.%s: stored %s: %w", r.Name, f.Key, in.Key, err)
				}
				values[in.Key] = v
			}
		}
	}
	for _, f := range r.Computed {
		if cur != nil && !f.Formula.ReadsAny(changes) {
			continue
		}
		cols[f.Column] = f.Formula.Eval(values)
	}
	return nil
}

// setSearchText adds to cols (by column) the record's new search text when the write changes one of r's
// search fields: the search fields' values after the write, from cols where it sets them and from cur
// (the record before the write, by key) otherwise.
func setSearchText(r *model.Resource, cur Record, cols map[string]any) {
	changed := false
	for _, f := range r.Search {
		_, set := cols[f.Column]
		changed = changed || set
	}
	if !changed {
		return
	}
	cols[sqlgen.SearchColumn] = sqlgen.SearchText(r, func(f *model.Field) any {
		if v, ok := cols[f.Column]; ok {
			return v
		}
		return cur[f.Key]
	})
}

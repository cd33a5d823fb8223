package field_test

import (
	"testing"

	"github.com/workspace-records/records/engine/field"
)

func TestLocated(t *testing.T) {
	for _, tc := range []struct {
		e          field.Error
		err, where string
	}{
		{field.Error{File: "roles.yaml", Field: "roles.x", Message: "m", Line: 3, Column: 5}, "roles.yaml: roles.x: m", "defs/roles.yaml:3:5: roles.x: m"},
		{field.Error{File: "roles.yaml", Message: "m", Line: 3}, "roles.yaml: m", "defs/roles.yaml:3:1: m"},
		{field.Error{File: "plans.yaml", Message: "open plans.yaml: file does not exist"}, "plans.yaml: open plans.yaml: file does not exist", "defs/plans.yaml: open plans.yaml: file does not exist"},
		{field.Error{Field: "name", Message: "m"}, "name: m", "name: m"},
	} {
		if got := tc.e.Error(); got != tc.err {
			t.Errorf("Error() %q, want %q", got, tc.err)
		}
		if got := tc.e.Located("defs/"); got != tc.where {
			t.Errorf("Located %q, want %q", got, tc.where)
		}
	}
}

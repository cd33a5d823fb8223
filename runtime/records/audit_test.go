package records

import (
	"encoding/json"
	"testing"

	"github.com/workspace-records/records/runtime/audit"
)

// An update is audited only for the values it changed: the stored form (as either driver returns it)
// and the written form of one value compare equal.
func TestSameValue(t *testing.T) {
	t.Parallel()
	for name, c := range map[string]struct {
		a, b any
		same bool
	}{
		"nil and nil":                   {nil, nil, true},
		"nil and empty string":          {nil, "", false},
		"decimal from SQLite":           {float64(1200.5), json.Number("1200.5"), true},
		"decimal from PostgreSQL":       {json.Number("1200.50"), json.Number("1200.5"), true},
		"integer and float":             {int64(3), float64(3), true},
		"different numbers":             {json.Number("1500"), json.Number("1200.5"), false},
		"number and numeric string":     {json.Number("5"), "5", false},
		"strings":                       {"a", "a", true},
		"booleans":                      {true, false, false},
		"multi-select stored and new":   {[]any{"x", "z"}, []string{"x", "z"}, true},
		"multi-select in another order": {[]any{"z", "x"}, []string{"x", "z"}, false},
		"attributes":                    {map[string]any{"role": "a"}, map[string]any{"role": "a"}, true},
	} {
		if got := audit.Same(c.a, c.b); got != c.same {
			t.Errorf("%s: audit.Same(%#v, %#v) = %v", name, c.a, c.b, got)
		}
	}
}

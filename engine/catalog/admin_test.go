package catalog

import (
	"testing"

	"github.com/workspace-records/records/engine/route"
)

// Every admin route has an OpenAPI operation, and every admin operation described here serves an admin
// route of the table (the compiler checks the keys are route.AdminOp constants; this checks none is
// missing or left over).
func TestAdminOperations(t *testing.T) {
	d := &doc{comps: map[string]any{"schemas": map[string]any{}}}
	ops := d.adminOperations()
	missing, extra := route.Unbound(ops)
	for _, rt := range missing {
		t.Errorf("%s %s (%s): no OpenAPI operation", rt.Method, rt.Path, rt.Label)
	}
	for _, op := range extra {
		t.Errorf("the OpenAPI operation %v of admin operation %d serves no route", ops[op]["operationId"], op)
	}
	for op, o := range ops {
		if o == nil {
			t.Errorf("admin operation %d: a nil OpenAPI operation", op)
		}
	}
}

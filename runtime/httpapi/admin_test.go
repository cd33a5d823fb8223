package httpapi

import (
	"testing"

	"github.com/workspace-records/records/engine/route"
)

// Every admin route of the table has a handler in adminHandlers, and every handler there serves an admin
// route (the compiler checks the keys are route.AdminOp constants, each given once; this checks none is
// missing or left over).
func TestAdminHandlers(t *testing.T) {
	handlers := (&Handler{}).adminHandlers()
	routed := map[route.AdminOp]bool{}
	for _, rt := range route.Fixed() {
		if rt.Endpoint != route.Admin {
			continue
		}
		routed[rt.AdminOp] = true
		if handlers[rt.AdminOp] == nil {
			t.Errorf("%s %s (%s): no handler", rt.Method, rt.Path, rt.Label)
		}
	}
	for op := range handlers {
		if !routed[op] {
			t.Errorf("the handler of admin operation %d serves no route", op)
		}
	}
	if len(routed) != len(route.AdminOps()) {
		t.Errorf("%d admin operations serve routes, of %d declared", len(routed), len(route.AdminOps()))
	}
}

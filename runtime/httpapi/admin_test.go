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
	missing, extra := route.Unbound(handlers)
	for _, rt := range missing {
		t.Errorf("%s %s (%s): no handler", rt.Method, rt.Path, rt.Label)
	}
	for _, op := range extra {
		t.Errorf("the handler of admin operation %d serves no route", op)
	}
	for op, h := range handlers {
		if h == nil {
			t.Errorf("admin operation %d: a nil handler", op)
		}
	}
	if len(handlers) != len(route.AdminOps()) {
		t.Errorf("%d admin operations have handlers, of %d declared", len(handlers), len(route.AdminOps()))
	}
}

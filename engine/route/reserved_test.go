package route

import (
	"strings"
	"testing"

	"github.com/workspace-records/records/engine/model"
)

// Every fixed route under /v1 uses a segment no resource may take, or a resource named after it would
// be shadowed.
func TestFixedRoutesAreReserved(t *testing.T) {
	for _, rt := range fixed {
		seg, ok := strings.CutPrefix(rt.Path, "/v1/")
		if !ok {
			continue
		}
		seg, _, _ = strings.Cut(seg, "/")
		if !model.ReservedNames[seg] {
			t.Errorf("%s %s: /v1/%s is not in model.ReservedNames", rt.Method, rt.Path, seg)
		}
	}
}

// Every admin route has the Admin endpoint, a scope other than the data keys', an AdminOp of its own (it
// picks the handler and the OpenAPI operation) and a label of its own (the access log's and the
// metrics'); every AdminOp serves a route, and no other route has one.
func TestAdminRoutes(t *testing.T) {
	labels := map[string]string{}
	ops := map[AdminOp]string{}
	for _, rt := range adminRoutes {
		where := rt.Method + " " + rt.Path
		if rt.Endpoint != Admin || !rt.Key || rt.Scope == ScopeData || rt.Label == "" {
			t.Errorf("%s: endpoint %d, key %v, scope %d, label %q", where, rt.Endpoint, rt.Key, rt.Scope, rt.Label)
		}
		if rt.AdminOp == 0 || rt.AdminOp >= adminOpEnd {
			t.Errorf("%s: admin operation %d is not one of the AdminOp constants", where, rt.AdminOp)
		}
		if prev, ok := labels[rt.Label]; ok {
			t.Errorf("%s: label %q is also %s's", where, rt.Label, prev)
		}
		labels[rt.Label] = where
		if prev, ok := ops[rt.AdminOp]; ok {
			t.Errorf("%s: admin operation %d is also %s's", where, rt.AdminOp, prev)
		}
		ops[rt.AdminOp] = where
	}
	for _, op := range AdminOps() {
		if _, ok := ops[op]; !ok {
			t.Errorf("admin operation %d serves no route", op)
		}
	}
	for _, rt := range fixed {
		if rt.Endpoint != Admin && rt.AdminOp != 0 {
			t.Errorf("%s %s: endpoint %d is not Admin but has admin operation %d", rt.Method, rt.Path, rt.Endpoint, rt.AdminOp)
		}
	}
}

// Unbound finds what a binding of admin operations lacks and what it binds to no route.
func TestUnbound(t *testing.T) {
	admin := 0
	for _, rt := range fixed {
		if rt.Endpoint == Admin {
			admin++
		}
	}
	if missing, extra := Unbound(map[AdminOp]bool{}); len(missing) != admin || len(extra) != 0 {
		t.Errorf("an empty binding: %d missing (want %d), %d extra", len(missing), admin, len(extra))
	}
	all := map[AdminOp]bool{adminOpEnd: true}
	for _, op := range AdminOps() {
		all[op] = true
	}
	if missing, extra := Unbound(all); len(missing) != 0 || len(extra) != 1 || extra[0] != adminOpEnd {
		t.Errorf("every operation and one more: %d missing, extra %v (want [%d])", len(missing), extra, adminOpEnd)
	}
}

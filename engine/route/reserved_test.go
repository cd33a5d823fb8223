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

// Every admin route has a label of its own (it names the handler and the operation), the Admin endpoint,
// and a scope other than the data keys'.
func TestAdminRoutes(t *testing.T) {
	labels := map[string]string{}
	for _, rt := range adminRoutes {
		if rt.Endpoint != Admin || !rt.Key || rt.Scope == ScopeData || rt.Label == "" {
			t.Errorf("%s %s: endpoint %d, key %v, scope %d, label %q", rt.Method, rt.Path, rt.Endpoint, rt.Key, rt.Scope, rt.Label)
		}
		if prev, ok := labels[rt.Label]; ok {
			t.Errorf("%s %s: label %q is also %s's", rt.Method, rt.Path, rt.Label, prev)
		}
		labels[rt.Label] = rt.Method + " " + rt.Path
	}
}

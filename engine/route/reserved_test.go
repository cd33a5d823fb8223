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

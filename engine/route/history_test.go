package route

import (
	"strings"
	"testing"

	"github.com/workspace-records/records/engine/model"
	"github.com/workspace-records/records/engine/model/modeltest"
)

// Every resource whose records are read one by one has a history route, GET (HEAD beside it) on
// /v1/{resource}/:id/history, and Match classifies that path for the 405 of its other methods.
func TestHistoryRoutes(t *testing.T) {
	cat := modeltest.Shipped(t)
	served := map[string]bool{}
	for _, rt := range Table(cat) {
		if rt.Endpoint != RecordHistory {
			continue
		}
		if rt.Method != "GET" || rt.Shape != History || !rt.Key || !rt.Documented || rt.Path != "/v1/"+rt.Resource.Name+"/:id/history" {
			t.Errorf("history route %+v", rt)
		}
		served[rt.Resource.Name] = true
	}
	for _, r := range cat.Resources {
		if served[r.Name] != r.Ops.Has(model.OpGet) {
			t.Errorf("%s: history route %v, get %v", r.Name, served[r.Name], r.Ops.Has(model.OpGet))
		}
		if !served[r.Name] {
			continue
		}
		if got := strings.Join(Allow(r, History), ", "); got != "GET, HEAD" {
			t.Errorf("%s: Allow %q", r.Name, got)
		}
		m, s, unknown := Match(cat, "/v1/"+r.Name+"/0190a6d4-0000-7000-8000-00000000beef/history")
		if m != r || s != History || unknown {
			t.Errorf("%s: Match of a history path: %v %v %v", r.Name, m, s, unknown)
		}
	}
}

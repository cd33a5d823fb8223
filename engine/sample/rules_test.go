package sample_test

import (
	"encoding/json"
	"fmt"
	"maps"
	"testing"

	"github.com/workspace-records/records/engine/sample"
)

// rulesStore holds referenced records that exercise every branch of the shipped plugins' rules.
type rulesStore struct {
	ids  map[string][]string
	recs map[string]map[string]any
}

func newRulesStore(withLossReasons, withMembers bool) *rulesStore {
	s := &rulesStore{ids: map[string][]string{}, recs: map[string]map[string]any{}}
	add := func(resource string, rec map[string]any) {
		id := fmt.Sprintf("0190a6d4-0000-7000-8000-%012d", len(s.recs)+1)
		s.ids[resource] = append(s.ids[resource], id)
		s.recs[id] = rec
	}
	for _, kind := range []string{"open", "won", "lost"} {
		add("pipeline_stages", map[string]any{"stage_type": kind, "probability": json.Number("40")})
	}
	for _, start := range []string{"2026-05-01", "2025-01-10"} {
		add("projects", map[string]any{"start_date": start})
	}
	add("projects", map[string]any{"start_date": nil})
	add("project_task_statuses", map[string]any{"is_closed": true})
	add("project_task_statuses", map[string]any{"is_closed": false})
	for _, level := range []float64{1, 5} {
		add("signal_severities", map[string]any{"level": level})
	}
	for _, p := range []string{"10", "90"} {
		add("signal_probabilities", map[string]any{"likelihood_percent": json.Number(p)})
	}
	if withLossReasons {
		add("loss_reasons", map[string]any{})
	}
	if withMembers {
		add("entity_members", map[string]any{})
	}
	for _, r := range []string{"pipelines", "companies", "contacts", "project_tasks", "signal_types", "signal_statuses", "project_task_types", "deal_sources", "forecast_categories"} {
		add(r, map[string]any{})
	}
	return s
}

// Bodies and updates made with a lookup keep the rules of deal-rules, task-rules and signal-rules,
// whatever the referenced records; without loss reasons or members to give, they avoid the states
// that would need them.
func TestBodiesKeepPluginRules(t *testing.T) {
	cat, _ := compile(t)
	for _, c := range []struct {
		name            string
		losses, members bool
	}{{"all", true, true}, {"no loss reasons", false, true}, {"no members", true, false}} {
		t.Run(c.name, func(t *testing.T) {
			s := newRulesStore(c.losses, c.members)
			refs := func(r string) []string { return s.ids[r] }
			g := sample.New(7)
			g.SetLookup(func(_, id string) map[string]any { return s.recs[id] })
			for _, name := range []string{"deals", "project_tasks", "project_signals"} {
				r, _ := cat.Resource(name)
				for i := range 400 {
					body := g.Body(r, refs, now)
					for k, v := range body {
						checkValue(t, r, k, v)
					}
					checkRules(t, s, name, "create", body)
					upd := g.Update(r, body, refs, now)
					for k, v := range upd {
						checkValue(t, r, k, v)
					}
					merged := maps.Clone(body)
					maps.Copy(merged, upd)
					checkRules(t, s, name, fmt.Sprintf("update %d %v of", i, upd), merged)
				}
			}
		})
	}
}

func checkRules(t *testing.T, s *rulesStore, resource, what string, rec map[string]any) {
	t.Helper()
	ref := func(key string) map[string]any { id, _ := rec[key].(string); return s.recs[id] }
	str := func(key string) string { v, _ := rec[key].(string); return v }
	switch resource {
	case "deals":
		kind, _ := ref("stage_id")["stage_type"].(string)
		if (kind == "won" || kind == "lost") && rec["close_date"] == nil {
			t.Fatalf("%s deal in a %s stage without close date: %v", what, kind, rec)
		}
		if kind == "lost" && rec["loss_reason_id"] == nil {
			t.Fatalf("%s lost deal without loss reason: %v", what, rec)
		}
		if kind != "" && rec["status"] != nil && rec["status"] != kind {
			t.Fatalf("%s deal status %v in a %s stage", what, rec["status"], kind)
		}
	case "project_tasks":
		start, _ := ref("project_id")["start_date"].(string)
		for _, k := range []string{"start_date", "due_date"} {
			if d := str(k); start != "" && d != "" && d < start {
				t.Fatalf("%s task %s %s before project start %s", what, k, d, start)
			}
		}
		if s, d := str("start_date"), str("due_date"); s != "" && d != "" && d < s {
			t.Fatalf("%s task due %s before its start %s", what, d, s)
		}
		if ref("status_id")["is_closed"] == true && rec["completed_at"] == nil {
			t.Fatalf("%s task in a closed status without completed_at: %v", what, rec)
		}
	case "project_signals":
		level, _ := ref("severity_id")["level"].(float64)
		var likelihood float64
		if n, ok := ref("probability_id")["likelihood_percent"].(json.Number); ok {
			likelihood, _ = n.Float64()
		}
		if level*likelihood >= 200 && (str("mitigation_plan") == "" || rec["owner_member_id"] == nil) {
			t.Fatalf("%s signal scoring %v without plan or owner: %v", what, level*likelihood, rec)
		}
	}
}

package sample

import (
	"encoding/json"
	"math"
	"time"

	"github.com/workspace-records/records/engine/model"
)

// Lookup returns the stored record of resource with id (same workspace) as JSON-shaped values, or nil
// when it is not known. Numbers may be json.Number or float64.
type Lookup func(resource, id string) map[string]any

// SetLookup lets the generator read the records its bodies refer to, so that bodies keep the business
// rules that depend on them (the rules the shipped plugins enforce): a deal in a won or lost stage has a
// close date and its status follows the stage, a lost deal has a loss reason, a task's dates do not fall
// before its project's start, a task in a closed status has completed_at, and a signal whose risk score
// (severity level × likelihood %) reaches 200 has a mitigation plan and an owner. Without a lookup the
// generator cannot know the referenced records and does not try.
func (g *Generator) SetLookup(l Lookup) { g.lookup = l }

// riskAttention is the risk score from which a signal needs a mitigation plan and an owner.
const riskAttention = 200

// cohere adjusts c.body so that the record it makes (stored merged with body; stored is nil on create)
// keeps the rules above. It only adds or replaces keys of the body.
func (c *rec) cohere(stored map[string]any, refs Refs) {
	if c.g.lookup == nil {
		return
	}
	view := func(key string) any {
		if v, ok := c.body[key]; ok {
			return v
		}
		return stored[key]
	}
	c.cohereStage(view, refs)
	c.cohereParentStart(view)
	c.cohereCompletion(view)
	c.cohereRisk(view, refs)
}

// target returns the record the reference field key points to in view, or nil.
func (c *rec) target(view func(string) any, key string) map[string]any {
	f, ok := c.r.Field(key)
	if !ok || f.Type != model.Reference {
		return nil
	}
	id, _ := view(key).(string)
	if id == "" {
		return nil
	}
	return c.g.lookup(f.Target, id)
}

// ensure gives key a value in view when it has none: true when it has one afterwards.
func (c *rec) ensure(view func(string) any, key string, refs Refs) bool {
	if v := view(key); v != nil && v != "" {
		return true
	}
	f, ok := c.r.Field(key)
	if !ok || !f.Writable() {
		return false
	}
	v, ok := c.value(f, refs)
	if !ok {
		if _, set := c.body[key]; set {
			delete(c.body, key) // an explicit clear the rule would refuse: keep the stored value instead
		}
		return view(key) != nil && view(key) != ""
	}
	c.body[key] = v
	return true
}

// cohereStage: close date in won and lost stages, loss reason in lost ones, status = stage type.
func (c *rec) cohereStage(view func(string) any, refs Refs) {
	for range 2 {
		stage := c.target(view, "stage_id")
		kind, _ := stage["stage_type"].(string)
		if kind == "" {
			return
		}
		ok := true
		if kind == "won" || kind == "lost" {
			ok = c.ensure(view, "close_date", refs)
		}
		if kind == "lost" {
			ok = c.ensure(view, "loss_reason_id", refs) && ok
		}
		if !ok {
			if _, set := c.body["stage_id"]; !set {
				return // the stored stage stays; nothing this body can fix
			}
			delete(c.body, "stage_id") // no loss reason to give: keep the stored stage and try again
			continue
		}
		if f, has := c.r.Field("status"); has && f.Writable() && model.Check(f, kind) == nil {
			_, statusSet := c.body["status"]
			_, stageSet := c.body["stage_id"]
			if statusSet || stageSet {
				c.body["status"] = kind
			}
		}
		return
	}
}

// cohereParentStart keeps start, due and end dates on or after the start date of every record the body
// refers to (a task within its project).
func (c *rec) cohereParentStart(view func(string) any) {
	floor := ""
	for _, f := range c.r.Declared() {
		if f.Type != model.Reference || f.Key == "owner_id" {
			continue
		}
		if s, _ := c.target(view, f.Key)["start_date"].(string); s > floor {
			floor = s
		}
	}
	if floor == "" {
		return
	}
	base, err := time.Parse(time.DateOnly, floor)
	if err != nil {
		return
	}
	for _, key := range []string{"start_date", "due_date", "end_date"} {
		f, ok := c.r.Field(key)
		if !ok || f.Type != model.Date || !f.Writable() {
			continue
		}
		if d, _ := view(key).(string); d != "" && d < floor {
			c.body[key] = base.AddDate(0, 0, int(c.g.between(0, 30))).Format(time.DateOnly)
		}
	}
	for _, end := range []string{"due_date", "end_date"} {
		start, _ := view("start_date").(string)
		d, _ := view(end).(string)
		if start == "" || d == "" || d >= start {
			continue
		}
		if s, err := time.Parse(time.DateOnly, start); err == nil {
			c.body[end] = s.AddDate(0, 0, int(c.g.between(0, 60))).Format(time.DateOnly)
		}
	}
}

// cohereCompletion: a record in a closed status has completed_at.
func (c *rec) cohereCompletion(view func(string) any) {
	f, ok := c.r.Field("completed_at")
	if !ok || !f.Writable() || c.target(view, "status_id")["is_closed"] != true || view("completed_at") != nil {
		return
	}
	c.body["completed_at"] = c.datetime(f)
}

// cohereRisk: a signal scoring riskAttention or more has a mitigation plan and an owner.
func (c *rec) cohereRisk(view func(string) any, refs Refs) {
	for range 2 {
		level, okL := number(c.target(view, "severity_id")["level"])
		likelihood, okP := number(c.target(view, "probability_id")["likelihood_percent"])
		if !okL || !okP || level*likelihood < riskAttention {
			return
		}
		ok := c.ensure(view, "mitigation_plan", refs)
		if ok = c.ensure(view, "owner_member_id", refs) && ok; ok {
			return
		}
		_, sev := c.body["severity_id"]
		_, prob := c.body["probability_id"]
		if !sev && !prob {
			return
		}
		delete(c.body, "severity_id") // nobody to own a high risk: keep the stored assessment
		delete(c.body, "probability_id")
	}
}

// number reads an integer from a JSON-shaped value.
func number(v any) (int64, bool) {
	switch x := v.(type) {
	case json.Number:
		n, err := x.Int64()
		return n, err == nil
	case float64:
		return int64(x), x == math.Trunc(x)
	case int64:
		return x, true
	case int:
		return int64(x), true
	}
	return 0, false
}

// keepRules drops from c.body the optional values that make one of the resource's declarative rules
// (model.Rule) fail for the record the body makes (on create the body with the defaults; on update
// stored, nil when unknown, merged with the body), so that every body the generator hands out passes them: each failed rule's optional input
// fields leave the body, and the record keeps its stored value or, on create, the field's default.
// The YAML rules are written so that an empty field does not break them (a won deal's close date is
// what is required, not what is forbidden), which makes dropping a sound repair; required fields stay.
func (c *rec) keepRules(stored map[string]any, create bool) {
	r := c.r
	if len(r.Rules) == 0 {
		return
	}
	for range len(r.Rules) + 1 {
		failed := r.FailedRules(c.ruleCheck(stored, create))
		if len(failed) == 0 {
			return
		}
		for _, ru := range failed {
			for _, f := range ru.Inputs {
				if !f.Required {
					delete(c.body, f.Key)
				}
			}
		}
	}
}

// ruleCheck is the write of c.body as the rules see it.
func (c *rec) ruleCheck(stored map[string]any, create bool) model.RuleCheck {
	body := model.RuleValues(c.r, c.body)
	if create {
		for _, f := range c.r.Declared() {
			if _, given := c.body[f.Key]; !given && f.Default != nil && f.Writable() {
				body[f.Key] = f.Default
			}
		}
		return model.RuleCheck{Self: body}
	}
	old := model.RuleValues(c.r, stored)
	self := make(map[string]any, len(old)+len(body))
	changed := make(map[string]any, len(c.body))
	for k, v := range old {
		self[k] = v
	}
	for k := range c.body {
		changed[k] = nil
		delete(self, k)
		if v, ok := body[k]; ok {
			self[k] = v
		}
	}
	return model.RuleCheck{Self: self, Old: old, Changed: changed}
}

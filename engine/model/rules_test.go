package model_test

import (
	"encoding/json"
	"io/fs"
	"strings"
	"testing"

	"github.com/workspace-records/records/definitions"
	"github.com/workspace-records/records/engine/field"
	"github.com/workspace-records/records/engine/model"
	"github.com/workspace-records/records/engine/model/modeltest"
	"github.com/workspace-records/records/engine/spec"
)

// ruleCase is one write checked against a resource's rules: JSON-shaped values of the record after the
// write (self), before it (old; nil for a create) and the fields the write sets (nil: all of self).
type ruleCase struct {
	resource string
	rule     string // the shipped rule's expression the case is about
	self     map[string]any
	old      map[string]any
	changed  []string
	fails    string // the field of the expected failure; "" when the write passes
}

func checkCase(t *testing.T, r *model.Resource, c ruleCase) field.ErrorList {
	t.Helper()
	w := model.RuleCheck{Self: model.RuleValues(r, c.self)}
	if c.old != nil {
		w.Old = model.RuleValues(r, c.old)
		w.Changed = map[string]any{}
		keys := c.changed
		if keys == nil {
			for k := range c.self {
				keys = append(keys, k)
			}
		}
		for _, k := range keys {
			w.Changed[k] = c.self[k]
		}
	}
	return r.CheckRules(w)
}

// Every rule of the shipped definitions, with a body that passes it and one that fails it.
func TestShippedRules(t *testing.T) {
	t.Parallel()
	cat := modeltest.Shipped(t)
	const (
		closeDate   = "self.status == 'open' || has(self.close_date)"
		lossReason  = "self.status != 'lost' || has(self.loss_reason_id)"
		dueDate     = "self.due_date >= self.start_date"
		endDate     = "self.end_date >= self.start_date"
		decided     = "self.decided_at >= self.requested_at"
		disqualify  = "self.status != 'disqualified' || has(self.disqualification_reason_id)"
		converted   = "!has(oldSelf.converted_at) || has(self.converted_at)"
		someID      = "0b7c6f1e-2d3a-4c5b-8e9f-0a1b2c3d4e5f"
		convertedAt = "2026-03-01T10:00:00Z"
	)
	cases := map[string]ruleCase{
		"open deal without close date":    {resource: "deals", rule: closeDate, self: map[string]any{"name": "A", "status": "open"}},
		"won deal with close date":        {resource: "deals", rule: closeDate, self: map[string]any{"name": "A", "status": "won", "close_date": "2026-05-01"}},
		"won deal without close date":     {resource: "deals", rule: closeDate, self: map[string]any{"name": "A", "status": "won"}, fails: "close_date"},
		"lost deal cleared close date":    {resource: "deals", rule: closeDate, self: map[string]any{"status": "lost", "loss_reason_id": someID, "close_date": nil}, old: map[string]any{"status": "lost", "loss_reason_id": someID, "close_date": "2026-05-01"}, changed: []string{"close_date"}, fails: "close_date"},
		"lost deal with loss reason":      {resource: "deals", rule: lossReason, self: map[string]any{"status": "lost", "close_date": "2026-05-01", "loss_reason_id": someID}},
		"lost deal without loss reason":   {resource: "deals", rule: lossReason, self: map[string]any{"status": "lost", "close_date": "2026-05-01"}, fails: "loss_reason_id"},
		"project due after start":         {resource: "projects", rule: dueDate, self: map[string]any{"name": "P", "start_date": "2026-01-10", "due_date": "2026-01-10"}},
		"project without due date":        {resource: "projects", rule: dueDate, self: map[string]any{"name": "P", "start_date": "2026-01-10"}},
		"project due before start":        {resource: "projects", rule: dueDate, self: map[string]any{"name": "P", "start_date": "2026-01-10", "due_date": "2026-01-09"}, fails: "due_date"},
		"task due after start":            {resource: "project_tasks", rule: dueDate, self: map[string]any{"title": "T", "start_date": "2026-02-01", "due_date": "2026-02-03"}},
		"task due before start":           {resource: "project_tasks", rule: dueDate, self: map[string]any{"title": "T", "start_date": "2026-02-01", "due_date": "2026-01-31"}, fails: "due_date"},
		"task start moved past due date":  {resource: "project_tasks", rule: dueDate, self: map[string]any{"start_date": "2026-03-01", "due_date": "2026-02-03"}, old: map[string]any{"start_date": "2026-02-01", "due_date": "2026-02-03"}, changed: []string{"start_date"}, fails: "due_date"},
		"scope ends after start":          {resource: "scope_documents", rule: endDate, self: map[string]any{"start_date": "2026-02-01", "end_date": "2026-12-31"}},
		"scope ends before start":         {resource: "scope_documents", rule: endDate, self: map[string]any{"start_date": "2026-02-01", "end_date": "2025-12-31"}, fails: "end_date"},
		"approval decided after request":  {resource: "project_approvals", rule: decided, self: map[string]any{"requested_at": "2026-02-01T09:00:00Z", "decided_at": "2026-02-01T09:00:01Z"}},
		"approval decided before request": {resource: "project_approvals", rule: decided, self: map[string]any{"requested_at": "2026-02-01T09:00:00Z", "decided_at": "2026-01-31T17:00:00Z"}, fails: "decided_at"},
		"disqualified lead with reason":   {resource: "leads", rule: disqualify, self: map[string]any{"status": "disqualified", "disqualification_reason_id": someID}},
		"disqualified lead without":       {resource: "leads", rule: disqualify, self: map[string]any{"status": "disqualified"}, fails: "disqualification_reason_id"},
		"converted lead keeps converted_at": {resource: "leads", rule: converted, self: map[string]any{"status": "converted", "converted_at": convertedAt},
			old: map[string]any{"status": "qualified", "converted_at": convertedAt}, changed: []string{"status"}},
		"converted lead converted_at cleared": {resource: "leads", rule: converted, self: map[string]any{"status": "converted", "converted_at": nil},
			old: map[string]any{"status": "converted", "converted_at": convertedAt}, changed: []string{"converted_at"}, fails: "converted_at"},
		"converted lead created without converted_at": {resource: "leads", rule: converted, self: map[string]any{"status": "converted"}},
	}
	covered := map[string]bool{}
	for name, c := range cases {
		r, ok := cat.Resource(c.resource)
		if !ok {
			t.Fatalf("%s: no resource %s", name, c.resource)
		}
		found := false
		for _, ru := range r.Rules {
			found = found || ru.Expr == c.rule
		}
		if !found {
			t.Fatalf("%s: %s has no rule %q", name, c.resource, c.rule)
		}
		covered[c.resource+"\x00"+c.rule+"\x00"+map[bool]string{true: "fail", false: "pass"}[c.fails != ""]] = true
		t.Run(name, func(t *testing.T) {
			errs := checkCase(t, r, c)
			switch {
			case c.fails == "" && len(errs) > 0:
				t.Errorf("want no failure, got %v", errs)
			case c.fails != "" && (len(errs) != 1 || errs[0].Field != c.fails):
				t.Errorf("want one failure at %s, got %v", c.fails, errs)
			case c.fails != "" && errs[0].Message == "":
				t.Errorf("failure without the rule's message: %+v", errs[0])
			}
		})
	}
	// The table covers every shipped rule both ways.
	for _, r := range cat.Resources {
		for _, ru := range r.Rules {
			for _, way := range []string{"pass", "fail"} {
				if !covered[r.Name+"\x00"+ru.Expr+"\x00"+way] {
					t.Errorf("%s rule %q has no case that should %s", r.Name, ru.Expr, way)
				}
			}
		}
	}
}

func widgetRules(rules string) string {
	return widget + "  status: {type: string, options: [draft, live, retired], default: draft}\n" +
		"  notes: {type: text, max_length: 20000}\n  tags_text: {type: string, max_length: 100}\n" +
		"  n: {type: integer}\n  price: {type: decimal}\n  starts: {type: date}\n  ends: {type: date}\n" +
		"rules:\n" + rules
}

// Rules are type-checked and cost-checked when the definitions load, each error at its rule's path.
func TestRuleCompileErrors(t *testing.T) {
	t.Parallel()
	cases := map[string]struct {
		rules string
		want  string
	}{
		"unknown field": {`  - {rule: "self.colour == 'red'", message: m}` + "\n",
			"resources/widgets.yaml: rules[0].rule: undefined field 'colour'"},
		"unknown field in has": {`  - {rule: "has(self.n)", message: m}` + "\n" + `  - {rule: "has(oldSelf.size)", message: m}` + "\n",
			"resources/widgets.yaml: rules[1].rule: undefined field 'size'"},
		"not bool": {`  - {rule: "self.n + 1", message: m}` + "\n",
			"resources/widgets.yaml: rules[0].rule: yields int; a rule must yield bool"},
		"type error": {`  - {rule: "self.price > self.n", message: m}` + "\n",
			"resources/widgets.yaml: rules[0].rule: found no matching overload for '_>_' applied to '(double, int)'"},
		"undeclared variable": {`  - {rule: "record.n > 0", message: m}` + "\n",
			"resources/widgets.yaml: rules[0].rule: undeclared reference to 'record'"},
		"unknown field to report": {`  - {rule: "true", message: m, field: colour}` + "\n",
			`resources/widgets.yaml: rules[0].field: unknown field "colour"`},
		"managed field to report": {`  - {rule: "true", message: m, field: created_at}` + "\n",
			`resources/widgets.yaml: rules[0].field: unknown field "created_at"`},
		"custom field read": {`  - {rule: "self.cf__size > 0", message: m}` + "\n",
			"resources/widgets.yaml: rules[0].rule: undefined field 'cf__size'"},
		"managed field read": {`  - {rule: "self.created_at > timestamp('2020-01-01T00:00:00Z')", message: m}` + "\n",
			"resources/widgets.yaml: rules[0].rule: undefined field 'created_at'"},
		"bad reason": {`  - {rule: "true", message: m, reason: teapot}` + "\n",
			"resources/widgets.yaml: rules.0.reason: value must be one of"},
		"no message": {`  - {rule: "true"}` + "\n",
			"resources/widgets.yaml: rules.0: missing properties: 'message'"},
		"syntax error": {`  - {rule: "self.n >", message: m}` + "\n",
			"resources/widgets.yaml: rules[0].rule: Syntax error"},
		// Every word of a 20,000-character text compared with every other: about 10^8 comparisons.
		"too expensive: nested comprehension": {`  - {rule: "self.notes.split(' ').all(a, self.notes.split(' ').exists(b, a == b))", message: m}` + "\n",
			"resources/widgets.yaml: rules[0].rule: is too expensive: its estimated worst-case cost is"},
		"too expensive: repeated string work": {`  - {rule: "self.notes.split(' ').all(w, self.notes.contains(w + w))", message: m}` + "\n",
			"resources/widgets.yaml: rules[0].rule: is too expensive"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			got := load(shippedWith(t, map[string]string{"resources/widgets.yaml": widgetRules(c.rules)}))
			found := false
			for _, g := range got {
				found = found || strings.HasPrefix(g, c.want)
			}
			if !found {
				t.Errorf("want an error starting %q; got:\n%s", c.want, strings.Join(got, "\n"))
			}
		})
	}
}

func compileWidgets(t *testing.T, rules string) *model.Resource {
	t.Helper()
	set, errs := spec.Load(shippedWith(t, map[string]string{"resources/widgets.yaml": widgetRules(rules)}))
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	cat, errs := model.Compile(set)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	r, _ := cat.Resource("widgets")
	return r
}

// The same kind of rule over a short string is cheap enough: the estimate follows max_length.
func TestRuleCostFollowsMaxLength(t *testing.T) {
	t.Parallel()
	r := compileWidgets(t, `  - {rule: "self.tags_text.split(' ').all(a, self.tags_text.split(' ').exists(b, a == b))", message: m}`+"\n")
	if len(r.Rules) != 1 || r.Rules[0].Cost == 0 || r.Rules[0].Cost > model.RuleCostLimit {
		t.Fatalf("rules %+v", r.Rules)
	}
	if errs := r.CheckRules(model.RuleCheck{Self: map[string]any{"tags_text": "a b a"}}); len(errs) > 0 {
		t.Errorf("passing record refused: %v", errs)
	}
}

// A rule that mentions oldSelf is a transition rule: skipped on create, checked on update.
func TestTransitionRules(t *testing.T) {
	t.Parallel()
	r := compileWidgets(t, `  - rule: "oldSelf.status != 'retired' || self.status == 'retired'"
    message: a retired widget stays retired
    field: status
  - rule: "self.status == oldSelf.status || oldSelf.status != 'draft' || self.status == 'live'"
    message: a draft goes live before anything else
    field: status
    reason: invalid_option
  - rule: "self.n >= oldSelf.n"
    message: n never decreases
    field: n
    reason: out_of_range
`)
	for _, ru := range r.Rules {
		if !ru.Transition {
			t.Fatalf("%q not marked as a transition rule", ru.Expr)
		}
	}
	update := func(old, self map[string]any) field.ErrorList {
		changed := map[string]any{}
		for k, v := range self {
			changed[k] = v
		}
		merged := map[string]any{}
		for k, v := range old {
			merged[k] = v
		}
		for k, v := range self {
			merged[k] = v
		}
		return r.CheckRules(model.RuleCheck{Self: model.RuleValues(r, merged), Old: model.RuleValues(r, old), Changed: changed})
	}
	// On create nothing is checked, whatever the values.
	if errs := r.CheckRules(model.RuleCheck{Self: map[string]any{"status": "retired", "n": int64(-5)}}); len(errs) > 0 {
		t.Errorf("create: transition rules checked: %v", errs)
	}
	cases := []struct {
		name      string
		old, self map[string]any
		want      []string // "field/code"
	}{
		{"draft goes live", map[string]any{"status": "draft"}, map[string]any{"status": "live"}, nil},
		{"draft retired at once", map[string]any{"status": "draft"}, map[string]any{"status": "retired"}, []string{"status/invalid_option"}},
		{"retired comes back", map[string]any{"status": "retired"}, map[string]any{"status": "live"}, []string{"status/invalid"}},
		{"n grows", map[string]any{"status": "live", "n": 3}, map[string]any{"n": 4}, nil},
		{"n shrinks", map[string]any{"status": "live", "n": 3}, map[string]any{"n": 2}, []string{"n/out_of_range"}},
		{"n set where there was none", map[string]any{"status": "live"}, map[string]any{"n": 2}, nil}, // oldSelf.n absent: unknown passes
		{"untouched fields are not judged", map[string]any{"status": "retired", "n": 3}, map[string]any{"name": "x"}, nil},
	}
	for _, c := range cases {
		errs := update(c.old, c.self)
		var got []string
		for _, e := range errs {
			got = append(got, e.Field+"/"+string(e.Code))
		}
		if strings.Join(got, ",") != strings.Join(c.want, ",") {
			t.Errorf("%s: got %v, want %v (%v)", c.name, got, c.want, errs)
		}
	}
}

// Null fields are absent from self: has() is false, and a comparison reading one passes (unknown).
// Formula fields are computed from self before the rules read them.
func TestRuleNullsAndFormulas(t *testing.T) {
	t.Parallel()
	r := compileWidgets(t, `  - {rule: "self.ends >= self.starts", message: ends before it starts, field: ends}
  - {rule: "self.status != 'live' || has(self.price)", message: a live widget has a price, field: price, reason: required}
`+"  - {rule: \"size(self.name) >= 2\", message: name too short, field: name}\n")
	check := func(self map[string]any) []string {
		var out []string
		for _, e := range r.CheckRules(model.RuleCheck{Self: model.RuleValues(r, self)}) {
			out = append(out, e.Field)
		}
		return out
	}
	if got := check(map[string]any{"name": "ab", "starts": "2026-01-02"}); len(got) != 0 {
		t.Errorf("missing ends: %v", got)
	}
	if got := check(map[string]any{"name": "ab", "starts": "2026-01-02", "ends": "2026-01-01"}); strings.Join(got, ",") != "ends" {
		t.Errorf("ends before starts: %v", got)
	}
	if got := check(map[string]any{"name": "ab", "status": "live"}); strings.Join(got, ",") != "price" {
		t.Errorf("live without price: %v", got)
	}
	if got := check(map[string]any{"name": "a", "status": "live", "price": json.Number("1.50")}); strings.Join(got, ",") != "name" {
		t.Errorf("short name: %v", got)
	}
}

func TestRuleReadsFormula(t *testing.T) {
	t.Parallel()
	doc := widget + "  n: {type: integer}\n  double_n: {type: integer, formula: \"n * 2\"}\n" +
		"rules:\n  - {rule: \"!has(self.double_n) || self.double_n < 100\", message: too big, field: n, reason: out_of_range}\n"
	set, errs := spec.Load(shippedWith(t, map[string]string{"resources/widgets.yaml": doc}))
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	cat, errs := model.Compile(set)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	r, _ := cat.Resource("widgets")
	if errs := r.CheckRules(model.RuleCheck{Self: map[string]any{"n": int64(10)}}); len(errs) > 0 {
		t.Errorf("n=10: %v", errs)
	}
	if errs := r.CheckRules(model.RuleCheck{Self: map[string]any{"n": int64(60)}}); len(errs) != 1 || errs[0].Field != "n" {
		t.Errorf("n=60 (double_n 120): %v", errs)
	}
	// An update that changes n is judged through the formula it feeds; one that changes nothing it
	// reads is not.
	old := map[string]any{"n": int64(60), "double_n": int64(120)}
	if errs := r.CheckRules(model.RuleCheck{Self: map[string]any{"n": int64(70)}, Old: old, Changed: map[string]any{"n": int64(70)}}); len(errs) != 1 {
		t.Errorf("update of n: %v", errs)
	}
	if errs := r.CheckRules(model.RuleCheck{Self: map[string]any{"n": int64(60), "name": "x"}, Old: old, Changed: map[string]any{"name": "x"}}); len(errs) != 0 {
		t.Errorf("update of name: %v", errs)
	}
}

// A role that writes a resource and masks or hides a field one of its rules reads is refused (issue 34,
// L3): whether the rule passes would tell the role's writers the value. Read-only, the mask stands.
func TestRuleReadingMaskedField(t *testing.T) {
	t.Parallel()
	roles, err := fs.ReadFile(definitions.FS, "roles.yaml")
	if err != nil {
		t.Fatal(err)
	}
	rules := `  - {rule: "self.n > 0 || self.status == 'draft'", message: m}` + "\n"
	for _, c := range []struct {
		name, role, want string
	}{
		{"writer masks", "  widget_writer:\n    label: W\n    permissions: [api.access]\n    resources: {\"*\": write}\n    field_rules:\n      widgets: {n: masked}\n",
			"roles.yaml: roles.widget_writer.field_rules.widgets.n: the role writes widgets and masked n, which the rule"},
		{"writer hides", "  widget_writer:\n    label: W\n    permissions: [api.access]\n    resources: {widgets: write}\n    field_rules:\n      widgets: {status: hidden}\n",
			"roles.yaml: roles.widget_writer.field_rules.widgets.status: the role writes widgets and hidden status"},
		{"reader masks", "  widget_reader:\n    label: R\n    permissions: [api.access]\n    resources: {\"*\": write, widgets: read}\n    field_rules:\n      widgets: {n: masked}\n", ""},
		{"writer masks another field", "  widget_writer:\n    label: W\n    permissions: [api.access]\n    resources: {\"*\": write}\n    field_rules:\n      widgets: {price: masked}\n", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			got := load(shippedWith(t, map[string]string{"resources/widgets.yaml": widgetRules(rules), "roles.yaml": string(roles) + c.role}))
			if c.want == "" {
				if len(got) > 0 {
					t.Errorf("want no error; got:\n%s", strings.Join(got, "\n"))
				}
				return
			}
			found := false
			for _, g := range got {
				found = found || strings.Contains(g, c.want)
			}
			if !found {
				t.Errorf("want an error containing %q; got:\n%s", c.want, strings.Join(got, "\n"))
			}
		})
	}
}

// BlindRules names the rules an update would check that read a field its writer cannot read; such a
// rule is never evaluated by CheckRules, and on create (every value the writer's own) none is blind.
func TestBlindRules(t *testing.T) {
	t.Parallel()
	r := compileWidgets(t, `  - {rule: "self.n > 0", message: needs n}`+"\n"+`  - {rule: "self.status != 'live' || has(self.starts)", message: m}`+"\n")
	blind := map[string]bool{"n": true}
	upd := model.RuleCheck{Self: map[string]any{"n": int64(-1), "status": "live"}, Old: map[string]any{"n": int64(-1)}, Changed: map[string]any{"n": nil, "status": "live"}, Blind: blind}
	if got := r.BlindRules(upd); len(got) != 1 || got[0].Expr != "self.n > 0" {
		t.Errorf("blind rules %v", got)
	}
	if errs := r.CheckRules(upd); len(errs) != 1 || errs[0].Message != "m" {
		t.Errorf("the blind rule was evaluated, or the other one not: %v", errs)
	}
	// An update that leaves n alone does not run the rule on n: nothing blind.
	if got := r.BlindRules(model.RuleCheck{Self: upd.Self, Old: upd.Old, Changed: map[string]any{"status": "draft"}, Blind: blind}); len(got) != 0 {
		t.Errorf("a rule the update skips is blind: %v", got)
	}
	create := model.RuleCheck{Self: map[string]any{"n": int64(-1)}, Blind: blind}
	if got := r.BlindRules(create); len(got) != 0 {
		t.Errorf("blind rules on create: %v", got)
	}
	if errs := r.CheckRules(create); len(errs) != 1 || errs[0].Message != "needs n" {
		t.Errorf("create: %v", errs)
	}
}

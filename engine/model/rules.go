package model

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"cel.dev/cel-go/cel"
	"cel.dev/cel-go/common/ast"
	"cel.dev/cel-go/common/cost"
	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/ext"

	"github.com/workspace-records/records/engine/field"
	"github.com/workspace-records/records/engine/spec"
)

// Rule is a compiled declarative rule of a resource (the definition's `rules:`): a CEL expression that
// must yield true for a write to be stored, in the manner of Kubernetes' x-kubernetes-validations.
//
// The expression reads the record as two variables of the resource's own object type:
//
//   - self: the record as the write would store it — on create the body's values with the field
//     defaults, on update the stored record with the body's values over it; formula fields are
//     computed from those values;
//   - oldSelf: the stored record before the write. A rule that mentions oldSelf is a transition rule:
//     it is checked on update only (a create has no record before it).
//
// Fields appear as formulas read them (see Formula): text types and references as string, integer as
// int, decimal as double, boolean as bool, date and datetime as timestamp (a date at midnight UTC). Only
// declared fields are members; engine-managed fields and a workspace's custom fields are not.
//
// A null field is absent from the record: has(self.x) is false for it, and reading it is an error. A
// rule whose outcome depends on reading an absent field passes, as an SQL CHECK constraint passes on
// NULL: `self.due_date >= self.start_date` holds while either date is empty; write
// `has(self.close_date)` to require one. Any other evaluation error (the cost limit, an overflow) fails
// the rule.
type Rule struct {
	Expr       string
	Message    string
	Field      string     // the declared field a failure is reported at; "" for the record as a whole
	Reason     field.Code // the failure's code in the 422's details.errors
	Transition bool       // reads oldSelf: checked on update only
	Cost       uint64     // the estimated worst-case cost of one evaluation (at most RuleCostLimit)
	Inputs     []*Field   // the declared fields it reads, of self or oldSelf, sorted by key
	prg        cel.Program
}

// RuleCostLimit bounds the work of one rule's evaluation, in CEL cost units (about one per operation,
// and per character or element a string or list function walks). A rule whose estimated worst case —
// every string at its field's max_length — exceeds it is refused when the definitions load; the limit
// is enforced again at evaluation (cel.CostLimit). It is Kubernetes' per-expression limit
// (PerCallLimit, 1,000,000).
const RuleCostLimit = 1000000

// Reasons a rule may name: the field-error codes a rule failure can honestly carry.
var ruleReasons = map[field.Code]bool{
	field.CodeRequired: true, field.CodeType: true, field.CodeFormat: true, field.CodeTooLong: true, field.CodeTooShort: true,
	field.CodeOption: true, field.CodeRange: true, field.CodeConflicting: true, field.CodeInvalid: true,
}

// recordTypes declares the resource's object type (self and oldSelf) to the CEL checker: a struct type
// whose members are the readable declared fields. At evaluation the variables are maps, which CEL
// selects by key and tests with has() by presence; the type only makes the checker refuse an unknown
// field or a misuse of a field's type when the definitions load.
type recordTypes struct {
	types.Provider
	name   string
	typ    *types.Type
	fields map[string]*types.FieldType
	keys   []string
}

func (p *recordTypes) FindStructType(name string) (*types.Type, bool) {
	if name == p.name {
		return types.NewTypeTypeWithParam(p.typ), true
	}
	return p.Provider.FindStructType(name)
}

func (p *recordTypes) FindStructFieldNames(name string) ([]string, bool) {
	if name == p.name {
		return p.keys, true
	}
	return p.Provider.FindStructFieldNames(name)
}

func (p *recordTypes) FindStructFieldType(name, fieldName string) (*types.FieldType, bool) {
	if name == p.name {
		ft, ok := p.fields[fieldName]
		return ft, ok
	}
	return p.Provider.FindStructFieldType(name, fieldName)
}

// ruleSizes gives the cost estimator the largest size of each text field of the record (its
// max_length; 36 for references), so that the estimate of a rule is a bound, not "unknown".
type ruleSizes struct{ r *Resource }

func (e ruleSizes) EstimateSize(n cost.AstNode) *cost.SizeEstimate {
	p := n.Path()
	if len(p) != 2 || (p[0] != "self" && p[0] != "oldSelf") {
		return nil
	}
	f, ok := e.r.byKey[p[1]]
	if !ok {
		return nil
	}
	switch {
	case f.Type.Textual():
		return &cost.SizeEstimate{Min: uint64(f.MinLength), Max: uint64(f.MaxLength)}
	case f.Type == Reference || f.Type == UUID:
		return &cost.SizeEstimate{Min: 36, Max: 36}
	}
	return nil
}

func (ruleSizes) EstimateCallCost(function, overloadID string, target *cost.AstNode, args []cost.AstNode) *cost.CallEstimate {
	return nil
}

// ruleEnv is the CEL environment of r's rules: self and oldSelf of r's object type, with the string
// and math extensions formulas have.
func ruleEnv(r *Resource) (*cel.Env, error) {
	reg, err := types.NewRegistry()
	if err != nil {
		return nil, err
	}
	p := &recordTypes{Provider: reg, name: "records." + r.Name, fields: map[string]*types.FieldType{}}
	p.typ = types.NewObjectType(p.name)
	for _, f := range r.Declared() {
		if t := celType(f.Type); t != nil {
			p.fields[f.Key] = &types.FieldType{Type: t}
			p.keys = append(p.keys, f.Key)
		}
	}
	return cel.NewEnv(cel.CustomTypeProvider(p),
		cel.Variable("self", p.typ), cel.Variable("oldSelf", p.typ),
		ext.Strings(), ext.Math())
}

// compileRules type-checks and cost-checks the rules of r, after its fields (formulas included) are
// compiled. Error paths are rules[i].rule and rules[i].field.
func compileRules(r *Resource, rules []*spec.Rule) field.ErrorList {
	if len(rules) == 0 {
		return nil
	}
	env, err := ruleEnv(r)
	if err != nil {
		return field.ErrorList{field.New(field.CodeInvalid, field.NewPath("rules"), "rule environment: "+err.Error())}
	}
	var errs field.ErrorList
	for i, sr := range rules {
		p := field.NewPath("rules").Index(i)
		ru := &Rule{Expr: sr.Rule, Message: sr.Message, Field: sr.Field, Reason: field.Code(sr.Reason)}
		if ru.Reason == "" {
			ru.Reason = field.CodeInvalid
		}
		if !ruleReasons[ru.Reason] {
			errs = append(errs, field.New(field.CodeInvalid, p.Child("reason"), fmt.Sprintf("%q is not a code a rule may give", sr.Reason)))
		}
		if sr.Field != "" {
			if f, ok := r.byKey[sr.Field]; !ok || f.Managed {
				errs = append(errs, field.New(field.CodeNotFound, p.Child("field"), fmt.Sprintf("unknown field %q; a rule's field names a declared field", sr.Field)))
			}
		}
		checked, iss := env.Compile(sr.Rule)
		if iss != nil && iss.Err() != nil {
			errs = append(errs, celErrors(p.Child("rule"), iss)...)
			continue
		}
		if !checked.OutputType().IsExactType(cel.BoolType) {
			errs = append(errs, field.New(field.CodeType, p.Child("rule"), fmt.Sprintf("yields %s; a rule must yield bool", checked.OutputType())))
			continue
		}
		est, err := env.EstimateCost(checked, ruleSizes{r})
		if err != nil {
			errs = append(errs, field.New(field.CodeInvalid, p.Child("rule"), "cost estimate: "+err.Error()))
			continue
		}
		if est.Max > RuleCostLimit {
			errs = append(errs, field.New(field.CodeInvalid, p.Child("rule"), fmt.Sprintf(
				"is too expensive: its estimated worst-case cost is %s, over the limit of %d per rule (bound the strings it walks with max_length, or walk them less)",
				costText(est.Max), RuleCostLimit)))
			continue
		}
		ru.Cost = est.Max
		prg, err := env.Program(checked, cel.CostLimit(RuleCostLimit))
		if err != nil {
			errs = append(errs, field.New(field.CodeInvalid, p.Child("rule"), err.Error()))
			continue
		}
		ru.prg = prg
		ru.Transition, ru.Inputs = ruleReads(r, checked)
		r.Rules = append(r.Rules, ru)
	}
	return errs
}

func costText(c uint64) string {
	if c == ^uint64(0) {
		return "unbounded"
	}
	return strconv.FormatUint(c, 10)
}

// ruleReads reports whether the checked rule mentions oldSelf, and the declared fields it selects of
// self or oldSelf.
func ruleReads(r *Resource, checked *cel.Ast) (transition bool, inputs []*Field) {
	seen := map[string]bool{}
	ast.PreOrderVisit(checked.NativeRep().Expr(), ast.NewExprVisitor(func(e ast.Expr) {
		switch e.Kind() {
		case ast.IdentKind:
			if e.AsIdent() == "oldSelf" {
				transition = true
			}
		case ast.SelectKind:
			sel := e.AsSelect()
			op := sel.Operand()
			if op.Kind() != ast.IdentKind || (op.AsIdent() != "self" && op.AsIdent() != "oldSelf") {
				return
			}
			if f, ok := r.byKey[sel.FieldName()]; ok && !seen[f.Key] {
				seen[f.Key] = true
				inputs = append(inputs, f)
			}
		}
	}))
	sort.Slice(inputs, func(i, j int) bool { return inputs[i].Key < inputs[j].Key })
	return transition, inputs
}

// RuleCheck is one write as r's rules see it (Resource.CheckRules). Values are of declared fields,
// canonical (see Canonical; RuleValues converts a stored record), by field key; a null value is absent
// or nil.
type RuleCheck struct {
	// Self is the record as the write would store it: on create the body's values with the defaults,
	// on update the stored record with the body's values over it. Formula fields are computed from it.
	Self map[string]any
	// Old is the stored record before the write; nil on create, where transition rules are skipped.
	Old map[string]any
	// Changed holds (as keys) the fields an update sets. On update a rule that reads none of them, nor
	// a formula field computed from one, is skipped: its outcome is the stored record's, and a record
	// stored before a rule was added is not refused a write that leaves the rule's fields alone (as
	// Kubernetes ratchets unchanged values). Ignored on create.
	Changed map[string]any
	// Refused names fields the write gives a value the schema refused: a rule reading one is skipped
	// (its outcome would be about a value that is not the one sent).
	Refused map[string]bool
	// Blind names the fields the writer may not read (masked or hidden by its role). On update a rule
	// that would run and reads one is not evaluated: whether it passed would tell the writer something of
	// a stored value it cannot see (a yes/no oracle). BlindRules lists such rules; the write is refused
	// for them whatever the values. On create every value a rule reads is the writer's own (a masked field
	// cannot be written) or a default, and Blind is ignored.
	Blind map[string]bool
}

// CheckRules checks r's rules against the write w. It returns one problem per failed rule, in the
// definition's order, at the rule's field (the resource's name when it names none) with the rule's
// reason and message.
func (r *Resource) CheckRules(w RuleCheck) field.ErrorList {
	var errs field.ErrorList
	r.checkRules(w, func(ru *Rule, msg string) {
		at := ru.Field
		if at == "" {
			at = r.Name
		}
		errs = append(errs, &field.Error{Code: ru.Reason, Field: at, Message: msg})
	})
	return errs
}

// FailedRules returns the rules of r the write w fails, in the definition's order (see CheckRules).
func (r *Resource) FailedRules(w RuleCheck) []*Rule {
	var out []*Rule
	r.checkRules(w, func(ru *Rule, _ string) { out = append(out, ru) })
	return out
}

// BlindRules returns the rules of r that the update w would check and that read a field in w.Blind, in
// the definition's order: a writer who cannot read that field may not make the change (its outcome
// would tell the stored value); nil on create.
func (r *Resource) BlindRules(w RuleCheck) []*Rule {
	if w.Old == nil || len(w.Blind) == 0 {
		return nil
	}
	var out []*Rule
	for _, ru := range r.Rules {
		if ru.runs(w) && ru.readsAny(w.Blind) {
			out = append(out, ru)
		}
	}
	return out
}

// runs reports whether the rule is checked for the write w (see RuleCheck).
func (ru *Rule) runs(w RuleCheck) bool {
	return !(ru.Transition && w.Old == nil) && !ru.readsAny(w.Refused) && (w.Old == nil || ru.reads(w.Changed))
}

func (r *Resource) checkRules(w RuleCheck, failed func(ru *Rule, msg string)) {
	if len(r.Rules) == 0 {
		return
	}
	var self, old map[string]any
	for _, ru := range r.Rules {
		if !ru.runs(w) || (w.Old != nil && ru.readsAny(w.Blind)) {
			continue // a blind rule is never evaluated: BlindRules refuses the write for it
		}
		if self == nil {
			self = ruleRecord(r, w.Self, true)
			if w.Old != nil {
				old = ruleRecord(r, w.Old, false)
			}
		}
		if ok, msg := ru.eval(self, old); !ok {
			failed(ru, msg)
		}
	}
}

// reads reports whether the rule reads one of the fields keyed in changed, directly or through a
// formula field computed from one.
func (ru *Rule) reads(changed map[string]any) bool {
	for _, in := range ru.Inputs {
		if _, ok := changed[in.Key]; ok {
			return true
		}
		if in.Formula != nil && in.Formula.ReadsAny(changed) {
			return true
		}
	}
	return false
}

func (ru *Rule) readsAny(keys map[string]bool) bool {
	for _, in := range ru.Inputs {
		if keys[in.Key] {
			return true
		}
	}
	return false
}

// RuleValues converts JSON-shaped values of r's declared fields (a stored record as read, a sample
// body) to the canonical values RuleCheck holds; a value it cannot read is left out, as a null one.
func RuleValues(r *Resource, values map[string]any) map[string]any {
	out := make(map[string]any, len(values))
	for k, v := range values {
		f, ok := r.byKey[k]
		if !ok || f.Managed || v == nil {
			continue
		}
		if t, ok := v.(time.Time); ok && f.Type == DateTime {
			out[k] = t.UTC()
			continue
		}
		if cv, err := Canonical(f, v); err == nil {
			out[k] = cv
		}
	}
	return out
}

// eval runs the rule; it reports whether it holds and otherwise the message to give.
func (ru *Rule) eval(self, old map[string]any) (bool, string) {
	vars := map[string]any{"self": self}
	if old != nil {
		vars["oldSelf"] = old
	}
	out, _, err := ru.prg.Eval(vars)
	if err != nil {
		if strings.HasPrefix(err.Error(), "no such key") {
			return true, "" // it read a null field: unknown, which passes (see Rule)
		}
		return false, ru.Message + " (the rule could not be evaluated: " + err.Error() + ")"
	}
	if b, ok := out.Value().(bool); ok && b {
		return true, ""
	}
	return false, ru.Message
}

// ruleRecord is values as a rule reads them: the readable declared fields that are not null, as CEL
// values; with computed, the formula fields are computed from values first.
func ruleRecord(r *Resource, values map[string]any, computed bool) map[string]any {
	if computed && len(r.Computed) > 0 {
		all := make(map[string]any, len(values)+len(r.Computed))
		for k, v := range values {
			all[k] = v
		}
		for k, v := range r.Compute(values) {
			all[k] = v
		}
		values = all
	}
	out := make(map[string]any, len(values))
	for k, v := range values {
		f, ok := r.byKey[k]
		if !ok || f.Managed || v == nil || celType(f.Type) == nil {
			continue
		}
		if cv, ok := celValue(f.Type, v); ok {
			out[k] = cv
		}
	}
	return out
}

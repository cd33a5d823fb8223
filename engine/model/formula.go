package model

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	"cel.dev/cel-go/cel"
	"cel.dev/cel-go/ext"

	"github.com/workspace-records/records/engine/field"
)

// Formula is the compiled expression of a computed field. Formulas are written in CEL
// (https://cel.dev), type-checked against the declared fields of their resource when the definitions
// load, and evaluated on every write; the result is stored in the field's column, so every read path
// (get, list, query, associations, sort, filter) sees the same value without evaluating anything.
//
// A formula reads the record's declared, non-formula fields as CEL values: text types and references
// as string, integer as int, decimal as double, boolean as bool, date and datetime as timestamp (a date
// at midnight UTC). Its value is null when any field it reads is null, or when evaluation fails
// (division by zero, overflow) — the way a spreadsheet shows an error cell rather than refusing the
// edit that caused it.
type Formula struct {
	Expr   string
	Inputs []*Field // the fields the expression reads, sorted by key
	out    Type
	prg    cel.Program
}

// formulaCostLimit bounds the work one evaluation may do; definitions are trusted, but a runaway
// expression (a comprehension over a huge string split) must not stall a write.
const formulaCostLimit = 100000

// celType is how a field of type t appears to a formula, nil when it cannot be read by one.
func celType(t Type) *cel.Type {
	switch t {
	case String, Text, Email, URL, Phone, Reference, UUID:
		return cel.StringType
	case Integer:
		return cel.IntType
	case Decimal:
		return cel.DoubleType
	case Boolean:
		return cel.BoolType
	case Date, DateTime:
		return cel.TimestampType
	}
	return nil
}

// formulaResult reports whether a formula yielding out can fill a field of type t.
func formulaResult(t Type, out *cel.Type) bool {
	switch t {
	case Decimal:
		return out.IsExactType(cel.DoubleType) || out.IsExactType(cel.IntType)
	case Integer:
		return out.IsExactType(cel.IntType)
	case String, Text, Email, URL, Phone:
		return out.IsExactType(cel.StringType)
	case Boolean:
		return out.IsExactType(cel.BoolType)
	case Date, DateTime:
		return out.IsExactType(cel.TimestampType)
	}
	return false
}

// compileFormulas type-checks the formula of every field of r that has one, against r's declared
// stored fields. It runs after all fields are compiled, so expressions may read fields declared after
// them.
func compileFormulas(r *Resource, exprs map[string]string) field.ErrorList {
	if len(exprs) == 0 {
		return nil
	}
	var errs field.ErrorList
	var vars []cel.EnvOption
	readable := map[string]*Field{}
	vague := false // a field of no known type is declared
	for _, f := range r.Declared() {
		if _, computed := exprs[f.Key]; computed {
			continue
		}
		if t := celType(f.Type); t != nil {
			vars = append(vars, cel.Variable(f.Key, t))
			readable[f.Key] = f
		} else if f.Type == 0 {
			// A type the meta-schema refused (and reported): the field is there, of no known type.
			vars = append(vars, cel.Variable(f.Key, cel.DynType))
			vague = true
		}
	}
	env, err := cel.NewEnv(append(vars, ext.Strings(), ext.Math())...)
	if err != nil {
		return field.ErrorList{field.New(field.CodeInvalid, field.NewPath("fields"), "formula environment: "+err.Error())}
	}
	keys := make([]string, 0, len(exprs))
	for k := range exprs {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, key := range keys {
		f := r.byKey[key]
		p := field.NewPath("fields").Child(key).Child("formula")
		if f.Type == Reference {
			errs = append(errs, field.New(field.CodeInvalid, p, "a reference field cannot be computed"))
			continue
		}
		ast, iss := env.Compile(exprs[key])
		if iss != nil && iss.Err() != nil {
			for _, e := range celErrors(p, iss) {
				for other := range exprs {
					if e.Message == "undeclared reference to '"+other+"'" {
						e.Message = fmt.Sprintf("reads formula field %q; formulas read stored fields only", other)
					}
				}
				errs = append(errs, e)
			}
			continue
		}
		if vague && ast.OutputType().IsExactType(cel.DynType) {
			continue // it reads a field of no known type: whether its result fits cannot be told
		}
		if !formulaResult(f.Type, ast.OutputType()) {
			errs = append(errs, field.New(field.CodeType, p, fmt.Sprintf("yields %s, which a %s field cannot hold", ast.OutputType(), f.Type)))
			continue
		}
		prg, err := env.Program(ast, cel.CostLimit(formulaCostLimit))
		if err != nil {
			errs = append(errs, field.New(field.CodeInvalid, p, err.Error()))
			continue
		}
		fm := &Formula{Expr: exprs[key], out: f.Type, prg: prg}
		seen := map[string]bool{}
		for _, ref := range ast.NativeRep().ReferenceMap() {
			if in, ok := readable[ref.Name]; ok && !seen[ref.Name] {
				seen[ref.Name] = true
				fm.Inputs = append(fm.Inputs, in)
			}
		}
		sort.Slice(fm.Inputs, func(i, j int) bool { return fm.Inputs[i].Key < fm.Inputs[j].Key })
		f.Formula = fm
		f.ReadOnly = true
		r.Computed = append(r.Computed, f)
	}
	return errs
}

// celErrors turns the issues of compiling a CEL expression (the value at p) into one error each, placed
// inside the expression's text (field.Error.Within): cel-go's lines are 1-based, its columns 0-based.
func celErrors(p field.Path, iss *cel.Issues) field.ErrorList {
	var errs field.ErrorList
	for _, ce := range iss.Errors() {
		e := field.New(field.CodeInvalid, p, strings.ReplaceAll(ce.Message, "\n", " "))
		if loc := ce.Location; loc != nil && loc.Line() > 0 && loc.Column() >= 0 {
			e.Within = field.Offset{Line: loc.Line(), Column: loc.Column() + 1}
		}
		errs = append(errs, e)
	}
	return errs
}

// Eval computes the formula from canonical input values (see Canonical), keyed by field key, and
// returns the canonical result; nil when an input is null or evaluation fails.
func (fm *Formula) Eval(values map[string]any) any {
	act := make(map[string]any, len(fm.Inputs))
	for _, in := range fm.Inputs {
		v := values[in.Key]
		if v == nil {
			return nil
		}
		cv, ok := celValue(in.Type, v)
		if !ok {
			return nil
		}
		act[in.Key] = cv
	}
	out, _, err := fm.prg.Eval(act)
	if err != nil {
		return nil
	}
	return canonicalResult(fm.out, out.Value())
}

func celValue(t Type, v any) (any, bool) {
	switch t {
	case Decimal:
		s, ok := v.(string)
		if !ok {
			return nil, false
		}
		f, err := strconv.ParseFloat(s, 64)
		return f, err == nil
	case Date:
		s, ok := v.(string)
		if !ok {
			return nil, false
		}
		d, err := time.Parse(time.DateOnly, s)
		return d, err == nil
	}
	return v, true
}

func canonicalResult(t Type, v any) any {
	switch t {
	case Decimal:
		var f float64
		switch x := v.(type) {
		case float64:
			f = x
		case int64:
			return strconv.FormatInt(x, 10)
		default:
			return nil
		}
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return nil
		}
		// Round away binary noise (0.1*3 = 0.30000000000000004) to the 15 significant digits a double
		// holds exactly, then print without an exponent.
		f, _ = strconv.ParseFloat(strconv.FormatFloat(f, 'g', 15, 64), 64)
		if f == 0 {
			return "0"
		}
		s, err := CanonicalDecimal(strconv.FormatFloat(f, 'f', -1, 64))
		if err != nil {
			return nil
		}
		return s
	case Date:
		if x, ok := v.(time.Time); ok && x.UTC().Year() >= 1 && x.UTC().Year() <= 9999 {
			return x.UTC().Format(time.DateOnly)
		}
	case DateTime:
		if x, ok := v.(time.Time); ok && x.UTC().Year() >= 1 && x.UTC().Year() <= 9999 {
			return x.UTC().Truncate(time.Microsecond)
		}
	case Integer:
		if x, ok := v.(int64); ok && x >= -maxSafeInt && x <= maxSafeInt {
			return x
		}
	case Boolean:
		if x, ok := v.(bool); ok {
			return x
		}
	default:
		if x, ok := v.(string); ok {
			if _, err := Canonical(&Field{Type: t}, x); err == nil {
				return x
			}
		}
	}
	return nil
}

// Compute returns the value of every computed field of r, keyed by field key, from the canonical
// values of the record's stored fields.
func (r *Resource) Compute(values map[string]any) map[string]any {
	out := make(map[string]any, len(r.Computed))
	for _, f := range r.Computed {
		out[f.Key] = f.Formula.Eval(values)
	}
	return out
}

// ReadsAny reports whether the formula reads any of the given field keys.
func (fm *Formula) ReadsAny(keys map[string]any) bool {
	for _, in := range fm.Inputs {
		if _, ok := keys[in.Key]; ok {
			return true
		}
	}
	return false
}

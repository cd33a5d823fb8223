package schema_test

import (
	"bytes"
	"encoding/json"
	"io"
	"reflect"
	"testing"
	"time"

	"github.com/workspace-records/records/engine/field"
	"github.com/workspace-records/records/engine/model"
	"github.com/workspace-records/records/engine/model/modeltest"
	"github.com/workspace-records/records/engine/schema"
)

// knownCodes are the codes a body validation may report (API details.errors[].code).
var knownCodes = map[field.Code]bool{
	field.CodeRequired: true, field.CodeUnknown: true, field.CodeReadOnly: true, field.CodeType: true,
	field.CodeFormat: true, field.CodeTooLong: true, field.CodeTooShort: true, field.CodeOption: true,
	field.CodeRange: true, field.CodeConflicting: true, field.CodeInvalid: true,
}

// FuzzValidate validates arbitrary JSON objects against real resource schemas (companies, deals and
// project_tasks: strings with options, integers and decimals with bounds, dates, datetimes, references,
// multi-selects, formulas) in every mode. Nothing may panic; a refused body comes with errors of the
// documented codes, each naming a member of the body; an accepted body holds only settable fields of
// the resource, and validating its canonical values again (as a client would send them back) accepts
// them unchanged.
func FuzzValidate(f *testing.F) {
	cat := modeltest.Shipped(f)
	set, err := schema.Compile(cat)
	if err != nil {
		f.Fatal(err)
	}
	names := []string{"companies", "deals", "project_tasks"}
	for _, s := range []string{
		`{"name":"Acme","industry":"software","employee_count":250,"annual_revenue":"12.50"}`,
		`{"name":"Acme","employee_count":1e9999999}`,
		`{"name":"Acme","employee_count":1e-999999}`,
		`{"name":"Acme","annual_revenue":1e-400}`,
		`{"name":"Acme","employee_count":-1}`,
		`{"name":"Acme","employee_count":12.0}`,
		`{"name":"Big deal","amount":1000.5,"probability":50,"close_date":"2026-03-01","currency":"EUR"}`,
		`{"name":"Deal","weighted_amount":5}`,
		`{"name":"Deal","close_date":"2026-02-30"}`,
		`{"name":"Deal","stage_id":"not-a-uuid"}`,
		`{"name":"Deal","cf__x":1,"custom_fields":{"x":2}}`,
		`{"id":"0190a6d4-0000-7000-8000-000000000001","created_at":"2026-01-01T00:00:00Z"}`,
		`{"name":null}`, `{}`, `{"name":"\u0000"}`, `{"name":["a"]}`, `{"custom_fields":[]}`,
		`{"title":"Task","due_at":"2026-01-01T25:00:00Z","tags":["a","a"]}`,
	} {
		for i := range names {
			for m := range 3 {
				f.Add([]byte(s), uint8(i), uint8(m))
			}
		}
	}
	f.Fuzz(func(t *testing.T, data []byte, which, mode uint8) {
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.UseNumber()
		var body map[string]any
		if dec.Decode(&body) != nil || body == nil {
			return
		}
		if _, err := dec.Token(); err != io.EOF {
			return
		}
		name := names[int(which)%len(names)]
		m := schema.Mode(mode % 3)
		sch := set.Resource(name)
		res, _ := cat.Resource(name)
		out, errs := sch.Validate(body, m)
		if (out == nil) == (len(errs) == 0) {
			t.Fatalf("%s %s: body %v and errors %v: want exactly one", name, m, out, errs)
		}
		if len(errs) > 0 {
			for _, e := range errs {
				if !knownCodes[e.Code] {
					t.Errorf("%s %s: error code %q is not a documented one: %v", name, m, e.Code, e)
				}
				// A member with an empty name is the one error whose path is empty.
				if (e.Field == "" && !(e.Code == field.CodeUnknown && hasEmptyKey(body))) || e.Message == "" {
					t.Errorf("%s %s: error without a field or message: %+v", name, m, e)
				}
			}
			return
		}
		for k, v := range out.Values {
			f, ok := res.Field(k)
			if !ok || f.Managed || f.Formula != nil || (m != schema.Import && f.ReadOnly) {
				t.Fatalf("%s %s: accepted a value for %q, which the body may not set", name, m, k)
			}
			if v != nil {
				if err := model.Check(f, v); err != nil {
					t.Fatalf("%s %s: accepted %q = %#v that fails its own check: %v", name, m, k, v, err)
				}
			}
		}
		// Round trip: the canonical values, as JSON a client would send back, validate to themselves.
		again := map[string]any{}
		for k, v := range out.Values {
			f, _ := res.Field(k)
			again[k] = model.JSONValue(f, v)
		}
		raw, err := json.Marshal(again)
		if err != nil {
			t.Fatalf("marshal %v: %v", again, err)
		}
		dec = json.NewDecoder(bytes.NewReader(raw))
		dec.UseNumber()
		var back map[string]any
		if err := dec.Decode(&back); err != nil {
			t.Fatal(err)
		}
		out2, errs := sch.Validate(back, m)
		if len(errs) > 0 {
			t.Fatalf("%s: canonical values %s refused on the way back: %v", name, raw, errs)
		}
		for k, v := range out.Values {
			if !sameValue(v, out2.Values[k]) {
				t.Fatalf("%s: %q canonical %#v became %#v on the way back", name, k, v, out2.Values[k])
			}
		}
	})
}

func hasEmptyKey(body map[string]any) bool {
	_, ok := body[""]
	return ok
}

func sameValue(a, b any) bool {
	if ta, ok := a.(time.Time); ok {
		tb, ok := b.(time.Time)
		return ok && ta.Equal(tb)
	}
	return reflect.DeepEqual(a, b)
}

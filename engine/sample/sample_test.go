package sample_test

import (
	"encoding/json"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/workspace-records/records/engine/field"
	"github.com/workspace-records/records/engine/model"
	"github.com/workspace-records/records/engine/model/modeltest"
	"github.com/workspace-records/records/engine/sample"
	"github.com/workspace-records/records/engine/schema"
	"github.com/workspace-records/records/engine/spec"
)

var (
	now  = time.Date(2026, 3, 4, 10, 15, 0, 0, time.UTC)
	ids  = []string{"0190a6d4-0000-7000-8000-000000000001", "0190a6d4-0000-7000-8000-000000000002"}
	refs = func(string) []string { return ids }

	phoneRE    = regexp.MustCompile(`^[0-9+().\-/ xX#*]*$`)
	decimalRE  = regexp.MustCompile(`^-?[0-9]+(\.[0-9]{1,2})?$`)
	integerRE  = regexp.MustCompile(`^-?[0-9]+$`)
	emailRE    = regexp.MustCompile(`^[a-z0-9.]+@[a-z0-9-]+(\.[a-z0-9-]+)+$`)
	datetimeRE = regexp.MustCompile(`^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$`)
	colorRE    = regexp.MustCompile(`^#[0-9A-F]{6}$`)
)

func compile(t *testing.T) (*model.Catalog, *schema.Set) {
	t.Helper()
	cat := modeltest.Shipped(t)
	sch, err := schema.Compile(cat)
	if err != nil {
		t.Fatal(err)
	}
	return cat, sch
}

// checkValue checks one JSON-shaped value against its field: Go type, model checks and formats.
func checkValue(t *testing.T, r *model.Resource, key string, v any) {
	t.Helper()
	f, ok := r.Field(key)
	if !ok {
		t.Fatalf("%s: unknown field %s", r.Name, key)
	}
	if !f.Writable() {
		t.Fatalf("%s: sets non-writable field %s", r.Name, key)
	}
	if v == nil {
		if f.Required {
			t.Fatalf("%s.%s: required field cleared", r.Name, key)
		}
		return
	}
	switch x := v.(type) {
	case string, bool:
	case json.Number:
		re := decimalRE
		if f.Type == model.Integer {
			re = integerRE
		}
		if !re.MatchString(string(x)) {
			t.Fatalf("%s.%s: number %q", r.Name, key, x)
		}
	default:
		t.Fatalf("%s.%s: value %v has Go type %T", r.Name, key, v, v)
	}
	cv, err := model.Canonical(f, v)
	if err == nil {
		err = model.Check(f, cv)
	}
	if err != nil {
		t.Fatalf("%s.%s = %#v: %v", r.Name, key, v, err)
	}
	s, _ := v.(string)
	switch f.Type {
	case model.Phone:
		if !phoneRE.MatchString(s) {
			t.Fatalf("%s.%s: phone %q", r.Name, key, s)
		}
	case model.Email:
		if !emailRE.MatchString(s) {
			t.Fatalf("%s.%s: email %q", r.Name, key, s)
		}
	case model.URL:
		if !strings.HasPrefix(s, "https://") {
			t.Fatalf("%s.%s: url %q", r.Name, key, s)
		}
	case model.Date:
		d, _ := time.Parse(time.DateOnly, s)
		if !strings.Contains(key, "birth") && (d.Before(now.AddDate(-2, 0, -2)) || d.After(now.AddDate(1, 0, 2))) {
			t.Fatalf("%s.%s: date %s outside the window around %s", r.Name, key, s, now)
		}
	case model.DateTime:
		d, _ := time.Parse(time.RFC3339, s)
		if !datetimeRE.MatchString(s) || d.Before(now.AddDate(-2, 0, -2)) || d.After(now.AddDate(1, 0, 2)) {
			t.Fatalf("%s.%s: datetime %s not UTC or outside the window around %s", r.Name, key, s, now)
		}
	case model.String:
		if (key == "color" || key == "colour") && !colorRE.MatchString(s) {
			t.Fatalf("%s.%s: colour %q", r.Name, key, s)
		}
	}
}

// Every body for every resource holds valid values, all required fields, and passes the create schema;
// every update holds one to three valid values and passes the update schema.
func TestBodiesAreValid(t *testing.T) {
	cat, sch := compile(t)
	g := sample.New(7)
	for _, r := range cat.Resources {
		writable := 0
		for _, f := range r.Declared() {
			if f.Writable() {
				writable++
			}
		}
		set, total := 0, 0
		for i := 0; i < 200; i++ {
			body := g.Body(r, refs, now)
			for k, v := range body {
				checkValue(t, r, k, v)
			}
			for _, f := range r.Declared() {
				if !f.Writable() {
					continue
				}
				_, present := body[f.Key]
				if f.Required && !present {
					t.Fatalf("%s: required %s missing from %v", r.Name, f.Key, body)
				}
				if !f.Required {
					total++
					if present {
						set++
					}
				}
			}
			b, errs := sch.Resource(r.Name).Validate(body, schema.Create)
			if errs != nil {
				t.Fatalf("%s create body %v: %v", r.Name, body, errs)
			}
			if errs := r.CheckRules(model.RuleCheck{Self: b.Values}); errs != nil {
				t.Fatalf("%s create body %v breaks the rules: %v", r.Name, body, errs)
			}

			upd := g.Update(r, nil, refs, now)
			if writable > 0 && (len(upd) < 1 || len(upd) > 3) {
				t.Fatalf("%s: update changes %d fields: %v", r.Name, len(upd), upd)
			}
			for k, v := range upd {
				checkValue(t, r, k, v)
			}
			ub, errs := sch.Resource(r.Name).Validate(upd, schema.Update)
			if errs == nil {
				if rerrs := r.CheckRules(model.RuleCheck{Self: ub.Values, Old: map[string]any{}, Changed: ub.Values}); rerrs != nil {
					t.Fatalf("%s update body %v breaks the rules: %v", r.Name, upd, rerrs)
				}
			}
			if errs != nil {
				t.Fatalf("%s update body %v: %v", r.Name, upd, errs)
			}
		}
		if total > 0 {
			if share := float64(set) / float64(total); share < 0.6 || share > 0.8 {
				t.Errorf("%s: %.0f%% of optional fields set, want about 70%%", r.Name, share*100)
			}
		}
	}
}

// Without reference targets, required references are the only required fields left out, and they are
// the only thing the create schema complains about.
func TestBodiesWithoutRefs(t *testing.T) {
	cat, sch := compile(t)
	for name, refs := range map[string]sample.Refs{"nil Refs": nil, "empty Refs": func(string) []string { return nil }} {
		g := sample.New(1)
		for _, r := range cat.Resources {
			for i := 0; i < 50; i++ {
				body := g.Body(r, refs, now)
				for k, v := range body {
					checkValue(t, r, k, v)
				}
				missing := map[string]bool{}
				for _, f := range r.Declared() {
					_, present := body[f.Key]
					switch {
					case f.Type == model.Reference && present:
						t.Fatalf("%s, %s: reference %s set without targets", name, r.Name, f.Key)
					case f.Type == model.Reference && f.Required && f.Writable():
						missing[f.Key] = true
					case f.Required && f.Writable() && !present:
						t.Fatalf("%s, %s: required %s missing", name, r.Name, f.Key)
					}
				}
				_, errs := sch.Resource(r.Name).Validate(body, schema.Create)
				for _, e := range errs {
					if e.Code != field.CodeRequired || !missing[e.Field] {
						t.Fatalf("%s, %s: unexpected problem %v in %v", name, r.Name, e, body)
					}
				}
				if len(errs) != len(missing) {
					t.Fatalf("%s, %s: problems %v, want one per required reference %v", name, r.Name, errs, missing)
				}
				if upd := g.Update(r, nil, refs, now); upd != nil {
					if _, errs := sch.Resource(r.Name).Validate(upd, schema.Update); errs != nil {
						t.Fatalf("%s, %s update body %v: %v", name, r.Name, upd, errs)
					}
				}
			}
		}
	}
}

func TestDeterministic(t *testing.T) {
	cat, _ := compile(t)
	run := func(seed uint64) []map[string]any {
		g := sample.New(seed)
		var out []map[string]any
		for _, r := range cat.Resources {
			for i := 0; i < 20; i++ {
				out = append(out, g.Body(r, refs, now), g.Update(r, nil, refs, now))
			}
		}
		return out
	}
	a, b := run(99), run(99)
	if !reflect.DeepEqual(a, b) {
		for i := range a {
			if !reflect.DeepEqual(a[i], b[i]) {
				t.Fatalf("same seed gave %v and %v", a[i], b[i])
			}
		}
	}
	if reflect.DeepEqual(a, run(100)) {
		t.Fatal("different seeds gave identical bodies")
	}
}

// Names vary: companies never repeat over 10,000 bodies; vocabularies use their list, then number it.
func TestNamesVary(t *testing.T) {
	cat, _ := compile(t)
	g := sample.New(3)
	companies, _ := cat.Resource("companies")
	seen := map[string]bool{}
	for i := 0; i < 10000; i++ {
		name := g.Body(companies, nil, now)["name"].(string)
		if seen[name] {
			t.Fatalf("company name %q repeated after %d bodies", name, i)
		}
		seen[name] = true
	}
	for _, r := range cat.Resources {
		names := map[string]bool{}
		for i := 0; i < 300; i++ {
			if name, ok := g.Body(r, refs, now)["name"].(string); ok {
				names[name] = true
			}
		}
		if f, ok := r.Field("name"); ok && f.Required && len(names) < 10 {
			t.Errorf("%s: only %d distinct names in 300 bodies: %v", r.Name, len(names), names)
		}
	}
	losses, _ := cat.Resource("loss_reasons")
	if name := sample.New(5).Body(losses, nil, now)["name"]; name != "Price too high" {
		t.Errorf("first loss reason = %v, want a listed reason", name)
	}
}

// Fields of one body agree: a contact's email uses their name; a company's website uses its domain.
func TestBodiesAreCoherent(t *testing.T) {
	cat, _ := compile(t)
	g := sample.New(11)
	contacts, _ := cat.Resource("contacts")
	companies, _ := cat.Resource("companies")
	for i := 0; i < 200; i++ {
		b := g.Body(contacts, nil, now)
		email, ok1 := b["email"].(string)
		first, ok2 := b["first_name"].(string)
		if ok1 && ok2 && email[0] != strings.ToLower(first)[0] {
			t.Errorf("contact %s: email %s does not match the name", first, email)
		}
		c := g.Body(companies, nil, now)
		if w, ok := c["website"].(string); ok {
			if d, ok := c["domain"].(string); ok && w != "https://www."+d {
				t.Errorf("company website %s, domain %s", w, d)
			}
		}
	}
}

// Values respect bounds and lengths that are unusual in the shipped definitions.
func TestOddBounds(t *testing.T) {
	lo, hi, frac := 0.5, 0.75, 0.005
	big := 3.0
	fields := []*model.Field{
		{Key: "ratio", Type: model.Decimal, Minimum: &frac, Maximum: &hi},
		{Key: "amount", Type: model.Decimal, Minimum: &lo, Maximum: &hi},
		{Key: "count", Type: model.Integer, Minimum: &big, Maximum: &big},
		{Key: "name", Type: model.String, MinLength: 40, MaxLength: 42},
		{Key: "description", Type: model.Text, MaxLength: 5},
		{Key: "mailing_country", Type: model.String, MinLength: 2, MaxLength: 2},
		{Key: "colour", Type: model.String, MaxLength: 7},
	}
	set := &spec.Set{Resources: []*spec.Resource{{
		File: "odd.yaml", Name: "odd", Label: "Odd", Group: "custom", Operations: []string{"list", "get", "create", "update"},
		Fields: []*spec.Field{
			{Key: "ratio", Type: "decimal", Required: true, Minimum: &frac, Maximum: &hi},
			{Key: "amount", Type: "decimal", Required: true, Minimum: &lo, Maximum: &hi},
			{Key: "count", Type: "integer", Required: true, Minimum: &big, Maximum: &big},
			{Key: "name", Type: "string", Required: true, MinLength: ptr(40), MaxLength: ptr(42)},
			{Key: "description", Type: "text", Required: true, MaxLength: ptr(5)},
			{Key: "mailing_country", Type: "string", Required: true, MinLength: ptr(2), MaxLength: ptr(2)},
			{Key: "colour", Type: "string", Required: true, MaxLength: ptr(7)},
		},
	}}}
	cat, errs := model.Compile(set)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	r, _ := cat.Resource("odd")
	g := sample.New(2)
	for i := 0; i < 200; i++ {
		body := g.Body(r, nil, now)
		for _, f := range fields {
			if _, ok := body[f.Key]; !ok {
				t.Fatalf("%s missing from %v", f.Key, body)
			}
		}
		for k, v := range body {
			checkValue(t, r, k, v)
		}
	}
}

func ptr(n int) *int { return &n }

// TestCustomValues: Custom fills a required custom field always and an optional one about 70% of the
// time, under its write key, with values the field's checks accept; it leaves declared keys alone.
func TestCustomValues(t *testing.T) {
	fields := []*model.Field{
		{Key: "employee_target", Type: model.Integer, Required: true, Filterable: true},
		{Key: "tier", Type: model.String, Options: []string{"gold", "silver"}, Filterable: true},
	}
	set := model.NewFieldSet("custom", fields)
	g := sample.New(7)
	r := &model.Resource{Name: "companies"}
	now := time.Date(2026, 11, 21, 0, 0, 0, 0, time.UTC)
	optional := 0
	const n = 1000
	for i := range n {
		body := map[string]any{"name": "kept"}
		g.Custom(r, set.Fields, body, nil, now)
		if body["name"] != "kept" {
			t.Fatalf("body %d: declared key changed: %v", i, body)
		}
		for _, f := range set.Fields {
			v, ok := body["cf__"+f.Key]
			if !ok {
				if f.Required {
					t.Fatalf("body %d lacks required %s", i, f.Key)
				}
				continue
			}
			if !f.Required {
				optional++
			}
			cv, err := model.Canonical(f, v)
			if err == nil {
				err = model.Check(f, cv)
			}
			if err != nil {
				t.Fatalf("body %d: %s = %v: %v", i, f.Key, v, err)
			}
		}
		if len(body) > 3 {
			t.Fatalf("body %d has keys beyond the fields: %v", i, body)
		}
	}
	if optional < n*6/10 || optional > n*8/10 {
		t.Errorf("optional field set in %d of %d bodies, want about 70%%", optional, n)
	}
}

// Bodies never repeat a unique key's value, declared (contacts.email, companies.domain) or custom.
func TestBodiesKeepUniqueKeysApart(t *testing.T) {
	cat, _ := compile(t)
	g := sample.New(7)
	custom := []*model.Field{{Key: "erp_id", Type: model.String, MaxLength: 255, Required: true, Unique: true, Column: "x"}}
	for _, name := range []string{"contacts", "companies"} {
		r, _ := cat.Resource(name)
		seen := map[string]bool{}
		for i := range 20000 {
			body := g.Body(r, func(string) []string { return nil }, now)
			g.Custom(r, custom, body, func(string) []string { return nil }, now)
			for _, f := range append(r.Declared(), custom...) {
				key := f.Key
				if !slices.Contains(r.Declared(), f) {
					key = "cf__" + f.Key
				}
				v, ok := body[key].(string)
				if !f.Unique || !ok {
					continue
				}
				if seen[key+"="+v] {
					t.Fatalf("%s body %d repeats %s %q", name, i, key, v)
				}
				seen[key+"="+v] = true
			}
		}
	}
}

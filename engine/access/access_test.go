package access_test

import (
	"maps"
	"testing"

	"github.com/workspace-records/records/engine/access"
	"github.com/workspace-records/records/engine/model"
	"github.com/workspace-records/records/engine/model/modeltest"
)

func role(t *testing.T, cat *model.Catalog, name string) *model.Role {
	t.Helper()
	if name == "" {
		return nil
	}
	r, ok := cat.Role(name)
	if !ok {
		t.Fatalf("no role %q", name)
	}
	return r
}

func resource(t *testing.T, cat *model.Catalog, name string) *model.Resource {
	t.Helper()
	r, ok := cat.Resource(name)
	if !ok {
		t.Fatalf("no resource %q", name)
	}
	return r
}

// TestFor derives policies from the shipped roles.yaml: the "*" default, per-resource overrides, record
// rules and field rules, and a formula inheriting the restriction of what it reads.
func TestFor(t *testing.T) {
	cat := modeltest.Shipped(t)
	for _, tc := range []struct {
		role, resource string // role "" is no role (admin tools)
		level          access.Level
		rule           access.Rule
		fields         map[string]access.Visibility // the keys checked; any other key is visible
		restricted     bool
	}{
		{"", "deals", access.Write, access.All, map[string]access.Visibility{"amount": access.Visible}, false},
		{"admin", "deals", access.Write, access.All, nil, false},
		{"member", "deals", access.Write, access.Owned, nil, false},
		{"member", "leads", access.Write, access.Owned, nil, false},
		{"member", "projects", access.Write, access.Department, nil, false},
		{"member", "contacts", access.Write, access.All, nil, false},
		{"member", "pipelines", access.Read, access.All, nil, false},
		{"member", "entity_members", access.Read, access.All, map[string]access.Visibility{"phone": access.Masked, "email": access.Visible}, true},
		{"member", "companies", access.Write, access.All, map[string]access.Visibility{"annual_revenue": access.Masked, "name": access.Visible}, true},
		{"viewer", "contacts", access.Read, access.All, map[string]access.Visibility{
			"email": access.Masked, "phone": access.Masked, "mobile_phone": access.Masked, "first_name": access.Visible}, true},
		{"viewer", "deals", access.Read, access.All, map[string]access.Visibility{
			"amount": access.Hidden, "weighted_amount": access.Hidden, "probability": access.Visible}, true},
		{"viewer", "automations", access.None, access.All, nil, false},
		{"no_api", "deals", access.Write, access.All, nil, false},
	} {
		t.Run(tc.role+"/"+tc.resource, func(t *testing.T) {
			p := access.For(role(t, cat, tc.role), resource(t, cat, tc.resource), "m1", "d1")
			if p.Level != tc.level || p.Rule != tc.rule {
				t.Errorf("level %v rule %v, want %v %v", p.Level, p.Rule, tc.level, tc.rule)
			}
			if p.Restricted() != tc.restricted {
				t.Errorf("Restricted() = %v, want %v", p.Restricted(), tc.restricted)
			}
			for key, want := range tc.fields {
				if got := p.Visibility(key); got != want {
					t.Errorf("Visibility(%s) = %v, want %v", key, got, want)
				}
				if got := p.Readable(key); got != (want == access.Visible) {
					t.Errorf("Readable(%s) = %v", key, got)
				}
			}
			if tc.role != "" && (p.Member != "m1" || p.Department != "d1") {
				t.Errorf("member %q department %q, want m1 d1", p.Member, p.Department)
			}
		})
	}
}

// TestFormulaInheritsRestriction builds a role by hand: a formula is as restricted as its most
// restricted input, and an explicit rule on the formula itself is not loosened by visible inputs.
func TestFormulaInheritsRestriction(t *testing.T) {
	cat := modeltest.Shipped(t)
	deals := resource(t, cat, "deals")
	for _, tc := range []struct {
		rules map[string]string
		want  access.Visibility // of weighted_amount = amount * probability
	}{
		{nil, access.Visible},
		{map[string]string{"amount": "masked"}, access.Masked},
		{map[string]string{"probability": "hidden"}, access.Hidden},
		{map[string]string{"amount": "masked", "probability": "hidden"}, access.Hidden},
		{map[string]string{"weighted_amount": "hidden"}, access.Hidden},
		{map[string]string{"weighted_amount": "masked", "amount": "hidden"}, access.Hidden},
		{map[string]string{"name": "hidden"}, access.Visible},
	} {
		r := &model.Role{Name: "custom", Resources: map[string]string{"*": "read"},
			FieldRules: map[string]map[string]string{"deals": tc.rules}}
		if got := access.For(r, deals, "", "").Visibility("weighted_amount"); got != tc.want {
			t.Errorf("field rules %v: weighted_amount is %v, want %v", tc.rules, got, tc.want)
		}
	}
}

// TestWritable: writing needs write access, a writable field (not managed, not read-only, not computed)
// and a visible one.
func TestWritable(t *testing.T) {
	cat := modeltest.Shipped(t)
	for _, tc := range []struct {
		role, resource, key string
		want                bool
	}{
		{"admin", "companies", "annual_revenue", true},
		{"admin", "companies", "id", false},              // managed
		{"admin", "companies", "created_at", false},      // managed
		{"admin", "deals", "weighted_amount", false},     // computed
		{"member", "companies", "name", true},            // write access, visible
		{"member", "companies", "annual_revenue", false}, // masked
		{"member", "pipelines", "name", false},           // read access
		{"viewer", "contacts", "first_name", false},      // read access
		{"", "contacts", "email", true},                  // unrestricted
	} {
		r := resource(t, cat, tc.resource)
		f, ok := r.Field(tc.key)
		if !ok {
			t.Fatalf("%s has no field %s", tc.resource, tc.key)
		}
		if got := access.For(role(t, cat, tc.role), r, "m", "").Writable(f); got != tc.want {
			t.Errorf("%s: Writable(%s.%s) = %v, want %v", tc.role, tc.resource, tc.key, got, tc.want)
		}
	}
}

// TestApply redacts records as the viewer and the member roles see them.
func TestApply(t *testing.T) {
	cat := modeltest.Shipped(t)
	for _, tc := range []struct {
		name, role, resource string
		in, want             map[string]any
	}{
		{"masked strings keep their shape", "viewer", "contacts",
			map[string]any{"first_name": "Jane", "email": "jane@example.com", "phone": "+1 555 0100"},
			map[string]any{"first_name": "Jane", "email": "j•••@•••.com", "phone": "+•••"}},
		{"an absent masked field stays absent", "viewer", "contacts",
			map[string]any{"first_name": "Jane"},
			map[string]any{"first_name": "Jane"}},
		{"a null masked field stays null", "viewer", "contacts",
			map[string]any{"email": nil},
			map[string]any{"email": nil}},
		{"hidden fields and formulas over them are removed", "viewer", "deals",
			map[string]any{"name": "Big", "amount": "100.00", "weighted_amount": "50.00", "probability": int64(50)},
			map[string]any{"name": "Big", "probability": int64(50)}},
		{"a masked number becomes null", "member", "companies",
			map[string]any{"name": "Acme", "annual_revenue": "1000000.00"},
			map[string]any{"name": "Acme", "annual_revenue": nil}},
		{"admin sees everything", "admin", "contacts",
			map[string]any{"email": "jane@example.com"},
			map[string]any{"email": "jane@example.com"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := access.For(role(t, cat, tc.role), resource(t, cat, tc.resource), "m", "")
			if got := p.Apply(maps.Clone(tc.in)); !maps.Equal(got, tc.want) {
				t.Errorf("Apply(%v) = %v, want %v", tc.in, got, tc.want)
			}
		})
	}
}

func TestMask(t *testing.T) {
	email := &model.Field{Key: "email", Type: model.Email}
	text := &model.Field{Key: "name", Type: model.String}
	date := &model.Field{Key: "day", Type: model.Date}
	for _, tc := range []struct {
		name string
		f    *model.Field
		v    any
		want any
	}{
		{"email", email, "jane@example.com", "j•••@•••.com"},
		{"email with subdomain", email, "ann@mail.example.co.uk", "a•••@•••.uk"},
		{"email without a dot", email, "root@localhost", "r•••@•••"},
		{"email without an at", email, "jane", "j•••"},
		{"text", text, "Secret", "S•••"},
		{"multibyte first rune", text, "Ärger", "Ä•••"},
		{"empty text", text, "", ""},
		{"nil", text, nil, nil},
		{"number", text, int64(5), nil},
		{"date is not textual", date, "2026-01-02", nil},
		{"no field", nil, "x", nil},
	} {
		if got := access.Mask(tc.f, tc.v); got != tc.want {
			t.Errorf("%s: Mask(%v) = %v, want %v", tc.name, tc.v, got, tc.want)
		}
	}
}

func TestLevelsAndNames(t *testing.T) {
	for s, want := range map[string]access.Level{"write": access.Write, "read": access.Read, "none": access.None, "": access.None, "admin": access.None} {
		if got := access.ParseLevel(s); got != want {
			t.Errorf("ParseLevel(%q) = %v, want %v", s, got, want)
		}
	}
	if access.Read >= access.Write || access.None >= access.Read {
		t.Error("levels are not in increasing order")
	}
	for got, want := range map[string]string{
		access.Write.String(): "write", access.Department.String(): "department", access.Owned.String(): "owned",
		access.All.String(): "all", access.Masked.String(): "masked", access.Hidden.String(): "hidden",
	} {
		if got != want {
			t.Errorf("String() = %q, want %q", got, want)
		}
	}
}

package suggest

import "testing"

func TestNearest(t *testing.T) {
	commands := []string{"workspace create", "workspace list", "key list", "key create", "migrate", "seed"}
	tests := map[string]struct {
		name string
		want string // "" for no suggestion
	}{
		"swapped letters":    {"wrokspace create", "workspace create"},
		"one letter missing": {"key lst", "key list"},
		"case":               {"MIGRATE", "migrate"},
		"exact":              {"seed", "seed"},
		"far from all":       {"nonsense", ""},
		"short and wrong":    {"xy", ""},
		"empty":              {"", ""},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, ok := Nearest(tc.name, commands)
			if ok != (tc.want != "") || got != tc.want {
				t.Errorf("Nearest(%q) = %q, %v; want %q", tc.name, got, ok, tc.want)
			}
		})
	}
}

func TestUnknown(t *testing.T) {
	plans := []string{"scale", "free", "growth", "pro", "enterprise"}
	tests := map[string]struct {
		name string
		want string
	}{
		"typo":      {"grwth", `unknown plan "grwth" (did you mean "growth"? valid: enterprise, free, growth, pro, scale)`},
		"no near":   {"platinum", `unknown plan "platinum" (valid: enterprise, free, growth, pro, scale)`},
		"empty set": {"x", ""},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			valid := plans
			want := tc.want
			if name == "empty set" {
				valid, want = nil, `unknown plan "x" (there are none)`
			}
			if got := Unknown("plan", tc.name, valid); got != want {
				t.Errorf("Unknown(%q) =\n %s\nwant\n %s", tc.name, got, want)
			}
		})
	}
}

func TestDistance(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want int
	}{{"", "", 0}, {"abc", "", 3}, {"kitten", "sitting", 3}, {"ab", "ba", 1}, {"wrokspace", "workspace", 1}, {"lst", "list", 1}} {
		if got := distance(tc.a, tc.b); got != tc.want {
			t.Errorf("distance(%q, %q) = %d, want %d", tc.a, tc.b, got, tc.want)
		}
	}
}

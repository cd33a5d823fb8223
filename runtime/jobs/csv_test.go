package jobs

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"math"
	"testing"
)

// csvRow is what encoding/csv writes for fields with its defaults.
func csvRow(t *testing.T, fields []string) []byte {
	var b bytes.Buffer
	w := csv.NewWriter(&b)
	if err := w.Write(fields); err != nil {
		t.Fatal(err)
	}
	w.Flush()
	return b.Bytes()
}

// FuzzAppendCSVField holds the export's hand-written CSV to encoding/csv's bytes, for any text.
func FuzzAppendCSVField(f *testing.F) {
	for _, s := range []string{"", "plain", "a,b", `say "hi"`, "two\nlines", "cr\r\nlf", " lead", "\tlead", `\.`, `\..`, "\u00a0nbsp", "ü", "x\"", ",", "\r"} {
		f.Add(s, "second")
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		got := appendCSVValues(nil, []any{a, b})
		if want := csvRow(t, []string{a, b}); !bytes.Equal(got, want) {
			t.Fatalf("appendCSVValues(%q, %q) = %q, encoding/csv writes %q", a, b, got, want)
		}
	})
}

// appendCell writes numbers and booleans as JSON does, lists joined by ";", objects as JSON.
func TestAppendCell(t *testing.T) {
	for _, c := range []struct {
		v    any
		want string
	}{
		{nil, ""},
		{"text, with comma", `"text, with comma"`},
		{int64(-42), "-42"},
		{true, "true"},
		{json.Number("12.50"), "12.50"},
		{[]any{"a", "b c"}, "a;b c"},
		{map[string]any{"b": 1, "a": "x"}, `"{""a"":""x"",""b"":1}"`},
	} {
		if got := string(appendCell(nil, c.v)); got != c.want {
			t.Errorf("appendCell(%#v) = %q, want %q", c.v, got, c.want)
		}
	}
	for _, f := range []float64{0, math.Copysign(0, -1), 1, -1.5, 1e-6, 9.99e-7, 1e20, 1e21, 123456789.125, math.MaxFloat64, math.SmallestNonzeroFloat64, 0.1 + 0.2} {
		want, _ := json.Marshal(f)
		if got := string(appendCell(nil, f)); got != string(want) {
			t.Errorf("appendCell(%v) = %q, encoding/json writes %q", f, got, want)
		}
	}
}

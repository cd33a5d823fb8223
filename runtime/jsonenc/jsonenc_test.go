package jsonenc

import (
	"bytes"
	"encoding/json"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

// same fails t unless Marshal(v) is json.Marshal(v), byte for byte, error for error.
func same(t testing.TB, v any) {
	t.Helper()
	want, werr := json.Marshal(v)
	got, gerr := Marshal(v)
	if (werr != nil) != (gerr != nil) {
		t.Fatalf("%#v: error %v, encoding/json's %v", v, gerr, werr)
	}
	if werr == nil && !bytes.Equal(got, want) {
		t.Fatalf("%#v:\n got %s\nwant %s", v, got, want)
	}
}

func TestEdges(t *testing.T) {
	for _, v := range []any{
		nil, true, false, "", "plain", `"quoted" \ back`, "<script>&amp;</script>", "tab\tnew\nline\rcr\bbs\fff",
		"\x00\x01\x1f\x7f", "é ü 日本 🎉", "\u2028\u2029", "bad \xff utf8 \xc3", "\xed\xa0\x80",
		0.0, -0.0, 1.0, -1.5, 1e20, 1e21, 1e-6, 1e-7, 123456789.125, math.MaxFloat64, math.SmallestNonzeroFloat64,
		float32(1e-7), float32(3.14), float32(1e21),
		math.NaN(), math.Inf(1), json.Number(""), json.Number("12.50"), json.Number("-0"), json.Number("1e+09"),
		json.Number("01"), json.Number("1."), json.Number("abc"), json.Number("-"), json.Number("1e"),
		0, -7, int64(math.MinInt64), int32(5), uint64(math.MaxUint64),
		[]any(nil), []any{}, map[string]any(nil), map[string]any{}, []string(nil), []string{"a", "<b>"},
		map[string]string(nil), map[string]string{"z": "1", "a": "&"},
		map[string]any{"b": 1.5, "a": []any{nil, "x", map[string]any{"ü": true, "<": json.Number("3")}}, "": "empty key", "\xff": 1.0},
		time.Date(2026, 11, 25, 1, 2, 3, 456000000, time.UTC), json.RawMessage(`{"b": 1, "a" : "<"}`), struct{ A int }{1},
		[]any{math.NaN()}, map[string]any{"x": math.Inf(-1)},
	} {
		same(t, v)
	}
}

// randomValue makes a decoded-JSON-like value of depth at most d.
func randomValue(r *rand.Rand, d int) any {
	n := r.IntN(10)
	if d == 0 && n >= 7 {
		n = r.IntN(7)
	}
	switch n {
	case 0:
		return nil
	case 1:
		return r.IntN(2) == 0
	case 2:
		return randomString(r)
	case 3:
		exp := r.IntN(60) - 30
		return (r.Float64() - 0.5) * math.Pow(10, float64(exp))
	case 4:
		return json.Number(strings.TrimPrefix(json.Number(randomNumber(r)).String(), "+"))
	case 5:
		return r.Int64() >> r.IntN(64)
	case 6:
		return randomString(r)
	case 7, 8:
		m := map[string]any{}
		for range r.IntN(8) {
			m[randomString(r)] = randomValue(r, d-1)
		}
		return m
	default:
		s := make([]any, r.IntN(6))
		for i := range s {
			s[i] = randomValue(r, d-1)
		}
		return s
	}
}

func randomNumber(r *rand.Rand) string {
	b, _ := json.Marshal((r.Float64() - 0.5) * math.Pow(10, float64(r.IntN(40)-20)))
	return string(b)
}

func randomString(r *rand.Rand) string {
	const alphabet = "ab<>&\"\\\n\t\x00\x1f\x7fé日🎉\u2028\xff "
	var sb strings.Builder
	for range r.IntN(12) {
		if r.IntN(3) == 0 {
			sb.WriteByte(alphabet[r.IntN(len(alphabet))]) // also splits multi-byte characters
		} else {
			sb.WriteString(string([]rune(alphabet)[r.IntN(len([]rune(alphabet)))]))
		}
	}
	return sb.String()
}

func TestRandomValues(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for range 20000 {
		same(t, randomValue(r, 4))
	}
}

// FuzzDocuments: any JSON document, decoded as the API decodes bodies (UseNumber) or plainly, encodes
// as encoding/json encodes it; so does any string.
func FuzzDocuments(f *testing.F) {
	for _, s := range []string{`{"a":1,"b":[true,null,"x<y"]}`, `"\u2028"`, `1e-7`, `[{"é":{}}]`, "\xff"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		same(t, string(data))
		var plain any
		if json.Unmarshal(data, &plain) == nil {
			same(t, plain)
		}
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.UseNumber()
		var num any
		if dec.Decode(&num) == nil {
			same(t, num)
		}
	})
}

func record() map[string]any {
	return map[string]any{"id": "01a2105e-6053-7d76-8536-82fc6c78bff3", "name": "Bench company 12345", "domain": "b-1.example.com",
		"industry": "software", "employee_count": json.Number("12345"), "annual_revenue": nil, "billing_city": "Berlin",
		"billing_country": "DE", "created_at": "2026-11-25T01:42:30.227883Z", "updated_at": "2026-11-25T01:42:30.227883Z",
		"owner_id": nil, "archived": false, "version": json.Number("1"), "cf__employee_target": json.Number("3"),
		"tags": []any{"a", "b"}}
}

func BenchmarkRecord(b *testing.B) {
	rec := record()
	b.Run("jsonenc", func(b *testing.B) {
		for b.Loop() {
			_, _ = Marshal(rec)
		}
	})
	b.Run("encoding_json", func(b *testing.B) {
		for b.Loop() {
			_, _ = json.Marshal(rec)
		}
	})
}

// Objects of one size but different keys, encoded in turn, each keep their own order.
func TestKeyOrderCache(t *testing.T) {
	for range 3 {
		same(t, map[string]any{"b": 1.0, "a": 2.0})
		same(t, map[string]any{"z": 1.0, "c": 2.0})
		same(t, map[string]any{"b": 1.0, "z": 2.0})
		same(t, []any{map[string]any{"b": 1.0, "a": 2.0}, map[string]any{"a": 1.0, "c": map[string]any{"y": 1.0, "x": 2.0}}})
	}
}

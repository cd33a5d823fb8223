package strictjson_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/workspace-records/records/engine/strictjson"
)

// encoding/json, which this package exists to avoid for request input, keeps the last of two members
// of the same name and matches struct fields case-insensitively: the hazards the tests below refuse.
func TestEncodingJSONHazards(t *testing.T) {
	var m map[string]any
	if err := json.Unmarshal([]byte(`{"email":"a","email":"b"}`), &m); err != nil || m["email"] != "b" {
		t.Fatalf("encoding/json no longer keeps the last duplicate (%v, %v): revisit this package's doc", m, err)
	}
	var s struct{ Email string }
	if err := json.Unmarshal([]byte(`{"EMAIL":"x"}`), &s); err != nil || s.Email != "x" {
		t.Fatalf("encoding/json no longer folds case (%+v, %v): revisit this package's doc", s, err)
	}
}

func TestDuplicates(t *testing.T) {
	for _, c := range []struct{ in, path string }{
		{`{"email":"a","email":"b"}`, "email"},
		{`{"email":"a","email":"a"}`, "email"}, // even the same value
		{`{"name":"x","n\u0061me":"y"}`, "name"},
		{`{"custom_fields":{"tier":1,"tier":2}}`, "custom_fields.tier"},
		{`{"filters":[{"field":"name","op":"eq","value":"a","field":"amount"}]}`, "filters[0].field"},
		{`[{"field":"a"},{"op":"eq","op":"ne"}]`, "[1].op"},
		{`{"a":{"b":{"c":[1,{"d":1,"d":2}]}}}`, "a.b.c[1].d"},
		{`{"\ud800":1,"\udfff":2}`, "\ufffd"}, // both unescape to U+FFFD
		{`{"":1,"":2}`, ""},
	} {
		_, err := strictjson.Decode([]byte(c.in))
		var dup *strictjson.DuplicateError
		if !errors.As(err, &dup) || dup.Path != c.path {
			t.Errorf("%s: got %v, want a duplicate at %q", c.in, err, c.path)
		}
	}
}

// Names differing in case are distinct members: decoding keeps both, so that the caller's validation
// refuses the one it does not know rather than either silently winning.
func TestCaseVariantsStayDistinct(t *testing.T) {
	v, err := strictjson.Decode([]byte(`{"email":"a","Email":"b","EMAIL":"c","ｅmail":"d"}`))
	if err != nil {
		t.Fatal(err)
	}
	m := v.(map[string]any)
	if len(m) != 4 || m["email"] != "a" || m["Email"] != "b" || m["EMAIL"] != "c" {
		t.Errorf("decoded %v", m)
	}
}

func TestRefused(t *testing.T) {
	for _, in := range []string{
		``, ` `, `{`, `{"a":1} {}`, `{"a":1}]`, `[1,]`, `{"a" 1}`, "{\"a\":\"\xff\"}", `{'a':1}`, `NaN`,
		strings.Repeat("[", strictjson.MaxDepth+2) + strings.Repeat("]", strictjson.MaxDepth+2),
	} {
		if v, err := strictjson.Decode([]byte(in)); err == nil {
			t.Errorf("%q accepted as %v", in, v)
		}
	}
	if _, err := strictjson.Decode([]byte(strings.Repeat("[", strictjson.MaxDepth) + strings.Repeat("]", strictjson.MaxDepth))); err != nil {
		t.Errorf("nesting of %d refused: %v", strictjson.MaxDepth, err)
	}
}

func TestNumbersExact(t *testing.T) {
	v, err := strictjson.Decode([]byte(`{"amount":12345678901234567890.123456789,"n":1e999}`))
	if err != nil {
		t.Fatal(err)
	}
	m := v.(map[string]any)
	if m["amount"] != json.Number("12345678901234567890.123456789") || m["n"] != json.Number("1e999") {
		t.Errorf("numbers not kept as sent: %#v", m)
	}
}

// FuzzDecode: the decoder never panics; what it accepts, encoding/json accepts with the same meaning;
// and it never accepts an object that names a member twice.
func FuzzDecode(f *testing.F) {
	for _, s := range []string{
		`{}`, `[]`, `{"name":"Acme","amount":12.50,"tags":["a"],"nested":{"x":null}}`,
		`{"a":1,"a":2}`, `{"a":{"b":1,"b":2}}`, `[{"x":1},{"x":1,"x":1}]`, `{"n\u0061me":1,"name":2}`,
		`{"Email":"a","email":"b"}`, `{"WorkSpace_Id":"x"}`, `{"a":`, `{"a":1} {}`, "{\"a\":\"\xff\"}",
		`{"a":1e999}`, `{"":""}`, `"str"`, `null`, `{"a":[[[[[[]]]]]]}`, `{"\ud800":1,"\udfff":2}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		v, err := strictjson.Decode(data)
		if err != nil {
			return
		}
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.UseNumber()
		var want any
		if err := dec.Decode(&want); err != nil {
			t.Fatalf("accepted %q that encoding/json refuses: %v", data, err)
		}
		a, _ := json.Marshal(v)
		b, _ := json.Marshal(want)
		if !bytes.Equal(a, b) {
			t.Fatalf("decoded %s, encoding/json %s", a, b)
		}
		if n := countMembers(t, data); n != members(v) {
			t.Fatalf("accepted %q with %d member names for %d members: a name was repeated", data, n, members(v))
		}
	})
}

// countMembers counts the member names of every object in data by walking its tokens.
func countMembers(t *testing.T, data []byte) int {
	dec := json.NewDecoder(bytes.NewReader(data))
	type frame struct{ object, wantKey bool }
	var stack []frame
	n := 0
	for {
		tok, err := dec.Token()
		if err != nil {
			return n
		}
		top := len(stack) - 1
		if d, ok := tok.(json.Delim); ok {
			switch d {
			case '{', '[':
				if top >= 0 && stack[top].object {
					stack[top].wantKey = true
				}
				stack = append(stack, frame{object: d == '{', wantKey: true})
			default:
				stack = stack[:top]
			}
			continue
		}
		if top >= 0 && stack[top].object {
			if stack[top].wantKey {
				n++
			}
			stack[top].wantKey = !stack[top].wantKey
		}
	}
}

func members(v any) int {
	switch x := v.(type) {
	case map[string]any:
		n := len(x)
		for _, e := range x {
			n += members(e)
		}
		return n
	case []any:
		n := 0
		for _, e := range x {
			n += members(e)
		}
		return n
	}
	return 0
}

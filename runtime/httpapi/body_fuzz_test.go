package httpapi

import (
	"bytes"
	"encoding/json"
	"testing"
)

// FuzzDecodeObject: the body decoder never panics, only ever returns an object, and agrees with
// encoding/json on every body it accepts.
func FuzzDecodeObject(f *testing.F) {
	for _, s := range []string{
		`{}`, `{"name":"Acme","amount":12.50,"tags":["a"],"nested":{"x":null}}`, `{"a":1,"a":2}`, `[]`, `{"a":`,
		`{"a":1} {}`, "{\"a\":\"\xff\"}", `{"a":1e999}`, `{"":""}`, `"str"`, `null`, `{"a":[[[[[[]]]]]]}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		obj, err := DecodeObject(data)
		if err != nil {
			return
		}
		if obj == nil {
			t.Fatal("nil object without error")
		}
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.UseNumber()
		var want map[string]any
		if err := dec.Decode(&want); err != nil {
			t.Fatalf("accepted %q that encoding/json refuses: %v", data, err)
		}
		a, _ := json.Marshal(obj)
		b, _ := json.Marshal(want)
		if !bytes.Equal(a, b) {
			t.Fatalf("decoded %s, encoding/json %s", a, b)
		}
	})
}

package idempotency_test

import (
	"bytes"
	"encoding/json"
	"io"
	"strings"
	"testing"

	"github.com/workspace-records/records/runtime/idempotency"
)

// FuzzValidKey: an Idempotency-Key is accepted exactly when SPEC.md allows it — 1 to 255 printable
// ASCII characters — whatever bytes arrive in the header.
func FuzzValidKey(f *testing.F) {
	for _, s := range []string{"", "a", "0190a6d4-0000-7000-8000-000000000001", strings.Repeat("k", 255), strings.Repeat("k", 256),
		" ", "~", "\x7f", "\x1f", "tab\there", "é", "key\x00", "\xff\xfe"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, k string) {
		want := len(k) >= 1 && len(k) <= 255
		for _, r := range []byte(k) {
			if r < 0x20 || r > 0x7e {
				want = false
			}
		}
		if got := idempotency.ValidKey(k); got != want {
			t.Fatalf("ValidKey(%q) = %v, want %v", k, got, want)
		}
	})
}

// FuzzFingerprint: a request's fingerprint does not depend on the order of the body's members or its
// whitespace, and changes with the method, the path, the query or the body's content. Methods and
// queries never hold a line feed over HTTP (the request line cannot); a path may (%0A decodes to one).
func FuzzFingerprint(f *testing.F) {
	f.Add("POST", "/v1/companies", "", []byte(`{"name":"Acme","employee_count":12}`), "/v1/deals", "model_id=x")
	f.Add("PATCH", "/v1/companies/0190a6d4-0000-7000-8000-000000000001", "a=1", []byte(`{"b":[1,{"c":null}],"a":"\n"}`), "/v1/companies/\na=1", "")
	f.Add("POST", "/v1/a\nb", "c", []byte(`{}`), "/v1/a", "b\nc")
	f.Add("DELETE", "/v1/x", "", []byte(`{"reason":"1.0"}`), "/v1/x", "")
	f.Fuzz(func(t *testing.T, method, path, query string, body []byte, path2, query2 string) {
		if strings.Contains(method, "\n") || strings.Contains(query, "\n") || strings.Contains(query2, "\n") {
			return
		}
		dec := json.NewDecoder(bytes.NewReader(body))
		dec.UseNumber()
		var obj map[string]any
		if dec.Decode(&obj) != nil || obj == nil {
			return
		}
		if _, err := dec.Token(); err != io.EOF {
			return
		}
		fp := idempotency.Fingerprint(method, path, query, obj)
		if len(fp) != 64 {
			t.Fatalf("fingerprint %q: want 64 hex characters", fp)
		}
		// The same body with its members reordered and reindented.
		again, err := json.MarshalIndent(obj, "  ", "\t")
		if err != nil {
			return // a value encoding/json cannot write back (invalid UTF-8 was replaced on decode)
		}
		dec = json.NewDecoder(bytes.NewReader(again))
		dec.UseNumber()
		var obj2 map[string]any
		if err := dec.Decode(&obj2); err != nil {
			t.Fatal(err)
		}
		if fp2 := idempotency.Fingerprint(method, path, query, obj2); fp2 != fp {
			t.Fatalf("the same body reformatted changed the fingerprint: %s vs %s", body, again)
		}
		if (path2 != path || query2 != query) && idempotency.Fingerprint(method, path2, query2, obj) == fp {
			t.Fatalf("%q?%q and %q?%q share a fingerprint", path, query, path2, query2)
		}
		if idempotency.Fingerprint(method+"X", path, query, obj) == fp {
			t.Fatalf("methods %q and %q share a fingerprint", method, method+"X")
		}
		obj2["\x00fuzz"] = true
		if idempotency.Fingerprint(method, path, query, obj2) == fp {
			t.Fatal("a body with one more member shares the fingerprint")
		}
	})
}

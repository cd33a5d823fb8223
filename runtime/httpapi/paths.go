package httpapi

import (
	"net/url"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/workspace-records/records/engine/apierr"
	"github.com/workspace-records/records/engine/field"
)

// Paths with control characters. ServeHTTP refuses a request whose path holds a control character or
// bytes that are not UTF-8, with 400 invalid_request and before routing, before any key is checked.
//
// The reason is bunrouter's lookup (node._findRoute, v1.0.23). Each node indexes its static children by
// their first byte in a table that covers minChar..maxChar. A node without static children (one whose
// only child is a :param, or a leaf such as /healthz) keeps the zero index: minChar = maxChar = 0 and a
// nil table. The range check passes for the byte 0 alone, and table[0] then panics with "index out of
// range [0] with length 0". So a NUL byte right after such a node panics the router, for example
// /v1/admin/roles/%00, /v1/companies/by/domain/%00, /v1/companies/query%00 or /healthz%00. net/http
// decodes %00 into URL.Path, and the router reads URL.Path unless URL.RawPath is set. That is the only
// input that panics it: every other byte falls outside an empty table's range or inside a real table,
// odd % escapes never reach a handler (net/http refuses them), '//' and trailing slashes are answered
// 404 before routing, long segments and non-ASCII bytes only compare strings, and no route has a
// wildcard, whose length bunrouter keeps in a uint16. Refusing every control character guards the
// class, not only NUL. No parameter of any route, whether an id, a name, a key or a value, may hold a
// control character anyway.
//
// The rule, as the OpenAPI document states it: the path, percent-decoded, must be UTF-8 text without
// control characters. That means no C0 control (U+0000–U+001F), no DEL (U+007F) and no C1 control
// (U+0080–U+009F), since C1 controls are as invisible in logs and terminals as C0. Bytes that are not
// UTF-8 are refused too: no stored value can hold them (PostgreSQL refuses them in text), and an error
// message that echoed them would not be JSON text. A segment that still holds a percent-escape once
// decoded is decoded once more and held to the same rule, because the upsert route decodes its key and
// value a second time (/v1/companies/by/domain/%2500 would otherwise hand it a NUL). Raw control bytes
// in the request line never get here: net/http refuses them, and TransportErrors answers that refusal in
// the envelope.

// pathRefused reports whether the request path u names is refused before routing: its decoded path,
// the escaped form the router may read instead (RawPath), or a segment of it decoded once more holds a
// control character or bytes that are not UTF-8.
func pathRefused(u *url.URL) bool {
	if badPathText(u.Path) || badPathText(u.RawPath) {
		return true
	}
	if !strings.Contains(u.Path, "%") {
		return false
	}
	for seg := range strings.SplitSeq(u.Path, "/") {
		if !strings.Contains(seg, "%") {
			continue
		}
		if twice, err := url.PathUnescape(seg); err == nil && badPathText(twice) {
			return true
		}
	}
	return false
}

// badPathText reports whether s is not UTF-8 or holds a control character (Unicode category Cc:
// U+0000–U+001F, U+007F–U+009F).
func badPathText(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f {
			// Only text with a control byte or a byte of 0x80 and up needs a closer look.
			return !utf8.ValidString(s[i:]) || strings.ContainsFunc(s[i:], unicode.IsControl)
		}
	}
	return false
}

// errRefusedPath is the answer to a refused path. It does not echo the path, which holds the characters
// refused.
func errRefusedPath() *apierr.Error {
	return apierr.InvalidField(field.CodeInvalid, "path", "must be UTF-8 text without control characters (U+0000–U+001F, U+007F–U+009F), percent-encoded or not")
}

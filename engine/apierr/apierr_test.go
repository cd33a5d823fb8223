package apierr

import (
	"os"
	"strings"
	"testing"
)

// Every code has one row, a status the spec lists for it and a type of the spec.
func TestTable(t *testing.T) {
	specStatus := map[Code]int{InvalidRequest: 400, InvalidAPIKey: 401, ExpiredAPIKey: 401, KeyAssuranceStale: 401,
		MethodNotAllowed: 405, IdempotencyKeyInUse: 409, Conflict: 409, PayloadTooLarge: 413, ValidationFailed: 422,
		IdempotencyKeyReused: 422, RateLimited: 429, QuotaExceeded: 429, InternalError: 500, ServiceUnavailable: 503,
		PreconditionFailed: 412, NotFound: 404, UnknownResource: 404, RouteNotFound: 404, Forbidden: 403, IPNotAllowed: 403}
	seen := map[Code]bool{}
	for _, e := range Table {
		if seen[e.Code] {
			t.Errorf("%s twice", e.Code)
		}
		seen[e.Code] = true
		if want, ok := specStatus[e.Code]; ok && e.Status != want {
			t.Errorf("%s: status %d, want %d", e.Code, e.Status, want)
		}
		if e.Meaning == "" {
			t.Errorf("%s has no meaning", e.Code)
		}
	}
	// SPEC.md's 23, precondition_failed (412) of the conditional writes (README, "Conditional requests"),
	// and batch_failed (422) and batch_aborted (424, an item's result only) of batch writes (README,
	// "Batch writes").
	if len(Table) != 26 {
		t.Errorf("%d codes, SPEC.md has 23, conditional writes add 1 and batch writes 2", len(Table))
	}
	if got := Types(); len(got) != 8 {
		t.Errorf("types %v, SPEC.md has 8", got)
	}
	if Code("nope").Status() != 500 || Code("nope").Type() != "api_error" {
		t.Error("an unknown code is not an internal error")
	}
	if e := Refused(nil); e.Code != ValidationFailed {
		t.Errorf("Refused(nil): %v", e)
	}
}

// docs/errors.md holds the table as Markdown renders it; ERRORS_DOC_UPDATE=1 rewrites it (make errors-doc).
func TestErrorsDoc(t *testing.T) {
	const path, start, end = "../../docs/errors.md", "<!-- errors-table:start -->\n", "<!-- errors-table:end -->"
	doc, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	text := string(doc)
	i, j := strings.Index(text, start), strings.Index(text, end)
	if i < 0 || j < i {
		t.Fatalf("%s has no errors-table markers", path)
	}
	want := text[:i+len(start)] + Markdown() + text[j:]
	if want == text {
		return
	}
	if os.Getenv("ERRORS_DOC_UPDATE") == "1" {
		if err := os.WriteFile(path, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Errorf("%s is out of date with engine/apierr.Table; run make errors-doc", path)
}

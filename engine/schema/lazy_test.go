package schema

import (
	"strings"
	"testing"

	"github.com/workspace-records/records/engine/model/modeltest"
)

// Prepare builds every document at once and compiles nothing: a resource compiles at its first
// validation, alone; CompileAll compiles the rest. A document that does not compile is an error of
// CompileAll naming its resource, and a panic (a defect, answered 500) of a validation needing it.
func TestLazyCompile(t *testing.T) {
	cat := modeltest.Shipped(t)
	set := Prepare(cat)
	compiled := func() (n int) {
		for _, r := range set.byResource {
			if r.schemas[Create] != nil {
				n++
			}
		}
		return n
	}
	companies := set.Resource("companies")
	if compiled() != 0 || companies.Doc(Update) == nil || set.Resource("deals").Doc(Create) == nil {
		t.Fatalf("Prepare: %d compiled, documents %v", compiled(), companies.Doc(Update) != nil)
	}
	if _, errs := companies.Validate(map[string]any{"name": 5}, Create); len(errs) != 1 || errs[0].Field != "name" {
		t.Errorf("validate before any compile: %v", errs)
	}
	if got := compiled(); got != 1 {
		t.Errorf("%d resources compiled by one validation, want 1", got)
	}
	if err := set.CompileAll(); err != nil || compiled() != len(set.byResource) {
		t.Fatalf("CompileAll: %v, %d of %d compiled", err, compiled(), len(set.byResource))
	}

	broken := Prepare(cat)
	deals := broken.Resource("deals")
	deals.docs[Update] = map[string]any{"type": 5}
	if err := broken.CompileAll(); err == nil || !strings.Contains(err.Error(), "deals update") {
		t.Errorf("CompileAll of a broken document: %v", err)
	}
	defer func() {
		if p := recover(); p == nil {
			t.Errorf("a validation against a schema that did not compile did not panic")
		}
	}()
	deals.Validate(map[string]any{"name": "x"}, Create)
}

package schema

import (
	"maps"
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

// Two Sets of the same definitions (a live switch's next version, another server of the process) share
// each resource's compiled schemas; a resource whose document differs compiles its own, and a document
// that failed to compile is not kept.
func TestCompiledShared(t *testing.T) {
	cat := modeltest.Shipped(t)
	a, b := Prepare(cat), Prepare(cat)
	for _, set := range []*Set{a, b} {
		if _, errs := set.Resource("companies").Validate(map[string]any{"name": "Acme"}, Create); len(errs) != 0 {
			t.Fatalf("validate: %v", errs)
		}
	}
	if a.Resource("companies").schemas[Create] != b.Resource("companies").schemas[Create] {
		t.Error("two Sets of the same definitions compiled the companies schema twice")
	}

	changed := Prepare(cat)
	companies := changed.Resource("companies")
	doc := maps.Clone(companies.docs[Create])
	props := maps.Clone(doc["properties"].(map[string]any))
	props["name"] = map[string]any{"type": "string", "maxLength": 2}
	doc["properties"] = props
	companies.docs[Create] = doc
	if _, errs := companies.Validate(map[string]any{"name": "Acme"}, Create); len(errs) == 0 {
		t.Error("a changed document validated with the unchanged one's schema")
	}
	if companies.schemas[Create] == a.Resource("companies").schemas[Create] {
		t.Error("a changed document shares the unchanged one's compiled schema")
	}

	broken := Prepare(cat)
	broken.Resource("deals").docs[Update] = map[string]any{"type": 5}
	if err := broken.CompileAll(); err == nil {
		t.Fatal("a broken document compiled")
	}
	fixed := Prepare(cat)
	if err := fixed.CompileAll(); err != nil {
		t.Fatalf("the same definitions after a broken document: %v", err)
	}
	if fixed.Resource("deals").schemas[Update] == nil {
		t.Error("deals' update schema missing after the broken one")
	}
}

package httpapi

import (
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/workspace-records/records/engine/catalog"
)

// A lazy document is built once, by whichever comes first of Prepare and a rendering, however many
// ask at once, and renders as NewDocument's would. A build that fails (here: the generator panics) is
// Prepare's error and a panic of every rendering, which the handler answers 500.
func TestLazyDocument(t *testing.T) {
	var builds atomic.Int32
	doc := map[string]any{"servers": []any{map[string]any{"url": catalog.ServerURL}}, "info": "x"}
	lazy := NewLazyDocument(func() map[string]any { builds.Add(1); return doc }, catalog.ServerURL)
	if builds.Load() != 0 {
		t.Fatal("built before use")
	}
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() { lazy.Render("http://a.example") })
	}
	wg.Wait()
	if err := lazy.Prepare(); err != nil || builds.Load() != 1 {
		t.Fatalf("Prepare: %v, %d builds", err, builds.Load())
	}
	eager, err := NewDocument(doc, catalog.ServerURL)
	if err != nil {
		t.Fatal(err)
	}
	got, gotTag := lazy.Render("http://b.example")
	want, wantTag := eager.Render("http://b.example")
	if string(got) != string(want) || gotTag != wantTag || !strings.Contains(string(got), "http://b.example") {
		t.Errorf("lazy %s %s, eager %s %s", got, gotTag, want, wantTag)
	}

	broken := NewLazyDocument(func() map[string]any { panic("a documented route without an operation") }, catalog.ServerURL)
	if err := broken.Prepare(); err == nil || !strings.Contains(err.Error(), "without an operation") {
		t.Errorf("Prepare of a failing build: %v", err)
	}
	defer func() {
		if recover() == nil {
			t.Error("rendering a document that failed to build did not panic")
		}
	}()
	broken.Render("http://a.example")
}

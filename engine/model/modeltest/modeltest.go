// Package modeltest gives tests the compiled shipped definitions.
package modeltest

import (
	"testing"

	"github.com/workspace-records/records/definitions"
	"github.com/workspace-records/records/engine/model"
	"github.com/workspace-records/records/engine/spec"
)

// Shipped loads and compiles definitions.FS, failing the test on any problem.
func Shipped(t testing.TB) *model.Catalog {
	t.Helper()
	set, errs := spec.Load(definitions.FS)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	cat, errs := model.Compile(set)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	return cat
}

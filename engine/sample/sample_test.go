package sample_test

import (
	"reflect"
	"testing"
	"time"

	"github.com/workspace-records/records/engine/model"
	"github.com/workspace-records/records/engine/model/modeltest"
	"github.com/workspace-records/records/engine/sample"
	"github.com/workspace-records/records/engine/schema"
)

func compile(t *testing.T) (*model.Catalog, *schema.Set) {
	t.Helper()
	cat := modeltest.Shipped(t)
	sch, err := schema.Compile(cat)
	if err != nil {
		t.Fatal(err)
	}
	return cat, sch
}

// Every generated body passes the resource's create schema; updates pass the update schema.
func TestBodiesAreValid(t *testing.T) {
	cat, sch := compile(t)
	now := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	ids := []string{"0190a6d4-0000-7000-8000-000000000001", "0190a6d4-0000-7000-8000-000000000002"}
	refs := func(string) []string { return ids }
	g := sample.New(7)
	for _, r := range cat.Resources {
		for i := 0; i < 200; i++ {
			body := g.Body(r, refs, now)
			if _, errs := sch.Resource(r.Name).Validate(body, schema.Create); errs != nil {
				t.Fatalf("%s create body %v: %v", r.Name, body, errs)
			}
			for k := range body {
				if f, _ := r.Field(k); !f.Writable() {
					t.Fatalf("%s: body sets non-writable %s", r.Name, k)
				}
			}
			upd := g.Update(r, refs, now)
			if _, errs := sch.Resource(r.Name).Validate(upd, schema.Update); errs != nil {
				t.Fatalf("%s update body %v: %v", r.Name, upd, errs)
			}
		}
	}
}

// Without reference targets, required references are the only fields left out.
func TestBodiesWithoutRefs(t *testing.T) {
	cat, _ := compile(t)
	g := sample.New(1)
	for _, r := range cat.Resources {
		body := g.Body(r, nil, time.Now())
		for _, f := range r.Declared() {
			if f.Required && f.Writable() && f.Type != model.Reference {
				if _, ok := body[f.Key]; !ok {
					t.Errorf("%s: required %s missing", r.Name, f.Key)
				}
			}
			if f.Type == model.Reference {
				if _, ok := body[f.Key]; ok {
					t.Errorf("%s: reference %s set without targets", r.Name, f.Key)
				}
			}
		}
	}
}

func TestDeterministic(t *testing.T) {
	cat, _ := compile(t)
	r, _ := cat.Resource("deals")
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	a, b := sample.New(99), sample.New(99)
	for i := 0; i < 50; i++ {
		if x, y := a.Body(r, nil, now), b.Body(r, nil, now); !reflect.DeepEqual(x, y) {
			t.Fatalf("same seed gave %v and %v", x, y)
		}
	}
}

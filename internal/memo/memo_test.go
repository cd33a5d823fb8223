package memo

import "testing"

func TestMapForgetsAtItsLimit(t *testing.T) {
	m := Map[string, int]{Limit: 2}
	if _, ok := m.Get("a"); ok {
		t.Fatal("an empty map remembers a")
	}
	m.Put("a", 1)
	m.Put("b", 2)
	if v, ok := m.Get("b"); !ok || v != 2 {
		t.Fatalf("b: %v %v", v, ok)
	}
	m.Put("c", 3) // at the limit: starts anew
	if _, ok := m.Get("a"); ok {
		t.Error("a kept past the limit")
	}
	if v, ok := m.Get("c"); !ok || v != 3 {
		t.Errorf("c: %v %v", v, ok)
	}
}

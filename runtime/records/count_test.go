package records

import (
	"errors"
	"testing"
	"time"
)

// Planner figures are kept per table and workspace for plannerFigureAge, never answered across
// workspaces, and the cache stays bounded.
func TestPlannerFigures(t *testing.T) {
	t.Parallel()
	var c plannerFigures
	now := time.Unix(1_800_000_000, 0)
	reads := 0
	read := func(n int64) func() (int64, error) {
		return func() (int64, error) { reads++; return n, nil }
	}
	if n, _ := c.get("t", "a", now, read(10)); n != 10 {
		t.Fatalf("first read %d", n)
	}
	if n, _ := c.get("t", "b", now, read(20)); n != 20 {
		t.Fatalf("workspace b got %d: another workspace's figure", n)
	}
	if n, _ := c.get("t", "a", now.Add(plannerFigureAge-time.Millisecond), read(99)); n != 10 || reads != 2 {
		t.Fatalf("kept figure %d after %d reads", n, reads)
	}
	if n, _ := c.get("t", "a", now.Add(plannerFigureAge), read(11)); n != 11 || reads != 3 {
		t.Fatalf("an old figure was not read again: %d after %d reads", n, reads)
	}
	if _, err := c.get("u", "a", now, func() (int64, error) { return 0, errors.New("down") }); err == nil {
		t.Fatal("a failed read answered")
	}
	for i := range plannerFigureMax + 10 {
		_, _ = c.get("t", time.Duration(i).String(), now, read(1))
	}
	if len(c.m) > plannerFigureMax {
		t.Fatalf("%d figures kept, more than %d", len(c.m), plannerFigureMax)
	}
}

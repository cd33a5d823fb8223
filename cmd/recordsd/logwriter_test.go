package main

import (
	"bytes"
	"fmt"
	"strings"
	"sync"
	"testing"
)

// syncBuffer is a writer safe for the writer goroutine and the test.
type syncBuffer struct {
	mu     sync.Mutex
	b      bytes.Buffer
	writes int
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.writes++
	return s.b.Write(p)
}

// Every line written from many goroutines arrives whole, once, and Close leaves nothing behind; lines
// written after Close still arrive.
func TestLogWriterKeepsEveryLine(t *testing.T) {
	t.Parallel()
	var out syncBuffer
	l := newLogWriter(&out)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 2000 {
				fmt.Fprintf(l, "line %d %d %s\n", g, i, strings.Repeat("x", i%300))
			}
		}()
	}
	wg.Wait()
	l.Close()
	fmt.Fprintf(l, "after close\n")
	lines := strings.Split(strings.TrimSuffix(out.b.String(), "\n"), "\n")
	if len(lines) != 8*2000+1 || lines[len(lines)-1] != "after close" {
		t.Fatalf("%d lines, last %q", len(lines), lines[len(lines)-1])
	}
	seen := map[string]bool{}
	for _, ln := range lines[:len(lines)-1] {
		var g, i int
		var rest string
		if _, err := fmt.Sscanf(ln, "line %d %d %s", &g, &i, &rest); err != nil && i%300 != 0 {
			t.Fatalf("torn line %q", ln)
		}
		if len(ln) != len(fmt.Sprintf("line %d %d %s", g, i, strings.Repeat("x", i%300))) {
			t.Fatalf("torn line %q", ln)
		}
		key := fmt.Sprint(g, i)
		if seen[key] {
			t.Fatalf("line %s twice", key)
		}
		seen[key] = true
	}
	if out.writes >= 8*2000 {
		t.Errorf("%d writes for %d lines: nothing was coalesced", out.writes, 8*2000)
	}
}

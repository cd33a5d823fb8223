package plugins

import (
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
	"time"

	procs "github.com/workspace-records/records/internal/proc"
)

// records collects slog records as decoded JSON objects.
type records struct{ procs.Buffer }

func (r *records) all(t *testing.T) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(r.String()), "\n") {
		if line == "" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		out = append(out, m)
	}
	return out
}

func newLineLogger(out *records) *lineLogger {
	return &lineLogger{log: slog.New(slog.NewJSONHandler(out, nil)), plugin: "p", stream: "stdout", limit: &outputLimit{}}
}

// Lines split across writes are joined, several lines in one write are split, blank lines are skipped.
func TestLineLoggerLines(t *testing.T) {
	out := &records{}
	w := newLineLogger(out)
	for _, p := range []string{"one\ntw", "o\n\n  \nthree", " and more\n", "unfinished"} {
		if n, err := w.Write([]byte(p)); n != len(p) || err != nil {
			t.Fatalf("Write(%q) = %d, %v", p, n, err)
		}
	}
	var lines []string
	for _, r := range out.all(t) {
		lines = append(lines, r["line"].(string))
		if r["plugin"] != "p" || r["stream"] != "stdout" || r["msg"] != "plugin output" {
			t.Errorf("record %v", r)
		}
	}
	if got := strings.Join(lines, "|"); got != "one|two|three and more" {
		t.Errorf("lines %q", got)
	}
}

// A line longer than maxLineBytes is logged once, cut and marked, however it arrives; the rest of it
// is dropped, and the next line is whole.
func TestLineLoggerLongLine(t *testing.T) {
	out := &records{}
	w := newLineLogger(out)
	long := strings.Repeat("x", 1<<20)
	for i := 0; i < len(long); i += 1000 { // as go-plugin's stdio stream delivers it, 1 KiB at a time
		w.Write([]byte(long[i:min(i+1000, len(long))]))
	}
	w.Write([]byte("\nnext\n"))
	w.Write([]byte(long + "\n"))
	recs := out.all(t)
	if len(recs) != 3 {
		t.Fatalf("%d records, want 3", len(recs))
	}
	for _, i := range []int{0, 2} {
		if l := recs[i]["line"].(string); len(l) != maxLineBytes || recs[i]["truncated"] != true {
			t.Errorf("record %d: %d bytes, truncated %v", i, len(l), recs[i]["truncated"])
		}
	}
	if recs[1]["line"] != "next" || recs[1]["truncated"] != nil {
		t.Errorf("record 1: %v", recs[1])
	}
	if len(w.buf) != 0 || cap(w.buf) > 2*maxLineBytes+1000 {
		t.Errorf("buffer of %d bytes (capacity %d) left", len(w.buf), cap(w.buf))
	}
}

// A flood of lines logs a burst, then drops lines (announcing it once) and says how many it dropped
// in the next line it logs.
func TestLineLoggerRate(t *testing.T) {
	out := &records{}
	w := newLineLogger(out)
	chunk := []byte(strings.Repeat(strings.Repeat("y", 99)+"\n", 100))
	start := time.Now()
	for range 1000 { // 100,000 lines, 10 MB
		w.Write(chunk)
	}
	elapsed := time.Since(start)
	recs := out.all(t)
	logged, warned, dropped := 0, 0, 0
	for _, r := range recs {
		switch r["msg"] {
		case "plugin output":
			logged++
			if n, ok := r["dropped"].(float64); ok {
				dropped += int(n)
			}
		case "plugin output over the limit; dropping lines":
			warned++
		}
	}
	if limit := lineBurst + int(elapsed.Seconds()*linesPerSecond) + 1; logged < lineBurst || logged > limit {
		t.Errorf("%d lines logged in %v, want %d to %d", logged, elapsed, lineBurst, limit)
	}
	if warned != 1 {
		t.Errorf("%d warnings of dropped lines, want 1", warned)
	}
	if elapsed > 2*time.Second {
		t.Errorf("10 MB of lines took %v", elapsed)
	}
	// Once the bucket refills, the next line says how many were dropped.
	w.limit.mu.Lock()
	w.limit.last = w.limit.last.Add(-time.Second)
	w.limit.mu.Unlock()
	w.Write([]byte("after\n"))
	recs = out.all(t)
	last := recs[len(recs)-1]
	if n, _ := last["dropped"].(float64); last["line"] != "after" || logged+dropped+int(n) != 100000 {
		t.Errorf("last record %v: %d logged, %d dropped before, want 100,000 in all", last, logged, dropped)
	}
	t.Logf("100,000 lines in %v: %d logged, the rest dropped", elapsed.Round(time.Millisecond), logged)
}

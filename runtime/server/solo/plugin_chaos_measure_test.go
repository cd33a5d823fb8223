package solo_test

// What TestPluginChaos measures of the host: samples of its memory, goroutines and plugin processes, the
// log it writes, and the checks once the scenarios are over.

import (
	"bytes"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/workspace-records/records/runtime/server/servertest"
)

// chaosSample is the test process's state between calls.
type chaosSample struct {
	goroutines int
	heap       uint64 // HeapInuse after a GC
	rss        int64  // VmRSS, bytes
	children   int    // live chaos-rules processes whose parent is this process
	zombies    int    // the same, exited but not reaped
}

func (s chaosSample) String() string {
	return fmt.Sprintf("%d goroutines, heap in use %.1f MiB, RSS %.1f MiB, %d chaos-rules processes, %d zombies",
		s.goroutines, float64(s.heap)/(1<<20), float64(s.rss)/(1<<20), s.children, s.zombies)
}

// sample makes a good write (so that the plugin runs), waits for the calls' After hooks and restarts to
// settle (the goroutine count stops falling and the plugin processes replaced are gone, for at most 5 s:
// one stopped process takes 3 s to be killed), then measures.
func (r *chaosRig) sample() chaosSample {
	r.mustWrite("good", fmt.Sprintf("before=ok after=ok #%d", r.seq.Add(1)), time.Now())
	time.Sleep(chaosDeadline + 50*time.Millisecond)
	prev := -1
	deadline := time.Now().Add(5 * time.Second)
	var s chaosSample
	for {
		runtime.GC()
		s.goroutines = runtime.NumGoroutine()
		s.children, s.zombies = chaosChildren()
		if (s.goroutines == prev && s.children <= 1 && s.zombies == 0) || time.Now().After(deadline) {
			break
		}
		prev = s.goroutines
		time.Sleep(100 * time.Millisecond)
	}
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	s.heap = m.HeapInuse
	debug.FreeOSMemory() // so that RSS counts what is used, not what the runtime has yet to give back
	s.rss = vmRSS()
	return s
}

// steady compares the state after the first calls (early) with the state after the last ones (late):
// no more goroutines than early + 10 (a leak of one per call would add hundreds), heap in use and RSS
// no more than early + 10% or + 8 MiB, whichever is more; one plugin process; no zombie.
func (r *chaosRig) steady(early, late chaosSample) {
	r.t.Helper()
	r.t.Logf("after the first calls: %v", early)
	r.t.Logf("after the last calls:  %v", late)
	if late.goroutines > early.goroutines+10 {
		r.t.Errorf("goroutines grew from %d to %d", early.goroutines, late.goroutines)
	}
	if slack := max(early.heap/10, 8<<20); late.heap > early.heap+slack {
		r.t.Errorf("heap in use grew from %.1f MiB to %.1f MiB", float64(early.heap)/(1<<20), float64(late.heap)/(1<<20))
	}
	// The race detector's shadow memory is not given back: RSS says nothing under it.
	if slack := max(early.rss/10, 8<<20); late.rss > early.rss+slack && !servertest.Race {
		r.t.Errorf("RSS grew from %.1f MiB to %.1f MiB", float64(early.rss)/(1<<20), float64(late.rss)/(1<<20))
	}
	if late.children > 1 || late.zombies > 0 {
		r.t.Errorf("%d chaos-rules processes and %d zombies once the calls settled, want at most 1 and 0", late.children, late.zombies)
	}
}

// finish checks every write that had to stand stands once and no refused one was written, reports the
// numbers, closes the server and checks no plugin process is left.
func (r *chaosRig) finish() {
	r.t.Helper()
	stored := map[string]int{}
	cursor := "start"
	for cursor != "" {
		res := r.e.Do("GET", "/v1/companies?page_size=100&cursor="+cursor, nil)
		r.e.Expect(res, 200, "")
		for _, rec := range res.List() {
			name, _ := rec["name"].(string)
			stored[name]++
		}
		cursor, _ = res.Body["meta"].(map[string]any)["next_cursor"].(string)
	}
	written, refused := 0, 0
	for name, stands := range r.want {
		switch {
		case stands && stored[name] != 1:
			r.t.Errorf("%q: stored %d times, want once", name, stored[name])
		case !stands && stored[name] != 0:
			r.t.Errorf("%q was refused but written", name)
		}
		if stands {
			written++
		} else {
			refused++
		}
	}
	if len(stored) != written {
		r.t.Errorf("%d companies stored, %d written", len(stored), written)
	}
	r.t.Logf("%d writes stand, %d refused and absent; plugin starts %d; %d plugin processes seen; log: %v",
		written, refused, r.starts(), len(r.pids), r.log)

	start := time.Now()
	r.e.Server.Close()
	// Bounded, not hung: a stopped plugin takes 3 s to be killed; 10 s leaves a loaded machine its margin.
	if d := time.Since(start); d > 10*time.Second {
		r.t.Errorf("closing the server took %v", d)
	}
	for pid := range r.pids {
		servertest.WaitGone(r.t, pid)
	}
	if n, z := chaosChildren(); n+z > 0 {
		r.t.Errorf("after Close: %d chaos-rules processes and %d zombies are children of the test process", n, z)
	}
}

// percentile returns the q-quantile of ds (q = 1: the maximum).
func percentile(ds []time.Duration, q float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	i := int(math.Ceil(q*float64(len(s)))) - 1
	return s[min(max(i, 0), len(s)-1)]
}

// chaosChildren counts the chaos-rules processes whose parent is this process: live ones and zombies.
func chaosChildren() (live, zombies int) {
	entries, _ := os.ReadDir("/proc")
	me := os.Getpid()
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		data, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid …
		open, end := bytes.IndexByte(data, '('), bytes.LastIndexByte(data, ')')
		if open < 0 || end < open {
			continue
		}
		comm := string(data[open+1 : end])
		fields := strings.Fields(string(data[end+1:]))
		if len(fields) < 2 || comm != "chaos-rules" {
			continue
		}
		if ppid, _ := strconv.Atoi(fields[1]); ppid != me || pid == me {
			continue
		}
		if fields[0] == "Z" {
			zombies++
		} else {
			live++
		}
	}
	return live, zombies
}

// vmRSS returns this process's resident set, in bytes.
func vmRSS() int64 {
	data, _ := os.ReadFile("/proc/self/status")
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb << 10
		}
	}
	return 0
}

// logTally counts the server's log lines (one JSON record per Write) and those carrying plugin output.
type logTally struct {
	mu                   sync.Mutex
	lines, bytes         int
	outputLines, dropped int
	longest              int
	tee                  io.Writer
}

func (l *logTally) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.tee != nil {
		_, _ = l.tee.Write(p)
	}
	l.lines++
	l.bytes += len(p)
	l.longest = max(l.longest, len(p))
	if bytes.Contains(p, []byte(`"msg":"plugin output"`)) {
		l.outputLines++
	}
	if i := bytes.Index(p, []byte(`"dropped":`)); i >= 0 {
		n, _ := strconv.Atoi(strings.TrimRight(strings.SplitN(string(p[i+len(`"dropped":`):]), ",", 2)[0], "}\n"))
		l.dropped += n
	}
	return len(p), nil
}

func (l *logTally) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return fmt.Sprintf("%d lines (%.1f MiB, longest %d bytes), %d of plugin output, %d output lines dropped", l.lines, float64(l.bytes)/(1<<20), l.longest, l.outputLines, l.dropped)
}

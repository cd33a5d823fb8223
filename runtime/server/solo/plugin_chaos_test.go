package solo_test

// Plugin chaos (research note §8 item 12, scenarios P1–P4): the test plugin chaos-rules
// (runtime/server/testdata/chaos-rules, built from source, run by go-plugin as a real process) is named
// in the hooks of companies and misbehaves in its Before or After hook as the name of the company being
// written asks — panics, exits, hangs, stops, floods its output. Through a real listener, with a hook deadline of
// 100 ms, the tests check what the issue asks: the server stays up and keeps serving other resources;
// every call answers within the deadline and a small margin; a failed Before hook refuses the write with
// the 503 envelope and writes nothing, a failed After hook leaves the write standing; the test process
// (which runs the server) has as many goroutines and as much heap in use after the last calls as after
// the first ones; and no plugin process outlives the server.
//
// One server per backend goes through every scenario in turn (subtests named by scenario), then the
// companies stored are checked against the answers and the server is closed. The short form (make
// test) makes 100 calls of each misbehaviour on SQLite and 10 on PostgreSQL (the host's behaviour does
// not depend on the database; what does — the refused write rolled back, the write standing — is
// checked on both); RECORDS_PLUGIN_CHAOS=long (make plugin-chaos) makes 1,000 on both.
// RECORDS_PLUGIN_CHAOS_LOG=FILE keeps the server's log, to debug a failure.

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/workspace-records/records/runtime/plugins"
	"github.com/workspace-records/records/runtime/server/servertest"
)

const (
	// chaosDeadline is the hook deadline of the chaos servers (--plugin-timeout).
	chaosDeadline = 100 * time.Millisecond
	// chaosMargin is how much longer than the deadline any call may take: the rest of the request (the
	// transaction, the answer) and the scheduling noise of a busy two-core machine. On SQLite, whose
	// writes take turns on one connection held through the Before hooks, a write may also wait for the
	// writes ahead of it: a deadline per client (see lanes). Measured: the slowest write 990 ms
	// (SQLite, 4 lanes) while the rest of make test ran beside it at a load of 15; 200–400 ms on a quiet
	// machine. What the bound tells apart is a call cut at its deadline from one that hangs, which
	// would take the request's own deadline (10 s): 2.5 s does that under any load seen here.
	chaosMargin = 2500 * time.Millisecond
	// chaosRecovery bounds the time from a failed call until a good write succeeds again (research P1:
	// the plugin relaunched within 2 s), under RECORDS_TIMING=strict (make plugin-chaos, make
	// timing-check); chaosRecoveryLoaded is the budget of make test (servertest.Budget). Measured: 0.2–0.6 s
	// alone; with a second make test beside this one (load 52) a write still got 503s after 9 tries and
	// over 2 s. A plugin that is never relaunched keeps refusing for good.
	chaosRecovery       = 2 * time.Second
	chaosRecoveryLoaded = 15 * time.Second
)

// chaosLong reports whether the long form runs.
func chaosLong() bool { return os.Getenv("RECORDS_PLUGIN_CHAOS") == "long" }

// chaosCalls is how many calls of each misbehaviour a test makes on backend b.
func chaosCalls(b servertest.Backend) int {
	switch {
	case chaosLong():
		return 1000
	case b == servertest.Postgres:
		return 10
	}
	return 100
}

// chaosRig is a server whose companies are hooked to chaos-rules, and what the calls to it saw.
type chaosRig struct {
	t       *testing.T // the scenario running
	parent  *testing.T
	b       servertest.Backend
	e       *servertest.Env
	host    *plugins.Host
	log     *logTally
	program string // the chaos-rules program
	start   string // the file chaos-rules reads at start (CHAOS_START_FILE)
	seq     atomic.Int64

	mu       sync.Mutex
	want     map[string]bool            // name written -> whether the write must stand
	lat      map[string][]time.Duration // latency of every answer, by what was asked
	recovery []time.Duration            // from a failed call to the next good write
	retried  int                        // good writes that needed more than one try
	status   map[string]map[int]int     // answers by status, by what was asked
	pids     map[int]bool               // every chaos-rules process seen
}

// newChaosRig starts a server on backend b whose companies are hooked to chaos-rules; env sets the
// plugin's environment (CHAOS_FLOOD_BYTES, CHAOS_SLOW).
func newChaosRig(t *testing.T, b servertest.Backend, env map[string]string) *chaosRig {
	t.Helper()
	dir := servertest.PluginsDir(t)
	r := &chaosRig{t: t, parent: t, b: b, log: &logTally{}, want: map[string]bool{}, lat: map[string][]time.Duration{},
		status: map[string]map[int]int{}, pids: map[int]bool{}}
	r.program = servertest.BuildPlugin(t, dir, "chaos-rules", "./runtime/server/testdata/chaos-rules")
	if path := os.Getenv("RECORDS_PLUGIN_CHAOS_LOG"); path != "" { // the server's log, to debug a failure
		f, err := os.Create(path)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { f.Close() })
		r.log.tee = f
	}
	r.start = filepath.Join(t.TempDir(), "chaos-start")
	t.Setenv("CHAOS_START_FILE", r.start)
	for k, v := range env {
		t.Setenv(k, v)
	}
	r.e = servertest.Start(t, b, servertest.Options{
		DefinitionsDir: servertest.DefinitionsWithHooks(t, "companies", "chaos-rules"),
		PluginsDir:     dir,
		PluginTimeout:  chaosDeadline,
		Log:            r.log,
	})
	r.host = r.e.Server.Backend().Current().Plugins
	r.e.Contract() // once, before the clients run at once
	r.notePID()
	return r
}

// scenario runs fn as subtest name of t, on the rig, and reports the answers it saw.
func (r *chaosRig) scenario(t *testing.T, name string, fn func()) {
	t.Run(name, func(t *testing.T) {
		r.on(t)
		defer r.on(r.parent)
		fn()
		r.report()
	})
}

// on makes the rig report to t.
func (r *chaosRig) on(t *testing.T) {
	r.t, r.e.T = t, t
}

// report logs the latencies and statuses seen since the last report, and forgets them.
func (r *chaosRig) report() {
	r.mu.Lock()
	defer r.mu.Unlock()
	kinds := make([]string, 0, len(r.lat))
	for k := range r.lat {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	for _, k := range kinds {
		r.t.Logf("%-20s %5d answers %v: p50 %v p99 %v max %v", k, len(r.lat[k]), r.status[k],
			percentile(r.lat[k], 0.5).Round(time.Millisecond), percentile(r.lat[k], 0.99).Round(time.Millisecond), percentile(r.lat[k], 1).Round(time.Millisecond))
	}
	if len(r.recovery) > 0 {
		r.t.Logf("good writes after a failure: %d, %d needed a retry; recovery p99 %v max %v",
			len(r.recovery), r.retried, percentile(r.recovery, 0.99).Round(time.Millisecond), percentile(r.recovery, 1).Round(time.Millisecond))
	}
	r.t.Logf("plugin starts so far %d; log so far: %v", r.starts(), r.log)
	r.lat, r.status, r.recovery, r.retried = map[string][]time.Duration{}, map[string]map[int]int{}, nil, 0
}

// starts returns how many times chaos-rules was started.
func (r *chaosRig) starts() int {
	for _, st := range r.host.Statuses() {
		if st.Name == "chaos-rules" {
			return st.Starts
		}
	}
	return 0
}

// notePID remembers the running chaos-rules process.
func (r *chaosRig) notePID() {
	for _, st := range r.host.Statuses() {
		if st.Name == "chaos-rules" && st.PID > 0 {
			r.mu.Lock()
			r.pids[st.PID] = true
			r.mu.Unlock()
		}
	}
}

// write creates a company named name and times the answer under key.
func (r *chaosRig) write(key, name string) *servertest.Response {
	start := time.Now()
	res := r.e.Do("POST", "/v1/companies", map[string]any{"name": name})
	d := time.Since(start)
	r.mu.Lock()
	r.lat[key] = append(r.lat[key], d)
	if r.status[key] == nil {
		r.status[key] = map[int]int{}
	}
	r.status[key][res.Status]++
	r.mu.Unlock()
	if bound := r.bound(); d > bound {
		r.t.Errorf("%q answered %d after %v: more than %v", name, res.Status, d.Round(time.Millisecond), bound)
	}
	return res
}

// bound is how long any write may take (see chaosMargin); four times the margin under the race
// detector.
func (r *chaosRig) bound() time.Duration {
	margin := chaosMargin
	if servertest.Race {
		margin *= 4
	}
	if r.b == servertest.SQLite {
		return time.Duration(r.lanes())*chaosDeadline + margin
	}
	return chaosDeadline + margin
}

// refused checks res is the 503 envelope a write gets when a rule cannot run.
func (r *chaosRig) refused(name string, res *servertest.Response) {
	if res.Status != 503 || res.Code() != "service_unavailable" || res.Header.Get("Retry-After") == "" {
		r.t.Errorf("%q: %d %s (Retry-After %q), want 503 service_unavailable with Retry-After: %s", name, res.Status, res.Code(), res.Header.Get("Retry-After"), res.Raw)
	}
}

// mustWrite writes name until it is created, retrying 503s (a client honouring Retry-After, faster) for
// at most chaosRecovery (or its loaded budget) after since; it returns when the write succeeded.
func (r *chaosRig) mustWrite(key, name string, since time.Time) {
	recovery := servertest.Budget(chaosRecovery, chaosRecoveryLoaded)
	for try := 1; ; try++ {
		res := r.write(key, name)
		switch {
		case res.Status == 201:
			r.mu.Lock()
			r.want[name] = true
			if try > 1 {
				r.retried++
			}
			r.recovery = append(r.recovery, time.Since(since))
			r.mu.Unlock()
			return
		case res.Status == 503 && time.Since(since) < recovery:
			r.refused(name, res)
			time.Sleep(20 * time.Millisecond)
		default:
			r.t.Errorf("%q: %d %s after %v and %d tries, want 201: %s", name, res.Status, res.Code(), time.Since(since).Round(time.Millisecond), try, res.Raw)
			return
		}
	}
}

// call makes one chaos call of kind ("before=panic", "after=exit", …), then a good write that must
// succeed within chaosRecovery, then a read of another resource.
func (r *chaosRig) call(kind string) {
	name := fmt.Sprintf("%s #%d", kind, r.seq.Add(1))
	phase, what, _ := strings.Cut(kind, "=")
	switch {
	case phase == "before" && what == "veto":
		res := r.write(kind, name)
		if res.Status == 503 {
			r.refused(name, res) // the plugin died under the call (another client's chaos)
		} else {
			r.e.Expect(res, 422, "validation_failed")
		}
		r.mu.Lock()
		r.want[name] = false
		r.mu.Unlock()
	case phase == "before" && (what == "panic" || what == "exit" || what == "hang" || what == "stop" || what == "error"):
		res := r.write(kind, name)
		r.refused(name, res)
		r.mu.Lock()
		r.want[name] = false
		r.mu.Unlock()
	default:
		// The hook answers (ok, slow, floods), or only the After hook misbehaves: the write stands.
		r.mustWrite(kind, name, time.Now())
	}
	since := time.Now()
	r.notePID()
	r.mustWrite("good", fmt.Sprintf("before=ok after=ok #%d", r.seq.Add(1)), since)
	start := time.Now()
	res := r.e.Do("GET", "/v1/tags?page_size=1", nil)
	read := time.Since(start)
	r.e.Expect(res, 200, "")
	start = time.Now()
	res = r.e.Do("POST", "/v1/tags", map[string]any{"name": fmt.Sprintf("tag %d", r.seq.Add(1))})
	write := time.Since(start)
	r.e.Expect(res, 201, "")
	if bound := r.bound(); write > bound {
		r.t.Errorf("a write to another resource took %v: more than %v", write.Round(time.Millisecond), bound)
	}
	r.mu.Lock()
	r.lat["other read"] = append(r.lat["other read"], read)
	r.lat["other write"] = append(r.lat["other write"], write)
	r.mu.Unlock()
}

// lanes is how many clients call at once: 4, or 2 on SQLite, where they take turns on its writer.
func (r *chaosRig) lanes() int {
	if r.b == servertest.SQLite {
		return 2
	}
	return 4
}

// storm makes n calls of each kind, interleaved, from r.lanes() clients at once.
func (r *chaosRig) storm(n int, kinds ...string) { r.stormFrom(r.lanes(), n, kinds...) }

// stormFrom makes n calls of each kind, interleaved, from lanes clients at once.
func (r *chaosRig) stormFrom(lanes, n int, kinds ...string) {
	jobs := make(chan string)
	var wg sync.WaitGroup
	for range lanes {
		wg.Go(func() {
			for k := range jobs {
				r.call(k)
			}
		})
	}
	for i := 0; i < n; i++ {
		for _, k := range kinds {
			jobs <- k
		}
	}
	close(jobs)
	wg.Wait()
}

// phase runs n calls of each of kinds in two parts, measuring after the first tenth and after the rest
// (when n is large enough for growth to show: 50 or more).
func (r *chaosRig) phase(n int, kinds ...string) {
	if n < 50 {
		r.storm(n, kinds...)
		return
	}
	first := max(n/10, 10)
	r.storm(first, kinds...)
	early := r.sample()
	r.storm(n-first, kinds...)
	late := r.sample()
	r.steady(early, late)
}

// TestPluginChaos runs the scenarios on SQLite and PostgreSQL, one after the other.
func TestPluginChaos(t *testing.T) {
	// Not parallel, in package solo: it samples the goroutines, heap, RSS and chaos-rules children of
	// the test process (sample, steady, chaosChildren), which any other test running in the process
	// would change; and it sets the plugin's environment with t.Setenv (go-plugin passes the host's
	// environment to the plugin process).
	for _, b := range servertest.Backends {
		t.Run(string(b), func(t *testing.T) {
			flood := 64 << 10
			if chaosLong() {
				flood = 1 << 20
			}
			r := newChaosRig(t, b, map[string]string{"CHAOS_FLOOD_BYTES": strconv.Itoa(flood)})
			n := chaosCalls(b)
			// P1: a plugin that panics inside its Before or After hook. A panic kills the plugin
			// process (gRPC does not recover a handler's panic); the host starts it again.
			r.scenario(t, "P1_panic", func() { r.phase(n/2, "before=panic", "after=panic") })
			// P2: a hook that never answers and ignores its context, next to one slow but in time; and
			// a plugin whose whole process stops (SIGSTOP), which go-plugin's Kill alone would wait for
			// forever. The call answers at the deadline, and the plugin is replaced.
			r.scenario(t, "P2_hang", func() {
				r.phase(n/2, "before=hang", "after=hang", "before=slow")
				// One client: the good write after each stop measures the recovery from that stop
				// alone, not from the stops the other clients make meanwhile.
				r.stormFrom(1, max(n/20, 2), "before=stop", "after=stop")
			})
			// P3: a plugin that exits inside a hook, next to hooks that fail or refuse.
			r.scenario(t, "P3_exit", func() {
				r.phase(n/2, "before=exit", "after=exit")
				r.storm(max(n/10, 2), "before=error", "before=veto")
			})
			// P3: the plugin SIGKILLed from outside every 50 ms while writes stream through: their rule
			// is never bypassed (a refusal is 422 or, when the plugin died under the call, 503; never
			// 201).
			r.scenario(t, "P3_sigkill", func() { r.sigkills(max(n/4, 5)) })
			// A plugin that writes megabytes to its standard output or error, in lines or as one line,
			// inside its hooks: the host keeps reading (the hook still answers in time), keeps its
			// memory, and logs a bounded number of lines of it, none longer than 8 KiB.
			r.scenario(t, "flood", func() { r.flood(n/2, flood) })
			// A program that never answers the handshake, that is not executable, or that writes to
			// its standard output before the handshake, when the host starts it again.
			r.scenario(t, "restart_no_handshake", func() { r.badStart("hang", "still starting") })
			r.scenario(t, "restart_not_executable", func() { r.badStart("not executable", "permission denied") })
			r.scenario(t, "restart_stdout_first", func() { r.badStart("stdout", "Unrecognized remote plugin message") })
			r.finish()
		})
	}
}

// sigkills writes n good and n refused companies while the plugin is SIGKILLed every 50 ms.
func (r *chaosRig) sigkills(n int) {
	early := r.sample()
	stop := make(chan struct{})
	kills := 0
	var killer sync.WaitGroup
	killer.Go(func() {
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
				for _, st := range r.host.Statuses() {
					if st.Name == "chaos-rules" && st.PID > 0 && syscall.Kill(st.PID, syscall.SIGKILL) == nil {
						kills++
						r.mu.Lock()
						r.pids[st.PID] = true
						r.mu.Unlock()
					}
				}
			}
		}
	})
	r.storm(n, "before=ok", "before=veto")
	close(stop)
	killer.Wait()
	late := r.sample()
	r.t.Logf("SIGKILLed the plugin %d times", kills)
	r.steady(early, late)
}

// flood makes n calls of each flood, each writing size bytes.
func (r *chaosRig) flood(n, size int) {
	r.log.mu.Lock()
	lines0 := r.log.outputLines
	r.log.mu.Unlock()
	start := time.Now()
	kinds := []string{"before=flood-stdout", "after=flood-stdout", "before=flood-stderr", "after=flood-stderr", "before=flood-line", "after=flood-line"}
	r.phase(n, kinds...)
	elapsed := time.Since(start)
	r.log.mu.Lock()
	lines, longest := r.log.outputLines-lines0, r.log.longest
	r.log.mu.Unlock()
	// A burst of 1,000 lines, then 100 a second (plugins.linesPerSecond).
	if limit := 1000 + int(100*elapsed.Seconds()) + 10; lines > limit {
		r.t.Errorf("%d lines of plugin output logged in %v, want at most %d", lines, elapsed.Round(time.Millisecond), limit)
	}
	if longest > 9<<10 {
		r.t.Errorf("a log line of %d bytes", longest)
	}
	r.t.Logf("%d calls wrote %d KiB each (%.0f MiB) in %v; %d lines of it logged", n*len(kinds), size>>10, float64(n*len(kinds)*size)/(1<<20), elapsed.Round(time.Millisecond), lines)
}

// badStart makes the plugin exit, with its next starts broken as how says ("hang" before the
// handshake, "stdout" before it, or the program "not executable"): writes to companies are refused
// with 503 within the deadline, the error says why (want), other resources are served; once the
// program is mended, writes pass again.
func (r *chaosRig) badStart(how, want string) {
	if how == "not executable" {
		if err := os.Chmod(r.program, 0o644); err != nil {
			r.t.Fatal(err)
		}
	} else if err := os.WriteFile(r.start, []byte(how), 0o644); err != nil {
		r.t.Fatal(err)
	}
	for i := range 6 {
		name := fmt.Sprintf("before=ok after=ok #%d", r.seq.Add(1))
		key := "while it cannot start"
		if i == 0 {
			name, key = fmt.Sprintf("before=exit #%d", r.seq.Add(1)), "before=exit"
		}
		r.refused(name, r.write(key, name))
		r.mu.Lock()
		r.want[name] = false
		r.mu.Unlock()
		res := r.e.Do("POST", "/v1/tags", map[string]any{"name": fmt.Sprintf("tag %d", r.seq.Add(1))})
		r.e.Expect(res, 201, "")
	}
	// The start in flight ends (the hung one at go-plugin's start timeout) with the error.
	if how != "hang" {
		if _, ok := servertest.WaitFor(5*time.Second, func() bool {
			return strings.Contains(servertest.PluginStatus(r.t, r.host, "chaos-rules").LastError, want)
		}); !ok {
			r.t.Errorf("last error %q, want it to say %q", servertest.PluginStatus(r.t, r.host, "chaos-rules").LastError, want)
		}
	} else if st := servertest.PluginStatus(r.t, r.host, "chaos-rules"); !strings.Contains(st.LastError, want) {
		r.t.Errorf("last error %q, want it to say %q", st.LastError, want)
	}
	if how == "not executable" {
		if err := os.Chmod(r.program, 0o755); err != nil {
			r.t.Fatal(err)
		}
	} else if err := os.WriteFile(r.start, nil, 0o644); err != nil {
		r.t.Fatal(err)
	}
	if how == "hang" {
		// A start stuck before its handshake lasts until go-plugin's start timeout (10 s) unless
		// the plugin is restarted, which kills it.
		if err := r.host.Restart("chaos-rules"); err != nil {
			r.t.Fatal(err)
		}
	}
	r.mustWrite("good", fmt.Sprintf("before=ok after=ok #%d", r.seq.Add(1)), time.Now())
	r.notePID()
	if _, ok := servertest.WaitFor(5*time.Second, func() bool { n, z := chaosChildren(); return n == 1 && z == 0 }); !ok {
		n, z := chaosChildren()
		r.t.Errorf("%d chaos-rules processes and %d zombies, want 1 and 0", n, z)
	}
}

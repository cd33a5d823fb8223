package plugins_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/workspace-records/records/engine/model"
	procs "github.com/workspace-records/records/internal/proc"
	"github.com/workspace-records/records/plugins/sdk"
	"github.com/workspace-records/records/runtime/metrics"
	"github.com/workspace-records/records/runtime/plugins"
	"github.com/workspace-records/records/runtime/server/servertest"
)

const chaosPkg = "./runtime/server/testdata/chaos-rules"

// swapWatch is the poll interval of the swap tests (recordsd's default is 1 s): a change is taken at
// the second poll that sees it, so the swap comes 1 to 2 intervals after the rename plus the start.
const swapWatch = 200 * time.Millisecond

// swapEnv is a host of one plugin, chaos-rules built as version v1, watching its program.
type swapEnv struct {
	t       *testing.T
	dir     string // the plugins directory
	h       *plugins.Host
	metrics *metrics.Metrics
	log     *procs.Buffer // the host's log, JSON lines
}

// build returns the path of chaos-rules built with ldflags, outside the plugins directory.
func build(t *testing.T, ldflags string) string {
	t.Helper()
	return servertest.BuildPluginWith(t, t.TempDir(), "chaos-rules", chaosPkg, ldflags)
}

func newSwapEnv(t *testing.T, timeout time.Duration) *swapEnv {
	t.Helper()
	dir := t.TempDir()
	servertest.BuildPluginWith(t, dir, "chaos-rules", chaosPkg, "-X main.version=v1")
	e := &swapEnv{t: t, dir: dir, metrics: metrics.New(), log: &procs.Buffer{}}
	cat := &model.Catalog{Resources: []*model.Resource{{Name: "widgets", Hooks: []string{"chaos-rules"}}}}
	h, err := plugins.New(context.Background(), plugins.Config{Dir: dir, Timeout: timeout, StartTimeout: 2 * time.Second,
		Log: slog.New(slog.NewJSONHandler(e.log, nil)), Metrics: e.metrics, WatchInterval: swapWatch}, cat)
	if err != nil {
		t.Fatal(err)
	}
	e.h = h
	ctx, cancel := context.WithCancel(context.Background())
	watched := make(chan struct{})
	go func() { h.Watch(ctx); close(watched) }()
	t.Cleanup(func() {
		cancel()
		<-watched
		h.Close()
	})
	return e
}

// deploy puts the program from into the plugins directory as deploys do: written beside under another
// name, then renamed over the old one. It returns the program's SHA-256.
func (e *swapEnv) deploy(from string) string {
	e.t.Helper()
	data, err := os.ReadFile(from)
	if err != nil {
		e.t.Fatal(err)
	}
	return e.deployBytes(data)
}

func (e *swapEnv) deployBytes(data []byte) string {
	e.t.Helper()
	tmp := filepath.Join(e.dir, ".chaos-rules.new")
	if err := os.WriteFile(tmp, data, 0o755); err != nil {
		e.t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(e.dir, "chaos-rules")); err != nil {
		e.t.Fatal(err)
	}
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

func (e *swapEnv) status() plugins.Status {
	e.t.Helper()
	st := e.h.Statuses()
	if len(st) != 1 {
		e.t.Fatalf("statuses %+v", st)
	}
	return st[0]
}

// waitStatus waits up to within for the plugin's status to satisfy ok, and returns it and how long it took.
func (e *swapEnv) waitStatus(within time.Duration, ok func(plugins.Status) bool) (plugins.Status, time.Duration) {
	e.t.Helper()
	start := time.Now()
	for {
		st := e.status()
		if ok(st) {
			return st, time.Since(start)
		}
		if time.Since(start) > within {
			e.t.Fatalf("after %v the plugin's status is still %+v", within, st)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// swaps returns records_plugin_swaps_total{plugin="chaos-rules",result}.
func (e *swapEnv) swaps(result string) int {
	e.t.Helper()
	families, err := e.metrics.Registry().Gather()
	if err != nil {
		e.t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != "records_plugin_swaps_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["plugin"] == "chaos-rules" && labels["result"] == result {
				return int(m.GetCounter().GetValue())
			}
		}
	}
	return 0
}

// logLines returns the host's log records whose msg is msg.
func (e *swapEnv) logLines(msg string) []map[string]any {
	e.t.Helper()
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(e.log.String()), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			e.t.Fatalf("log line %q: %v", line, err)
		}
		if m["msg"] == msg {
			out = append(out, m)
		}
	}
	return out
}

// call runs a Before hook asking for kind and which build and process answered ("VERSION PID").
func (e *swapEnv) call(ctx context.Context, kind string) (string, error) {
	res, err := e.h.Before(ctx, "chaos-rules", &sdk.Call{Resource: "widgets", Operation: sdk.OpCreate,
		Changes: map[string]any{"name": "before=" + kind + " whoami"}}, nil)
	if err != nil {
		return "", err
	}
	by, _ := res.Set["served_by"].(string)
	return by, nil
}

// servedBy splits "VERSION PID" (pid 0 when by is not that).
func servedBy(by string) (string, int) {
	version, p, _ := strings.Cut(by, " ")
	pid, _ := strconv.Atoi(p)
	return version, pid
}

// Plugin swap under load: 8 goroutines call the plugin without pause while its program is replaced
// (written beside, renamed over): no call fails, every call started once the host reports v2 is
// answered by v2's process, and v1's process is stopped once its calls are over.
func TestSwapUnderLoad(t *testing.T) {
	v2 := build(t, "-X main.version=v2")
	e := newSwapEnv(t, 2*time.Second)
	oldPID := pidOf(t, e.h, "chaos-rules")
	before := e.status()
	if before.Version != "v1" || before.SHA256 == "" {
		t.Fatalf("at start: %+v", before)
	}

	type result struct {
		began   time.Time
		version string
		pid     int
		err     error
	}
	stop := make(chan struct{})
	results := make([][]result, 8)
	var wg sync.WaitGroup
	for g := range results {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				r := result{began: time.Now()}
				var by string
				if by, r.err = e.call(context.Background(), "ok"); r.err == nil {
					r.version, r.pid = servedBy(by)
				}
				results[g] = append(results[g], r)
			}
		})
	}
	time.Sleep(300 * time.Millisecond) // load before the swap
	sum := e.deploy(v2)
	st, took := e.waitStatus(5*time.Second, func(st plugins.Status) bool { return st.Version == "v2" })
	swapped := time.Now()
	time.Sleep(500 * time.Millisecond) // load after the swap
	close(stop)
	wg.Wait()

	if st.SHA256 != sum || st.Swaps != 1 || st.PID == oldPID || st.PID == 0 {
		t.Errorf("after the swap: %+v (want sha256 %s, a new pid)", st, sum)
	}
	calls, failed, byVersion, late := 0, 0, map[string]int{}, 0
	for _, rs := range results {
		for _, r := range rs {
			calls++
			if r.err != nil {
				failed++
				if failed <= 3 {
					t.Errorf("a call failed: %v", r.err)
				}
				continue
			}
			byVersion[r.version]++
			if r.began.After(swapped) && (r.version != "v2" || r.pid != st.PID) {
				late++
			}
			if r.version == "v1" && r.pid != oldPID || r.version == "v2" && r.pid != st.PID {
				t.Errorf("version %s answered from pid %d (v1 is %d, v2 %d)", r.version, r.pid, oldPID, st.PID)
			}
		}
	}
	if failed > 0 {
		t.Errorf("%d of %d calls failed during the swap", failed, calls)
	}
	if late > 0 {
		t.Errorf("%d calls started after the swap were answered by the old process", late)
	}
	if byVersion["v1"] == 0 || byVersion["v2"] == 0 {
		t.Errorf("calls by version %v: want both", byVersion)
	}
	if n := e.swaps(metrics.SwapSwapped); n != 1 {
		t.Errorf("records_plugin_swaps_total{result=swapped} = %d", n)
	}
	if d, ok := gone(oldPID, 3*time.Second); !ok {
		t.Errorf("the old process %d still runs %v after the swap", oldPID, d)
	}
	if lines := e.logLines("plugin program swapped in"); len(lines) != 1 || lines[0]["old_version"] != "v1" || lines[0]["version"] != "v2" || lines[0]["sha256"] != sum[:12] || lines[0]["old_sha256"] == nil || len(lines[0]["old_sha256"].(string)) != 12 {
		t.Errorf("swap log lines: %v", lines)
	}
	t.Logf("%d calls from 8 goroutines, %d failed, by version %v; v2 served %v after the rename (poll every %v)",
		calls, failed, byVersion, took.Round(time.Millisecond), swapWatch)
}

// A program that cannot take over — one that exits at once, a truncated build, another plugin, one
// that never answers the handshake — is refused: the old process serves on (same pid, every call
// succeeds meanwhile), the refusal is logged and counted once per program (not tried again while the
// file stays), and a good program deployed after them is swapped in.
func TestSwapRefusesBrokenPrograms(t *testing.T) {
	v2 := build(t, "-X main.version=v2")
	other := build(t, "-X main.version=v9 -X main.name=other-rules")
	e := newSwapEnv(t, 2*time.Second)
	oldPID := pidOf(t, e.h, "chaos-rules")
	good, err := os.ReadFile(v2)
	if err != nil {
		t.Fatal(err)
	}
	otherData, err := os.ReadFile(other)
	if err != nil {
		t.Fatal(err)
	}

	// Calls run throughout, one at a time.
	stop := make(chan struct{})
	var calls, failed int
	var firstErr error
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			default:
			}
			by, err := e.call(context.Background(), "ok")
			calls++
			if err == nil {
				if v, p := servedBy(by); v != "v1" || p != oldPID {
					err = fmt.Errorf("answered by %s", by)
				}
			}
			if err != nil {
				failed++
				firstErr = err
			}
			time.Sleep(2 * time.Millisecond)
		}
	}()

	// The last is one that fails fast, so that a retry of it within the check below would be counted.
	broken := []struct {
		name string
		data []byte
		want string // in the refusal's error
	}{
		{"no handshake", []byte("#!/bin/sh\nexec sleep 60\n"), "timeout while waiting for plugin to start"},
		{"another plugin", otherData, `is plugin "other-rules", not "chaos-rules"`},
		// go-plugin words both: "Unrecognized remote plugin message: …Failed to read any lines…".
		{"truncated", good[:len(good)/2], "Failed to read any lines from plugin's stdout"},
		{"exits at once", []byte("#!/bin/sh\necho broken build >&2\nexit 1\n"), "Failed to read any lines from plugin's stdout"},
	}
	for i, b := range broken {
		start := time.Now()
		sum := e.deployBytes(b.data)
		st, took := e.waitStatus(8*time.Second, func(st plugins.Status) bool { return st.RefusedSHA256 == sum })
		if !strings.Contains(st.SwapError, b.want) {
			t.Errorf("%s: swap error %q, want it to contain %q", b.name, st.SwapError, b.want)
		}
		if st.Version != "v1" || st.PID != oldPID || !st.Running || st.Swaps != 0 {
			t.Errorf("%s: after the refusal: %+v", b.name, st)
		}
		if n := e.swaps(metrics.SwapRefused); n != i+1 {
			t.Errorf("%s: records_plugin_swaps_total{result=refused} = %d, want %d", b.name, n, i+1)
		}
		t.Logf("%s: refused %v after the rename (%v from the deploy): %.80q", b.name, took.Round(time.Millisecond), time.Since(start).Round(time.Millisecond), st.SwapError)
	}
	// The last refused program stays in place: it is not tried again (each try would take about 0.2 s
	// and count a refusal).
	starts := e.status().Starts
	time.Sleep(6 * swapWatch)
	if n, st := e.swaps(metrics.SwapRefused), e.status(); n != len(broken) || st.Starts != starts {
		t.Errorf("the refused program was tried again: %d refusals for %d programs, starts %d → %d", n, len(broken), starts, st.Starts)
	}
	lines := e.logLines("plugin program refused; the running process serves on")
	if len(lines) != len(broken) {
		t.Errorf("%d refusal log lines, want %d", len(lines), len(broken))
	}
	for _, l := range lines {
		if l["plugin"] != "chaos-rules" || l["serving_version"] != "v1" || l["sha256"] == "" || l["err"] == "" {
			t.Errorf("refusal log line %v", l)
		}
	}

	close(stop)
	<-done
	if failed > 0 {
		t.Errorf("%d of %d calls failed or were answered by another process while broken programs were deployed; the last: %v", failed, calls, firstErr)
	}
	if n := children(t, "chaos-rules"); n != 1 {
		t.Errorf("%d chaos-rules processes run, want 1 (the refused ones stopped)", n)
	}

	// A good program after the broken ones is taken.
	sum := e.deploy(v2)
	st, took := e.waitStatus(5*time.Second, func(st plugins.Status) bool { return st.Version == "v2" })
	if st.SHA256 != sum || st.RefusedSHA256 != "" || st.SwapError != "" {
		t.Errorf("after the good program: %+v", st)
	}
	if by, err := e.call(context.Background(), "ok"); err != nil || !strings.HasPrefix(by, "v2 ") {
		t.Errorf("a call after the swap: %q, %v", by, err)
	}
	t.Logf("%d calls while %d broken programs were refused, %d failed; the good one served %v after its rename", calls, len(broken), failed, took.Round(time.Millisecond))
}

// A slow call started before the swap finishes on the old process, which runs until it is over, while
// the calls after the swap go to the new one.
func TestSwapLetsCallsInFlightFinish(t *testing.T) {
	t.Setenv("CHAOS_SLOW", "2500ms")
	v2 := build(t, "-X main.version=v2")
	e := newSwapEnv(t, 5*time.Second)
	oldPID := pidOf(t, e.h, "chaos-rules")

	type answer struct {
		by  string
		err error
		at  time.Time
	}
	slow := make(chan answer, 1)
	began := time.Now()
	go func() {
		by, err := e.call(context.Background(), "slow")
		slow <- answer{by, err, time.Now()}
	}()
	time.Sleep(100 * time.Millisecond) // the call is in the plugin
	e.deploy(v2)
	st, took := e.waitStatus(2*time.Second, func(st plugins.Status) bool { return st.Version == "v2" })
	select {
	case a := <-slow:
		t.Fatalf("the slow call returned before the swap: %q, %v", a.by, a.err)
	default:
	}
	if s := processState(oldPID); s == "" || s == "Z" {
		t.Fatalf("the old process %d was stopped under a call in flight", oldPID)
	}
	by, err := e.call(context.Background(), "ok")
	if err != nil || by != "v2 "+strconv.Itoa(st.PID) {
		t.Errorf("a call after the swap: %q, %v (v2 is pid %d)", by, err, st.PID)
	}
	a := <-slow
	if a.err != nil || a.by != "v1 "+strconv.Itoa(oldPID) {
		t.Errorf("the slow call: %q, %v (v1 is pid %d)", a.by, a.err, oldPID)
	}
	d, ok := gone(oldPID, 3*time.Second)
	if !ok {
		t.Errorf("the old process %d still runs %v after its last call", oldPID, d)
	}
	t.Logf("swapped %v after the rename, under a 2.5 s call; the call answered by v1 after %v; v1 gone %v later",
		took.Round(time.Millisecond), a.at.Sub(began).Round(time.Millisecond), d.Round(time.Millisecond))
}

// A program written in place (not renamed), slowly, is not taken while it is being written: only once
// its file stayed the same across two polls, so it is swapped in once and never refused as half a
// program.
func TestSwapWaitsForAFileBeingWritten(t *testing.T) {
	v2 := build(t, "-X main.version=v2")
	e := newSwapEnv(t, 2*time.Second)
	data, err := os.ReadFile(v2)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(e.dir, "chaos-rules")
	// The running process's file cannot be written into (ETXTBSY): remove it (the process keeps it) and
	// write the new one at the path, in 12 pieces 60 ms apart (0.7 s, several polls).
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	piece := len(data)/12 + 1
	for off := 0; off < len(data); off += piece {
		if _, err := f.Write(data[off:min(off+piece, len(data))]); err != nil {
			t.Fatal(err)
		}
		time.Sleep(60 * time.Millisecond)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	st, took := e.waitStatus(5*time.Second, func(st plugins.Status) bool { return st.Version == "v2" })
	if n := e.swaps(metrics.SwapRefused); n != 0 {
		t.Errorf("%d refusals: a half-written program was tried (%+v)", n, st)
	}
	if st.Swaps != 1 {
		t.Errorf("after the write: %+v", st)
	}
	t.Logf("swapped %v after the last write", took.Round(time.Millisecond))
}

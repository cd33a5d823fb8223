package plugins_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/workspace-records/records/engine/model"
	"github.com/workspace-records/records/plugins/sdk"
	"github.com/workspace-records/records/runtime/metrics"
	"github.com/workspace-records/records/runtime/plugins"
	"github.com/workspace-records/records/runtime/server/servertest"
)

// chaosPlugins returns a plugins directory holding the test plugin chaos-rules
// (runtime/server/testdata/chaos-rules) under each of names, and a catalog whose resource widgets names
// them in its hooks. The plugin reads the file CHAOS_START_FILE (set here) at each start.
func chaosPlugins(t *testing.T, names ...string) (dir, startFile string, cat *model.Catalog) {
	t.Helper()
	dir = t.TempDir()
	for _, name := range names {
		servertest.BuildPlugin(t, dir, name, "./runtime/server/testdata/chaos-rules")
	}
	startFile = filepath.Join(t.TempDir(), "chaos-start")
	t.Setenv("CHAOS_START_FILE", startFile)
	return dir, startFile, &model.Catalog{Resources: []*model.Resource{{Name: "widgets", Hooks: names}}}
}

// processState returns the state letter of process pid ("R", "S", "T", "Z" …), or "" when it is gone.
func processState(pid int) string {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return ""
	}
	i := strings.LastIndexByte(string(data), ')')
	if f := strings.Fields(string(data[i+1:])); len(f) > 0 {
		return f[0]
	}
	return ""
}

// gone waits up to within for process pid to end (to be gone or a zombie) and returns how long it took.
func gone(pid int, within time.Duration) (time.Duration, bool) {
	start := time.Now()
	for {
		if s := processState(pid); s == "" || s == "Z" {
			return time.Since(start), true
		}
		if time.Since(start) > within {
			return time.Since(start), false
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func pidOf(t *testing.T, h *plugins.Host, name string) int {
	t.Helper()
	for _, st := range h.Statuses() {
		if st.Name == name && st.PID > 0 {
			return st.PID
		}
	}
	t.Fatalf("%s is not running: %+v", name, h.Statuses())
	return 0
}

// A program that never answers go-plugin's handshake stops the host's start after StartTimeout, with
// an error that says so, and leaves no process behind. (recordsd's servers use the default, 10 s.)
func TestStartWithoutHandshake(t *testing.T) {
	dir, startFile, cat := chaosPlugins(t, "chaos-rules")
	if err := os.WriteFile(startFile, []byte("hang"), 0o644); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	h, err := plugins.New(context.Background(), plugins.Config{Dir: dir, Timeout: 100 * time.Millisecond, StartTimeout: time.Second}, cat)
	took := time.Since(start)
	if err == nil {
		h.Close()
		t.Fatal("the host started a plugin that never answered its handshake")
	}
	if !strings.Contains(err.Error(), "start plugin chaos-rules") || !strings.Contains(err.Error(), "timeout while waiting for plugin to start") {
		t.Errorf("error %q", err)
	}
	if took < time.Second || took > 3*time.Second {
		t.Errorf("New returned after %v, want about the 1 s start timeout", took)
	}
	if n := children(t, "chaos-rules"); n != 0 {
		t.Errorf("%d chaos-rules processes left", n)
	}
	t.Logf("refused after %v: %v", took.Round(time.Millisecond), err)
}

// A program that is not executable is a load error naming it.
func TestStartNotExecutable(t *testing.T) {
	dir, _, cat := chaosPlugins(t, "chaos-rules")
	if err := os.Chmod(filepath.Join(dir, "chaos-rules"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := plugins.New(context.Background(), plugins.Config{Dir: dir}, cat)
	if err == nil || !strings.Contains(err.Error(), `plugin "chaos-rules" (hooks of widgets) has no executable program`) {
		t.Fatalf("err = %v", err)
	}
}

// A plugin whose whole process stops answering (SIGSTOP) is replaced at the next call once a call missed
// its deadline, and Close does not wait for it forever (go-plugin's Kill alone would: it asks the
// process to shut down and waits for the answer): it is killed after a grace period.
func TestStoppedPlugin(t *testing.T) {
	dir, _, cat := chaosPlugins(t, "chaos-rules")
	h, err := plugins.New(context.Background(), plugins.Config{Dir: dir, Timeout: 100 * time.Millisecond}, cat)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	call := func(name string) (time.Duration, error) {
		start := time.Now()
		_, err := h.Before(context.Background(), "chaos-rules", &sdk.Call{Resource: "widgets", Operation: sdk.OpCreate, Changes: map[string]any{"name": name}}, nil)
		return time.Since(start), err
	}
	if _, err := call("before=ok"); err != nil {
		t.Fatal(err)
	}
	stopped := pidOf(t, h, "chaos-rules")
	stop(t, stopped)
	took, err := call("before=ok")
	if !errors.Is(err, plugins.ErrUnavailable) || took > time.Second {
		t.Fatalf("a call to the stopped plugin: %v after %v", err, took)
	}
	if state := processState(stopped); state != "T" {
		t.Logf("the stopped plugin is in state %q (something resumed it)", state)
	}
	// The next calls run on a new process: started by the first of them, which may find it still
	// starting past the 100 ms deadline on a loaded machine (ErrUnavailable, at once), as may the
	// calls right after it.
	replaced := time.Now()
	for {
		took, err := call("before=ok")
		if err == nil {
			break
		}
		if !errors.Is(err, plugins.ErrUnavailable) || took > time.Second || time.Since(replaced) > 5*time.Second {
			t.Fatalf("the calls after: %v after %v (%v since the first)", err, took, time.Since(replaced))
		}
		time.Sleep(20 * time.Millisecond)
	}
	pid := pidOf(t, h, "chaos-rules")
	if pid == stopped {
		t.Fatal("the stopped plugin was not replaced")
	}

	// Close with a stopped plugin, and the one it replaced still being stopped: both are killed after
	// the grace period (3 s).
	stop(t, pid)
	state := processState(pid)
	start := time.Now()
	h.Close()
	closed := time.Since(start)
	if closed > 5*time.Second {
		t.Errorf("Close took %v", closed)
	}
	for _, p := range []int{stopped, pid} {
		if d, ok := gone(p, time.Second); !ok {
			t.Errorf("plugin %d still runs %v after Close", p, d)
		}
	}
	t.Logf("Close with a plugin in state %q took %v", state, closed.Round(time.Millisecond))
}

// stop sends SIGSTOP to pid and waits until it is stopped (the signal is delivered asynchronously).
func stop(t *testing.T, pid int) {
	t.Helper()
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	if _, ok := servertest.WaitFor(time.Second, func() bool { return processState(pid) == "T" }); !ok {
		t.Fatalf("process %d is in state %q after SIGSTOP", pid, processState(pid))
	}
}

// P4: when the host dies by SIGKILL (no Close), its plugins die with it: the kernel sends them SIGKILL
// (Linux's parent-death signal); the next host removes the socket directory it left. The host here is
// this test binary run again as a child.
func TestPluginsDieWithHost(t *testing.T) {
	if dir := os.Getenv("RECORDS_TEST_PLUGIN_HOST"); dir != "" {
		runHost(dir)
		return
	}
	// The hosts' socket directories go in a temporary directory of this test's own: every host sweeps
	// the directories dead hosts left in its TMPDIR, and make test starts hosts in other test processes
	// all the time, which swept the killed host's directory before this test looked for it. A short
	// path: a Unix socket's path is at most 107 bytes, and t.TempDir's are long.
	priv, err := os.MkdirTemp("", "rpd")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(priv) })
	t.Setenv("TMPDIR", priv)
	dir, _, _ := chaosPlugins(t, "chaos-a", "chaos-b")
	cmd := exec.Command(os.Args[0], "-test.run=^TestPluginsDieWithHost$", "-test.count=1")
	cmd.Env = append(os.Environ(), "RECORDS_TEST_PLUGIN_HOST="+dir)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	var pids []int
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "plugin pids:"); ok {
			for _, f := range strings.Fields(rest) {
				pid, _ := strconv.Atoi(f)
				pids = append(pids, pid)
			}
			break
		}
	}
	if len(pids) != 2 {
		t.Fatalf("the host printed plugin pids %v", pids)
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	var worst time.Duration
	for _, pid := range pids {
		d, ok := gone(pid, 5*time.Second)
		if !ok {
			t.Errorf("plugin %d outlived its SIGKILLed host by %v", pid, d)
			syscall.Kill(pid, syscall.SIGKILL)
		}
		worst = max(worst, d)
	}
	t.Logf("%d plugins gone at most %v after their host was SIGKILLed", len(pids), worst.Round(time.Millisecond))

	// The dead host's socket directory (its plugins' sockets in it) is removed by the next host.
	stale, _ := filepath.Glob(filepath.Join(os.TempDir(), fmt.Sprintf("records-plugins-%d-*", cmd.Process.Pid)))
	if len(stale) != 1 {
		t.Fatalf("the killed host's socket directories: %v", stale)
	}
	cat := &model.Catalog{Resources: []*model.Resource{{Name: "widgets", Hooks: []string{"chaos-a"}}}}
	h, err := plugins.New(context.Background(), plugins.Config{Dir: dir}, cat)
	if err != nil {
		t.Fatal(err)
	}
	h.Close()
	if _, err := os.Stat(stale[0]); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the killed host's socket directory %s is still there (%v)", stale[0], err)
	}
}

// runHost starts a host of chaos-a and chaos-b from dir, prints their pids and waits to be killed.
func runHost(dir string) {
	cat := &model.Catalog{Resources: []*model.Resource{{Name: "widgets", Hooks: []string{"chaos-a", "chaos-b"}}}}
	h, err := plugins.New(context.Background(), plugins.Config{Dir: dir}, cat)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	var pids []string
	for _, st := range h.Statuses() {
		pids = append(pids, strconv.Itoa(st.PID))
	}
	fmt.Println("plugin pids:", strings.Join(pids, " "))
	time.Sleep(time.Minute)
	os.Exit(1)
}

// children counts the live processes named name whose parent is this process.
func children(t *testing.T, name string) int {
	t.Helper()
	entries, _ := os.ReadDir("/proc")
	n := 0
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		s := string(data)
		open, end := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
		if open < 0 || end < open || s[open+1:end] != name {
			continue
		}
		f := strings.Fields(s[end+1:])
		if len(f) > 1 && f[1] == strconv.Itoa(os.Getpid()) && f[0] != "Z" {
			n++
		}
	}
	return n
}

// A program that exits as it starts is not started again by every call: after a failed start the next
// waits 100 ms, doubling up to 5 s, and calls meanwhile fail at once with ErrUnavailable. Restart (a
// new binary deployed) starts it at the next call, and a start that succeeds ends the waiting.
func TestFailedStartBacksOff(t *testing.T) {
	dir, startFile, cat := chaosPlugins(t, "chaos-rules")
	h, err := plugins.New(context.Background(), plugins.Config{Dir: dir, Timeout: time.Second}, cat)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	call := func() (time.Duration, error) {
		start := time.Now()
		_, err := h.Before(context.Background(), "chaos-rules", &sdk.Call{Resource: "widgets", Operation: sdk.OpCreate, Changes: map[string]any{"name": "before=ok"}}, nil)
		return time.Since(start), err
	}
	starts := func() int {
		for _, st := range h.Statuses() {
			return st.Starts
		}
		return 0
	}
	if err := os.WriteFile(startFile, []byte("exit"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := h.Restart("chaos-rules"); err != nil {
		t.Fatal(err)
	}
	before := starts()
	calls, slowest := 0, time.Duration(0)
	for start := time.Now(); time.Since(start) < 1500*time.Millisecond; calls++ {
		took, err := call()
		if !errors.Is(err, plugins.ErrUnavailable) {
			t.Fatalf("call %d to a plugin that cannot start: %v", calls, err)
		}
		slowest = max(slowest, took)
		time.Sleep(2 * time.Millisecond)
	}
	n := starts() - before
	// Starts at about 0, 0.1, 0.3, 0.7 and 1.5 s: at most 5 (6 on a slow machine) for hundreds of calls.
	if n < 2 || n > 6 {
		t.Errorf("%d starts for %d calls in 1.5 s; want 2..6", n, calls)
	}
	t.Logf("%d calls in 1.5 s to a plugin exiting at start: %d starts, slowest call %v", calls, n, slowest.Round(time.Millisecond))

	if err := os.WriteFile(startFile, []byte("ok"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := call(); err == nil {
		t.Log("the wait after the last failed start had already passed")
	}
	if err := h.Restart("chaos-rules"); err != nil {
		t.Fatal(err)
	}
	if took, err := call(); err != nil || took > 3*time.Second {
		t.Fatalf("the call after Restart with a working program: %v after %v", err, took)
	}
}

// At most Config.AfterLimit After hooks run at once: a burst past it is skipped and counted (the
// write stands), and a slot frees as a hook ends.
func TestAfterLimit(t *testing.T) {
	dir, _, cat := chaosPlugins(t, "chaos-rules")
	t.Setenv("CHAOS_SLOW", "1s")
	m := metrics.New()
	h, err := plugins.New(context.Background(), plugins.Config{Dir: dir, Timeout: 5 * time.Second, AfterLimit: 2, Metrics: m}, cat)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	after := func(kind string) {
		h.After("chaos-rules", &sdk.Call{Resource: "widgets", Operation: sdk.OpCreate, Changes: map[string]any{"name": "after=" + kind}}, map[string]any{})
	}
	count := func(outcome string) float64 {
		families, err := m.Registry().Gather()
		if err != nil {
			t.Fatal(err)
		}
		total := 0.0
		for _, f := range families {
			if f.GetName() != "records_plugin_calls_total" {
				continue
			}
			for _, c := range f.GetMetric() {
				labels := map[string]string{}
				for _, l := range c.GetLabel() {
					labels[l.GetName()] = l.GetValue()
				}
				if labels["hook"] == "after" && labels["outcome"] == outcome {
					total += c.GetCounter().GetValue()
				}
			}
		}
		return total
	}
	for range 5 {
		after("slow")
	}
	if got := count(metrics.OutcomeSkipped); got != 3 {
		t.Fatalf("%v After hooks skipped of 5 sent at once with a limit of 2, want 3", got)
	}
	if _, ok := servertest.WaitFor(10*time.Second, func() bool { return count(metrics.OutcomeOK) == 2 }); !ok {
		t.Fatalf("%v After hooks ran to the end, want the 2 admitted", count(metrics.OutcomeOK))
	}
	after("ok") // the slots are free again
	if _, ok := servertest.WaitFor(10*time.Second, func() bool { return count(metrics.OutcomeOK) == 3 }); !ok {
		t.Fatalf("an After hook sent once the others ended did not run (ok %v, skipped %v)", count(metrics.OutcomeOK), count(metrics.OutcomeSkipped))
	}
	if got := count(metrics.OutcomeSkipped); got != 3 {
		t.Errorf("%v skipped in all, want still 3", got)
	}
}

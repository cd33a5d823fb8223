package crash_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/workspace-records/records/runtime/server/servertest"
)

// binDir holds recordsd and recordsctl built from the working tree for this test binary.
var binDir string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "records-crash-bin")
	if err != nil {
		panic(err)
	}
	for _, name := range []string{"recordsd", "recordsctl"} {
		cmd := exec.Command("go", "build", "-o", filepath.Join(dir, name), "./cmd/"+name)
		cmd.Dir = servertest.RepoDir()
		if out, err := cmd.CombinedOutput(); err != nil {
			os.RemoveAll(dir)
			panic(fmt.Sprintf("go build %s: %v\n%s", name, err, out))
		}
	}
	binDir = dir
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// ctl runs recordsctl --json against db and returns its JSON output.
func ctl(t testing.TB, db string, args ...string) map[string]any {
	t.Helper()
	full := append([]string{"--db", db, "--definitions", servertest.DefinitionsDir(), "--json"}, args...)
	cmd := exec.Command(filepath.Join(binDir, "recordsctl"), full...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("recordsctl %s: %v: %s", strings.Join(args, " "), err, stderr.Bytes())
	}
	var out map[string]any
	if err := json.Unmarshal(stdout.Bytes(), &out); err != nil {
		t.Fatalf("recordsctl %s: output %q: %v", strings.Join(args, " "), stdout.Bytes(), err)
	}
	return out
}

// process is the recordsd under test. It keeps its address across restarts.
type process struct {
	addr   string
	args   []string
	log    *syncBuffer
	cmd    *exec.Cmd
	exited chan struct{}
	starts int
}

func (p *process) url() string { return "http://" + p.addr }

// start runs recordsd and waits until it answers GET /v1.
func (p *process) start() error {
	p.starts++
	fmt.Fprintf(p.log, "--- start %d ---\n", p.starts)
	cmd := exec.Command(filepath.Join(binDir, "recordsd"), p.args...)
	cmd.Stdout = io.Discard
	cmd.Stderr = p.log
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start recordsd: %w", err)
	}
	p.cmd, p.exited = cmd, make(chan struct{})
	exited := p.exited
	go func() { cmd.Wait(); close(exited) }()
	client := &http.Client{Timeout: time.Second}
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		if res, err := client.Get(p.url() + "/v1"); err == nil {
			io.Copy(io.Discard, res.Body)
			res.Body.Close()
			if res.StatusCode == 200 {
				return nil
			}
		}
		select {
		case <-exited:
			return fmt.Errorf("recordsd exited (%v) before serving: %s", cmd.ProcessState, p.log.tail())
		case <-time.After(10 * time.Millisecond):
		}
	}
	p.signal(syscall.SIGKILL)
	return fmt.Errorf("recordsd did not serve within 60 s: %s", p.log.tail())
}

// signal sends sig and waits for the process to end (SIGKILL after 15 s); it returns the exit code (-1
// when a signal ended it).
func (p *process) signal(sig syscall.Signal) int {
	if p.cmd == nil {
		return -1
	}
	p.cmd.Process.Signal(sig)
	select {
	case <-p.exited:
	case <-time.After(15 * time.Second):
		p.cmd.Process.Kill()
		<-p.exited
	}
	return p.cmd.ProcessState.ExitCode()
}

// running reports whether the process has not exited.
func (p *process) running() bool {
	if p.exited == nil {
		return false
	}
	select {
	case <-p.exited:
		return false
	default:
		return true
	}
}

// proc names one process: its pid and its start time, since pids are reused (pid_max may be 32768).
type proc struct {
	pid   int
	start string
}

// children lists the processes whose parent is recordsd (its plugins).
func (p *process) children() []proc {
	if p.cmd == nil {
		return nil
	}
	entries, _ := os.ReadDir("/proc")
	var out []proc
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if st, ok := procStat(pid); ok && st.ppid == p.cmd.Process.Pid {
			out = append(out, proc{pid, st.start})
		}
	}
	return out
}

type stat struct {
	ppid  int
	state byte
	start string
}

// procStat reads a process's parent, state and start time from /proc/PID/stat.
func procStat(pid int) (stat, bool) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return stat{}, false
	}
	// pid (comm) state ppid … starttime (field 22); comm may hold spaces and parentheses, so cut at
	// the last ')'.
	f := strings.Fields(string(data[bytes.LastIndexByte(data, ')')+1:]))
	if len(f) < 20 {
		return stat{}, false
	}
	ppid, _ := strconv.Atoi(f[1])
	return stat{ppid: ppid, state: f[0][0], start: f[19]}, true
}

// gone reports whether pr has ended (absent, a zombie waiting to be reaped, or its pid now another
// process's).
func gone(pr proc) bool {
	st, ok := procStat(pr.pid)
	return !ok || st.state == 'Z' || st.state == 'X' || st.start != pr.start
}

func freeAddr(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// syncBuffer is a bytes.Buffer a process's output copier and the test may use at once.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) tail() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	s := b.buf.String()
	if len(s) > 4000 {
		s = "…" + s[len(s)-4000:]
	}
	return s
}

// String returns everything written.
func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

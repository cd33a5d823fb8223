// Package proc starts and watches the real processes that the end-to-end tests and the benchmark tool
// run: recordsd replicas, the benchmark's floor server and the plugins they spawn. It needs no testing.TB,
// so a program (tools/bench) uses it as the tests do: it is a process harness, not a test helper, and sits
// in internal/ rather than under servertest so that no program imports a test helper (tests/layers).
package proc

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Buffer is a bytes.Buffer that a process's output copier and the test may use at once.
type Buffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// String returns everything written so far.
func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// Tail returns the last 4,000 bytes written, for a failure message.
func (b *Buffer) Tail() string {
	s := b.String()
	if len(s) > 4000 {
		s = "…" + s[len(s)-4000:]
	}
	return s
}

// Count returns how many times s occurs in everything written.
func (b *Buffer) Count(s string) int {
	return strings.Count(b.String(), s)
}

// FreeAddr returns a loopback address with a port that was free a moment ago.
func FreeAddr() (string, error) {
	addrs, err := FreeAddrs(1)
	if err != nil {
		return "", err
	}
	return addrs[0], nil
}

// FreeAddrs returns n distinct loopback addresses with ports that were free a moment ago. The ports are
// held until all n are chosen: FreeAddr called n times may hand out one port twice (the kernel reuses a
// port as soon as it is released), and two servers told to listen on one address would look like one
// server answering on both.
//
// The ports come from below the kernel's ephemeral range (ip_local_port_range), not from a listen on port
// 0: a port from that range is the next local port of some outgoing connection (a test's pool opening a
// connection to PostgreSQL or Redis), and a server that starts seconds later (recordsd migrates first)
// found its port taken by one (bind: address already in use, CI 2026-11-28). Below the range only
// another listener can take it.
func FreeAddrs(n int) ([]string, error) {
	low, high := listenRange()
	out := make([]string, 0, n)
	for attempt := 0; len(out) < n; attempt++ {
		if attempt > 1000 {
			return nil, fmt.Errorf("free address: no free port in %d-%d after %d tries", low, high, attempt)
		}
		ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(low+rand.IntN(high-low))))
		if err != nil {
			continue // taken: try another
		}
		defer ln.Close()
		out = append(out, ln.Addr().String())
	}
	return out, nil
}

// listenRange returns the ports [low, high) that FreeAddrs chooses from: the 20,000 ports (fewer if
// there are not that many above 1024) just below the ephemeral range.
func listenRange() (low, high int) {
	high = 32768 // Linux's default start of the ephemeral range
	if b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		if f := strings.Fields(string(b)); len(f) == 2 {
			if v, err := strconv.Atoi(f[0]); err == nil && v > 2048 {
				high = v
			}
		}
	}
	return max(1024, high-20000), high
}

// Build compiles the module's commands (cmd/NAME) at repo into a new temporary directory and returns it;
// the caller removes it.
func Build(repo string, names ...string) (string, error) {
	dir, err := os.MkdirTemp("", "records-bin")
	if err != nil {
		return "", fmt.Errorf("build: %w", err)
	}
	for _, name := range names {
		cmd := exec.Command("go", "build", "-o", filepath.Join(dir, name), "./cmd/"+name)
		cmd.Dir = repo
		if out, err := cmd.CombinedOutput(); err != nil {
			os.RemoveAll(dir)
			return "", fmt.Errorf("go build %s: %w\n%s", name, err, out)
		}
	}
	return dir, nil
}

// Process is a server process that can be started again at the same address, as a load balancer's
// target is. Its standard error goes to Log, with a "--- start N ---" line before each start.
type Process struct {
	Name  string   // for messages: "recordsd", "replica 2"
	Path  string   // the executable
	Args  []string // read at each Start, so a test may change them between starts
	Env   []string // appended to this process's environment
	Probe string   // a URL that answers 200 once the process serves
	Log   *Buffer

	// Ready is how long the last Start took from starting the process to its first 200 on Probe.
	Ready time.Duration

	cmd    *exec.Cmd
	exited chan struct{}
	starts int
}

// Start runs the process and waits (at most 60 s) until Probe answers 200. A process that exits first,
// or does not serve in time (it is then killed), is an error quoting the end of its log.
func (p *Process) Start(ctx context.Context) error {
	if p.Log == nil {
		p.Log = &Buffer{}
	}
	p.starts++
	fmt.Fprintf(p.Log, "--- start %d ---\n", p.starts)
	t0 := time.Now()
	cmd := exec.Command(p.Path, p.Args...)
	if p.Env != nil {
		cmd.Env = append(os.Environ(), p.Env...)
	}
	cmd.Stdout = io.Discard
	cmd.Stderr = p.Log
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start %s: %w", p.Name, err)
	}
	p.cmd, p.exited = cmd, make(chan struct{})
	exited := p.exited
	go func() { cmd.Wait(); close(exited) }()
	client := &http.Client{Timeout: time.Second}
	for time.Since(t0) < 60*time.Second {
		if ctx.Err() != nil {
			p.Signal(syscall.SIGKILL)
			return fmt.Errorf("start %s: %w", p.Name, ctx.Err())
		}
		if res, err := client.Get(p.Probe); err == nil {
			io.Copy(io.Discard, res.Body)
			res.Body.Close()
			// The answer must come from this process: FreeAddrs's port may have been taken meanwhile by
			// another process of the machine (a test server, a replica of another test), whose answer
			// would pass for this one's while this one fails to listen (address already in use) and exits.
			if res.StatusCode == http.StatusOK && listens(cmd.Process.Pid, p.Probe) {
				p.Ready = time.Since(t0)
				return nil
			}
		}
		select {
		case <-exited:
			return fmt.Errorf("%s exited (%v) before serving: %s", p.Name, cmd.ProcessState, p.Log.Tail())
		case <-time.After(10 * time.Millisecond):
		}
	}
	p.Signal(syscall.SIGKILL)
	return fmt.Errorf("%s did not serve within 60 s: %s", p.Name, p.Log.Tail())
}

// Signal sends sig and waits for the process to end (SIGKILL after 15 s). It returns the exit code (-1
// when a signal ended it or the process never started).
func (p *Process) Signal(sig syscall.Signal) int {
	if p == nil || p.cmd == nil {
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

// Running reports whether the process was started and has not exited.
func (p *Process) Running() bool {
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

// Exited is closed when the current run of the process ends (nil before the first start).
func (p *Process) Exited() <-chan struct{} { return p.exited }

// Pid is the current run's process id (0 before the first start).
func (p *Process) Pid() int {
	if p.cmd == nil {
		return 0
	}
	return p.cmd.Process.Pid
}

// Starts counts the calls of Start.
func (p *Process) Starts() int { return p.starts }

// Children lists the processes whose parent is the current run (its plugins).
func (p *Process) Children() []Child {
	if p.cmd == nil {
		return nil
	}
	return Children(p.cmd.Process.Pid)
}

// Child names one process by its pid and start time, since pids are reused (pid_max may be 32768).
type Child struct {
	Pid   int
	start string
}

// Gone reports whether the process has ended: absent, a zombie waiting to be reaped, or its pid now
// another process's.
func (c Child) Gone() bool {
	st, ok := readStat(c.Pid)
	return !ok || st.state == 'Z' || st.state == 'X' || st.start != c.start
}

// Children lists the processes whose parent is pid.
func Children(pid int) []Child {
	entries, _ := os.ReadDir("/proc")
	var out []Child
	for _, e := range entries {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if st, ok := readStat(p); ok && st.ppid == pid {
			out = append(out, Child{Pid: p, start: st.start})
		}
	}
	return out
}

type stat struct {
	ppid  int
	state byte
	start string
}

// readStat reads a process's parent, state and start time from /proc/PID/stat.
func readStat(pid int) (stat, bool) {
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

// RSS is the resident set size of pid in MiB (0 when it cannot be read).
func RSS(pid int) float64 {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 64)
			return kb / 1024
		}
	}
	return 0
}

// JSON runs the command at path with args and decodes its standard output as one JSON object; a failure
// quotes the command's standard error.
func JSON(ctx context.Context, path string, args ...string) (map[string]any, error) {
	cmd := exec.CommandContext(ctx, path, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("%s %s: %w: %s", filepath.Base(path), strings.Join(args, " "), err, stderr.Bytes())
	}
	var out map[string]any
	if err := json.Unmarshal(stdout.Bytes(), &out); err != nil {
		return nil, fmt.Errorf("%s %s: output %q: %w", filepath.Base(path), strings.Join(args, " "), stdout.Bytes(), err)
	}
	return out, nil
}

// RunTests is a TestMain body for tests that run the binaries: it builds the module's named commands at
// repo, points *bin at their directory, runs the tests and removes the binaries. It returns the code for
// os.Exit.
func RunTests(m interface{ Run() int }, repo string, bin *string, names ...string) int {
	dir, err := Build(repo, names...)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	defer os.RemoveAll(dir)
	*bin = dir
	return m.Run()
}

// listens reports whether process pid holds the listening TCP socket of probe's port (Linux: the
// sockets of /proc/net/tcp and tcp6 in state LISTEN, matched by inode to the process's descriptors).
// Where /proc cannot tell (no such port listed), it answers true: the probe's answer is then all there is.
func listens(pid int, probe string) bool {
	u, err := url.Parse(probe)
	if err != nil {
		return true
	}
	port, err := strconv.ParseUint(u.Port(), 10, 16)
	if err != nil {
		return true
	}
	inodes := map[string]bool{}
	for _, table := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		data, err := os.ReadFile(table)
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(data), "\n")[1:] {
			f := strings.Fields(line)
			// sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode
			if len(f) < 10 || f[3] != "0A" {
				continue
			}
			if _, hexPort, ok := strings.Cut(f[1], ":"); ok {
				if n, err := strconv.ParseUint(hexPort, 16, 16); err == nil && n == port {
					inodes["socket:["+f[9]+"]"] = true
				}
			}
		}
	}
	if len(inodes) == 0 {
		return true
	}
	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		return true
	}
	for _, fd := range fds {
		if link, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", pid, fd.Name())); err == nil && inodes[link] {
			return true
		}
	}
	return false
}

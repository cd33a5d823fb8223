package proc

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
)

// The test binary doubles as the process under test: with PROC_TEST_SERVE set it serves 200 on that
// address and exits 3 on SIGTERM; with PROC_TEST_FAIL set it writes to standard error and exits 2.
func TestMain(m *testing.M) {
	if msg := os.Getenv("PROC_TEST_FAIL"); msg != "" {
		fmt.Fprintln(os.Stderr, msg)
		os.Exit(2)
	}
	if addr := os.Getenv("PROC_TEST_SERVE"); addr != "" {
		stop := make(chan os.Signal, 1)
		signal.Notify(stop, syscall.SIGTERM)
		go func() { <-stop; os.Exit(3) }()
		fmt.Fprintln(os.Stderr, "serving")
		http.ListenAndServe(addr, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
		os.Exit(1)
	}
	os.Exit(m.Run())
}

func self(t *testing.T) string {
	t.Helper()
	path, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return path
}

func TestProcessStartSignalRestart(t *testing.T) {
	addr, err := FreeAddr()
	if err != nil {
		t.Fatal(err)
	}
	p := &Process{Name: "server", Path: self(t), Env: []string{"PROC_TEST_SERVE=" + addr}, Probe: "http://" + addr + "/"}
	if p.Running() || p.Pid() != 0 || p.Signal(syscall.SIGTERM) != -1 {
		t.Fatal("a process never started reports itself running")
	}
	for round := 1; round <= 2; round++ {
		if err := p.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		if !p.Running() || p.Pid() == 0 || p.Ready <= 0 {
			t.Fatalf("round %d: running %v, pid %d, ready %v after Start", round, p.Running(), p.Pid(), p.Ready)
		}
		found := false
		for _, c := range Children(os.Getpid()) {
			found = found || c.Pid == p.Pid()
		}
		if !found {
			t.Fatalf("round %d: Children(test) does not list the started process %d", round, p.Pid())
		}
		if code := p.Signal(syscall.SIGTERM); code != 3 {
			t.Fatalf("round %d: exit code %d after SIGTERM, want 3", round, code)
		}
		if p.Running() {
			t.Fatalf("round %d: running after it exited", round)
		}
	}
	if p.Starts() != 2 || p.Log.Count("--- start ") != 2 || p.Log.Count("serving") != 2 {
		t.Fatalf("starts %d; log %q", p.Starts(), p.Log.String())
	}
}

func TestProcessExitingBeforeServing(t *testing.T) {
	addr, err := FreeAddr()
	if err != nil {
		t.Fatal(err)
	}
	p := &Process{Name: "broken", Path: self(t), Env: []string{"PROC_TEST_FAIL=no database"}, Probe: "http://" + addr + "/"}
	err = p.Start(context.Background())
	if err == nil || !strings.Contains(err.Error(), "broken exited") || !strings.Contains(err.Error(), "no database") {
		t.Fatalf("Start = %v, want an error naming the process and quoting its log", err)
	}
	if p.Running() {
		t.Fatal("running after it exited")
	}
}

func TestChildGone(t *testing.T) {
	addr, err := FreeAddr()
	if err != nil {
		t.Fatal(err)
	}
	p := &Process{Name: "server", Path: self(t), Env: []string{"PROC_TEST_SERVE=" + addr}, Probe: "http://" + addr + "/"}
	if err := p.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	var child Child
	for _, c := range Children(os.Getpid()) {
		if c.Pid == p.Pid() {
			child = c
		}
	}
	if child.Pid == 0 || child.Gone() {
		t.Fatalf("child %+v: not found or gone while running", child)
	}
	if RSS(child.Pid) <= 0 {
		t.Fatal("RSS of a running process is 0")
	}
	p.Signal(syscall.SIGKILL)
	if !child.Gone() {
		t.Fatal("child not gone after SIGKILL and wait")
	}
	// A pid reused by another process is not the child.
	if (Child{Pid: os.Getpid(), start: "0"}).Gone() != true {
		t.Fatal("a process with another start time counts as the child")
	}
}

func TestBufferConcurrentWriters(t *testing.T) {
	var b Buffer
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 100 {
				b.Write([]byte("line\n"))
				_ = b.Tail()
			}
		})
	}
	wg.Wait()
	if n := b.Count("line\n"); n != 800 {
		t.Fatalf("%d lines, want 800", n)
	}
	b.Write([]byte(strings.Repeat("x", 5000)))
	if tail := b.Tail(); len(tail) != 4000+len("…") || !strings.HasPrefix(tail, "…") {
		t.Fatalf("tail of %d bytes", len(tail))
	}
}

func TestBuildFailureQuotesCompiler(t *testing.T) {
	_, err := Build("../../../..", "no-such-command")
	if err == nil || !strings.Contains(err.Error(), "go build no-such-command") {
		t.Fatalf("Build = %v, want the go build failure", err)
	}
}

// TestFreeAddrsBelowEphemeralRange: the ports FreeAddrs hands out are distinct, free to listen on, and
// below the ephemeral range, where no outgoing connection takes one while the server starts.
func TestFreeAddrsBelowEphemeralRange(t *testing.T) {
	low, high := listenRange()
	if low < 1024 || high <= low {
		t.Fatalf("listenRange = [%d, %d)", low, high)
	}
	addrs, err := FreeAddrs(20)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, a := range addrs {
		_, port, err := net.SplitHostPort(a)
		if err != nil {
			t.Fatal(err)
		}
		p, _ := strconv.Atoi(port)
		if p < low || p >= high || seen[a] {
			t.Fatalf("%s: outside [%d, %d) or handed out twice (%v)", a, low, high, addrs)
		}
		seen[a] = true
		ln, err := net.Listen("tcp", a)
		if err != nil {
			t.Fatalf("listen on a free address: %v", err)
		}
		ln.Close()
	}
}

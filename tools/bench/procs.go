package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// ctl runs recordsctl with --json and decodes its output.
func ctl(ctx context.Context, o options, dsn string, args ...string) (map[string]any, error) {
	full := append([]string{"--db", dsn, "--definitions", o.defs, "--json"}, args...)
	cmd := exec.CommandContext(ctx, o.bin+"/recordsctl", full...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("recordsctl %s: %w: %s", strings.Join(args, " "), err, stderr.Bytes())
	}
	var v map[string]any
	if err := json.Unmarshal(out, &v); err != nil {
		return nil, fmt.Errorf("recordsctl %s: output %q: %w", strings.Join(args, " "), out, err)
	}
	return v, nil
}

// freeAddr returns a loopback address with a port free right now.
func freeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

// proc is a started server process.
type proc struct {
	cmd   *exec.Cmd
	addr  string
	debug string // recordsd's profile listener, if any
	log   *syncBuffer
	// exited is closed once the process has ended.
	exited chan struct{}
	// ready is the time from starting the process to its first successful request.
	ready time.Duration
}

// startRecordsd starts recordsd on dsn (with extra flags) and waits until it answers GET /v1.
func startRecordsd(ctx context.Context, o options, dsn, secret string, extra ...string) (*proc, error) {
	addr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	debug, err := freeAddr()
	if err != nil {
		return nil, err
	}
	args := append([]string{"serve", "--addr", addr, "--db", dsn, "--definitions", o.defs,
		"--plugins", o.plugins, "--debug-addr", debug}, extra...)
	cmd := exec.Command(o.bin+"/recordsd", args...)
	cmd.Env = append(os.Environ(), "RECORDS_CURSOR_SECRET="+secret)
	p := &proc{cmd: cmd, addr: addr, debug: debug, log: &syncBuffer{}}
	cmd.Stderr = p.log
	return p, p.start(ctx, "http://"+addr+"/v1")
}

// startFloor starts the floor server (this program, re-executed) on dsn.
func startFloor(ctx context.Context, dsn, workspace string) (*proc, error) {
	addr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(self, "floor", "-db", dsn, "-addr", addr, "-workspace", workspace)
	p := &proc{cmd: cmd, addr: addr, log: &syncBuffer{}}
	cmd.Stderr = p.log
	return p, p.start(ctx, "http://"+addr+"/companies?limit=1")
}

func (p *proc) start(ctx context.Context, probe string) error {
	t0 := time.Now()
	if err := p.cmd.Start(); err != nil {
		return fmt.Errorf("start %s: %w", p.cmd.Path, err)
	}
	p.exited = make(chan struct{})
	go func() { p.cmd.Wait(); close(p.exited) }()
	client := &http.Client{Timeout: time.Second}
	for time.Since(t0) < 60*time.Second {
		if ctx.Err() != nil {
			p.stop()
			return ctx.Err()
		}
		res, err := client.Get(probe)
		if err == nil {
			io.Copy(io.Discard, res.Body)
			res.Body.Close()
			if res.StatusCode == 200 {
				p.ready = time.Since(t0)
				return nil
			}
		}
		select {
		case <-p.exited:
			return fmt.Errorf("%s exited: %s", p.cmd.Path, tail(p.log.String()))
		case <-time.After(time.Millisecond):
		}
	}
	p.stop()
	return fmt.Errorf("%s did not start serving: %s", p.cmd.Path, tail(p.log.String()))
}

// stop sends SIGTERM and waits (SIGKILL after 10 s).
func (p *proc) stop() {
	if p == nil || p.exited == nil {
		return
	}
	p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
	case <-time.After(10 * time.Second):
		p.cmd.Process.Kill()
		<-p.exited
	}
}

// startedIn is the start-to-serving time recordsd logged on its "serving" line.
func (p *proc) startedIn() time.Duration {
	sc := bufio.NewScanner(strings.NewReader(p.log.String()))
	for sc.Scan() {
		var line struct {
			Msg       string `json:"msg"`
			StartedIn string `json:"started_in"`
		}
		if json.Unmarshal(sc.Bytes(), &line) == nil && line.Msg == "serving" {
			d, _ := time.ParseDuration(line.StartedIn)
			return d
		}
	}
	return 0
}

// rssMB is the process's resident set size.
func (p *proc) rssMB() float64 {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", p.cmd.Process.Pid))
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

// goroutines reads the count from recordsd's goroutine profile.
func (p *proc) goroutines() int {
	res, err := http.Get("http://" + p.debug + "/debug/pprof/goroutine?debug=1")
	if err != nil {
		return 0
	}
	defer res.Body.Close()
	line, _ := bufio.NewReader(res.Body).ReadString('\n')
	n, _ := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(line, "goroutine profile: total ")))
	return n
}

func tail(s string) string {
	if len(s) > 2000 {
		return s[len(s)-2000:]
	}
	return s
}

// syncBuffer is a bytes.Buffer the process's output copier and the harness may use at once.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

package main

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	procs "github.com/workspace-records/records/internal/proc"
)

// ctl runs recordsctl with --json and decodes its output.
func ctl(ctx context.Context, o options, dsn string, args ...string) (map[string]any, error) {
	return procs.JSON(ctx, o.bin+"/recordsctl", append([]string{"--db", dsn, "--definitions", o.defs, "--json"}, args...)...)
}

// proc is a started server process: recordsd or the floor server.
type proc struct {
	*procs.Process
	addr  string
	debug string // recordsd's profile listener, if any
}

// startRecordsd starts recordsd on dsn (with extra flags) and waits until it answers GET /v1.
func startRecordsd(ctx context.Context, o options, dsn, secret string, extra ...string) (*proc, error) {
	addr, err := procs.FreeAddr()
	if err != nil {
		return nil, err
	}
	debug, err := procs.FreeAddr()
	if err != nil {
		return nil, err
	}
	args := append([]string{"serve", "--addr", addr, "--db", dsn, "--definitions", o.defs,
		"--plugins", o.plugins, "--debug-addr", debug}, extra...)
	p := &proc{addr: addr, debug: debug, Process: &procs.Process{Name: "recordsd", Path: o.bin + "/recordsd", Args: args,
		Env: []string{"RECORDS_CURSOR_SECRET=" + secret}, Probe: "http://" + addr + "/v1", Log: &procs.Buffer{}}}
	return p, p.Start(ctx)
}

// startFloor starts the floor server (this program, re-executed) on dsn.
func startFloor(ctx context.Context, dsn, workspace string) (*proc, error) {
	addr, err := procs.FreeAddr()
	if err != nil {
		return nil, err
	}
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	p := &proc{addr: addr, Process: &procs.Process{Name: "floor server", Path: self, Args: []string{"floor", "-db", dsn, "-addr", addr, "-workspace", workspace},
		Probe: "http://" + addr + "/companies?limit=1", Log: &procs.Buffer{}}}
	return p, p.Start(ctx)
}

// stop sends SIGTERM and waits (SIGKILL after 15 s).
func (p *proc) stop() {
	if p != nil && p.Process != nil {
		p.Signal(syscall.SIGTERM)
	}
}

// startedIn is the start-to-serving time recordsd logged on its "serving" line.
func (p *proc) startedIn() time.Duration {
	sc := bufio.NewScanner(strings.NewReader(p.Log.String()))
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
func (p *proc) rssMB() float64 { return procs.RSS(p.Pid()) }

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

// Command chaos-rules is a test plugin that misbehaves on request, for the plugin chaos tests
// (runtime/server/solo/plugin_chaos_test.go, runtime/plugins). It is never shipped: it lives under
// testdata and tests build it.
//
// The name of the record being written says what each hook does: "before=KIND after=KIND …" (a missing
// word means ok). The kinds:
//
//	ok            answer at once
//	veto          refuse the write (Before only: 422)
//	error         return an error
//	slow          answer after CHAOS_SLOW (default 20ms)
//	panic         panic inside the hook (the process dies)
//	exit          os.Exit(3) inside the hook
//	hang          never answer, ignoring the call's context
//	stop          stop the whole process (SIGSTOP to itself, again whenever it runs): nothing in it
//	              answers any more
//	flood-stdout  write CHAOS_FLOOD_BYTES (default 1 MiB) of 100-byte lines to os.Stdout, then answer
//	flood-stderr  the same to file descriptor 2 (what the host reads as the plugin's log)
//	flood-line    one line of CHAOS_FLOOD_BYTES without a newline to os.Stdout, then answer
//
// The word "whoami" in the name makes the Before hook set served_by to "VERSION PID" (after the kind's
// behaviour): which build and process answered. The plugin's name and version are set at build time
// (-ldflags "-X main.name=… -X main.version=…"), for the plugin swap tests (runtime/plugins/swap_test.go).
//
// CHAOS_START_FILE, when set, names a file read at every start: "hang" never answers the handshake,
// "exit" exits at once, "stdout" prints a line before the handshake; anything else (or no file) starts
// normally.
package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/workspace-records/records/plugins/sdk"
)

// The process's own standard output and error: go-plugin's Serve replaces os.Stdout and os.Stderr with
// pipes it streams to the host over gRPC, while descriptors 1 and 2 stay the pipes the host started the
// program with.
var rawStderr = os.NewFile(2, "stderr")

// Set at build time by the swap tests.
var (
	name    = "chaos-rules"
	version = "test"
)

func main() {
	if path := os.Getenv("CHAOS_START_FILE"); path != "" {
		data, _ := os.ReadFile(path)
		switch strings.TrimSpace(string(data)) {
		case "hang":
			time.Sleep(24 * time.Hour)
		case "exit":
			os.Exit(1)
		case "stdout":
			os.Stdout.WriteString("chaos-rules says hello before the handshake\n")
		}
	}
	sdk.Serve(name, version, sdk.Rules{
		Before: func(ctx context.Context, c *sdk.Call) (*sdk.Result, error) {
			res := &sdk.Result{}
			kind := kindOf(c, sdk.HookBefore)
			if kind == "veto" {
				res.Refuse("name", "invalid", "chaos-rules refuses this write")
				return res, nil
			}
			err := behave(kind)
			if n, _ := c.Value("name").(string); slices.Contains(strings.Fields(n), "whoami") {
				res.SetValue("served_by", version+" "+strconv.Itoa(os.Getpid()))
			}
			return res, err
		},
		After: func(ctx context.Context, c *sdk.Call, _ map[string]any) error {
			return behave(kindOf(c, sdk.HookAfter))
		},
	})
}

// kindOf returns what the record's name asks of phase.
func kindOf(c *sdk.Call, phase sdk.HookPhase) string {
	name, _ := c.Value("name").(string)
	for _, w := range strings.Fields(name) {
		if k, ok := strings.CutPrefix(w, string(phase)+"="); ok {
			return k
		}
	}
	return "ok"
}

func behave(kind string) error {
	switch kind {
	case "error":
		return errors.New("chaos-rules: the hook failed")
	case "slow":
		d, err := time.ParseDuration(os.Getenv("CHAOS_SLOW"))
		if err != nil {
			d = 20 * time.Millisecond
		}
		time.Sleep(d)
	case "panic":
		panic("chaos-rules: panic inside a hook")
	case "exit":
		os.Exit(3)
	case "hang":
		time.Sleep(24 * time.Hour)
	case "stop":
		// Under load on the test machine a stopped plugin was seen running again within microseconds
		// (the sender of the SIGCONT is unknown): stop again whenever that happens.
		for {
			_ = syscall.Kill(os.Getpid(), syscall.SIGSTOP)
			time.Sleep(time.Millisecond)
		}
	case "flood-stdout":
		flood(os.Stdout, true)
	case "flood-stderr":
		flood(rawStderr, true)
	case "flood-line":
		flood(os.Stdout, false)
	}
	return nil
}

// flood writes CHAOS_FLOOD_BYTES to w, in 100-byte lines or (lines false) as one line.
func flood(w *os.File, lines bool) {
	n, err := strconv.Atoi(os.Getenv("CHAOS_FLOOD_BYTES"))
	if err != nil || n <= 0 {
		n = 1 << 20
	}
	line := bytes.Repeat([]byte("x"), 99)
	if lines {
		line = append(line, '\n')
	} else {
		line = append(line, 'x')
	}
	chunk := bytes.Repeat(line, 100) // 10,000 bytes a write
	for sent := 0; sent < n; sent += len(chunk) {
		if _, err := w.Write(chunk); err != nil {
			return
		}
	}
	if !lines {
		_, _ = w.Write([]byte("\n"))
	}
}

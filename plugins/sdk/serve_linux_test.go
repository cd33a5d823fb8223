package sdk

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// testRole tells this test binary, run again as a child, what to be: "host" starts a plugin and waits
// to be killed; "plugin" serves as a plugin.
const testRole = "RECORDS_SDK_TEST_ROLE"

// A served plugin ends by itself once the host that started it dies by SIGKILL, even a host that did
// not ask the kernel to kill it (no parent-death signal, unlike runtime/plugins on Linux): within
// HostPoll and a margin. The host and the plugin are this test binary run again.
func TestServeEndsWithHost(t *testing.T) {
	switch os.Getenv(testRole) {
	case "plugin":
		Serve("orphan-test", "0.0.0", Rules{})
		return
	case "host":
		runTestHost()
		return
	}
	t.Parallel()
	host := exec.Command(os.Args[0], "-test.run=^TestServeEndsWithHost$", "-test.count=1")
	host.Env = append(os.Environ(), testRole+"=host", "PLUGIN_UNIX_SOCKET_DIR="+t.TempDir())
	host.Stderr = os.Stderr
	out, err := host.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := host.Start(); err != nil {
		t.Fatal(err)
	}
	defer host.Process.Kill()
	pid := 0
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "plugin pid: "); ok {
			pid, _ = strconv.Atoi(rest)
			break
		}
	}
	if pid == 0 {
		_ = host.Process.Kill()
		t.Fatalf("the host printed no plugin pid (%v)", host.Wait())
	}
	if !running(pid) {
		t.Fatalf("plugin %d is not running before its host is killed", pid)
	}
	if err := host.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = host.Wait()
	killed := time.Now()
	for running(pid) && time.Since(killed) < 10*HostPoll+2*time.Second {
		time.Sleep(10 * time.Millisecond)
	}
	if running(pid) {
		_ = syscall.Kill(pid, syscall.SIGKILL)
		t.Fatalf("plugin %d still runs %v after its host was SIGKILLed", pid, time.Since(killed).Round(time.Millisecond))
	}
	t.Logf("plugin gone %v after its host was SIGKILLed", time.Since(killed).Round(time.Millisecond))
}

// runTestHost starts this binary as a plugin (no Pdeathsig), waits for go-plugin's handshake line,
// prints the plugin's pid and waits to be killed.
func runTestHost() {
	cmd := exec.Command(os.Args[0], "-test.run=^TestServeEndsWithHost$", "-test.count=1")
	cmd.Env = append(os.Environ(), testRole+"=plugin", Handshake.MagicCookieKey+"="+Handshake.MagicCookieValue)
	var stderr bytes.Buffer // go-plugin's debug lines; shown only when the plugin does not start
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if err := cmd.Start(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	sc := bufio.NewScanner(out)
	if !sc.Scan() || !strings.Contains(sc.Text(), "|unix|") {
		line, scanErr := sc.Text(), sc.Err()
		_ = cmd.Process.Kill()
		_ = cmd.Wait() // and the copy of its standard error is done
		fmt.Fprintf(os.Stderr, "no handshake from the plugin: %q %v\n%s", line, scanErr, stderr.String())
		os.Exit(1)
	}
	fmt.Printf("plugin pid: %d\n", cmd.Process.Pid)
	time.Sleep(time.Hour) // until the test kills it
}

// running reports whether process pid runs: it exists and is not a zombie (a dead process its new
// parent has not reaped yet).
func running(pid int) bool {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	f := strings.Fields(string(data[bytes.LastIndexByte(data, ')')+1:]))
	return len(f) > 0 && f[0] != "Z" && f[0] != "X"
}

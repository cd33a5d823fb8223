package cmd_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/workspace-records/records/runtime/server/servertest"
)

// exe runs program (recordsd or recordsctl from binDir, or a path) in dir with args, and returns what
// it printed and its exit status.
func exe(t *testing.T, program, dir string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	path := program
	if !strings.Contains(program, "/") {
		path = filepath.Join(binDir, program)
	}
	cmd := exec.Command(path, args...)
	cmd.Dir = dir
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		code = exit.ExitCode()
	case err != nil:
		t.Fatalf("%s %v: %v", program, args, err)
	}
	return out.String(), errOut.String(), code
}

// builtVersion is the version and revision `go version -m` reads from the build information of the
// program at path, as --version should print them.
func builtVersion(t *testing.T, path string) (version, revision string) {
	t.Helper()
	out, err := exec.Command("go", "version", "-m", path).Output()
	if err != nil {
		t.Fatalf("go version -m %s: %v", path, err)
	}
	version = "devel"
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Fields(line)
		switch {
		case len(f) >= 3 && f[0] == "mod" && f[2] != "(devel)":
			version = f[2]
		case len(f) >= 2 && strings.HasPrefix(f[1], "vcs.revision="):
			revision = strings.TrimPrefix(f[1], "vcs.revision=")
		}
	}
	return version, revision
}

// help, COMMAND --help and --version answer on stdout with status 0, without definitions or a database
// (the directory they run in has neither); a mistyped command or flag is a usage error (status 2)
// naming the nearest one; other errors exit with status 1.
func TestHelpAndVersion(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ok := func(program string, args ...string) string {
		t.Helper()
		stdout, stderr, code := exe(t, program, dir, args...)
		if code != 0 || stderr != "" {
			t.Errorf("%s %v: status %d, stderr %q", program, args, code, stderr)
		}
		return stdout
	}
	usage := func(program string, want string, args ...string) {
		t.Helper()
		stdout, stderr, code := exe(t, program, dir, args...)
		if code != 2 || stdout != "" || !strings.Contains(stderr, want) {
			t.Errorf("%s %v: status %d (want 2), stdout %q, stderr %q (want %q in it)", program, args, code, stdout, stderr, want)
		}
	}

	overview := ok("recordsctl", "help")
	for _, want := range []string{"commands:", "  workspace create ", "  key list ", "  migrate ", "  audit list ", "-db", "-version", "help COMMAND"} {
		if !strings.Contains(overview, want) {
			t.Errorf("recordsctl help lacks %q:\n%s", want, overview)
		}
	}
	for _, args := range [][]string{{"--help"}, {"-h"}, {"help", "version"}, {"help", "help"}} {
		if got := ok("recordsctl", args...); got != overview {
			t.Errorf("recordsctl %v differs from recordsctl help:\n%s", args, got)
		}
	}
	for _, args := range [][]string{{"help", "key", "create"}, {"key", "create", "--help"}, {"key", "create", "-h"}, {"--json", "key", "create", "--help"}} {
		out := ok("recordsctl", args...)
		if !strings.HasPrefix(out, "usage: recordsctl key create --member M") || !strings.Contains(out, "-expires-in") || !strings.Contains(out, "-db") {
			t.Errorf("recordsctl %v:\n%s", args, out)
		}
	}
	if out := ok("recordsctl", "help", "audit", "list"); !strings.Contains(out, "--as-member M it shows the trail") {
		t.Errorf("recordsctl help audit list lacks the command's explanation:\n%s", out)
	}
	for _, args := range [][]string{{"help", "key"}, {"key", "--help"}} {
		out := ok("recordsctl", args...)
		for _, want := range []string{"key create", "key list", "key revoke", "key reminders"} {
			if !strings.Contains(out, want) {
				t.Errorf("recordsctl %v lacks %s:\n%s", args, want, out)
			}
		}
	}
	for _, args := range [][]string{{"help", "webhook"}, {"webhook", "--help"}} {
		out := ok("recordsctl", args...)
		for _, want := range []string{"webhook create", "webhook list", "webhook update", "webhook rotate-secret", "webhook delete", "webhook deliveries", "webhook replay"} {
			if !strings.Contains(out, want) {
				t.Errorf("recordsctl %v lacks %s:\n%s", args, want, out)
			}
		}
	}
	if out := ok("recordsctl", "webhook", "create", "--help"); !strings.HasPrefix(out, "usage: recordsctl webhook create --workspace W --member M --url URL") ||
		!strings.Contains(out, "no other command shows it again") || !strings.Contains(out, "-event-type") || !strings.Contains(out, "webhook_allow_private_addresses") {
		t.Errorf("recordsctl webhook create --help:\n%s", out)
	}

	for _, program := range []string{"recordsctl", "recordsd"} {
		v, rev := builtVersion(t, filepath.Join(binDir, program))
		want := regexp.MustCompile("^" + program + " " + regexp.QuoteMeta(v) + ` \(` + regexp.QuoteMeta(rev))
		for _, args := range [][]string{{"--version"}, {"version"}} {
			if out := ok(program, args...); !want.MatchString(out) || strings.Count(out, "\n") != 1 {
				t.Errorf("%s %v = %q, want %s", program, args, out, want)
			}
		}
	}
	var info map[string]any
	if err := json.Unmarshal([]byte(ok("recordsctl", "--json", "version")), &info); err != nil || info["version"] == nil || info["go"] == nil {
		t.Errorf("recordsctl --json version: %v %v", info, err)
	}
	rd := ok("recordsd", "help")
	for _, want := range []string{"serve", "version", "help serve"} {
		if !strings.Contains(rd, want) {
			t.Errorf("recordsd help lacks %q:\n%s", want, rd)
		}
	}
	if out := ok("recordsd", "help", "serve"); !strings.Contains(out, "-addr") || !strings.Contains(out, "RECORDS_DB") {
		t.Errorf("recordsd help serve:\n%s", out)
	}

	usage("recordsctl", `unknown command "wrokspace create" (did you mean "workspace create"?)`, "wrokspace", "create", "--name", "x")
	usage("recordsctl", `unknown command "key lst" (did you mean "key list"? valid: key create, key list, key reminders, key revoke)`, "key", "lst")
	usage("recordsctl", `unknown command "migrat" (did you mean "migrate"?)`, "migrat")
	usage("recordsctl", `unknown command "nonsense"`, "nonsense")
	usage("recordsctl", `"key" needs a subcommand`, "key")
	usage("recordsctl", "no command given", "--json")
	usage("recordsctl", "unknown flag --verison (did you mean --version?)", "--verison")
	usage("recordsctl", "unknown flag --wrokspace (did you mean --workspace?)", "key", "list", "--wrokspace", "x")
	usage("recordsctl", "--workspace is required", "key", "list")
	usage("recordsctl", "usage: recordsctl key revoke ID", "key", "revoke")
	usage("recordsctl", "give one of --event and --after", "webhook", "replay", "--workspace", "w", "--endpoint", "e")
	usage("recordsctl", "--enable and --disable exclude each other", "webhook", "update", "--workspace", "w", "--endpoint", "e", "--enable", "--disable")
	usage("recordsctl", "nothing to change", "webhook", "update", "--workspace", "w", "--endpoint", "e")
	usage("recordsd", `unknown command "srve" (did you mean "serve"?)`, "srve")
	usage("recordsd", "unknown flag --adr (did you mean --addr?)", "serve", "--adr", "127.0.0.1:0")
	usage("recordsd", "no command given")
	if _, stderr, code := exe(t, "recordsctl", dir, "definitions", "lint", filepath.Join(dir, "none")); code != 1 || stderr == "" {
		t.Errorf("definitions lint of a missing directory: status %d (want 1), %q", code, stderr)
	}
}

// A version set with -ldflags -X …/runtime/version.Version=V (make build VERSION=V) is the one
// --version prints.
//
// The build compiles nothing (the packages are in the build cache since RECORDS_TEST_BIN's build or this
// test binary's own), but it links two programs, the one cost of this test: 5.6-6.4 s of processor
// time on the 2-core machine (3 runs). With -s -w (no symbol table, no DWARF) 3.3-3.9 s, and smaller
// files to write; neither touches the version variable or the build information --version reads.
func TestVersionFromLinker(t *testing.T) {
	t.Parallel()
	out := t.TempDir()
	cmd := exec.Command("go", "build", "-o", out+"/", "-ldflags", "-s -w -X github.com/workspace-records/records/runtime/version.Version=v9.8.7-linked", "./cmd/recordsctl", "./cmd/recordsd")
	cmd.Dir = servertest.RepoDir()
	if msg, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, msg)
	}
	for _, program := range []string{"recordsctl", "recordsd"} {
		stdout, _, code := exe(t, filepath.Join(out, program), out, "--version")
		if code != 0 || !strings.HasPrefix(stdout, program+" v9.8.7-linked (") {
			t.Errorf("%s --version: status %d, %q", program, code, stdout)
		}
	}
}

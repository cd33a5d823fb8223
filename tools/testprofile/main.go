// Command testprofile reads the output of go test -json (make test-profile keeps make test's in
// bin/test-profile.json) and prints where the time went: the slowest top-level tests and the slowest
// subtests, each with its package, elapsed time and result; every package by elapsed time; and the
// tests that failed. Lines that are not go test -json events (make's own output) are skipped.
//
//	go run ./tools/testprofile [-n 20] [-text PACKAGE=LOG ...] [FILE ...]
//
// With no FILE (and no -text) it reads standard input. -text adds the go test -v log of one package
// run as text (make test's unscoped run, whose log make test reads for its verdict), under the name
// PACKAGE: its "--- PASS: TestX (1.23s)" lines and its final "ok"/"FAIL" line. A parallel test's time
// runs from its start to its end, the time it waited for its turn included, as go test reports it; a
// top-level test's includes its subtests'.
package main

import (
	"bufio"
	"bytes"
	"cmp"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

func main() {
	if err := run(os.Args[1:], os.Stdin, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "testprofile:", err)
		os.Exit(1)
	}
}

func run(args []string, stdin io.Reader, stdout io.Writer) error {
	fs := flag.NewFlagSet("testprofile", flag.ContinueOnError)
	n := fs.Int("n", 20, "how many tests (and subtests) to list")
	var texts []string
	fs.Func("text", "`PACKAGE=LOG`: a go test -v log of PACKAGE (repeatable)", func(s string) error {
		if pkg, file, ok := strings.Cut(s, "="); !ok || pkg == "" || file == "" {
			return fmt.Errorf("want PACKAGE=LOG, not %q", s)
		}
		texts = append(texts, s)
		return nil
	})
	if err := fs.Parse(args); err != nil {
		return err
	}
	var p profile
	for _, s := range texts {
		pkg, name, _ := strings.Cut(s, "=")
		f, err := os.Open(name)
		if err != nil {
			return err
		}
		err = p.readText(f, pkg)
		f.Close()
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
	}
	if fs.NArg() == 0 && len(texts) == 0 {
		if err := p.read(stdin); err != nil {
			return fmt.Errorf("standard input: %w", err)
		}
	}
	for _, name := range fs.Args() {
		f, err := os.Open(name)
		if err != nil {
			return err
		}
		err = p.read(f)
		f.Close()
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
	}
	if len(p.tests) == 0 && len(p.packages) == 0 {
		return fmt.Errorf("no go test -json results in the input")
	}
	p.print(stdout, *n)
	return nil
}

// event is one line of go test -json (cmd/test2json).
type event struct {
	Time    time.Time
	Action  string
	Package string
	Test    string
	Elapsed float64 // seconds
}

// result is a test's or a package's end: its action (pass, fail or skip) and elapsed time.
type result struct {
	pkg, test string
	action    string
	elapsed   time.Duration
}

type profile struct {
	tests    []result
	packages []result
	first    time.Time
	last     time.Time
	skipped  int // lines that were not events
}

// read adds the events of r.
func (p *profile) read(r io.Reader) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), 16*1024*1024)
	for sc.Scan() {
		line := bytes.TrimSpace(sc.Bytes())
		var e event
		if len(line) == 0 || line[0] != '{' || json.Unmarshal(line, &e) != nil || e.Action == "" {
			p.skipped++
			continue
		}
		if !e.Time.IsZero() {
			if p.first.IsZero() || e.Time.Before(p.first) {
				p.first = e.Time
			}
			if e.Time.After(p.last) {
				p.last = e.Time
			}
		}
		switch e.Action {
		case "pass", "fail", "skip":
		default:
			continue
		}
		res := result{pkg: e.Package, test: e.Test, action: e.Action, elapsed: time.Duration(e.Elapsed * float64(time.Second))}
		if e.Test == "" {
			p.packages = append(p.packages, res)
		} else {
			p.tests = append(p.tests, res)
		}
	}
	return sc.Err()
}

// The result lines of go test -v: a test's (indented for a subtest) and the package's last line.
var (
	textTest    = regexp.MustCompile(`^\s*--- (PASS|FAIL|SKIP): (\S+) \((\d+(?:\.\d+)?)s\)`)
	textPackage = regexp.MustCompile(`^(ok|FAIL)\s+\S+\s+(\d+(?:\.\d+)?)s`)
)

// readText adds the results of r, the go test -v output of package pkg.
func (p *profile) readText(r io.Reader, pkg string) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), 16*1024*1024)
	for sc.Scan() {
		line := sc.Text()
		if m := textTest.FindStringSubmatch(line); m != nil {
			p.tests = append(p.tests, result{pkg: pkg, test: m[2], action: strings.ToLower(m[1]), elapsed: parseSeconds(m[3])})
		} else if m := textPackage.FindStringSubmatch(line); m != nil {
			action := "pass"
			if m[1] == "FAIL" {
				action = "fail"
			}
			p.packages = append(p.packages, result{pkg: pkg, action: action, elapsed: parseSeconds(m[2])})
		}
	}
	return sc.Err()
}

func parseSeconds(s string) time.Duration {
	f, _ := strconv.ParseFloat(s, 64)
	return time.Duration(f * float64(time.Second))
}

// slowest orders results by elapsed time, longest first (then by package and name).
func slowest(rs []result) []result {
	out := slices.Clone(rs)
	slices.SortStableFunc(out, func(a, b result) int {
		if c := cmp.Compare(b.elapsed, a.elapsed); c != 0 {
			return c
		}
		if c := cmp.Compare(a.pkg, b.pkg); c != 0 {
			return c
		}
		return cmp.Compare(a.test, b.test)
	})
	return out
}

func (p *profile) print(w io.Writer, n int) {
	var top, sub, failed []result
	for _, r := range p.tests {
		if strings.Contains(r.test, "/") {
			sub = append(sub, r)
		} else {
			top = append(top, r)
		}
		if r.action == "fail" {
			failed = append(failed, r)
		}
	}
	if !p.first.IsZero() {
		fmt.Fprintf(w, "%d packages, %d tests and subtests; %v from the first event to the last\n",
			len(p.packages), len(p.tests), p.last.Sub(p.first).Round(100*time.Millisecond))
	}
	list := func(title string, rs []result, n int) {
		fmt.Fprintf(w, "\n%s\n", title)
		rs = slowest(rs)
		if n >= 0 && len(rs) > n {
			rs = rs[:n]
		}
		for _, r := range rs {
			name := r.pkg
			if r.test != "" {
				name += " " + r.test
			}
			fmt.Fprintf(w, "%9s  %-4s  %s\n", seconds(r.elapsed), r.action, name)
		}
		if len(rs) == 0 {
			fmt.Fprintln(w, "  (none)")
		}
	}
	list(fmt.Sprintf("The %d slowest top-level tests:", n), top, n)
	list(fmt.Sprintf("The %d slowest subtests:", n), sub, n)
	list("Packages by elapsed time:", p.packages, -1)
	if len(failed) > 0 {
		list("Failed:", failed, -1)
	}
}

// seconds formats d as go test does: seconds with two decimals.
func seconds(d time.Duration) string { return fmt.Sprintf("%.2fs", d.Seconds()) }

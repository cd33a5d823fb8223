package main

import (
	"bytes"
	"strings"
	"testing"
)

// The report of a fixture of go test -json lines with make's own lines among them: tests and subtests
// apart, longest first (ties by package, then name), packages by elapsed time, and the failures.
func TestReport(t *testing.T) {
	var out bytes.Buffer
	if err := run([]string{"-n", "3", "testdata/make-test.jsonl"}, nil, &out); err != nil {
		t.Fatal(err)
	}
	want := `3 packages, 8 tests and subtests; 8.5s from the first event to the last

The 3 slowest top-level tests:
    7.90s  fail  example.com/m/a TestSlow
    3.00s  pass  example.com/m/b TestMiddle
    0.50s  pass  example.com/m/c TestUntimed

The 3 slowest subtests:
    5.00s  fail  example.com/m/a TestSlow/postgres
    3.00s  pass  example.com/m/b TestMiddle/a/b
    2.80s  pass  example.com/m/a TestSlow/sqlite

Packages by elapsed time:
    8.50s  fail  example.com/m/a
    3.20s  pass  example.com/m/b
    0.60s  pass  example.com/m/c

Failed:
    7.90s  fail  example.com/m/a TestSlow
    5.00s  fail  example.com/m/a TestSlow/postgres
`
	if got := out.String(); got != want {
		t.Errorf("report:\n%s\nwant:\n%s", got, want)
	}
}

// Standard input is read when no file is named; input without any result is an error.
func TestInput(t *testing.T) {
	var out bytes.Buffer
	in := `{"Action":"pass","Package":"p","Test":"TestA","Elapsed":1.5}` + "\n" + `{"Action":"pass","Package":"p","Elapsed":2}` + "\n"
	if err := run(nil, strings.NewReader(in), &out); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "    1.50s  pass  p TestA\n") || !strings.Contains(out.String(), "    2.00s  pass  p\n") {
		t.Errorf("report of standard input:\n%s", out.String())
	}
	if err := run(nil, strings.NewReader("ok  \tp\t1.0s\nmake: *** [test] Error 1\n"), &out); err == nil || !strings.Contains(err.Error(), "no go test -json results") {
		t.Errorf("input without results: %v", err)
	}
	if err := run([]string{"testdata/missing.jsonl"}, nil, &out); err == nil {
		t.Error("a missing file: no error")
	}
}

// A go test -v log given with -text adds its tests and its package under the name given.
func TestTextLog(t *testing.T) {
	var out bytes.Buffer
	if err := run([]string{"-n", "2", "-text", "srv [unscoped]=testdata/unscoped.log", "testdata/make-test.jsonl"}, nil, &out); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"The 2 slowest top-level tests:\n    7.90s  fail  example.com/m/a TestSlow\n    4.30s  pass  srv [unscoped] TestUnscopedIsolation\n",
		"The 2 slowest subtests:\n    5.00s  fail  example.com/m/a TestSlow/postgres\n    4.25s  pass  srv [unscoped] TestUnscopedIsolation/postgres\n",
		"Packages by elapsed time:\n    9.73s  pass  srv [unscoped]\n    8.50s  fail  example.com/m/a\n",
		"4 packages, 11 tests and subtests",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("report without %q:\n%s", want, out.String())
		}
	}
	for _, bad := range []string{"-text=nofile", "-text==x"} {
		if err := run([]string{bad}, nil, &out); err == nil {
			t.Errorf("%s: no error", bad)
		}
	}
}

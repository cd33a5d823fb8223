package server_test

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/workspace-records/records/runtime/server/servertest"
)

// oapiRuntime is the version of oapi-codegen's runtime library the generated client is built with.
const oapiRuntime = "github.com/oapi-codegen/runtime v1.8.0"

// docServerURL stands for the server's address in the documents the client generators read.
const docServerURL = "http://records.test"

// A Go client generated from the served document by oapi-codegen (pinned as a tool in go.mod), compiled
// untouched, creates companies, walks a filtered list with a cursor, updates one and archives one.
func TestGeneratedClient(t *testing.T) {
	t.Parallel()
	e := servertest.Start(t, servertest.SQLite, servertest.Options{})
	res, doc := getDoc(t, e.URL)
	if res.StatusCode != 200 {
		t.Fatalf("document: %d", res.StatusCode)
	}
	run := func(dirOf string, env []string, name string, args ...string) []byte {
		t.Helper()
		return runTool(t, dirOf, env, name, args...)
	}
	// The generated and compiled client is kept in the test cache (testcache_test.go) under a hash of
	// what makes it: the document served (the server's address, which changes from run to run, replaced
	// by a fixed one: neither the types nor the client depend on it, the driver is given the address),
	// go.mod and go.sum (oapi-codegen's pinned version and its dependencies'), the generator's flags, the
	// driver and its module, and the toolchain.
	doc = bytes.ReplaceAll(doc, []byte(e.URL), []byte(docServerURL))
	driver, err := os.ReadFile(filepath.Join("testdata", "genclient", "main.go"))
	if err != nil {
		t.Fatal(err)
	}
	goMod, err := os.ReadFile(filepath.Join(servertest.RepoDir(), "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	goSum, err := os.ReadFile(filepath.Join(servertest.RepoDir(), "go.sum"))
	if err != nil {
		t.Fatal(err)
	}
	module := []byte("module genclient\n\ngo 1.26\n\nrequire " + oapiRuntime + "\n")
	codegen := []string{"tool", "oapi-codegen", "-generate", "types,client", "-package", "main", "-include-tags", "companies"}
	key := cacheKey(doc, goMod, goSum, []byte(strings.Join(codegen, " ")), driver, module, []byte(runtime.Version()+" "+runtime.GOOS+"/"+runtime.GOARCH))
	dir, hit := cached(t, "genclient-go", key, func(dir string) {
		write := func(name string, data []byte) {
			if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		write("openapi.json", doc)
		run(servertest.RepoDir(), nil, "go", append(codegen, "-o", filepath.Join(dir, "client.gen.go"), filepath.Join(dir, "openapi.json"))...)
		write("main.go", driver)
		write("go.mod", module)
		run(dir, []string{"GOFLAGS=-mod=mod"}, "go", "mod", "tidy")
		run(dir, nil, "go", "build", "-o", "genclient", ".")
		if err := os.Remove(filepath.Join(dir, "openapi.json")); err != nil { // the key has it
			t.Fatal(err)
		}
	})
	t.Logf("generated client: %s (cached: %t)", dir, hit)
	out := run(dir, nil, filepath.Join(dir, "genclient"), e.URL, e.Key)

	var got struct {
		Created          []string
		Location         string
		Walked           []string
		Pages            int
		UpdatedEmployees int    `json:"updated_employee_count"`
		Archived         bool   `json:"archived"`
		ArchiveReason    string `json:"archive_reason"`
		ArchiveAgainCode string `json:"archive_again_code"`
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("genclient printed %s: %v", out, err)
	}
	if len(got.Created) != 7 || !strings.Contains(got.Location, "/v1/companies/") {
		t.Errorf("created %v, location %q", got.Created, got.Location)
	}
	// employee_count >= 20 keeps companies 1..6 (10, 20, …, 70), walked 3 per page.
	want := slices.Clone(got.Created[1:])
	walked := slices.Clone(got.Walked)
	slices.Sort(want)
	slices.Sort(walked)
	if !slices.Equal(walked, want) || got.Pages != 2 {
		t.Errorf("cursor walk: %d records in %d pages, want the 6 matches in 2", len(got.Walked), got.Pages)
	}
	if got.UpdatedEmployees != 4321 || !got.Archived || got.ArchiveReason != "Merged into another account" || got.ArchiveAgainCode != "conflict" {
		t.Errorf("update/archive: %+v", got)
	}
	if d := e.Do("GET", "/v1/companies/"+got.Created[0], nil).Data(); num(d, "employee_count") != "4321" {
		t.Errorf("the update did not land: %v", d["employee_count"])
	}
	if d := e.Do("GET", "/v1/companies/"+got.Created[1], nil).Data(); d["archived"] != true {
		t.Errorf("the archive did not land: %v", d["archived"])
	}
}

// runTool runs name with args in dir (env added to the test's environment) and answers its standard
// output; a failure fails the test with both outputs.
func runTool(t *testing.T, dir string, env []string, name string, args ...string) []byte {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.Output()
	if err != nil {
		var stderr string
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = string(ee.Stderr)
		}
		t.Fatalf("%s %s: %v\n%s%s", name, strings.Join(args, " "), err, out, stderr)
	}
	return out
}

// Package openapi_test keeps the committed OpenAPI document (docs/openapi.json) equal to the document the
// shipped definitions generate. The behaviour suites hold every response to that committed document
// (servertest.ContractFor), so a change of the contract shows as a reviewed diff of docs/openapi.json,
// never as the handler and the generator changing together unseen.
package openapi_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/workspace-records/records/runtime/server/servertest"
)

var update = flag.Bool("update", false, "rewrite "+servertest.GoldenOpenAPI+" from the shipped definitions (make openapi-golden)")

// golden returns the document of the shipped definitions as docs/openapi.json holds it: recordsctl
// openapi's bytes (its default server address), indented, with a final newline.
func golden(t *testing.T) []byte {
	t.Helper()
	doc, err := servertest.GenerateOpenAPI(servertest.DefinitionsDir(), servertest.GoldenServerURL)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := json.Indent(&out, doc, "", "  "); err != nil {
		t.Fatal(err)
	}
	out.WriteByte('\n')
	return out.Bytes()
}

func TestOpenAPIGolden(t *testing.T) {
	want := golden(t)
	path := filepath.Join(servertest.RepoDir(), servertest.GoldenOpenAPI)
	if *update {
		if err := os.WriteFile(path, want, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v: run make openapi-golden", err)
	}
	if !bytes.Equal(got, want) {
		g, w := strings.Split(string(got), "\n"), strings.Split(string(want), "\n")
		i := 0
		for i < len(g) && i < len(w) && g[i] == w[i] {
			i++
		}
		line := func(l []string) string {
			if i < len(l) {
				return strings.TrimSpace(l[i])
			}
			return "(end of document)"
		}
		t.Errorf("%s differs from the document the shipped definitions generate, first at line %d:\n  committed: %.300s\n  generated: %.300s\n"+
			"if the API is meant to change, run `make openapi-golden` and review the diff of %s",
			servertest.GoldenOpenAPI, i+1, line(g), line(w), servertest.GoldenOpenAPI)
	}

	c, err := servertest.GoldenContract()
	if err != nil {
		t.Fatal(err)
	}
	if problems := c.ValidateDocument(); len(problems) > 0 {
		t.Errorf("%s breaks the OpenAPI 3.1 specification:\n%s", servertest.GoldenOpenAPI, strings.Join(problems, "\n"))
	}
}

// A server of the shipped definitions is held to the golden document, not to the one it serves: the
// generated document (as servertest.Env.Contract passes it, its address replaced) gets the golden contract,
// and a document of other definitions gets its own.
func TestContractIsTheGolden(t *testing.T) {
	served, err := servertest.GenerateOpenAPI(servertest.DefinitionsDir(), "http://server.test")
	if err != nil {
		t.Fatal(err)
	}
	c, err := servertest.ContractFor(served)
	if err != nil {
		t.Fatal(err)
	}
	g, err := servertest.GoldenContract()
	if err != nil {
		t.Fatal(err)
	}
	if c != g {
		t.Errorf("the contract of a server of the shipped definitions is not the golden document's")
	}
	other := bytes.Replace(served, []byte(`"title":"`), []byte(`"title":"Other `), 1)
	if bytes.Equal(other, served) {
		t.Fatal("no title to change in the generated document")
	}
	if o, err := servertest.ContractFor(other); err != nil || o == g {
		t.Errorf("a document of other definitions: contract %p (golden %p), %v", o, g, err)
	}
}

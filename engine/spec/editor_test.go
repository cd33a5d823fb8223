package spec_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v5"
	"gopkg.in/yaml.v3"

	shipped "github.com/workspace-records/records/definitions"
)

// modeline is how a shipped definitions file names its schema for editors (the YAML language server,
// as in VS Code's YAML extension, and every editor using it).
const modeline = "# yaml-language-server: $schema="

// TestEditorSchemas: every shipped definitions file starts with the modeline, the schema it names (a
// path relative to the file) is a shipped meta-schema, and the file validates against that schema read
// on its own, as an editor reads it (no other file, no network). The workspace settings map the same
// files to the same schemas for editors that read those instead.
func TestEditorSchemas(t *testing.T) {
	files, err := fs.Glob(shipped.FS, "resources/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("resources: %v %v", files, err)
	}
	files = append(files, "roles.yaml", "plans.yaml")
	named := map[string]string{} // file → the schema it names, relative to definitions/
	for _, file := range files {
		data, err := fs.ReadFile(shipped.FS, file)
		if err != nil {
			t.Fatal(err)
		}
		first, _, _ := strings.Cut(string(data), "\n")
		rel, ok := strings.CutPrefix(first, modeline)
		if !ok {
			t.Errorf("%s: first line %q, want %s…", file, first, modeline)
			continue
		}
		schemaFile := path.Join(path.Dir(file), rel)
		named[file] = schemaFile
		schema, err := editorSchema(schemaFile)
		if err != nil {
			t.Errorf("%s: %v", file, err)
			continue
		}
		var doc any
		if err := yaml.Unmarshal(data, &doc); err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		text, err := json.Marshal(doc)
		if err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		dec := json.NewDecoder(bytes.NewReader(text))
		dec.UseNumber()
		var instance any
		if err := dec.Decode(&instance); err != nil {
			t.Fatal(err)
		}
		if err := schema.Validate(instance); err != nil {
			t.Errorf("%s does not validate against %s: %v", file, schemaFile, err)
		}
	}
	for file, want := range map[string]string{"resources/deals.yaml": "meta/resource.schema.json", "roles.yaml": "meta/roles.schema.json", "plans.yaml": "meta/plans.schema.json"} {
		if named[file] != want {
			t.Errorf("%s names %q, want %q", file, named[file], want)
		}
	}

	// .vscode/settings.json: yaml.schemas maps each schema (from the repository's root) to globs.
	data, err := os.ReadFile("../../.vscode/settings.json")
	if err != nil {
		t.Fatal(err)
	}
	var settings struct {
		Schemas map[string][]string `json:"yaml.schemas"`
	}
	if err := json.Unmarshal(data, &settings); err != nil {
		t.Fatalf(".vscode/settings.json: %v", err)
	}
	for _, file := range files {
		var by []string
		for schema, globs := range settings.Schemas {
			for _, g := range globs {
				if ok, _ := path.Match(g, "definitions/"+file); ok {
					by = append(by, path.Clean(schema))
				}
			}
		}
		if want := "definitions/" + named[file]; len(by) != 1 || by[0] != want {
			t.Errorf(".vscode/settings.json maps %s to %v, want %s", file, by, want)
		}
	}
	for schema := range settings.Schemas {
		if _, err := os.Stat(path.Join("../..", schema)); err != nil {
			t.Errorf(".vscode/settings.json: %v", err)
		}
	}
}

// editorSchema compiles a shipped meta-schema on its own, loading nothing else.
func editorSchema(file string) (*jsonschema.Schema, error) {
	data, err := fs.ReadFile(shipped.FS, file)
	if err != nil {
		return nil, err
	}
	c := jsonschema.NewCompiler()
	c.LoadURL = func(url string) (io.ReadCloser, error) {
		return nil, fmt.Errorf("%s refers to %s: an editor would have to fetch it", file, url)
	}
	if err := c.AddResource(file, bytes.NewReader(data)); err != nil {
		return nil, err
	}
	return c.Compile(file)
}

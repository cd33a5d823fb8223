package cmd_test

// recordsctl jobs …: bulk jobs made, followed and fetched from the command line, run by a real recordsd
// on the same database.

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/workspace-records/records/runtime/server/servertest"
)

// TestJobCommands runs the jobs commands as an operator would, on both backends, with recordsd running
// the jobs: an import of a CSV file with a bad row follows the job to its end (a line per state on a
// non-terminal) and prints it completed with its counts; failures names the bad row and its field; an
// export as a viewer's key writes the file (masked emails, never in clear); list and show see both
// jobs; a read key may not import, an unknown job is an error, a detached export is followed by show
// --watch and fetched by download.
func TestJobCommands(t *testing.T) {
	t.Parallel()
	for _, b := range servertest.Backends {
		t.Run(string(b), func(t *testing.T) {
			t.Parallel()
			c := migrated(t, b)
			ws := c.run("workspace", "create", "--name", "Bulk", "--plan", "growth")["id"].(string)
			admin := c.run("member", "create", "--workspace", ws, "--email", "ops@bulk.example", "--role", "admin")["id"].(string)
			viewer := c.run("member", "create", "--workspace", ws, "--email", "viewer@bulk.example", "--role", "viewer")["id"].(string)
			writeKey := c.run("key", "create", "--member", admin, "--access", "write")["id"].(string)
			readKey := c.run("key", "create", "--member", viewer, "--access", "read")["id"].(string)
			startServer(t, c)

			file := filepath.Join(t.TempDir(), "companies.csv")
			data := "Company,domain,employee_count\nAcme,acme.example,10\nBolt,bolt.example,lots\nCrane,crane.example,30\n"
			if err := os.WriteFile(file, []byte(data), 0o644); err != nil {
				t.Fatal(err)
			}
			stdout, stderr, code := c.runEnv(nil, true, "jobs", "import", "--workspace", ws, "--key", writeKey, "--resource", "companies", "--file", file, "--map", "Company=name")
			imp := decodeOne(t, stdout)
			if code != 0 || imp["state"] != "completed" || mustString(imp["counts"]) != `{"failed":1,"read":3,"unchanged":0,"written":2}` || !strings.Contains(stderr, "import companies completed") {
				t.Fatalf("jobs import: status %d, %v\n%s", code, imp, stderr)
			}
			id := imp["id"].(string)
			failures := c.run("jobs", "failures", id)
			if rows, _ := failures["data"].([]any); len(rows) != 1 || !strings.Contains(mustString(rows[0]), `"row":2`) || !strings.Contains(mustString(rows[0]), "employee_count") {
				t.Errorf("jobs failures: %v", failures)
			}
			if shown := c.run("jobs", "show", id); shown["state"] != "completed" || shown["id"] != id {
				t.Errorf("jobs show: %v", shown)
			}

			// The viewer's export of contacts: emails masked.
			c.run("records", "import", "--workspace", ws, "--resource", "contacts", "--file", writeLines(t, `{"first_name":"Pat","last_name":"Doe","email":"pat@secret.example"}`))
			out := filepath.Join(t.TempDir(), "contacts.csv")
			stdout, stderr, code = c.runEnv(nil, false, "jobs", "export", "--workspace", ws, "--key", readKey, "--resource", "contacts", "--query", `{"sort":"last_name"}`, "--out", out)
			file2, err := os.ReadFile(out)
			if err != nil || code != 0 || !strings.Contains(stdout, "export contacts  completed") {
				t.Fatalf("jobs export: status %d, %v\n%s%s", code, err, stdout, stderr)
			}
			rows, err := csv.NewReader(strings.NewReader(string(file2))).ReadAll()
			if err != nil || len(rows) != 2 || rows[0][0] != "id" || strings.Contains(string(file2), "pat@secret.example") || !strings.Contains(string(file2), "p•••@•••.example") {
				t.Errorf("the viewer's export (%v):\n%s", err, file2)
			}
			if list := c.run("jobs", "list", "--workspace", ws); len(list["data"].([]any)) != 2 {
				t.Errorf("jobs list: %v", list)
			}

			// Refusals.
			if msg := c.fail("jobs", "import", "--workspace", ws, "--key", readKey, "--resource", "companies", "--file", file); !strings.Contains(msg, "key "+readKey) {
				t.Errorf("an import with a read key: %s", msg)
			}
			if msg := c.fail("jobs", "export", "--workspace", ws, "--key", writeKey, "--resource", "companies", "--query", `{"sort":"nope"}`, "--out", out); !strings.Contains(msg, "sort") {
				t.Errorf("an export with a bad sort: %s", msg)
			}
			if msg := c.fail("jobs", "show", "0190a5b4-0000-7000-8000-000000000000"); !strings.Contains(msg, "not found") {
				t.Errorf("an unknown job: %s", msg)
			}

			// Detached, then followed and fetched.
			detached := c.run("jobs", "export", "--workspace", ws, "--key", writeKey, "--resource", "companies", "--format", "ndjson", "--detach")
			if s := detached["state"]; s != "queued" && s != "running" && s != "completed" {
				t.Fatalf("jobs export --detach: %v", detached)
			}
			if done := c.run("jobs", "show", detached["id"].(string), "--watch"); done["state"] != "completed" || mustString(done["counts"]) != `{"failed":0,"read":2,"unchanged":0,"written":2}` {
				t.Errorf("jobs show --watch: %v", done)
			}
			stdout, _, code = c.runEnv(nil, false, "jobs", "download", detached["id"].(string))
			if code != 0 || strings.Count(stdout, "\n") != 2 || !strings.Contains(stdout, `"name":"Acme"`) {
				t.Errorf("jobs download: status %d\n%s", code, stdout)
			}
		})
	}
}

// writeLines writes lines as a file of the test's and returns its path.
func writeLines(t *testing.T, lines ...string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), fmt.Sprintf("lines-%d.jsonl", len(lines)))
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// decodeOne decodes stdout as one JSON object.
func decodeOne(t *testing.T, stdout string) map[string]any {
	t.Helper()
	var out map[string]any
	if err := json.Unmarshal([]byte(stdout), &out); err != nil {
		t.Fatalf("stdout is not one JSON object: %v\n%s", err, stdout)
	}
	return out
}

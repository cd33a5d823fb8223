// Package cmd_test runs the real recordsd and recordsctl binaries the way scripts do, against SQLite and
// PostgreSQL, and checks the command-line contract of DESIGN.md §5.
package cmd_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	procs "github.com/workspace-records/records/internal/proc"
	"github.com/workspace-records/records/runtime/auth"
	"github.com/workspace-records/records/runtime/server/servertest"
)

var binDir string

func TestMain(m *testing.M) {
	// The tests run recordsctl some 430 times, each run loading and checking the definitions: 100 ms of
	// processor time at Go's default GOGC=100, a quarter of it collecting garbage; 78 ms at GOGC=400
	// (recordsctl seed sets 400 itself while seeding). The programs these tests start inherit it (the
	// test process reads GOGC at its start, before this); an explicit GOGC wins.
	if os.Getenv("GOGC") == "" {
		os.Setenv("GOGC", "400")
	}
	os.Exit(servertest.RunWithBinaries(dropTemplates{m}, procs.RunTests, &binDir, "recordsd", "recordsctl"))
}

// dropTemplates runs the tests, then drops the migrated templates migrated's copies came from.
type dropTemplates struct{ m *testing.M }

func (d dropTemplates) Run() int {
	code := d.m.Run()
	servertest.DropTemplates()
	return code
}

type ctl struct {
	t   *testing.T
	db  string
	dir string
}

// migrated returns a ctl on a database of kind b already migrated for the repository's definitions: a
// copy of the test process's template (servertest.MigratedDatabase), as `recordsctl migrate` would have
// left it. A migration of an empty database takes seconds on a loaded PostgreSQL, a copy a fraction of
// that; the tests whose point is the migrate command (TestCommandLine, TestMissingSQLiteFile) run it.
func migrated(t *testing.T, b servertest.Backend) ctl {
	t.Helper()
	return ctl{t: t, db: servertest.MigratedDatabase(t, b), dir: t.TempDir()}
}

// run runs recordsctl with --json and decodes its one JSON object.
func (c ctl) run(args ...string) map[string]any {
	c.t.Helper()
	full := append([]string{"--db", c.db, "--definitions", servertest.DefinitionsDir(), "--json"}, args...)
	cmd := exec.Command(filepath.Join(binDir, "recordsctl"), full...)
	cmd.Dir = c.dir
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		c.t.Fatalf("recordsctl %v: %v\n%s", args, err, stderr.String())
	}
	var out map[string]any
	dec := json.NewDecoder(&stdout)
	if err := dec.Decode(&out); err != nil {
		c.t.Fatalf("recordsctl %v: stdout is not one JSON object: %v", args, err)
	}
	if dec.More() {
		c.t.Fatalf("recordsctl %v: more than one JSON value on stdout", args)
	}
	return out
}

// fail runs recordsctl expecting a non-zero exit with a message on stderr and nothing on stdout.
func (c ctl) fail(args ...string) string {
	c.t.Helper()
	full := append([]string{"--db", c.db, "--definitions", servertest.DefinitionsDir(), "--json"}, args...)
	cmd := exec.Command(filepath.Join(binDir, "recordsctl"), full...)
	cmd.Dir = c.dir
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err == nil {
		c.t.Fatalf("recordsctl %v succeeded; want failure", args)
	}
	if stderr.Len() == 0 {
		c.t.Errorf("recordsctl %v: failed without a message on stderr", args)
	}
	return stderr.String()
}

func TestCommandLine(t *testing.T) {
	t.Parallel()
	for _, b := range servertest.Backends {
		t.Run(string(b), func(t *testing.T) {
			t.Parallel()
			c := ctl{t: t, db: servertest.DatabaseURL(t, b), dir: t.TempDir()}
			if applied, ok := c.run("migrate")["applied"].([]any); !ok || len(applied) == 0 {
				t.Fatalf("migrate applied nothing on an empty database")
			}
			if applied := c.run("migrate")["applied"].([]any); len(applied) != 0 {
				t.Errorf("second migrate applied %v", applied)
			}
			ws := c.run("workspace", "create", "--name", "Acme", "--plan", "growth")["id"].(string)
			if got := c.run("workspace", "set-plan", ws, "--plan", "scale"); got["plan"] != "scale" || got["id"] != ws {
				t.Errorf("set-plan printed %v", got)
			}
			c.run("workspace", "set-limits", ws, "--key-per-minute", "100", "--monthly-quota", "5000")
			member := c.run("member", "create", "--workspace", ws, "--email", "ops@acme.example", "--role", "admin")["id"].(string)
			c.run("member", "set-role", member, "--role", "admin")
			key := c.run("key", "create", "--member", member, "--access", "write", "--expires-in", "30d")
			secret, _ := key["secret"].(string)
			if !regexp.MustCompile(`^wsk_[0-9a-f]{64}$`).MatchString(secret) || key["id"] == nil || key["expires_at"] == nil {
				t.Fatalf("key create printed %v", key)
			}
			keys := c.run("key", "list", "--workspace", ws)["data"].([]any)
			if len(keys) != 1 || strings.Contains(mustString(keys), secret[4:]) {
				t.Errorf("key list must list the key without its secret: %v", keys)
			}
			c.fail("key", "create", "--member", member, "--access", "write", "--expires-in", "400d")
			c.fail("workspace", "create", "--name", "X", "--plan", "platinum")
			c.fail("nonsense")

			lines := `{"name":"Initech","industry":"software"}` + "\n" + `{"name":"Globex","employee_count":1200}` + "\n"
			file := filepath.Join(c.dir, "companies.jsonl")
			os.WriteFile(file, []byte(lines), 0o644)
			if got := c.run("records", "import", "--workspace", ws, "--resource", "companies", "--file", file); got["imported"] != float64(2) {
				t.Errorf("import printed %v", got)
			}
			os.WriteFile(file, []byte(`{"name":"ok"}`+"\n"+`{"nope":1}`+"\n"), 0o644)
			if msg := c.fail("records", "import", "--workspace", ws, "--resource", "companies", "--file", file); !strings.Contains(msg, "[1].nope") {
				t.Errorf("import error does not name the bad line: %s", msg)
			}
			os.WriteFile(file, []byte(`{"first_name":"Ann","last_name":"Lee","email":"ann@acme.example"}`+"\n"), 0o644)
			c.run("records", "import", "--workspace", ws, "--resource", "entity_members", "--file", file)

			if got := c.run("seed", "--workspace", ws, "--resource", "contacts", "--count", "1200"); got["created"] != float64(1200) {
				t.Errorf("seed printed %v", got)
			}
			fields := filepath.Join(c.dir, "vendors.yaml")
			os.WriteFile(fields, []byte("category: {type: string, options: [software, hardware]}\nwebsite: {type: url}\n"), 0o644)
			modelID := c.run("model", "create", "--workspace", ws, "--name", "Vendors", "--fields-file", fields)["id"].(string)
			os.WriteFile(fields, []byte("category: {type: string, options: [software, hardware, services]}\nwebsite: {type: url}\n"), 0o644)
			c.run("model", "update", modelID, "--name", "Suppliers", "--fields-file", fields)
			c.fail("model", "update", modelID, "--name", strings.Repeat("n", 201))
			c.run("seed", "--workspace", ws, "--resource", "data_model_records", "--model-id", modelID, "--count", "20")
			rolesFile := filepath.Join(c.dir, "roles.yaml")
			os.WriteFile(rolesFile, []byte("version: 1\nroles:\n  auditor:\n    label: Auditor\n    permissions: [api.access]\n    resources: {deals: read}\n"), 0o644)
			if got := c.run("role", "create", "--workspace", ws, "--file", rolesFile); mustString(got["roles"]) != `["auditor"]` {
				t.Errorf("role create printed %v", got)
			}
			c.run("role", "update", "--workspace", ws, "--file", rolesFile)
			auditor := c.run("member", "create", "--workspace", ws, "--email", "audit@acme.example", "--role", "auditor")["id"].(string)
			c.run("member", "set-role", auditor, "--role", "viewer")
			if got := c.run("definitions", "lint"); got["ok"] != true {
				t.Errorf("lint printed %v", got)
			}

			// recordsd serves what recordsctl set up.
			base, _ := startServer(t, c)
			get := func(path string) (int, map[string]any) { return mustCall(t, base, secret, "GET", path, "") }
			if code, body := get("/v1/contacts?page_size=100"); code != 200 || len(body["data"].([]any)) != 100 {
				t.Errorf("contacts: %d %v", code, body["meta"])
			}
			if code, body := get("/v1/data_model_records?model_id=" + modelID); code != 200 || len(body["data"].([]any)) != 20 {
				t.Errorf("model records: %d %v", code, body)
			}
			// The recordsctl-made model through all seven operations.
			call := func(method, path, body string, want int) map[string]any {
				t.Helper()
				code, out := mustCall(t, base, secret, method, path, body)
				if code != want {
					t.Fatalf("%s %s: %d %v, want %d", method, path, code, out, want)
				}
				d, _ := out["data"].(map[string]any)
				return d
			}
			rec := call("POST", "/v1/data_model_records", `{"model_id":"`+modelID+`","name":"Acme Tools","cf__category":"services","cf__website":"https://acme.example"}`, 201)
			rid := rec["id"].(string)
			q := "?model_id=" + modelID
			if got := call("GET", "/v1/data_model_records/"+rid+q, "", 200); got["custom_fields"].(map[string]any)["category"] != "services" {
				t.Errorf("model record get: %v", got)
			}
			call("PATCH", "/v1/data_model_records/"+rid+q, `{"cf__category":"hardware"}`, 200)
			_, listed := mustCall(t, base, secret, "POST", "/v1/data_model_records/query", `{"model_id":"`+modelID+`","search":"acme"}`)
			if l, _ := listed["data"].([]any); len(l) != 1 {
				t.Errorf("query by search found %d model records", len(l))
			}
			call("DELETE", "/v1/data_model_records/"+rid+q, `{"reason":"duplicate"}`, 200)
			call("POST", "/v1/data_model_records/"+rid+"/restore"+q, "", 200)
			if code, _ := mustCall(t, base, secret, "GET", "/v1/data_model_records/"+rid, ""); code != 400 {
				t.Errorf("get without model_id: %d, want 400", code)
			}
			c.run("member", "mfa-verified", member)
			// recordsctl's change reaches the server as a PostgreSQL notification, which may arrive a
			// moment after recordsctl exits; the server's key cache is bounded by auth.PrincipalMaxAge.
			stale := func() (int, map[string]any) {
				deadline := time.Now().Add(auth.PrincipalMaxAge + time.Second)
				for {
					code, body := get("/v1/me")
					if code == 401 || time.Now().After(deadline) {
						return code, body
					}
					time.Sleep(20 * time.Millisecond)
				}
			}
			if code, body := stale(); code != 401 || body["error"].(map[string]any)["code"] != "key_assurance_stale" {
				t.Errorf("after mfa-verified: %d %v", code, body)
			}
			c.run("key", "revoke", key["id"].(string))
			if code, _ := get("/v1/me"); code != 401 {
				t.Errorf("revoked key: %d", code)
			}
		})
	}
}

func mustString(v any) string {
	data, _ := json.Marshal(v)
	return string(data)
}

// startServer runs recordsd serve on a free port and returns its base URL and what it printed before
// it started serving.
func startServer(t *testing.T, c ctl, extra ...string) (string, string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	args := append([]string{"serve", "--addr", "127.0.0.1:0", "--db", c.db, "--definitions", servertest.DefinitionsDir(), "--plugins", servertest.ShippedPlugins(t)}, extra...)
	cmd := exec.CommandContext(ctx, filepath.Join(binDir, "recordsd"), args...)
	cmd.Dir = c.dir
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	stdout, _ := cmd.StdoutPipe()
	cmd.Stderr = io.Discard
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cancel(); cmd.Wait() })
	type started struct{ url, printed string }
	ready := make(chan started, 1)
	go func() {
		var printed strings.Builder
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			printed.WriteString(sc.Text() + "\n")
			if m := regexp.MustCompile(`on (http://\S+)/v1`).FindStringSubmatch(sc.Text()); m != nil {
				ready <- started{m[1], printed.String()}
			}
		}
	}()
	select {
	case s := <-ready:
		return s.url, s.printed
	case <-time.After(60 * time.Second):
		t.Fatal("recordsd did not start")
	}
	return "", ""
}

// `recordsd serve --dev` on an empty database prints a working key and writes it to ./data/dev-key.
func TestServeDev(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	c := ctl{t: t, db: "sqlite:" + filepath.Join(dir, "data", "records.db"), dir: dir}
	base, printed := startServer(t, c, "--dev")
	if !regexp.MustCompile(`wsk_[0-9a-f]{64}`).MatchString(printed) {
		t.Errorf("--dev did not print the key: %q", printed)
	}
	key, err := os.ReadFile(filepath.Join(dir, "data", "dev-key"))
	if err != nil {
		t.Fatal(err)
	}
	code, body := mustCall(t, base, strings.TrimSpace(string(key)), "GET", "/v1/deals", "")
	if code != 200 || len(body["data"].([]any)) == 0 {
		t.Errorf("demo deals: %d %v", code, body)
	}
}

// recordsctl plugins list starts the plugins the definitions name, reports their health, and stops them;
// a named plugin missing from the directory is an error naming it.
func TestPluginsList(t *testing.T) {
	t.Parallel()
	c := ctl{t: t, db: servertest.DatabaseURL(t, servertest.SQLite), dir: t.TempDir()}
	msg := c.fail("plugins", "list", "--plugins", filepath.Join(c.dir, "empty"))
	for _, want := range []string{`plugin "deal-rules" (hooks of deals) has no executable program`, `plugin "task-rules" (hooks of project_tasks)`, `plugin "signal-rules" (hooks of project_signals)`} {
		if !strings.Contains(msg, want) {
			t.Errorf("missing plugins: %s lacks %s", msg, want)
		}
	}
	got := c.run("plugins", "list", "--plugins", servertest.ShippedPlugins(t))
	list, _ := got["plugins"].([]any)
	if len(list) != 3 {
		t.Fatalf("plugins list printed %v", got)
	}
	want := map[string]string{"deal-rules": `["deals"]`, "signal-rules": `["project_signals"]`, "task-rules": `["project_tasks"]`}
	var pids []int
	for _, item := range list {
		p := item.(map[string]any)
		name, _ := p["name"].(string)
		if res, ok := want[name]; !ok || p["version"] != "1.0.0" || p["running"] != true || mustString(p["resources"]) != res {
			t.Errorf("plugin status %v", p)
		}
		pids = append(pids, int(p["pid"].(float64)))
	}
	for _, pid := range pids {
		deadline := time.Now().Add(5 * time.Second)
		for syscall.Kill(pid, 0) == nil && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
		}
		if syscall.Kill(pid, 0) == nil {
			t.Errorf("plugin process %d outlived recordsctl", pid)
		}
	}
}

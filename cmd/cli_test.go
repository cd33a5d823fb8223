// Package cmd_test runs the real recordsd and recordsctl binaries the way scripts do, against SQLite and
// PostgreSQL, and checks the command-line contract of DESIGN.md §5.
package cmd_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/workspace-records/records/runtime/limits"
	"github.com/workspace-records/records/runtime/records"
	"github.com/workspace-records/records/runtime/server/servertest"
	procs "github.com/workspace-records/records/runtime/server/servertest/proc"
)

var binDir string

func TestMain(m *testing.M) {
	os.Exit(servertest.RunWithBinaries(m, procs.RunTests, &binDir, "recordsd", "recordsctl"))
}

type ctl struct {
	t   *testing.T
	db  string
	dir string
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
			if code, body := get("/v1/me"); code != 401 || body["error"].(map[string]any)["code"] != "key_assurance_stale" {
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

// Two recordsd processes on one PostgreSQL: a key revoked with recordsctl is refused by both within 2 s.
func TestRevocationReachesEveryServer(t *testing.T) {
	t.Parallel()
	c := ctl{t: t, db: servertest.DatabaseURL(t, servertest.Postgres), dir: t.TempDir()}
	c.run("migrate")
	ws := c.run("workspace", "create", "--name", "Two servers", "--plan", "growth")["id"].(string)
	member := c.run("member", "create", "--workspace", ws, "--email", "ops@two.example", "--role", "admin")["id"].(string)
	key := c.run("key", "create", "--member", member, "--access", "read")
	secret := key["secret"].(string)
	a, _ := startServer(t, c)
	b, _ := startServer(t, c)
	status := func(base string) int {
		code, _ := mustCall(t, base, secret, "GET", "/v1/me", "")
		return code
	}
	if status(a) != 200 || status(b) != 200 {
		t.Fatal("key not accepted before revocation")
	}
	c.run("key", "revoke", key["id"].(string))
	revokedAt := time.Now()
	for _, base := range []string{a, b} {
		for status(base) != 401 {
			if time.Since(revokedAt) > 2*time.Second {
				t.Fatalf("%s still accepts the revoked key after 2 s", base)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
}

// Two recordsd processes sharing Redis: with a limit of N per minute, 4N concurrent requests spread over
// both get exactly N successes.
func TestRateLimitAcrossServersWithRedis(t *testing.T) {
	t.Parallel()
	redisURL := os.Getenv("RECORDS_TEST_REDIS")
	if redisURL == "" {
		redisURL = "redis://127.0.0.1:6379/0"
	}
	if client, err := limits.ParseRedisURL(redisURL); err != nil {
		t.Fatal(err)
	} else if err := client.Ping(context.Background()).Err(); err != nil {
		client.Close()
		if os.Getenv("CI") == "true" {
			t.Fatalf("Redis is required when CI=true: %v", err)
		}
		t.Skipf("Redis not reachable: %v", err)
	} else {
		client.Close()
	}
	c := ctl{t: t, db: servertest.DatabaseURL(t, servertest.Postgres), dir: t.TempDir()}
	c.run("migrate")
	ws := c.run("workspace", "create", "--name", "Shared limits", "--plan", "growth")["id"].(string)
	const n = 30
	c.run("workspace", "set-limits", ws, "--key-per-minute", "30", "--key-per-hour", "10000", "--workspace-per-minute", "10000")
	member := c.run("member", "create", "--workspace", ws, "--email", "ops@shared.example", "--role", "admin")["id"].(string)
	secret := c.run("key", "create", "--member", member, "--access", "read")["secret"].(string)
	a, _ := startServer(t, c, "--redis", redisURL)
	b, _ := startServer(t, c, "--redis", redisURL)
	var ok, limited atomic.Int64
	var wg sync.WaitGroup
	for i := 0; i < 4*n; i++ {
		base := a
		if i%2 == 1 {
			base = b
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			code, _, err := call(base, secret, "GET", "/v1/me", "")
			if err != nil {
				t.Error(err) // not Fatal: this is not the test goroutine
				return
			}
			switch code {
			case 200:
				ok.Add(1)
			case 429:
				limited.Add(1)
			default:
				t.Errorf("status %d", code)
			}
		}()
	}
	wg.Wait()
	if ok.Load() != n || limited.Load() != 3*n {
		t.Errorf("%d × 200 and %d × 429, want %d and %d", ok.Load(), limited.Load(), n, 3*n)
	}
}

// Two servers on one PostgreSQL: a custom field created with recordsctl is in both catalogs and writable
// on both within 2 seconds, with no restart.
func TestCustomFieldReachesEveryServer(t *testing.T) {
	t.Parallel()
	c := ctl{t: t, db: servertest.DatabaseURL(t, servertest.Postgres), dir: t.TempDir()}
	c.run("migrate")
	ws := c.run("workspace", "create", "--name", "Live catalog", "--plan", "growth")["id"].(string)
	member := c.run("member", "create", "--workspace", ws, "--email", "ops@live.example", "--role", "admin")["id"].(string)
	secret := c.run("key", "create", "--member", member, "--access", "write")["secret"].(string)
	a, _ := startServer(t, c)
	b, _ := startServer(t, c)
	call := func(base, method, path, body string) (int, map[string]any) {
		return mustCall(t, base, secret, method, path, body)
	}
	// Both servers have served the catalog once, so they hold a snapshot without the field.
	for _, base := range []string{a, b} {
		if code, _ := call(base, "GET", "/v1/resources/deals", ""); code != 200 {
			t.Fatalf("catalog: %d", code)
		}
	}
	created := c.run("field", "create", "--workspace", ws, "--resource", "deals", "--key", "tier", "--type", "select", "--options", "gold,silver")
	if !strings.HasPrefix(created["filter_key"].(string), "cfv:") {
		t.Fatalf("field create printed %v", created)
	}
	start := time.Now()
	for _, base := range []string{a, b} {
		for {
			_, doc := call(base, "GET", "/v1/resources/deals", "")
			custom, _ := doc["data"].(map[string]any)["custom_fields"].([]any)
			if len(custom) == 1 {
				break
			}
			if time.Since(start) > 2*time.Second {
				t.Fatalf("%s does not list the new custom field after 2 s", base)
			}
			time.Sleep(50 * time.Millisecond)
		}
		if code, out := call(base, "POST", "/v1/deals", `{"name":"Live","cf__tier":"gold"}`); code != 201 {
			t.Errorf("%s refuses the new custom field: %d %v", base, code, out)
		}
	}
}

// call sends one API request with key and decodes the JSON answer.
func call(base, key, method, path, body string) (int, map[string]any, error) {
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, base+path, rd)
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Authorization", "Bearer "+key)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer res.Body.Close()
	var out map[string]any
	data, err := io.ReadAll(res.Body)
	if err != nil {
		return 0, nil, err
	}
	if len(data) > 0 {
		if err := json.Unmarshal(data, &out); err != nil {
			return res.StatusCode, nil, fmt.Errorf("%s %s: answer is not JSON: %q", method, path, data)
		}
	}
	return res.StatusCode, out, nil
}

// mustCall is call for the test goroutine.
func mustCall(t *testing.T, base, key, method, path, body string) (int, map[string]any) {
	t.Helper()
	code, out, err := call(base, key, method, path, body)
	if err != nil {
		t.Fatal(err)
	}
	return code, out
}

// recordsctl plugins list starts the plugins the definitions name, reports their health, and stops them;
// a named plugin missing from the directory is an error naming it.
func TestPluginsList(t *testing.T) {
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

// auditCall sends one API request and returns its status, decoded body and X-Request-Id.
func auditCall(t *testing.T, base, key, method, path, body string) (int, map[string]any, string) {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, base+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+key)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var out map[string]any
	_ = json.NewDecoder(res.Body).Decode(&out)
	return res.StatusCode, out, res.Header.Get("X-Request-Id")
}

// auditText runs recordsctl without --json and returns its stdout.
func auditText(c ctl, args ...string) string {
	c.t.Helper()
	full := append([]string{"--db", c.db, "--definitions", servertest.DefinitionsDir()}, args...)
	cmd := exec.Command(filepath.Join(binDir, "recordsctl"), full...)
	cmd.Dir = c.dir
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		c.t.Fatalf("recordsctl %v: %v\n%s", args, err, stderr.String())
	}
	return stdout.String()
}

// auditEntries runs audit list --json with args and returns its entries, checking the output shape.
func auditEntries(c ctl, args ...string) ([]map[string]any, any) {
	c.t.Helper()
	out := c.run(append([]string{"audit", "list"}, args...)...)
	next, ok := out["next_cursor"]
	if !ok || len(out) != 2 {
		c.t.Fatalf("audit list printed %v, want {data, next_cursor}", out)
	}
	list, ok := out["data"].([]any)
	if !ok {
		c.t.Fatalf("audit list data: %v", out["data"])
	}
	entries := make([]map[string]any, len(list))
	for i, item := range list {
		entries[i] = item.(map[string]any)
		for _, k := range []string{"id", "resource", "record_id", "action", "member_id", "key_id", "request_id", "changes", "previous", "created_at"} {
			if _, ok := entries[i][k]; !ok {
				c.t.Errorf("audit entry lacks %s: %v", k, entries[i])
			}
		}
	}
	return entries, next
}

// recordsctl audit list: every API write with its member, key and request id; filters by resource,
// record and time; pages; the operator sees stored values, --as-member the member's masks; another
// workspace's entries never show; bad arguments fail cleanly.
func TestAuditList(t *testing.T) {
	t.Parallel()
	for _, b := range servertest.Backends {
		t.Run(string(b), func(t *testing.T) {
			c := ctl{t: t, db: servertest.DatabaseURL(t, b), dir: t.TempDir()}
			c.run("migrate")
			ws := c.run("workspace", "create", "--name", "Audited", "--plan", "growth")["id"].(string)
			admin := c.run("member", "create", "--workspace", ws, "--email", "ops@audited.example", "--role", "admin")["id"].(string)
			viewer := c.run("member", "create", "--workspace", ws, "--email", "viewer@audited.example", "--role", "viewer")["id"].(string)
			key := c.run("key", "create", "--member", admin, "--access", "write")
			secret, keyID := key["secret"].(string), key["id"].(string)
			file := filepath.Join(c.dir, "companies.jsonl")
			os.WriteFile(file, []byte(`{"name":"Imported Co"}`+"\n"), 0o644)
			c.run("records", "import", "--workspace", ws, "--resource", "companies", "--file", file)
			ws2 := c.run("workspace", "create", "--name", "Elsewhere", "--plan", "growth")["id"].(string)
			c.run("records", "import", "--workspace", ws2, "--resource", "companies", "--file", file)

			base, _ := startServer(t, c)
			type write struct{ action, record, requestID string }
			var writes []write
			do := func(method, path, body, action string, want int) map[string]any {
				t.Helper()
				code, out, rid := auditCall(t, base, secret, method, path, body)
				if code != want {
					t.Fatalf("%s %s: %d %v", method, path, code, out)
				}
				data, _ := out["data"].(map[string]any)
				if action != "" {
					writes = append(writes, write{action: action, requestID: rid})
				}
				return data
			}
			contact := do("POST", "/v1/contacts", `{"last_name":"Lee","email":"jane@acme.example"}`, "create", 201)["id"].(string)
			writes[0].record = contact
			do("PATCH", "/v1/contacts/"+contact, `{"email":"j.lee@acme.example"}`, "update", 200)
			do("POST", "/v1/contacts", `{"first_name":"no last name"}`, "", 422) // refused: leaves no entry
			deal := do("POST", "/v1/deals", `{"name":"Big one","amount":90000}`, "create", 201)["id"].(string)
			do("DELETE", "/v1/deals/"+deal, `{"reason":"duplicate"}`, "archive", 200)
			do("POST", "/v1/deals/"+deal+"/restore", "", "restore", 200)
			do("PUT", "/v1/deals/"+deal+"/contacts/"+contact, "", "link", 200)
			do("DELETE", "/v1/deals/"+deal+"/contacts/"+contact, "", "unlink", 200)
			for i := range writes {
				if writes[i].record == "" {
					writes[i].record = deal
					if i == 1 {
						writes[i].record = contact
					}
				}
			}

			all, next := auditEntries(c, "--workspace", ws)
			if next != nil || len(all) != len(writes)+1 {
				t.Fatalf("%d entries (next %v), want %d writes and 1 import: %s", len(all), next, len(writes), mustString(all))
			}
			for i, w := range writes {
				en := all[len(writes)-1-i]
				if en["action"] != w.action || en["record_id"] != w.record || en["member_id"] != admin || en["key_id"] != keyID || en["request_id"] != w.requestID {
					t.Errorf("write %d: %v, want %s of %s by %s with key %s, request %s", i, en, w.action, w.record, admin, keyID, w.requestID)
				}
			}
			if imp := all[len(all)-1]; imp["action"] != "import" || imp["member_id"] != nil || imp["key_id"] != nil || imp["resource"] != "companies" {
				t.Errorf("import entry %v", imp)
			}

			// Filters.
			if got, _ := auditEntries(c, "--workspace", ws, "--resource", "contacts"); len(got) != 2 {
				t.Errorf("--resource contacts: %s", mustString(got))
			}
			if got, _ := auditEntries(c, "--workspace", ws, "--record", deal); len(got) != 5 {
				t.Errorf("--record deal: %d entries, want 5", len(got))
			}
			if got, _ := auditEntries(c, "--workspace", ws, "--resource", "deals", "--record", contact); len(got) != 0 {
				t.Errorf("--resource deals --record contact: %s", mustString(got))
			}
			if got, _ := auditEntries(c, "--workspace", ws, "--since", all[1]["created_at"].(string)); len(got) < 2 || len(got) == len(all) {
				t.Errorf("--since %s: %d entries", all[1]["created_at"], len(got))
			}
			if got, _ := auditEntries(c, "--workspace", ws, "--since", "24h"); len(got) != len(all) {
				t.Errorf("--since 24h: %d entries", len(got))
			}
			if got, _ := auditEntries(c, "--workspace", ws, "--since", time.Now().Add(time.Hour).UTC().Format(time.RFC3339)); len(got) != 0 {
				t.Errorf("--since an hour ahead: %d entries", len(got))
			}
			if got, _ := auditEntries(c, "--workspace", ws2); len(got) != 1 || got[0]["action"] != "import" {
				t.Errorf("the other workspace: %s", mustString(got))
			}

			// Pages.
			var walked []any
			args := []string{"--workspace", ws, "--limit", "3"}
			for {
				page, next := auditEntries(c, args...)
				for _, en := range page {
					walked = append(walked, en["id"])
				}
				if next == nil {
					break
				}
				args = []string{"--workspace", ws, "--limit", "3", "--cursor", next.(string)}
			}
			want := make([]any, len(all))
			for i, en := range all {
				want[i] = en["id"]
			}
			if mustString(walked) != mustString(want) {
				t.Errorf("pages of 3 walked %v, want %v", walked, want)
			}

			// The operator sees stored values; the viewer its masks.
			byAction := func(entries []map[string]any, record, action string) map[string]any {
				for _, en := range entries {
					if en["record_id"] == record && en["action"] == action {
						return en
					}
				}
				t.Fatalf("no %s entry of %s in %s", action, record, mustString(entries))
				return nil
			}
			if en := byAction(all, contact, "update"); mustString(en["changes"]) != `{"email":"j.lee@acme.example"}` || mustString(en["previous"]) != `{"email":"jane@acme.example"}` {
				t.Errorf("operator's contact update: %v", en)
			}
			if en := byAction(all, deal, "create"); mustString(en["changes"].(map[string]any)["amount"]) != "90000" {
				t.Errorf("operator's deal create: %v", en)
			}
			seen, _ := auditEntries(c, "--workspace", ws, "--as-member", viewer)
			if en := byAction(seen, contact, "update"); mustString(en["changes"]) != `{"email":"j•••@•••.example"}` || mustString(en["previous"]) != `{"email":"j•••@•••.example"}` {
				t.Errorf("viewer's contact update: %v", en)
			}
			if en := byAction(seen, deal, "create"); en["changes"].(map[string]any)["amount"] != nil || mustString(en["withheld"]) != `["amount"]` {
				t.Errorf("viewer's deal create: %v", en)
			}

			text := auditText(c, "audit", "list", "--workspace", ws, "--record", contact)
			if !strings.Contains(text, "CREATED_AT") || !strings.Contains(text, "j.lee@acme.example") || strings.Count(text, "\n") != 3 {
				t.Errorf("text output:\n%s", text)
			}
			if text := auditText(c, "audit", "list", "--workspace", ws, "--record", contact, "--as-member", viewer); strings.Contains(text, "acme.example") {
				t.Errorf("--as-member text output shows a masked value:\n%s", text)
			}
			if help := auditText(c, "audit", "list", "--help"); !strings.Contains(help, "--as-member") || !strings.Contains(help, "operator") {
				t.Errorf("audit list --help:\n%s", help)
			}

			for _, bad := range [][]string{
				{"audit", "list"},
				{"audit", "list", "--workspace", records.NewID()},
				{"audit", "list", "--workspace", "not-a-uuid"},
				{"audit", "list", "--workspace", ws, "--resource", "gizmos"},
				{"audit", "list", "--workspace", ws, "--since", "yesterday"},
				{"audit", "list", "--workspace", ws, "--since", "-5h"},
				{"audit", "list", "--workspace", ws, "--record", "42"},
				{"audit", "list", "--workspace", ws, "--as-member", "someone"},
				{"audit", "list", "--workspace", ws, "--as-member", records.NewID()},
				{"audit", "list", "--workspace", ws, "--limit", "0"},
				{"audit", "list", "--workspace", ws, "--cursor", "forged"},
				{"audit", "nonsense", "--workspace", ws},
			} {
				if msg := c.fail(bad...); strings.Contains(msg, "panic") || strings.Contains(msg, "goroutine") {
					t.Errorf("recordsctl %v panicked: %s", bad, msg)
				}
			}
		})
	}
}

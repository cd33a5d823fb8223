package server_test

import (
	"context"
	"io"
	"log/slog"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/workspace-records/records/runtime/auth"
	"github.com/workspace-records/records/runtime/config"
	"github.com/workspace-records/records/runtime/server"
	"github.com/workspace-records/records/runtime/server/servertest"
)

// The shipped deal-rules plugin (built from source, named by the shipped deals definition), run as a
// real separate process by go-plugin, applies its rules to writes made through HTTP, reading stages
// through the host's lookups; a killed plugin is restarted on the next write; no plugin process
// outlives the server.
func TestDealRulesPlugin(t *testing.T) {
	t.Parallel()
	for _, b := range servertest.Backends {
		t.Run(string(b), func(t *testing.T) {
			// A server of its own: it kills plugin processes and closes the server.
			e := servertest.Start(t, b, servertest.Options{Private: true})
			pipeline := e.Do("POST", "/v1/pipelines", map[string]any{"name": "Sales"}).Data()["id"]
			stage := func(name, kind string, probability int) any {
				res := e.Do("POST", "/v1/pipeline_stages", map[string]any{"pipeline_id": pipeline, "name": name, "stage_type": kind, "probability": probability})
				e.Expect(res, 201, "")
				return res.Data()["id"]
			}
			open, won, lost := stage("Qualified", "open", 30), stage("Won", "won", 100), stage("Lost", "lost", 0)
			reason := e.Do("POST", "/v1/loss_reasons", map[string]any{"name": "Price"}).Data()["id"]

			created := e.Do("POST", "/v1/deals", map[string]any{"name": "Plugin deal", "pipeline_id": pipeline, "stage_id": open})
			e.Expect(created, 201, "")
			if p := num(created.Data(), "probability"); p != "30" {
				t.Errorf("probability %q, want the stage's 30", p)
			}
			id := created.Data()["id"].(string)
			res := e.Do("PATCH", "/v1/deals/"+id, map[string]any{"stage_id": won})
			e.Expect(res, 422, "validation_failed")
			if !containsField(res, "close_date") {
				t.Errorf("refusal does not name close_date: %s", res.Raw)
			}
			if got := e.Do("GET", "/v1/deals/"+id, nil).Data(); got["stage_id"] != open {
				t.Errorf("refused write changed the deal: %v", got["stage_id"])
			}
			res = e.Do("PATCH", "/v1/deals/"+id, map[string]any{"stage_id": won, "close_date": "2026-11-30"})
			e.Expect(res, 200, "")
			if d := res.Data(); d["status"] != "won" || num(d, "probability") != "100" {
				t.Errorf("won deal: status %v probability %v", d["status"], d["probability"])
			}
			res = e.Do("PATCH", "/v1/deals/"+id, map[string]any{"stage_id": lost})
			e.Expect(res, 422, "validation_failed")
			if !containsField(res, "loss_reason_id") {
				t.Errorf("refusal does not name loss_reason_id: %s", res.Raw)
			}
			res = e.Do("PATCH", "/v1/deals/"+id, map[string]any{"stage_id": lost, "loss_reason_id": reason, "probability": 5})
			e.Expect(res, 200, "")
			if d := res.Data(); d["status"] != "lost" || num(d, "probability") != "5" {
				t.Errorf("lost deal with explicit probability: status %v probability %v", d["status"], d["probability"])
			}

			// Back to an open stage (the plugin sets status open): the won stage's close date is then the
			// plugin's to require, not the declarative rule's, which reads the status.
			e.Expect(e.Do("PATCH", "/v1/deals/"+id, map[string]any{"stage_id": open}), 200, "")

			// Kill the plugin: the next write starts it again and the rule still applies.
			host := e.Server.Backend().Current().Plugins
			if n := len(host.Statuses()); n != 3 {
				t.Errorf("%d plugins loaded, want the 3 the definitions name", n)
			}
			st := servertest.PluginStatus(t, host, "deal-rules")
			if !st.Running || st.PID == 0 {
				t.Fatalf("status %+v", st)
			}
			if err := syscall.Kill(st.PID, syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			servertest.WaitGone(t, st.PID)
			// The next write starts it again. A start that takes longer than the hook's deadline (the
			// process and its handshake, seconds on a loaded machine) answers 503 with Retry-After, which a
			// client retries: the plugin must be back within 2 s (research P1) under RECORDS_TIMING=strict,
			// and within 20 s in make test (servertest.Budget; measured: the first write passes alone; a
			// second make test beside this one, or a cold compile beside it, made it 503).
			res = e.DoServed(servertest.Budget(2*time.Second, 20*time.Second), "PATCH", "/v1/deals/"+id, map[string]any{"stage_id": won, "close_date": nil})
			e.Expect(res, 422, "validation_failed")
			if st := servertest.PluginStatus(t, host, "deal-rules"); st.Starts < 2 || !st.Running {
				t.Errorf("after a kill: %+v", st)
			}
			var pids []int
			for _, st := range host.Statuses() {
				pids = append(pids, st.PID)
			}
			e.Server.Close()
			for _, pid := range pids {
				servertest.WaitGone(t, pid)
			}
		})
	}
}

// A definition naming a plugin that is not in the plugins directory stops the server from starting.
func TestMissingPluginIsALoadError(t *testing.T) {
	t.Parallel()
	cfg := config.Default(func(string) string { return "" })
	cfg.DB = servertest.DatabaseURL(t, servertest.SQLite)
	cfg.DefinitionsDir = servertest.DefinitionsWithHooks(t, "deals", "no-such-rules")
	cfg.PluginsDir = servertest.PluginsDir(t)
	_, err := server.New(context.Background(), cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err == nil || !strings.Contains(err.Error(), `plugin "no-such-rules" (hooks of deals) has no executable program`) {
		t.Fatalf("err = %v", err)
	}
}

// buildNameRules builds the test plugin refusing names containing word into dir/name-rules, replacing
// any earlier build by a rename (a running program's file cannot be overwritten).
func buildNameRules(t testing.TB, dir, word string) {
	t.Helper()
	buildNameRulesAfter(t, dir, word, "")
}

// buildNameRulesAfter is buildNameRules with the plugin's After hook appending what it is told to the
// file afterFile (none when ""). The file is set at build time (-X main.afterFile), not in the
// environment: go-plugin gives a plugin the environment of the whole test process, which the parallel
// tests share (and t.Setenv is refused in them).
func buildNameRulesAfter(t testing.TB, dir, word, afterFile string) {
	t.Helper()
	tmp := filepath.Join(dir, ".name-rules.new")
	ldflags := "-X main.forbidden=" + word
	if afterFile != "" {
		ldflags += " -X main.afterFile=" + afterFile
	}
	cmd := exec.Command("go", "build", "-ldflags", ldflags, "-o", tmp, "./runtime/server/testdata/name-rules")
	cmd.Dir = filepath.Join(servertest.DefinitionsDir(), "..")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build name-rules: %v\n%s", err, out)
	}
	if err := os.Rename(tmp, filepath.Join(dir, "name-rules")); err != nil {
		t.Fatal(err)
	}
}

// A changed plugin binary takes effect after a plugin restart, with the same server.
func TestPluginSwap(t *testing.T) {
	t.Parallel()
	dir := servertest.PluginsDir(t)
	buildNameRules(t, dir, "forbidden")
	e := servertest.Start(t, servertest.SQLite, servertest.Options{DefinitionsDir: servertest.DefinitionsWithHooks(t, "companies", "name-rules"), PluginsDir: dir})
	e.Expect(e.Do("POST", "/v1/companies", map[string]any{"name": "A forbidden name"}), 422, "validation_failed")
	e.Expect(e.Do("POST", "/v1/companies", map[string]any{"name": "A blocked name"}), 201, "")

	buildNameRules(t, dir, "blocked")
	host := e.Server.Backend().Current().Plugins
	if err := host.Restart("name-rules"); err != nil {
		t.Fatal(err)
	}
	// The restarted program may still be starting when the first write calls it: 503 with Retry-After
	// until it serves (research P1: 2 s; 20 s in make test, servertest.Budget — a start took over 2 s at
	// load 95 % during a cold compile).
	e.Expect(e.DoServed(servertest.Budget(2*time.Second, 20*time.Second), "POST", "/v1/companies", map[string]any{"name": "A forbidden name"}), 201, "")
	e.Expect(e.Do("POST", "/v1/companies", map[string]any{"name": "A blocked name"}), 422, "validation_failed")
	if st := servertest.PluginStatus(t, host, "name-rules"); st.Version != "test-blocked" || st.Starts < 2 {
		t.Errorf("after the swap: %+v", st)
	}
}

// A plugin program replaced in the plugins directory while recordsd serves (written beside and
// renamed over it, as deploys do) is swapped in without a restart and without Restart: no write fails
// across it, the new rule holds once the status reports the new version, and a broken program after it
// is refused while the writes go on.
func TestPluginSwapWatched(t *testing.T) {
	t.Parallel()
	dir := servertest.PluginsDir(t)
	buildNameRules(t, dir, "forbidden")
	e := servertest.Start(t, servertest.SQLite, servertest.Options{DefinitionsDir: servertest.DefinitionsWithHooks(t, "companies", "name-rules"), PluginsDir: dir})
	e.AwaitReady() // the schemas compile in the background: /readyz is checked below, once swapped
	host := e.Server.Backend().Current().Plugins
	e.Expect(e.Do("POST", "/v1/companies", map[string]any{"name": "A forbidden name"}), 422, "validation_failed")
	old := servertest.PluginStatus(t, host, "name-rules")

	// Writes go on while the new build is deployed; each is judged by one build or the other, none fails.
	n := 0
	writes := func(until func() bool, within time.Duration) map[int]int {
		t.Helper()
		counts := map[int]int{}
		for start := time.Now(); !until(); n++ {
			if time.Since(start) > within {
				t.Fatalf("not within %v: %+v", within, servertest.PluginStatus(t, host, "name-rules"))
			}
			res := e.Do("POST", "/v1/companies", map[string]any{"name": "Company " + strconv.Itoa(n)})
			counts[res.Status]++
			if res.Status != 201 {
				t.Errorf("a write during the swap: %d %s", res.Status, res.Raw)
			}
		}
		return counts
	}
	// The watch looks every second (plugin_watch), then starts the new program and swaps it in: within 3 s
	// under RECORDS_TIMING=strict, within 30 s in make test (servertest.Budget; measured 0.3–0.5 s alone).
	swapBudget := servertest.Budget(3*time.Second, 30*time.Second)
	buildNameRules(t, dir, "blocked")
	deployed := time.Now()
	counts := writes(func() bool { return servertest.PluginStatus(t, host, "name-rules").Version == "test-blocked" }, swapBudget)
	took := time.Since(deployed)
	st := servertest.PluginStatus(t, host, "name-rules")
	if st.PID == old.PID || st.Swaps != 1 || st.SHA256 == old.SHA256 {
		t.Errorf("after the swap %+v; before %+v", st, old)
	}
	e.Expect(e.Do("POST", "/v1/companies", map[string]any{"name": "A forbidden name"}), 201, "")
	e.Expect(e.Do("POST", "/v1/companies", map[string]any{"name": "A blocked name"}), 422, "validation_failed")
	// Ready again (every plugin answering its check: on a loaded machine another plugin's ping may miss
	// its deadline for a moment, so this waits for the answer rather than taking the first one).
	e.AwaitReady()

	// A broken program is refused; the served one goes on.
	tmp := filepath.Join(dir, ".name-rules.new")
	if err := os.WriteFile(tmp, []byte("#!/bin/sh\nexit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, "name-rules")); err != nil {
		t.Fatal(err)
	}
	writes(func() bool { return servertest.PluginStatus(t, host, "name-rules").SwapError != "" }, swapBudget)
	if now := servertest.PluginStatus(t, host, "name-rules"); now.PID != st.PID || now.Version != "test-blocked" || !now.Running {
		t.Errorf("after the broken program: %+v", now)
	}
	e.Expect(e.Do("POST", "/v1/companies", map[string]any{"name": "Still blocked"}), 422, "validation_failed")
	t.Logf("the rebuilt plugin served %v after its rename (plugin_watch 1s), writes meanwhile by status %v", took.Round(time.Millisecond), counts)
}

// Killing the plugin during a stream of writes: every write either passed the rule or was refused with
// 503; none bypassed it; writes succeed again afterwards.
func TestPluginKilledDuringWrites(t *testing.T) {
	t.Parallel()
	dir := servertest.PluginsDir(t)
	buildNameRules(t, dir, "forbidden")
	for _, b := range servertest.Backends {
		t.Run(string(b), func(t *testing.T) {
			e := servertest.Start(t, b, servertest.Options{DefinitionsDir: servertest.DefinitionsWithHooks(t, "companies", "name-rules"), PluginsDir: dir})
			host := e.Server.Backend().Current().Plugins
			done := make(chan struct{})
			go func() {
				defer close(done)
				for i := 0; i < 5; i++ {
					time.Sleep(40 * time.Millisecond)
					if st := servertest.PluginStatus(t, host, "name-rules"); st.PID > 0 {
						syscall.Kill(st.PID, syscall.SIGKILL)
					}
				}
			}()
			counts := map[int]int{}
			for i := 0; ; i++ {
				select {
				case <-done:
				default:
					name := "Company " + strconv.Itoa(i)
					if i%2 == 1 {
						name += " forbidden"
					}
					res := e.Do("POST", "/v1/companies", map[string]any{"name": name})
					counts[res.Status]++
					switch {
					case res.Status == 503:
					case i%2 == 1 && res.Status != 422:
						t.Errorf("%q: %d, want 422 or 503: the rule was bypassed", name, res.Status)
					case i%2 == 0 && res.Status != 201:
						t.Errorf("%q: %d, want 201 or 503", name, res.Status)
					}
					continue
				}
				break
			}
			e.Expect(e.Do("POST", "/v1/companies", map[string]any{"name": "After the kills"}), 201, "")
			e.Expect(e.Do("POST", "/v1/companies", map[string]any{"name": "Still forbidden"}), 422, "validation_failed")
			filter := `[{"field":"name","op":"contains","value":"forbidden"}]`
			if n := len(e.Do("GET", "/v1/companies?filter="+url.QueryEscape(filter), nil).List()); n != 0 {
				t.Errorf("%d companies with a forbidden name were written", n)
			}
			t.Logf("%s: responses by status %v; plugin starts %d", b, counts, servertest.PluginStatus(t, host, "name-rules").Starts)
		})
	}
}

// After hooks are told about committed writes with the stored record, not the caller's masked view.
func TestAfterHookSeesStoredRecord(t *testing.T) {
	t.Parallel()
	dir := servertest.PluginsDir(t)
	log := filepath.Join(t.TempDir(), "after.jsonl")
	buildNameRulesAfter(t, dir, "forbidden", log)
	e := servertest.Start(t, servertest.SQLite, servertest.Options{DefinitionsDir: servertest.DefinitionsWithHooks(t, "companies", "name-rules"), PluginsDir: dir})
	id := e.Do("POST", "/v1/companies", map[string]any{"name": "Acme", "annual_revenue": 1234567}).Data()["id"].(string)
	member := e.NewKey(e.NewMember("member@after.example", "member", ""), auth.KeyOptions{Access: "write"})
	res := e.DoKey(member, "PATCH", "/v1/companies/"+id, map[string]any{"name": "Acme Inc"})
	e.Expect(res, 200, "")
	if v := res.Data()["annual_revenue"]; v != nil {
		t.Fatalf("the member sees annual_revenue %v; the test needs it masked", v)
	}
	e.Expect(e.Do("POST", "/v1/companies", map[string]any{"name": "A forbidden one"}), 422, "validation_failed")
	var lines []string
	deadline := time.Now().Add(5 * time.Second)
	for len(lines) < 2 && time.Now().Before(deadline) {
		data, _ := os.ReadFile(log)
		lines = strings.Split(strings.TrimSpace(string(data)), "\n")
		time.Sleep(20 * time.Millisecond)
	}
	if len(lines) != 2 {
		t.Fatalf("after hook lines: %q", lines)
	}
	if !strings.Contains(lines[0], `"operation":"create"`) || !strings.Contains(lines[1], `"operation":"update"`) ||
		!strings.Contains(lines[1], `"annual_revenue":1234567`) || !strings.Contains(lines[1], `"changes":{"name":"Acme Inc"}`) {
		t.Errorf("after hook lines:\n%s", strings.Join(lines, "\n"))
	}
}

// The shipped task-rules and signal-rules, through HTTP, reading projects, statuses, subtasks,
// severities and probabilities through the host's lookups.
func TestDeliveryPlugins(t *testing.T) {
	t.Parallel()
	for _, b := range servertest.Backends {
		t.Run(string(b), func(t *testing.T) {
			e := servertest.Start(t, b, servertest.Options{})
			create := func(path string, body map[string]any) map[string]any {
				t.Helper()
				res := e.Do("POST", path, body)
				e.Expect(res, 201, "")
				return res.Data()
			}
			project := create("/v1/projects", map[string]any{"name": "Launch", "start_date": "2026-03-01"})["id"]
			open := create("/v1/project_task_statuses", map[string]any{"name": "Open", "category": "todo", "is_closed": false})["id"]
			done := create("/v1/project_task_statuses", map[string]any{"name": "Done", "category": "done", "is_closed": true})["id"]

			res := e.Do("POST", "/v1/project_tasks", map[string]any{"title": "Too early", "project_id": project, "due_date": "2026-02-01"})
			e.Expect(res, 422, "validation_failed")
			if !containsField(res, "due_date") {
				t.Errorf("early due date not refused by name: %s", res.Raw)
			}
			parent := create("/v1/project_tasks", map[string]any{"title": "Parent", "project_id": project, "status_id": open, "due_date": "2026-03-10"})["id"].(string)
			sub := create("/v1/project_tasks", map[string]any{"title": "Sub", "project_id": project, "parent_task_id": parent, "status_id": open})["id"].(string)
			res = e.Do("PATCH", "/v1/project_tasks/"+parent, map[string]any{"status_id": done})
			e.Expect(res, 422, "validation_failed")
			if !strings.Contains(string(res.Raw), `subtask \"Sub\" is still open`) {
				t.Errorf("open subtask not named: %s", res.Raw)
			}
			if d := e.Do("PATCH", "/v1/project_tasks/"+sub, map[string]any{"status_id": done}).Data(); d["completed_at"] == nil {
				t.Errorf("closing a task did not set completed_at: %v", d)
			}
			res = e.Do("PATCH", "/v1/project_tasks/"+parent, map[string]any{"status_id": done})
			e.Expect(res, 200, "")
			if res.Data()["completed_at"] == nil {
				t.Errorf("completed_at not set on the parent")
			}
			if d := e.Do("PATCH", "/v1/project_tasks/"+parent, map[string]any{"status_id": open}).Data(); d["completed_at"] != nil {
				t.Errorf("reopening kept completed_at %v", d["completed_at"])
			}

			severity := create("/v1/signal_severities", map[string]any{"name": "Critical", "level": 5})["id"]
			likely := create("/v1/signal_probabilities", map[string]any{"name": "Likely", "likelihood_percent": 60})["id"]
			rare := create("/v1/signal_probabilities", map[string]any{"name": "Rare", "likelihood_percent": 10})["id"]
			signal := map[string]any{"title": "Vendor delay", "project_id": project, "severity_id": severity, "probability_id": likely}
			res = e.Do("POST", "/v1/project_signals", signal)
			e.Expect(res, 422, "validation_failed")
			if !containsField(res, "mitigation_plan") || !containsField(res, "owner_member_id") {
				t.Errorf("high risk without plan and owner: %s", res.Raw)
			}
			signal["mitigation_plan"], signal["owner_member_id"] = "Second vendor on standby", e.Member
			s := create("/v1/project_signals", signal)
			if num(s, "risk_score") != "300" {
				t.Errorf("risk_score %v, want 300", s["risk_score"])
			}
			res = e.Do("PATCH", "/v1/project_signals/"+s["id"].(string), map[string]any{"probability_id": rare})
			e.Expect(res, 200, "")
			if num(res.Data(), "risk_score") != "50" {
				t.Errorf("risk_score after update %v, want 50", res.Data()["risk_score"])
			}
			e.Expect(e.Do("PATCH", "/v1/project_signals/"+s["id"].(string), map[string]any{"risk_score": 1}), 422, "validation_failed")
		})
	}
}

// TestHookAfterIdle: go-plugin's broker holds the host's offer of the Lookup service for a few seconds
// only. A plugin that connected to it at its first Lookup timed out when that came later, so every
// hooked write of a server that had been up for a while failed with 503 until then (found by the
// benchmark harness). The plugin now connects when it is described, at start.
func TestHookAfterIdle(t *testing.T) {
	t.Parallel() // the 7 s of idling overlap the other tests
	// A server of its own: it measures a server that has been idle.
	e := servertest.Start(t, servertest.SQLite, servertest.Options{Private: true})
	pipeline := e.Do("POST", "/v1/pipelines", map[string]any{"name": "Sales"}).Data()["id"]
	won := e.Do("POST", "/v1/pipeline_stages", map[string]any{"pipeline_id": pipeline, "name": "Won", "stage_type": "won", "probability": 100}).Data()["id"]
	time.Sleep(7 * time.Second) // past go-plugin's 5 s broker window
	var took []time.Duration
	write := func(body map[string]any) *servertest.Response {
		start := time.Now()
		res := e.Do("POST", "/v1/deals", body)
		took = append(took, time.Since(start))
		return res
	}
	e.Expect(write(map[string]any{"name": "Late deal"}), 201, "")
	// A rule that reads the stage: refused for want of a close date, which needs the Lookup service.
	e.Expect(write(map[string]any{"name": "Late won deal", "pipeline_id": pipeline, "stage_id": won}), 422, "validation_failed")
	created := write(map[string]any{"name": "Late won deal", "pipeline_id": pipeline, "stage_id": won, "close_date": "2026-11-20"})
	e.Expect(created, 201, "")
	if created.Data()["status"] != "won" {
		t.Errorf("status %v, want won (set by the rule)", created.Data()["status"])
	}
	// No write waits go-plugin's 5 s broker wait, which one of them would take if the broker were gone
	// (and then fail at the hook deadline, 2 s, which the answers above would show). Each write gets a
	// budget short of 5 s, generous for a loaded machine and the parallel tests beside this one
	// (measured: 4-18 ms a write there, on 2 busy cores; the bound was 3 s for the three while the test
	// ran alone).
	for i, d := range took {
		if d > 4*time.Second {
			t.Errorf("hooked write %d after idling took %v: as long as go-plugin's broker wait", i+1, d)
		}
	}
	t.Logf("three hooked writes after idling: %v", took)
}

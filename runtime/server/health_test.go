package server_test

import (
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/workspace-records/records/runtime/server/servertest"
)

// probe is one answer of /healthz or /readyz.
type probe struct {
	status int
	header http.Header
	body   map[string]any
}

func getProbe(t *testing.T, url string) probe {
	t.Helper()
	res, err := http.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	p := probe{status: res.StatusCode, header: res.Header}
	if err := json.Unmarshal(raw, &p.body); err != nil {
		t.Fatalf("GET %s: %d with a body that is not JSON: %q", url, res.StatusCode, raw)
	}
	return p
}

// checks returns the per-part states of a readiness answer, from its body (200) or its error details (503).
func (p probe) checks() map[string]any {
	if c, ok := p.body["checks"].(map[string]any); ok {
		return c
	}
	e, _ := p.body["error"].(map[string]any)
	d, _ := e["details"].(map[string]any)
	c, _ := d["checks"].(map[string]any)
	return c
}

// notReady asserts a 503 in the error envelope naming part as failing.
func (p probe) notReady(t *testing.T, part string) {
	t.Helper()
	e, _ := p.body["error"].(map[string]any)
	if p.status != 503 || e["code"] != "service_unavailable" || e["request_id"] == nil || p.header.Get("Retry-After") == "" {
		t.Fatalf("want 503 service_unavailable with Retry-After, got %d %v %v", p.status, p.header, p.body)
	}
	if msg, _ := e["message"].(string); !strings.Contains(msg, part) {
		t.Errorf("message %q does not name %s", msg, part)
	}
	if state := p.checks()[part]; state == nil || state == "ok" {
		t.Errorf("checks[%s] = %v, want a failure; checks %v", part, state, p.checks())
	}
}

// Liveness and readiness need no key, send no CORS headers, and name every part they checked.
func TestHealthEndpoints(t *testing.T) {
	t.Parallel()
	for _, b := range servertest.Backends {
		t.Run(string(b), func(t *testing.T) {
			e := servertest.Start(t, b, servertest.Options{})
			live := getProbe(t, e.URL+"/healthz")
			if live.status != 200 || live.body["status"] != "ok" {
				t.Errorf("/healthz: %d %v", live.status, live.body)
			}
			// Schemas compile after the listener opens; readiness waits for them (check "schemas").
			e.AwaitReady()
			ready := getProbe(t, e.URL+"/readyz")
			if ready.status != 200 || ready.body["status"] != "ok" {
				t.Fatalf("/readyz: %d %v", ready.status, ready.body)
			}
			want := []string{"database", "plugin:deal-rules", "plugin:signal-rules", "plugin:task-rules"}
			for _, part := range want {
				if ready.checks()[part] != "ok" {
					t.Errorf("checks[%s] = %v", part, ready.checks()[part])
				}
			}
			for _, p := range []probe{live, ready} {
				for h := range p.header {
					if strings.HasPrefix(h, "Access-Control-") {
						t.Errorf("health answer carries CORS header %s", h)
					}
				}
			}
			res, err := http.Post(e.URL+"/readyz", "application/json", nil)
			if err != nil {
				t.Fatal(err)
			}
			res.Body.Close()
			if res.StatusCode != 405 || res.Header.Get("Allow") != "GET, HEAD" {
				t.Errorf("POST /readyz: %d Allow %q", res.StatusCode, res.Header.Get("Allow"))
			}
		})
	}
}

// PostgreSQL stops: /readyz answers 503 naming the database, API requests 503 in the envelope (never a
// 500), /healthz stays 200. PostgreSQL starts again: both recover without restarting the server.
func TestReadinessFollowsPostgres(t *testing.T) {
	t.Parallel()
	pg := servertest.NewPGCluster(t)
	e := servertest.Start(t, servertest.Postgres, servertest.Options{DB: pg.URL()})
	e.AwaitReady() // schemas compile after the listener opens
	if p := getProbe(t, e.URL+"/readyz"); p.status != 200 {
		t.Fatalf("/readyz before the outage: %d %v", p.status, p.body)
	}
	e.Expect(e.Do("POST", "/v1/companies", map[string]any{"name": "Before"}), 201, "")

	pg.Stop()
	getProbe(t, e.URL+"/readyz").notReady(t, "database")
	if p := getProbe(t, e.URL+"/healthz"); p.status != 200 {
		t.Errorf("/healthz during the outage: %d", p.status)
	}
	// The key may still be remembered for up to a second; either way the answer is a 503.
	for _, path := range []string{"/v1/companies", "/v1/companies/" + "0190d2c2-0000-7000-8000-000000000000"} {
		res := e.Do("GET", path, nil)
		if res.Status != 503 || res.Code() != "service_unavailable" || res.Header.Get("Retry-After") == "" {
			t.Errorf("GET %s during the outage: %d %s", path, res.Status, res.Raw)
		}
	}
	if res := e.Do("POST", "/v1/companies", map[string]any{"name": "During"}); res.Status != 503 {
		t.Errorf("POST during the outage: %d %s", res.Status, res.Raw)
	}

	pg.Start()
	took, ok := servertest.WaitFor(10*time.Second, func() bool {
		res, err := http.Get(e.URL + "/readyz")
		if err != nil {
			return false
		}
		res.Body.Close()
		return res.StatusCode == 200
	})
	if !ok {
		t.Fatalf("/readyz still failing %s after PostgreSQL started", took)
	}
	t.Logf("ready again %s after PostgreSQL started", took)
	e.Expect(e.Do("POST", "/v1/companies", map[string]any{"name": "After"}), 201, "")
	names := map[string]bool{}
	for _, r := range e.Do("GET", "/v1/companies?page_size=100", nil).List() {
		names[r["name"].(string)] = true
	}
	if !names["Before"] || !names["After"] || names["During"] || len(names) != 2 {
		t.Errorf("records after the outage: %v", names)
	}
}

// A plugin whose process is gone and cannot be started again makes the server not ready, naming it;
// once its program is back, a probe starts it and the server is ready again within the wait between
// failed starts (at most 5 s).
func TestReadinessNamesAFailingPlugin(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	shipped := servertest.ShippedPlugins(t)
	for _, name := range []string{"deal-rules", "signal-rules", "task-rules"} {
		copyFile(t, filepath.Join(shipped, name), filepath.Join(dir, name))
	}
	e := servertest.Start(t, servertest.SQLite, servertest.Options{PluginsDir: dir})
	e.AwaitReady() // schemas compile after the listener opens
	if p := getProbe(t, e.URL+"/readyz"); p.status != 200 {
		t.Fatalf("/readyz: %d %v", p.status, p.body)
	}
	program := filepath.Join(dir, "deal-rules")
	if err := os.Rename(program, program+".away"); err != nil {
		t.Fatal(err)
	}
	for _, s := range e.Server.Backend().Current().Plugins.Statuses() {
		if s.Name == "deal-rules" && s.PID > 0 {
			_ = syscall.Kill(s.PID, syscall.SIGKILL)
		}
	}
	if _, ok := servertest.WaitFor(5*time.Second, func() bool {
		return getProbe(t, e.URL+"/readyz").status == 503
	}); !ok {
		t.Fatal("/readyz stayed 200 with deal-rules gone")
	}
	getProbe(t, e.URL+"/readyz").notReady(t, "plugin:deal-rules")
	if err := os.Rename(program+".away", program); err != nil {
		t.Fatal(err)
	}
	if took, ok := servertest.WaitFor(6*time.Second, func() bool { return getProbe(t, e.URL+"/readyz").status == 200 }); !ok {
		t.Fatalf("/readyz still not ready %v after the program came back: %v", took, getProbe(t, e.URL+"/readyz").body)
	} else {
		t.Logf("ready %v after the program came back", took.Round(time.Millisecond))
	}
	// A hooked write runs through the restarted plugin.
	pipeline := e.Do("POST", "/v1/pipelines", map[string]any{"name": "Sales"}).Data()["id"]
	stage := e.Do("POST", "/v1/pipeline_stages", map[string]any{"pipeline_id": pipeline, "name": "Qualified", "stage_type": "open", "probability": 30}).Data()["id"]
	e.Expect(e.Do("POST", "/v1/deals", map[string]any{"name": "Renewal", "pipeline_id": pipeline, "stage_id": stage}), 201, "")
}

// With --redis set, readiness covers Redis: a limiter store that does not answer makes the server not ready.
// A probe asking ?optional=redis gets 200 "degraded" with the failure reported, and requests are served
// meanwhile (the limits and the quota fall back); the database stays required, and other parameters are
// refused.
func TestReadinessNamesRedis(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now
	e := servertest.Start(t, servertest.SQLite, servertest.Options{Redis: "redis://" + addr + "/0"})
	getProbe(t, e.URL+"/readyz").notReady(t, "redis")
	// The schemas compile after the server starts serving (a second or more on a loaded machine), and
	// until then /readyz is not ready for them whatever is optional: wait for that first.
	if took, ok := servertest.WaitFor(20*time.Second, func() bool { return getProbe(t, e.URL+"/readyz").checks()["schemas"] == "ok" }); !ok {
		t.Fatalf("the schemas still compiling after %s", took)
	}
	p := getProbe(t, e.URL+"/readyz?optional=redis")
	if p.status != 200 || p.body["status"] != "degraded" || p.checks()["redis"] == "ok" || p.checks()["database"] != "ok" {
		t.Errorf("?optional=redis during the outage: %d %v; want 200 degraded naming redis", p.status, p.body)
	}
	e.Expect(e.Do("GET", "/v1/me", nil), 200, "")
	if p := getProbe(t, e.URL+"/readyz?optional=database,redis"); p.status != 200 {
		t.Errorf("?optional=database,redis: %d", p.status)
	}
	if p := getProbe(t, e.URL+"/readyz?verbose=1"); p.status != 400 {
		t.Errorf("?verbose=1: %d %v, want 400", p.status, p.body)
	}

	if _, err := exec.LookPath("redis-server"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("redis-server is required when CI=true")
		}
		t.Skip("redis-server not installed")
	}
	port := addr[strings.LastIndex(addr, ":")+1:]
	cmd := exec.Command("redis-server", "--port", port, "--bind", "127.0.0.1", "--save", "", "--appendonly", "no")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	if took, ok := servertest.WaitFor(10*time.Second, func() bool { return getProbe(t, e.URL+"/readyz").status == 200 }); !ok {
		t.Fatalf("/readyz not ready %s after Redis started", took)
	}
	if p := getProbe(t, e.URL+"/readyz?optional=redis"); p.status != 200 || p.body["status"] != "ok" {
		t.Errorf("?optional=redis with Redis back: %d %v, want 200 ok", p.status, p.body)
	}
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	data, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, data, 0o755); err != nil {
		t.Fatal(err)
	}
}

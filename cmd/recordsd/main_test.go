package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/workspace-records/records/internal/proc"
	"github.com/workspace-records/records/runtime/server/servertest"
)

// freeAddr returns a loopback address with a port that was free a moment ago.
func writeConfig(t *testing.T, text string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "records.yaml")
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func get(t *testing.T, url string) int {
	t.Helper()
	client := &http.Client{Timeout: 10 * time.Second}
	resp, err := client.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

// recordsd serve --config FILE serves with the file's settings (its listen, metrics and profile
// addresses, its database), under the environment and the flags, and logs the configuration without a
// password or the cursor secret, on SQLite and on PostgreSQL with a password in the URL.
func TestServeFromConfigFile(t *testing.T) {
	t.Parallel()
	const (
		pgPassword    = "pg-secret-Pa55"
		redisPassword = "redis-secret-Pa55"
		cursorSecret  = "cursor-secret-0123456789abcdefghijklmnop"
	)
	plugins := servertest.ShippedPlugins(t)
	for _, b := range servertest.Backends {
		t.Run(string(b), func(t *testing.T) {
			t.Parallel()
			// An empty database, which recordsd migrates as it starts: the one migration of this test
			// process (a migrated template would cost the same migration and a copy).
			db := servertest.DatabaseURL(t, b)
			if b == servertest.Postgres {
				// The test server trusts local connections: the password is carried, not checked.
				db = strings.Replace(db, servertest.AppRole+"@", servertest.AppRole+":"+pgPassword+"@", 1)
			}
			// Three distinct ports: one port handed out twice made the metrics listener fail after the
			// API's was open, and the test's GET waited on a listener nobody served.
			addrs, err := proc.FreeAddrs(3)
			if err != nil {
				t.Fatal(err)
			}
			addr, metricsAddr, debugAddr := addrs[0], addrs[1], addrs[2]
			file := writeConfig(t, fmt.Sprintf(`version: 1
addr: %s
metrics_addr: %s
debug_addr: %s
db: %q
definitions: %s
plugins: %s
redis: "redis://:%s@127.0.0.1:6379/15"
cursor_secret: %q
log_format: text
log_level: warn
shutdown_grace: 3s
`, addr, metricsAddr, debugAddr, db, servertest.DefinitionsDir(), plugins, redisPassword, cursorSecret))
			// The environment beats the file (log_level warn → error), a flag beats both (→ info, which
			// lets the configuration line through).
			getenv := func(k string) string {
				return map[string]string{"RECORDS_LOG_LEVEL": "error", "RECORDS_DEV_KEY_FILE": filepath.Join(t.TempDir(), "k")}[k]
			}
			var stdout, stderr proc.Buffer
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			done := make(chan error, 1)
			go func() {
				done <- run(ctx, []string{"serve", "--config", file, "--log-level", "info"}, getenv, &stdout, &stderr)
			}()

			deadline := time.After(60 * time.Second)
			for !strings.Contains(stdout.String(), "Serving the Workspace Records API on http://"+addr+"/v1") {
				select {
				case err := <-done:
					t.Fatalf("run returned early: %v\nstderr:\n%s", err, stderr.String())
				case <-deadline:
					t.Fatalf("not serving on %s\nstdout:\n%s\nstderr:\n%s", addr, stdout.String(), stderr.String())
				case <-time.After(50 * time.Millisecond):
				}
			}
			if code := get(t, "http://"+addr+"/healthz"); code != http.StatusOK {
				t.Errorf("GET /healthz on the file's address: %d", code)
			}
			if code := get(t, "http://"+metricsAddr+"/metrics"); code != http.StatusOK {
				t.Errorf("GET /metrics on the file's metrics_addr: %d", code)
			}
			if code := get(t, "http://"+debugAddr+"/debug/pprof/"); code != http.StatusOK {
				t.Errorf("GET /debug/pprof/ on the file's debug_addr: %d", code)
			}
			cancel()
			if err := <-done; err != nil {
				t.Errorf("run: %v", err)
			}

			logs := stderr.String()
			var configLine string
			for _, line := range strings.Split(logs, "\n") {
				if strings.Contains(line, "msg=configuration") {
					configLine = line
				}
			}
			for _, want := range []string{
				"level=INFO", "file=" + file, "config.addr=" + addr, "config.metrics_addr=" + metricsAddr,
				"config.debug_addr=" + debugAddr, "config.log_level=info", "config.log_format=text",
				"config.shutdown_grace=3s", "config.cursor_secret=[redacted]", "config.redis=redis://:[redacted]@127.0.0.1:6379/15",
			} {
				if !strings.Contains(configLine, want) {
					t.Errorf("configuration line lacks %s: %q", want, configLine)
				}
			}
			if b == servertest.Postgres && !strings.Contains(configLine, "records_test_app:[redacted]@") {
				t.Errorf("configuration line lacks the redacted database user: %q", configLine)
			}
			if !regexp.MustCompile(`msg="shutting down" .*grace=3s`).MatchString(logs) {
				t.Errorf("shutdown did not use the file's shutdown_grace:\n%s", logs)
			}
			for _, secret := range []string{pgPassword, redisPassword, cursorSecret} {
				if strings.Contains(logs, secret) || strings.Contains(stdout.String(), secret) {
					t.Errorf("the output shows %q:\n%s%s", secret, stdout.String(), logs)
				}
			}
		})
	}
}

// Problems with the configuration stop recordsd before it opens anything, each named.
func TestServeConfigErrors(t *testing.T) {
	t.Parallel()
	defs := servertest.DefinitionsDir()
	missing := filepath.Join(t.TempDir(), "missing.yaml")
	tests := map[string]struct {
		args []string
		env  map[string]string
		want []string
	}{
		"missing --config file":       {args: []string{"--config", missing}, want: []string{missing}},
		"missing RECORDS_CONFIG file": {env: map[string]string{"RECORDS_CONFIG": missing}, want: []string{missing}},
		"unknown key": {args: []string{"--config", writeConfig(t, "adress: 127.0.0.1:1\n")},
			want: []string{`key "adress": unknown key`, "records.yaml"}},
		"bad log level":       {args: []string{"--log-level", "loud"}, want: []string{`log_level (--log-level, RECORDS_LOG_LEVEL) "loud"`}},
		"bad log format, env": {env: map[string]string{"RECORDS_LOG_FORMAT": "xml"}, want: []string{`"xml": want json or text`}},
		"bad listen address":  {args: []string{"--addr", "8080"}, want: []string{`addr (--addr, RECORDS_ADDR) "8080": want host:port`}},
		"bad flag value":      {args: []string{"--shutdown-grace", "soon"}, want: []string{`invalid value "soon" for flag -shutdown-grace`}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			var stdout, stderr proc.Buffer
			args := append([]string{"serve", "--definitions", defs, "--db", "sqlite:" + filepath.Join(t.TempDir(), "x.db")}, tc.args...)
			err := run(context.Background(), args, func(k string) string { return tc.env[k] }, &stdout, &stderr)
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
			if strings.Contains(stdout.String(), "Serving") {
				t.Error("it served")
			}
		})
	}
}

// serve -h (and help serve) lists every flag with its variable on stdout and exits cleanly.
func TestServeHelp(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{{"serve", "-h"}, {"serve", "--help"}, {"help", "serve"}} {
		var stdout, stderr proc.Buffer
		if err := run(context.Background(), args, func(string) string { return "" }, &stdout, &stderr); err != nil {
			t.Fatalf("%v: %v", args, err)
		}
		for _, want := range []string{"-config", "RECORDS_CONFIG", "-addr", "RECORDS_ADDR", "-metrics-addr", "-log-format", "-shutdown-grace"} {
			if !strings.Contains(stdout.String(), want) {
				t.Errorf("%v: help lacks %s:\n%s", args, want, stdout.String())
			}
		}
		if strings.Contains(stdout.String(), "-cursor-secret") {
			t.Errorf("%v: the cursor secret is a flag", args)
		}
		if stderr.String() != "" {
			t.Errorf("%v: help wrote to stderr: %s", args, stderr.String())
		}
	}
}

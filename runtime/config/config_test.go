package config

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

// env is a getenv over a map.
func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

// writeFile writes a config file into a temporary directory and returns its path.
func writeFile(t *testing.T, text string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "records.yaml")
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// load runs the sequence of a command: Default, Bind, Parse. It returns the parse error.
func load(t *testing.T, cmd Command, vars map[string]string, args ...string) (Config, error) {
	t.Helper()
	cfg := Default(env(vars))
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	Bind(fs, &cfg, cmd)
	err := fs.Parse(args)
	return cfg, err
}

func TestPrecedence(t *testing.T) {
	t.Parallel()
	file := writeFile(t, `
addr: 127.0.0.1:7001
db: sqlite:/from/file.db
plugin_timeout: 7s
dev: true
log_level: warn
log_format: text
shutdown_grace: 3s
`)
	tests := map[string]struct {
		vars map[string]string
		args []string
		want Config
	}{
		"defaults": {
			want: Config{Addr: "127.0.0.1:8080", DB: "sqlite:./data/records.db", PluginTimeout: 2 * time.Second, Dev: false,
				LogLevel: "info", LogFormat: "json", ShutdownGrace: 10 * time.Second},
		},
		"file over defaults, named by --config": {
			args: []string{"--config", file},
			want: Config{Addr: "127.0.0.1:7001", DB: "sqlite:/from/file.db", PluginTimeout: 7 * time.Second, Dev: true,
				LogLevel: "warn", LogFormat: "text", ShutdownGrace: 3 * time.Second},
		},
		"file named by RECORDS_CONFIG": {
			vars: map[string]string{"RECORDS_CONFIG": file},
			want: Config{Addr: "127.0.0.1:7001", DB: "sqlite:/from/file.db", PluginTimeout: 7 * time.Second, Dev: true,
				LogLevel: "warn", LogFormat: "text", ShutdownGrace: 3 * time.Second},
		},
		"environment over file": {
			vars: map[string]string{"RECORDS_CONFIG": file, "RECORDS_ADDR": "127.0.0.1:7002", "RECORDS_DB": "sqlite:/from/env.db",
				"RECORDS_PLUGIN_TIMEOUT": "8s", "RECORDS_DEV": "false", "RECORDS_LOG_LEVEL": "ERROR"},
			want: Config{Addr: "127.0.0.1:7002", DB: "sqlite:/from/env.db", PluginTimeout: 8 * time.Second, Dev: false,
				LogLevel: "error", LogFormat: "text", ShutdownGrace: 3 * time.Second},
		},
		"flags over environment, --config after them": {
			vars: map[string]string{"RECORDS_ADDR": "127.0.0.1:7002", "RECORDS_DB": "sqlite:/from/env.db", "RECORDS_LOG_LEVEL": "error"},
			args: []string{"--addr", "127.0.0.1:7003", "--db", "sqlite:/from/flag.db", "--log-level", "debug", "--dev=false", "--config", file},
			want: Config{Addr: "127.0.0.1:7003", DB: "sqlite:/from/flag.db", PluginTimeout: 7 * time.Second, Dev: false,
				LogLevel: "debug", LogFormat: "text", ShutdownGrace: 3 * time.Second},
		},
		"flags over environment, --config before them": {
			vars: map[string]string{"RECORDS_PLUGIN_TIMEOUT": "8s"},
			args: []string{"--config", file, "--plugin-timeout", "9s", "--shutdown-grace", "1s", "--log-format", "json"},
			want: Config{Addr: "127.0.0.1:7001", DB: "sqlite:/from/file.db", PluginTimeout: 9 * time.Second, Dev: true,
				LogLevel: "warn", LogFormat: "json", ShutdownGrace: time.Second},
		},
		"--config over RECORDS_CONFIG, even one that does not exist": {
			vars: map[string]string{"RECORDS_CONFIG": filepath.Join(t.TempDir(), "missing.yaml")},
			args: []string{"--config", file},
			want: Config{Addr: "127.0.0.1:7001", DB: "sqlite:/from/file.db", PluginTimeout: 7 * time.Second, Dev: true,
				LogLevel: "warn", LogFormat: "text", ShutdownGrace: 3 * time.Second},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			cfg, err := load(t, Recordsd, tc.vars, tc.args...)
			if err != nil {
				t.Fatal(err)
			}
			if err := cfg.loadErr(); err != nil {
				t.Fatalf("load: %v", err)
			}
			got := Config{Addr: cfg.Addr, DB: cfg.DB, PluginTimeout: cfg.PluginTimeout, Dev: cfg.Dev, LogLevel: cfg.LogLevel,
				LogFormat: cfg.LogFormat, ShutdownGrace: cfg.ShutdownGrace}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got  %s\nwant %s", fields(got), fields(tc.want))
			}
		})
	}
}

// fields prints a Config's fields, secrets included (for test failures only).
func fields(c Config) string {
	c.src = nil
	type plain Config
	return fmt.Sprintf("%+v", plain(c))
}

// Today's flags and variables keep their names: scripts and the black-box tests of DESIGN.md §5 use them.
func TestContractNames(t *testing.T) {
	t.Parallel()
	flagsOf := func(cmd Command) map[string]bool {
		cfg := Default(nil)
		fs := flag.NewFlagSet("test", flag.ContinueOnError)
		Bind(fs, &cfg, cmd)
		names := map[string]bool{}
		fs.VisitAll(func(f *flag.Flag) { names[f.Name] = true })
		return names
	}
	d, ctl := flagsOf(Recordsd), flagsOf(Recordsctl)
	for _, f := range []string{"addr", "db", "definitions", "plugins", "dev", "config", "plugin-timeout", "dev-key-file",
		"public-url", "trusted-proxies", "redis", "debug-addr", "log-level", "log-format", "metrics-addr", "shutdown-grace"} {
		if !d[f] {
			t.Errorf("recordsd has no --%s", f)
		}
	}
	for _, f := range []string{"db", "definitions", "plugins", "config"} {
		if !ctl[f] {
			t.Errorf("recordsctl has no --%s", f)
		}
	}
	// --allow-destructive belongs to recordsctl migrate, which defines it; a second definition would panic.
	for _, f := range []string{"addr", "allow-destructive", "cursor-secret", "log-level"} {
		if ctl[f] {
			t.Errorf("recordsctl's global flags include --%s", f)
		}
	}
	if d["cursor-secret"] {
		t.Error("the cursor secret is a flag: the command line is visible to every local user")
	}
	cfg := Default(env(map[string]string{"RECORDS_DB": "postgres://u@h/db", "RECORDS_DEFINITIONS": "/d", "RECORDS_PLUGINS": "/p",
		"RECORDS_ADDR": ":1", "RECORDS_CURSOR_SECRET": "s", "RECORDS_TRUSTED_PROXIES": "10.0.0.1", "RECORDS_REDIS": "redis://r",
		"RECORDS_PUBLIC_URL": "https://x.example/", "RECORDS_DEBUG_ADDR": ":2", "RECORDS_PLUGIN_TIMEOUT": "3s", "RECORDS_REQUEST_TIMEOUT": "4s",
		"RECORDS_FAILED_AUTH_PER_MINUTE": " 25", "RECORDS_REDIS_TIMEOUT": "1500ms", "RECORDS_WEBHOOK_LEASE": "5s", "RECORDS_JOB_LEASE": "7s", "RECORDS_PLUGIN_WATCH": "250ms",
		"RECORDS_PLUGIN_AFTER_LIMIT": "32"}))
	want := Config{DB: "postgres://u@h/db", DefinitionsDir: "/d", PluginsDir: "/p", Addr: ":1", CursorSecret: "s",
		TrustedProxies: "10.0.0.1", Redis: "redis://r", PublicURL: "https://x.example", DebugAddr: ":2", PluginTimeout: 3 * time.Second,
		PluginWatch: 250 * time.Millisecond, PluginAfterLimit: 32, RequestTimeout: 4 * time.Second, DevKeyFile: DefaultDevKeyFile, ShutdownGrace: 10 * time.Second, LogLevel: "info", LogFormat: "json",
		FailedAuthPerMinute: 25, RedisTimeout: 1500 * time.Millisecond, KeyUsageInterval: 10 * time.Second,
		Events: true, EventRetention: 30 * 24 * time.Hour, WebhookLease: 5 * time.Second, JobLease: 7 * time.Second}
	if got := cfg; fields(got) != fields(want) {
		t.Errorf("environment:\ngot  %s\nwant %s", fields(got), fields(want))
	}
}

// The table covers every field of Config, each once, and every default parses.
func TestTableCoversConfig(t *testing.T) {
	t.Parallel()
	var c Config
	seen := map[any]string{}
	flags, envs, keys := map[string]bool{}, map[string]bool{}, map[string]bool{}
	for _, s := range Settings() {
		_ = s.defaultValue() // panics on a bad default
		p := s.field(&c)
		if other, dup := seen[p]; dup {
			t.Errorf("%s and %s set the same field", s.Name, other)
		}
		seen[p] = s.Name
		switch p.(type) {
		case *string:
			if s.Kind != KindString {
				t.Errorf("%s: kind %s for a string field", s.Name, s.Kind)
			}
		case *bool:
			if s.Kind != KindBool {
				t.Errorf("%s: kind %s for a bool field", s.Name, s.Kind)
			}
		case *time.Duration:
			if s.Kind != KindDuration {
				t.Errorf("%s: kind %s for a duration field", s.Name, s.Kind)
			}
		case *int64:
			if s.Kind != KindInt {
				t.Errorf("%s: kind %s for an integer field", s.Name, s.Kind)
			}
		}
		if s.Env != "" && !strings.HasPrefix(s.Env, "RECORDS_") {
			t.Errorf("%s: variable %s is not RECORDS_*", s.Name, s.Env)
		}
		for set, v := range map[*map[string]bool]string{&flags: s.Flag, &envs: s.Env, &keys: s.Key} {
			if v != "" && (*set)[v] {
				t.Errorf("%s: %q used twice", s.Name, v)
			}
			(*set)[v] = true
		}
		if s.Help == "" || s.Commands == 0 {
			t.Errorf("%s: no help or no command", s.Name)
		}
	}
	if n := reflect.TypeOf(c).NumField() - 1; len(seen) != n { // minus src
		t.Errorf("%d settings for %d fields of Config", len(seen), n)
	}
}

func TestFileErrors(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		text string
		want []string // substrings of the error
	}{
		"unknown key":        {"addr: 127.0.0.1:1\ndatabase: sqlite:x\n", []string{`line 2: key "database": unknown key`}},
		"dashed key":         {"log-level: debug\n", []string{`key "log-level": unknown key (did you mean "log_level"?)`}},
		"bool as string":     {"dev: \"yes\"\n", []string{`key "dev": want true or false`}},
		"duration as number": {"shutdown_grace: 10\n", []string{`key "shutdown_grace": want a duration such as 10s, got int "10"`}},
		"bad duration":       {"plugin_timeout: soon\n", []string{`key "plugin_timeout": "soon": want a duration`}},
		"string as number":   {"addr: 8080\n", []string{`key "addr": want a string, got int "8080" (quote it)`}},
		"number as string":   {"failed_auth_per_minute: \"60\"\n", []string{`key "failed_auth_per_minute": want a whole number, got str "60"`}},
		"list":               {"trusted_proxies: [10.0.0.1]\n", []string{`key "trusted_proxies": want a string, not a list or mapping`}},
		"twice":              {"addr: a:1\naddr: b:2\n", []string{`line 2: key "addr": set twice`}},
		"not a mapping":      {"- addr\n", []string{"want a mapping of settings"}},
		"version":            {"version: 2\n", []string{`unsupported version "2"`}},
		"command-line only":  {"allow_destructive: true\n", []string{`key "allow_destructive": unknown key`}},
		"every problem":      {"a: 1\nb: 2\n", []string{`key "a"`, `key "b"`}},
		"secret not echoed":  {"cursor_secret: 1234567890123456\n", []string{`key "cursor_secret": want a string, got int "…"`}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			path := writeFile(t, tc.text)
			_, err := load(t, Recordsd, nil, "--config", path)
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range append(tc.want, path) {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
			if strings.Contains(err.Error(), "1234567890") {
				t.Errorf("error shows the secret: %v", err)
			}
			// Through RECORDS_CONFIG the same error comes from Validate and LoadErr.
			cfg := Default(env(map[string]string{"RECORDS_CONFIG": path}))
			fs := flag.NewFlagSet("test", flag.ContinueOnError)
			Bind(fs, &cfg, Recordsd)
			if err := fs.Parse(nil); err != nil {
				t.Fatal(err)
			}
			if err := LoadErr(fs); err == nil || !strings.Contains(err.Error(), tc.want[0]) {
				t.Errorf("LoadErr = %v", err)
			}
			if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), tc.want[0]) {
				t.Errorf("Validate = %v", err)
			}
		})
	}
}

func TestMissingFile(t *testing.T) {
	t.Parallel()
	missing := filepath.Join(t.TempDir(), "nope.yaml")
	if _, err := load(t, Recordsd, nil, "--config", missing); err == nil || !strings.Contains(err.Error(), missing) {
		t.Errorf("--config %s: %v", missing, err)
	}
	cfg, err := load(t, Recordsctl, map[string]string{"RECORDS_CONFIG": missing})
	if err != nil {
		t.Fatal(err)
	}
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), missing) {
		t.Errorf("RECORDS_CONFIG=%s: Validate = %v", missing, err)
	}
	// No file named: no file read, no error.
	cfg, err = load(t, Recordsd, nil)
	if err != nil || cfg.File() != "" || cfg.loadErr() != nil {
		t.Errorf("no file: %v %q %v", err, cfg.File(), cfg.loadErr())
	}
	// An empty file sets nothing.
	cfg, err = load(t, Recordsd, nil, "--config", writeFile(t, "# nothing yet\n"))
	if err != nil || cfg.Addr != DefaultAddr {
		t.Errorf("empty file: %v %q", err, cfg.Addr)
	}
}

// One file serves both programs: recordsctl accepts the server's keys and neither applies nor
// validates them.
func TestSharedFile(t *testing.T) {
	t.Parallel()
	defs := t.TempDir()
	path := writeFile(t, fmt.Sprintf("db: sqlite:/shared.db\ndefinitions: %s\naddr: 127.0.0.1:7004\nlog_level: verbose\nmetrics_addr: nowhere\n", defs))
	ctl, err := load(t, Recordsctl, nil, "--config", path)
	if err != nil {
		t.Fatal(err)
	}
	if ctl.DB != "sqlite:/shared.db" || ctl.DefinitionsDir != defs {
		t.Errorf("recordsctl did not read its settings: %s", fields(ctl))
	}
	if ctl.Addr != DefaultAddr || ctl.LogLevel != "info" {
		t.Errorf("recordsctl applied the server's settings: %s", fields(ctl))
	}
	if err := ctl.Validate(); err != nil {
		t.Errorf("recordsctl: %v", err)
	}
	if strings.Contains(ctl.Redacted(), "addr=") {
		t.Errorf("recordsctl's configuration lists the server's settings: %s", ctl.Redacted())
	}
	d, err := load(t, Recordsd, nil, "--config", path)
	if err != nil {
		t.Fatal(err)
	}
	err = d.Validate()
	for _, w := range []string{`log_level (--log-level, RECORDS_LOG_LEVEL) "verbose": want debug, info, warn or error`, `metrics_addr (--metrics-addr, RECORDS_METRICS_ADDR) "nowhere": want host:port`} {
		if err == nil || !strings.Contains(err.Error(), w) {
			t.Errorf("recordsd: %v, want %q", err, w)
		}
	}
}

func TestValidate(t *testing.T) {
	t.Parallel()
	defs := t.TempDir()
	tests := map[string]struct {
		vars map[string]string
		args []string
		want string // "" = valid
	}{
		"defaults":               {},
		"every level":            {args: []string{"--log-level", "DEBUG", "--log-format", "text"}},
		"bad level":              {args: []string{"--log-level", "verbose"}, want: `log_level (--log-level, RECORDS_LOG_LEVEL) "verbose": want debug, info, warn or error`},
		"bad level from env":     {vars: map[string]string{"RECORDS_LOG_LEVEL": "trace"}, want: `"trace": want debug, info, warn or error`},
		"bad format":             {args: []string{"--log-format", "xml"}, want: `log_format (--log-format, RECORDS_LOG_FORMAT) "xml": want json or text`},
		"addr without port":      {args: []string{"--addr", "localhost"}, want: `addr (--addr, RECORDS_ADDR) "localhost": want host:port`},
		"addr bad port":          {args: []string{"--addr", "127.0.0.1:99999"}, want: `port "99999": want a number from 0 to 65535`},
		"empty addr":             {args: []string{"--addr", ""}, want: `addr (--addr, RECORDS_ADDR) "": want host:port`},
		"any port":               {args: []string{"--addr", ":0", "--metrics-addr", ":0", "--debug-addr", "127.0.0.1:0"}},
		"bad debug addr":         {args: []string{"--debug-addr", "6060"}, want: `debug_addr (--debug-addr, RECORDS_DEBUG_ADDR) "6060": want host:port`},
		"same addresses":         {args: []string{"--addr", "127.0.0.1:9000", "--metrics-addr", "127.0.0.1:9000"}, want: `addr and metrics_addr are the same address`},
		"bad duration from env":  {vars: map[string]string{"RECORDS_SHUTDOWN_GRACE": "long"}, want: `RECORDS_SHUTDOWN_GRACE: "long": want a duration`},
		"zero plugin timeout":    {args: []string{"--plugin-timeout", "0s"}, want: `plugin_timeout (--plugin-timeout, RECORDS_PLUGIN_TIMEOUT) "0s": want a positive duration`},
		"short webhook lease":    {args: []string{"--webhook-lease", "500ms"}, want: `webhook_lease (--webhook-lease, RECORDS_WEBHOOK_LEASE) "500ms": want a duration of at least 1s`},
		"negative failed auth":   {args: []string{"--failed-auth-per-minute", "-1"}, want: `failed_auth_per_minute (--failed-auth-per-minute, RECORDS_FAILED_AUTH_PER_MINUTE) "-1": want 0 (no bound) or a positive number`},
		"non-number failed auth": {vars: map[string]string{"RECORDS_FAILED_AUTH_PER_MINUTE": "lots"}, want: `"lots": want a whole number`},
		"bad db":                 {args: []string{"--db", "mysql://root:hunter2@db/x"}, want: `db (--db, RECORDS_DB) "mysql://root:[redacted]@db/x": want sqlite:PATH or a postgres:// URL`},
		"short cursor secret":    {vars: map[string]string{"RECORDS_CURSOR_SECRET": "hunter2"}, want: `cursor_secret (RECORDS_CURSOR_SECRET) is too short`},
		"bad public url":         {args: []string{"--public-url", "https://x.example/api"}, want: `want http(s)://host[:port], without a path`},
		"bad redis":              {args: []string{"--redis", "http://cache:6379"}, want: `want a redis://, rediss:// or unix:// URL`},
		"missing definitions":    {args: []string{"--definitions", filepath.Join(defs, "none")}, want: `not a directory`},
		"several at once":        {args: []string{"--log-level", "loud", "--log-format", "xml"}, want: `"loud": want debug, info, warn or error` + "\n" + `log_format`},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			cfg, err := load(t, Recordsd, tc.vars, append([]string{"--definitions", defs}, tc.args...)...)
			if err != nil {
				t.Fatal(err)
			}
			err = cfg.Validate()
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("Validate: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("Validate = %v, want %q", err, tc.want)
			}
			if err != nil && strings.Contains(err.Error(), "hunter2") {
				t.Errorf("the error shows a secret: %v", err)
			}
		})
	}
}

func TestRedaction(t *testing.T) {
	t.Parallel()
	const (
		pgPassword     = "pg-Pa55word!"
		redisPassword  = "r3dis-secret"
		cursorSecret   = "cursor-secret-0123456789abcdef0123456789"
		paramPassword  = "param-pw-42"
		escapedPgLogin = "pg-Pa55word%21"
	)
	cfg, err := load(t, Recordsd, map[string]string{
		"RECORDS_DB":            "postgres://app:" + escapedPgLogin + "@db.internal:5432/records?sslmode=require&sslpassword=" + paramPassword,
		"RECORDS_REDIS":         "redis://:" + redisPassword + "@cache.internal:6379/0",
		"RECORDS_CURSOR_SECRET": cursorSecret,
	})
	if err != nil {
		t.Fatal(err)
	}
	var jsonLog, textLog bytes.Buffer
	slog.New(slog.NewJSONHandler(&jsonLog, nil)).Info("configuration", "config", cfg)
	slog.New(slog.NewTextHandler(&textLog, nil)).Info("configuration", "config", cfg)
	renderings := map[string]string{
		"json log": jsonLog.String(), "text log": textLog.String(), "Redacted": cfg.Redacted(),
		"%v": fmt.Sprintf("%v", cfg), "%+v": fmt.Sprintf("%+v", cfg), "%#v": fmt.Sprintf("%#v", cfg),
		"%s": fmt.Sprintf("%s", cfg), "%d": fmt.Sprintf("%d", cfg), "%x": fmt.Sprintf("%x", cfg),
		"pointer %+v": fmt.Sprintf("%+v", &cfg),
	}
	for name, out := range renderings {
		for _, secret := range []string{pgPassword, escapedPgLogin, redisPassword, cursorSecret, paramPassword} {
			if strings.Contains(out, secret) {
				t.Errorf("%s shows %q: %s", name, secret, out)
			}
		}
	}
	for _, want := range []string{
		`"db":"postgres://app:[redacted]@db.internal:5432/records?sslmode=require&sslpassword=[redacted]"`,
		`"redis":"redis://:[redacted]@cache.internal:6379/0"`,
		`"cursor_secret":"[redacted]"`,
		`"addr":"127.0.0.1:8080"`, `"shutdown_grace":"10s"`, `"dev":false`,
	} {
		if !strings.Contains(jsonLog.String(), want) {
			t.Errorf("json log lacks %s: %s", want, jsonLog.String())
		}
	}
	if !strings.Contains(textLog.String(), `config.db="postgres://app:[redacted]@db.internal:5432/records`) {
		t.Errorf("text log: %s", textLog.String())
	}
	// An unset secret shows as empty: the operator sees it is not set.
	if !strings.Contains(Default(nil).Redacted(), `cursor_secret="" `) {
		t.Errorf("unset secret: %s", Default(nil).Redacted())
	}
}

func TestRedactURL(t *testing.T) {
	t.Parallel()
	tests := map[string]struct{ in, want string }{
		"sqlite relative":      {"sqlite:./data/records.db", "sqlite:./data/records.db"},
		"sqlite absolute":      {"sqlite:/var/lib/records.db?_pragma=busy_timeout(5000)", "sqlite:/var/lib/records.db?_pragma=busy_timeout(5000)"},
		"no password":          {"postgres://app@db:5432/records", "postgres://app@db:5432/records"},
		"password":             {"postgres://app:s3cret@db:5432/records", "postgres://app:[redacted]@db:5432/records"},
		"password parameter":   {"postgresql://db/records?user=app&password=s3cret", "postgresql://db/records?user=app&password=[redacted]"},
		"redis":                {"rediss://default:s3cret@cache:6380/1", "rediss://default:[redacted]@cache:6380/1"},
		"unescaped # in it":    {"postgres://app:s3#cret@db/records", "[redacted]"},
		"unescaped / in it":    {"postgres://app:12/34s3cret@db/records", "postgres:[redacted]"},
		"not a URL":            {"host=db password=s3cret", "[redacted]"},
		"empty":                {"", ""},
		"ipv6 host and params": {"postgres://app:s3cret@[::1]:5432/records?sslmode=disable&pool_max_conns=8", "postgres://app:[redacted]@[::1]:5432/records?sslmode=disable&pool_max_conns=8"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			got := RedactURL(tc.in)
			if got != tc.want {
				t.Errorf("RedactURL(%q) = %q, want %q", tc.in, got, tc.want)
			}
			if strings.Contains(got, "s3cret") || strings.Contains(got, "cret") {
				t.Errorf("RedactURL(%q) shows the password: %q", tc.in, got)
			}
		})
	}
}

// The help of the flags shows the table's defaults, not values from the environment, which may hold
// a password.
func TestHelpShowsNoSecret(t *testing.T) {
	t.Parallel()
	cfg := Default(env(map[string]string{"RECORDS_DB": "postgres://app:help-pw@db/x", "RECORDS_REDIS": "redis://:help-pw@r:6379"}))
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	var out bytes.Buffer
	fs.SetOutput(&out)
	Bind(fs, &cfg, Recordsd)
	fs.PrintDefaults()
	if strings.Contains(out.String(), "help-pw") {
		t.Errorf("help shows a password:\n%s", out.String())
	}
	if !strings.Contains(out.String(), "(default sqlite:./data/records.db)") || !strings.Contains(out.String(), "RECORDS_DB") {
		t.Errorf("help:\n%s", out.String())
	}
}

// The README's table is the generated one: make config-doc rewrites it.
func TestREADMETable(t *testing.T) {
	t.Parallel()
	doc, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	got, err := TableIn(doc)
	if err != nil {
		t.Fatalf("README.md: %v", err)
	}
	if want := MarkdownTable(); got != want {
		t.Errorf("README.md's configuration table is out of date; run make config-doc.\ngot:\n%s\nwant:\n%s", got, want)
	}
	out, err := ReplaceTable(doc)
	if err != nil || !bytes.Equal(out, doc) {
		t.Errorf("ReplaceTable changes an up-to-date README (%v)", err)
	}
}

func TestMarkdownTable(t *testing.T) {
	t.Parallel()
	table := MarkdownTable()
	for _, want := range []string{
		"| `cursor_secret` | — | `RECORDS_CURSOR_SECRET` | `cursor_secret` | empty | recordsd, recordsctl | **Secret.** ",
		"| `db` | `--db` | `RECORDS_DB` | `db` | `sqlite:./data/records.db` | recordsd, recordsctl | **Secret.** ",
		"| `allow_destructive` | `--allow-destructive` (`migrate`) | — | — | `false` | recordsctl |",
		"| config file | `--config FILE` | `RECORDS_CONFIG` |",
	} {
		if !strings.Contains(table, want) {
			t.Errorf("table lacks %q:\n%s", want, table)
		}
	}
	if n := strings.Count(table, "\n"); n != len(Settings())+3 {
		t.Errorf("%d lines for %d settings", n, len(Settings()))
	}
	if _, err := ReplaceTable([]byte("no markers")); err == nil {
		t.Error("ReplaceTable without markers: no error")
	}
	doc := []byte("# x\n\n" + TableStart + "\nold\n" + TableEnd + "\nafter\n")
	out, err := ReplaceTable(doc)
	if err != nil || string(out) != "# x\n\n"+TableStart+"\n"+table+TableEnd+"\nafter\n" {
		t.Errorf("ReplaceTable = %q, %v", out, err)
	}
}

// Package config holds the settings of recordsd and recordsctl. One table ([Settings]) lists each
// setting with its flag, RECORDS_* environment variable, config file key, type, default, help and
// secrecy; everything else derives from it: [Bind] registers the flags on a flag.FlagSet, [Default]
// reads the environment and the YAML config file, [MarkdownTable] writes the README's table and
// [Config.LogValue] the redacted configuration a server logs at start.
//
// Precedence, highest first: flag, environment variable, config file, default. The config file is
// optional; --config FILE or RECORDS_CONFIG names it, and a file so named must exist. It is decoded
// strictly: an unknown key or a value of the wrong type is an error naming the file, line and key.
//
// Usage:
//
//	cfg := config.Default(os.Getenv)
//	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
//	config.Bind(fs, &cfg, config.Recordsd)
//	if err := fs.Parse(args); err != nil { … }
//	if err := cfg.Validate(); err != nil { … }
package config

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"
)

// Config is everything a server or an admin command needs to start. Make one with [Default] (and
// [Bind] for flags); printing it with fmt or log/slog shows secrets as "[redacted]" (see
// [Config.Redacted]).
type Config struct {
	Addr           string // listen address of recordsd
	DB             string // sqlite:PATH or postgres://…
	DefinitionsDir string // resource, role and plan definitions
	PluginsDir     string // plugin binaries
	// PluginTimeout is the deadline of one plugin hook call.
	PluginTimeout time.Duration
	// PluginWatch is how often a serving recordsd looks for replaced plugin programs to swap in; 0: never.
	PluginWatch time.Duration
	// PluginAfterLimit bounds the After hooks running at once; 0: no bound.
	PluginAfterLimit int64
	// RequestTimeout is the deadline of one API request's work; past it the request answers 503.
	RequestTimeout time.Duration
	// Events makes every write record its event for the change feed (GET /v1/events).
	Events bool
	// EventRetention is how long the change feed keeps events; 0 keeps them forever.
	EventRetention time.Duration
	// WebhookAllowPrivate lets webhook endpoints name loopback, private and link-local addresses.
	WebhookAllowPrivate bool
	// WebhookLease is how long a server holds a webhook delivery it attempts (dispatch.DefaultLease).
	WebhookLease time.Duration
	// JobLease is how long a server holds a bulk job it runs without renewing it (jobs.Service.Lease).
	JobLease   time.Duration
	Dev        bool   // seed a demo workspace into an empty database
	DevKeyFile string // where --dev writes the demo key
	// AllowDestructive lets migrations drop columns that no definition declares.
	AllowDestructive bool
	// CursorSecret signs list cursors. Empty: a secret generated once and kept in the database, so every
	// server sharing the database agrees.
	CursorSecret  string
	ShutdownGrace time.Duration
	// DrainDelay is how long a stopping server keeps serving with /readyz at 503 before closing.
	DrainDelay time.Duration
	// TrustedProxies lists the reverse proxies (IPs or CIDRs, comma-separated) whose X-Forwarded-For
	// header is believed when checking a key's IP allowlist. Empty: the socket address is the client.
	TrustedProxies string
	// PublicURL is the address clients reach the server at (scheme and host, no /v1), used as the
	// OpenAPI document's server and in GET /v1's openapi_url. Empty: the address the caller used.
	PublicURL string
	// FailedAuthPerMinute bounds the failing keys one client address may present a minute before its
	// unknown keys are refused with 429 unlooked-up; 0: no bound.
	FailedAuthPerMinute int64
	// Redis, when set (redis://host:port/db), holds the rate-limit and quota state shared by several servers.
	// Empty: each server limits in process.
	Redis string
	// RedisTimeout bounds one call to Redis by the rate limiter and the quota; past it a request is
	// judged by this server alone.
	RedisTimeout time.Duration
	// KeyUsageInterval is how often a server writes the last use of each key it served.
	KeyUsageInterval time.Duration
	// MetricsAddr, when set, serves Prometheus metrics (GET /metrics) on this separate listen address.
	MetricsAddr string
	// DebugAddr, when set, serves Go runtime profiles (net/http/pprof) on this separate listen address.
	DebugAddr string
	// LogLevel is debug, info, warn or error; LogFormat is json or text. Logs go to stderr.
	LogLevel  string
	LogFormat string

	// src is where the values came from, so that flags can be layered in later (see Bind).
	src *sources
}

// Defaults of the command-line contract (DESIGN.md §5).
const (
	DefaultAddr        = "127.0.0.1:8080"
	DefaultDB          = "sqlite:./data/records.db"
	DefaultDefinitions = "./definitions"
	DefaultPlugins     = "./plugins/bin"
	DefaultDevKeyFile  = "./data/dev-key"
)

// Validate reports every problem with c at once: those of the config file and the environment it was
// read from, then each setting of the bound program (every setting when none is bound). Messages name
// a setting with its flag and variable and never show a secret.
func (c Config) Validate() error {
	errs := []error{c.loadErr()}
	for _, s := range Settings() {
		if !c.src.inScope(s) {
			continue
		}
		if err := c.check(s); err != nil {
			errs = append(errs, fmt.Errorf("%s %s", s.label(), err))
		}
	}
	if err := c.distinctListeners(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// check validates one setting's value in c. Its message follows the setting's label.
func (c Config) check(s Setting) error {
	shown := strconv.Quote(s.show(s.get(&c)))
	switch s.Name {
	case "addr":
		if err := checkListen(c.Addr); err != nil {
			return fmt.Errorf("%s: %w", shown, err)
		}
	case "metrics_addr", "debug_addr":
		if v := s.get(&c).(string); v != "" {
			if err := checkListen(v); err != nil {
				return fmt.Errorf("%s: %w", shown, err)
			}
		}
	case "db":
		if !strings.HasPrefix(c.DB, "sqlite:") && !strings.HasPrefix(c.DB, "postgres://") && !strings.HasPrefix(c.DB, "postgresql://") {
			return fmt.Errorf("%s: want sqlite:PATH or a postgres:// URL", shown)
		}
	case "definitions":
		if c.DefinitionsDir == "" {
			return errors.New("is empty: want a directory")
		}
		if st, err := os.Stat(c.DefinitionsDir); err != nil || !st.IsDir() {
			return fmt.Errorf("%s: not a directory", shown)
		}
	case "plugin_timeout":
		if c.PluginTimeout <= 0 {
			return fmt.Errorf("%s: want a positive duration", shown)
		}
	case "plugin_watch":
		if c.PluginWatch < 0 || c.PluginWatch > 0 && c.PluginWatch < 10*time.Millisecond {
			return fmt.Errorf("%s: want 0 (off) or a duration of at least 10ms", shown)
		}
	case "plugin_after_limit":
		if c.PluginAfterLimit < 0 || c.PluginAfterLimit > 1<<20 {
			return fmt.Errorf("%s: want 0 (no bound) or a whole number up to 1048576", shown)
		}
	case "redis_timeout":
		if c.RedisTimeout <= 0 {
			return fmt.Errorf("%s: want a positive duration", shown)
		}
	case "key_usage_interval":
		if c.KeyUsageInterval < 10*time.Millisecond {
			return fmt.Errorf("%s: want a duration of at least 10ms", shown)
		}
	case "request_timeout":
		if c.RequestTimeout <= 0 {
			return fmt.Errorf("%s: want a positive duration", shown)
		}
	case "webhook_lease":
		if c.WebhookLease < time.Second {
			return fmt.Errorf("%s: want a duration of at least 1s", shown)
		}
	case "job_lease":
		if c.JobLease < time.Second {
			return fmt.Errorf("%s: want a duration of at least 1s", shown)
		}
	case "event_retention":
		if c.EventRetention < 0 {
			return fmt.Errorf("%s: want 0 (forever) or a positive duration", shown)
		}
	case "failed_auth_per_minute":
		if c.FailedAuthPerMinute < 0 {
			return fmt.Errorf("%s: want 0 (no bound) or a positive number", shown)
		}
	case "drain_delay":
		if c.DrainDelay < 0 {
			return fmt.Errorf("%s: want zero or a positive duration", shown)
		}
	case "shutdown_grace":
		if c.ShutdownGrace < 0 {
			return fmt.Errorf("%s: want zero or a positive duration", shown)
		}
	case "dev_key_file":
		if c.Dev && c.DevKeyFile == "" {
			return errors.New("is empty: --dev needs a file for the demo key")
		}
	case "cursor_secret":
		if c.CursorSecret != "" && len(c.CursorSecret) < 32 {
			return errors.New("is too short: use at least 32 characters")
		}
	case "public_url":
		if c.PublicURL != "" {
			if u, err := url.Parse(c.PublicURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || strings.TrimRight(u.Path, "/") != "" || u.RawQuery != "" {
				return fmt.Errorf("%s: want http(s)://host[:port], without a path", shown)
			}
		}
	case "redis":
		if c.Redis != "" && !strings.HasPrefix(c.Redis, "redis://") && !strings.HasPrefix(c.Redis, "rediss://") && !strings.HasPrefix(c.Redis, "unix://") {
			return fmt.Errorf("%s: want a redis://, rediss:// or unix:// URL", shown)
		}
	case "log_level":
		switch c.LogLevel {
		case "debug", "info", "warn", "error":
		default:
			return fmt.Errorf("%s: want debug, info, warn or error", shown)
		}
	case "log_format":
		if c.LogFormat != "json" && c.LogFormat != "text" {
			return fmt.Errorf("%s: want json or text", shown)
		}
	}
	return nil
}

// checkListen checks a TCP listen address: host:port, the host possibly empty (every interface), the
// port a number (0: any free port).
func checkListen(addr string) error {
	if addr == "" {
		return errors.New("want host:port")
	}
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return errors.New("want host:port")
	}
	if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
		return fmt.Errorf("port %q: want a number from 0 to 65535", port)
	}
	return nil
}

// distinctListeners refuses two listeners of recordsd on the same fixed address.
func (c Config) distinctListeners() error {
	if c.src != nil && c.src.cmd != 0 && c.src.cmd&Recordsd == 0 {
		return nil
	}
	seen := map[string]string{}
	for _, l := range []struct{ name, addr string }{{"addr", c.Addr}, {"metrics_addr", c.MetricsAddr}, {"debug_addr", c.DebugAddr}} {
		_, port, err := net.SplitHostPort(l.addr)
		if err != nil || port == "0" {
			continue
		}
		if other, ok := seen[l.addr]; ok {
			return fmt.Errorf("%s and %s are the same address %q: each listener needs its own", other, l.name, l.addr)
		}
		seen[l.addr] = l.name
	}
	return nil
}

// Package config holds the settings of recordsd and recordsctl: defaults, environment overrides and
// validation. Flags are parsed by the commands into a Config.
package config

import (
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"
	"time"
)

// Config is everything a server or an admin command needs to start.
type Config struct {
	Addr           string // listen address of recordsd
	DB             string // sqlite:PATH or postgres://…
	DefinitionsDir string // resource, role and plan definitions
	PluginsDir     string // plugin binaries
	// PluginTimeout is the deadline of one plugin hook call.
	PluginTimeout time.Duration
	Dev           bool   // seed a demo workspace into an empty database
	DevKeyFile    string // where --dev writes the demo key
	// AllowDestructive lets migrations drop columns that no definition declares.
	AllowDestructive bool
	// CursorSecret signs list cursors. Empty: a secret generated once and kept in the database, so every
	// server sharing the database agrees.
	CursorSecret  string
	ShutdownGrace time.Duration
	// TrustedProxies lists the reverse proxies (IPs or CIDRs, comma-separated) whose X-Forwarded-For
	// header is believed when checking a key's IP allowlist. Empty: the socket address is the client.
	TrustedProxies string
	// PublicURL is the address clients reach the server at (scheme and host, no /v1), used as the
	// OpenAPI document's server and in GET /v1's openapi_url. Empty: the address the caller used.
	PublicURL string
	// Redis, when set (redis://host:port/db), holds the rate-limit state shared by several servers.
	// Empty: each server limits in process.
	Redis string
	// MetricsAddr, when set, serves Prometheus metrics (GET /metrics) on this separate listen address.
	MetricsAddr string
	// DebugAddr, when set, serves Go runtime profiles (net/http/pprof) on this separate listen address.
	DebugAddr string
	// LogLevel is debug, info, warn or error; LogFormat is json or text. Logs go to stderr.
	LogLevel  string
	LogFormat string
}

// Defaults of the command-line contract (DESIGN.md §5).
const (
	DefaultAddr        = "127.0.0.1:8080"
	DefaultDB          = "sqlite:./data/records.db"
	DefaultDefinitions = "./definitions"
	DefaultPlugins     = "./plugins/bin"
	DefaultDevKeyFile  = "./data/dev-key"
)

// Default returns the defaults overlaid with the RECORDS_* environment (getenv may be os.Getenv).
func Default(getenv func(string) string) Config {
	c := Config{
		Addr: DefaultAddr, DB: DefaultDB, DefinitionsDir: DefaultDefinitions, PluginsDir: DefaultPlugins,
		DevKeyFile: DefaultDevKeyFile, ShutdownGrace: 10 * time.Second, PluginTimeout: 2 * time.Second,
		LogLevel: "info", LogFormat: "json",
	}
	if v, err := time.ParseDuration(getenv("RECORDS_PLUGIN_TIMEOUT")); err == nil && v > 0 {
		c.PluginTimeout = v
	}
	if v := getenv("RECORDS_DB"); v != "" {
		c.DB = v
	}
	if v := getenv("RECORDS_ADDR"); v != "" {
		c.Addr = v
	}
	if v := getenv("RECORDS_DEFINITIONS"); v != "" {
		c.DefinitionsDir = v
	}
	if v := getenv("RECORDS_PLUGINS"); v != "" {
		c.PluginsDir = v
	}
	c.CursorSecret = getenv("RECORDS_CURSOR_SECRET")
	c.TrustedProxies = getenv("RECORDS_TRUSTED_PROXIES")
	c.Redis = getenv("RECORDS_REDIS")
	c.PublicURL = strings.TrimRight(getenv("RECORDS_PUBLIC_URL"), "/")
	return c
}

// Validate reports every problem with c.
func (c Config) Validate() error {
	var errs []error
	if !strings.HasPrefix(c.DB, "sqlite:") && !strings.HasPrefix(c.DB, "postgres://") && !strings.HasPrefix(c.DB, "postgresql://") {
		errs = append(errs, fmt.Errorf("--db %q: want sqlite:PATH or a postgres:// URL", c.DB))
	}
	if c.DefinitionsDir == "" {
		errs = append(errs, errors.New("--definitions: empty directory"))
	} else if st, err := os.Stat(c.DefinitionsDir); err != nil || !st.IsDir() {
		errs = append(errs, fmt.Errorf("--definitions %q: not a directory", c.DefinitionsDir))
	}
	if c.CursorSecret != "" && len(c.CursorSecret) < 32 {
		errs = append(errs, errors.New("RECORDS_CURSOR_SECRET: use at least 32 characters"))
	}
	if c.PublicURL != "" {
		if u, err := url.Parse(c.PublicURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || strings.TrimRight(u.Path, "/") != "" || u.RawQuery != "" {
			errs = append(errs, fmt.Errorf("--public-url %q: want http(s)://host[:port], without a path", c.PublicURL))
		}
	}
	return errors.Join(errs...)
}

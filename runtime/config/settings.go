package config

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Command is a set of the programs a setting applies to.
type Command uint8

// The programs. A setting of one program is neither read nor validated by the other: a config file
// shared by both may hold the server's settings without recordsctl complaining.
const (
	Recordsd Command = 1 << iota
	Recordsctl

	Both = Recordsd | Recordsctl
)

// String returns "recordsd", "recordsctl" or "recordsd, recordsctl".
func (c Command) String() string {
	var names []string
	if c&Recordsd != 0 {
		names = append(names, "recordsd")
	}
	if c&Recordsctl != 0 {
		names = append(names, "recordsctl")
	}
	return strings.Join(names, ", ")
}

// Kind is the type of a setting's value, which decides how flags, environment variables and the
// config file spell it.
type Kind uint8

// The kinds.
const (
	KindString   Kind = iota // any text
	KindBool                 // true or false (1, 0, t, f … in the environment, as strconv.ParseBool)
	KindDuration             // a Go duration: 10s, 1m30s, 500ms
	KindInt                  // a whole number (int64)
)

// String returns "string", "bool", "duration" or "integer".
func (k Kind) String() string {
	switch k {
	case KindInt:
		return "integer"
	case KindBool:
		return "bool"
	case KindDuration:
		return "duration"
	default:
		return "string"
	}
}

// Secrecy says how a setting's value may be shown in logs and error messages.
type Secrecy uint8

// The levels of secrecy.
const (
	Public Secrecy = iota
	// SecretURL is a URL that may carry a password (in its user info or a password= parameter): it is
	// shown with the password replaced by "[redacted]", keeping scheme, user, host and database.
	SecretURL
	// Secret is never shown: "[redacted]" when set, "" when empty.
	Secret
)

// Setting is one row of the table every source of configuration derives from: the flags, the
// environment, the config file, the README table and the redacted log line.
type Setting struct {
	Name string // the name in logs and error messages, snake_case
	Flag string // command-line flag without dashes; "" when there is none
	Env  string // environment variable; "" when there is none
	Key  string // config file key; "" when the file may not set it
	Kind Kind
	// Default is the value when no source sets it, as it would be written in the file ("" = empty).
	Default string
	// Help is one sentence or a few, in Markdown (backquotes for code); flag help drops the backquotes.
	Help     string
	Secrecy  Secrecy
	Commands Command
	// Subcommand, when set, is the recordsctl command that defines the flag itself; such a setting is
	// command-line only and Bind does not register it.
	Subcommand string
	// field points at the setting's field in c: *string, *bool or *time.Duration, following Kind.
	field func(c *Config) any
	// clean normalises a value from any source before it is stored; nil keeps it as given.
	clean func(string) string
}

// Settings returns the table, in the order of the README and of the logged configuration. Each call
// returns a fresh slice.
func Settings() []Setting {
	return []Setting{
		{
			Name: "addr", Flag: "addr", Env: "RECORDS_ADDR", Key: "addr", Kind: KindString, Default: DefaultAddr,
			Commands: Recordsd, field: func(c *Config) any { return &c.Addr },
			Help: "Listen address of the API, `host:port` (port `0`: any free port).",
		},
		{
			Name: "db", Flag: "db", Env: "RECORDS_DB", Key: "db", Kind: KindString, Default: DefaultDB,
			Secrecy: SecretURL, Commands: Both, field: func(c *Config) any { return &c.DB },
			Help: "Database: `sqlite:PATH` or `postgres://user@host:5432/db`. A password in it is never logged; " +
				"pass one through the environment or the file rather than `--db`, which `ps` shows to every local user.",
		},
		{
			Name: "definitions", Flag: "definitions", Env: "RECORDS_DEFINITIONS", Key: "definitions", Kind: KindString,
			Default: DefaultDefinitions, Commands: Both, field: func(c *Config) any { return &c.DefinitionsDir },
			Help: "Directory of the resource, role and plan definitions.",
		},
		{
			Name: "plugins", Flag: "plugins", Env: "RECORDS_PLUGINS", Key: "plugins", Kind: KindString,
			Default: DefaultPlugins, Commands: Both, field: func(c *Config) any { return &c.PluginsDir },
			Help: "Directory of the plugin programs definitions name in `hooks:` (`make plugins` builds them).",
		},
		{
			Name: "plugin_timeout", Flag: "plugin-timeout", Env: "RECORDS_PLUGIN_TIMEOUT", Key: "plugin_timeout",
			Kind: KindDuration, Default: "2s", Commands: Both, field: func(c *Config) any { return &c.PluginTimeout },
			Help: "Deadline of one plugin hook call; a hook that misses it fails the write with 503.",
		},
		{
			Name: "plugin_watch", Flag: "plugin-watch", Env: "RECORDS_PLUGIN_WATCH", Key: "plugin_watch",
			Kind: KindDuration, Default: "1s", Commands: Recordsd, field: func(c *Config) any { return &c.PluginWatch },
			Help: "How often recordsd looks for plugin programs replaced in the plugins directory, to start the new " +
				"program beside the old and swap it in once healthy (docs/operations.md, \"Plugins\"); `0` turns it off.",
		},
		{
			Name: "plugin_after_limit", Flag: "plugin-after-limit", Env: "RECORDS_PLUGIN_AFTER_LIMIT", Key: "plugin_after_limit",
			Kind: KindInt, Default: "256", Commands: Recordsd, field: func(c *Config) any { return &c.PluginAfterLimit },
			Help: "How many After hooks may run at once in one recordsd (each in the background, for at most " +
				"`plugin_timeout`). Past it an After hook is skipped — the write stands, as when one fails — logged and " +
				"counted as `records_plugin_calls_total{hook=\"after\",outcome=\"skipped\"}`. `0`: no bound.",
		},
		{
			Name: "request_timeout", Flag: "request-timeout", Env: "RECORDS_REQUEST_TIMEOUT", Key: "request_timeout",
			Kind: KindDuration, Default: "10s", Commands: Recordsd, field: func(c *Config) any { return &c.RequestTimeout },
			Help: "Deadline of one API request's work. A request that misses it answers 503 with `Retry-After`, " +
				"and its database statement is cancelled on the server, not left running.",
		},
		{
			Name: "events", Flag: "events", Env: "RECORDS_EVENTS", Key: "events", Kind: KindBool, Default: "true",
			Commands: Both, field: func(c *Config) any { return &c.Events },
			Help: "Record every write's event, in the write's own transaction, for the change feed (`GET /v1/events`). " +
				"`false` records none and answers the feed 404 (it exists to measure what the feed costs).",
		},
		{
			Name: "event_retention", Flag: "event-retention", Env: "RECORDS_EVENT_RETENTION", Key: "event_retention",
			Kind: KindDuration, Default: "720h", Commands: Recordsd, field: func(c *Config) any { return &c.EventRetention },
			Help: "How long the change feed keeps events (30 days by default); older ones are deleted by the servers' " +
				"sweep. `0` keeps them forever.",
		},
		{
			Name: "webhook_allow_private_addresses", Flag: "webhook-allow-private-addresses", Env: "RECORDS_WEBHOOK_ALLOW_PRIVATE_ADDRESSES",
			Key: "webhook_allow_private_addresses", Kind: KindBool, Default: "false", Commands: Both,
			field: func(c *Config) any { return &c.WebhookAllowPrivate },
			Help: "Let webhook endpoints name loopback, private (RFC 1918, unique local), link-local (cloud metadata " +
				"included) and other internal addresses. Off, such an address is refused when the endpoint is made " +
				"and again when each delivery connects (after DNS, so a name that resolves inside is refused too).",
		},
		{
			Name: "webhook_lease", Flag: "webhook-lease", Env: "RECORDS_WEBHOOK_LEASE", Key: "webhook_lease",
			Kind: KindDuration, Default: "1m", Commands: Recordsd, field: func(c *Config) any { return &c.WebhookLease },
			Help: "How long a server holds a webhook delivery it attempts. A server killed mid-delivery leaves it to " +
				"another once the lease passes, and its endpoint's later events wait until then (they go in order). " +
				"Keep it above the delivery timeout (15s): a shorter lease lets a slow receiver get an event twice.",
		},
		{
			Name: "job_lease", Flag: "job-lease", Env: "RECORDS_JOB_LEASE", Key: "job_lease",
			Kind: KindDuration, Default: "30s", Commands: Recordsd, field: func(c *Config) any { return &c.JobLease },
			Help: "How long a server holds a bulk job (import or export) without a word from it. The lease is renewed " +
				"with every chunk the job commits; a server killed mid-job leaves the job to another once it passes, which " +
				"goes on from the last chunk committed.",
		},
		{
			Name: "dev", Flag: "dev", Env: "RECORDS_DEV", Key: "dev", Kind: KindBool, Default: "false",
			Commands: Recordsd, field: func(c *Config) any { return &c.Dev },
			Help: "On an empty database, create a demo workspace (plan `growth`) with sample records, an admin and a " +
				"write key, printed and written to `dev_key_file`.",
		},
		{
			Name: "dev_key_file", Flag: "dev-key-file", Env: "RECORDS_DEV_KEY_FILE", Key: "dev_key_file", Kind: KindString,
			Default: DefaultDevKeyFile, Commands: Recordsd, field: func(c *Config) any { return &c.DevKeyFile },
			Help: "Where `dev` writes the demo key.",
		},
		{
			Name: "public_url", Flag: "public-url", Env: "RECORDS_PUBLIC_URL", Key: "public_url", Kind: KindString,
			Commands: Recordsd, field: func(c *Config) any { return &c.PublicURL },
			clean: func(s string) string { return strings.TrimRight(s, "/") },
			Help: "The address clients reach the server at, `http(s)://host[:port]` without a path: the OpenAPI " +
				"document's server and `GET /v1`'s `openapi_url`. Empty: the scheme and `Host` the caller used; set it behind a proxy.",
		},
		{
			Name: "trusted_proxies", Flag: "trusted-proxies", Env: "RECORDS_TRUSTED_PROXIES", Key: "trusted_proxies",
			Kind: KindString, Commands: Recordsd, field: func(c *Config) any { return &c.TrustedProxies },
			Help: "Reverse proxies (IPs or CIDRs, comma-separated) whose `X-Forwarded-For` is believed for key IP " +
				"allowlists. Empty: the socket address is the client.",
		},
		{
			Name: "failed_auth_per_minute", Flag: "failed-auth-per-minute", Env: "RECORDS_FAILED_AUTH_PER_MINUTE",
			Key: "failed_auth_per_minute", Kind: KindInt, Default: "60", Commands: Recordsd,
			field: func(c *Config) any { return &c.FailedAuthPerMinute },
			Help: "How many keys that fail to authenticate one client address (an IPv6 client: its /64; behind " +
				"`trusted_proxies`, the forwarded address) may present a minute, as a burst and then one a second. Past " +
				"it the address's unknown keys get 429 `rate_limited` without a database lookup; keys the server " +
				"already holds still pass. Counted in Redis when set. `0`: no bound.",
		},
		{
			Name: "redis", Flag: "redis", Env: "RECORDS_REDIS", Key: "redis", Kind: KindString, Secrecy: SecretURL,
			Commands: Recordsd, field: func(c *Config) any { return &c.Redis },
			Help: "`redis://[:password@]host:6379/0` holding the rate-limit windows and monthly quota counters several " +
				"servers share. Empty: limits in process, quota from the database. A password in it is never logged.",
		},
		{
			Name: "redis_timeout", Flag: "redis-timeout", Env: "RECORDS_REDIS_TIMEOUT", Key: "redis_timeout",
			Kind: KindDuration, Default: "250ms", Commands: Recordsd, field: func(c *Config) any { return &c.RedisTimeout },
			Help: "Deadline of one call to `redis` by the rate limiter and the quota. A call that misses it is judged " +
				"by this server alone (limits in process, quota from the database count), and failures in a row stop " +
				"asking Redis until it answers a ping again.",
		},
		{
			Name: "key_usage_interval", Flag: "key-usage-interval", Env: "RECORDS_KEY_USAGE_INTERVAL", Key: "key_usage_interval",
			Kind: KindDuration, Default: "10s", Commands: Recordsd, field: func(c *Config) any { return &c.KeyUsageInterval },
			Help: "How often a server writes when each API key was last used and from which address (`last_used_at`, " +
				"`last_used_ip` in `recordsctl key list` and `GET /v1/me`): at most one write per key per interval, and " +
				"once more at shutdown, never one per request. The stored time is up to this much behind; a server " +
				"killed without shutdown loses at most this much of it.",
		},
		{
			Name: "cursor_secret", Env: "RECORDS_CURSOR_SECRET", Key: "cursor_secret", Kind: KindString, Secrecy: Secret,
			Commands: Both, field: func(c *Config) any { return &c.CursorSecret },
			Help: "Key signing list cursors, at least 32 characters. Empty: one generated once and kept in the " +
				"database, shared by every server using it. Never logged, and deliberately not a flag: every " +
				"local user can read a command line (`ps`).",
		},
		{
			Name: "shutdown_grace", Flag: "shutdown-grace", Env: "RECORDS_SHUTDOWN_GRACE", Key: "shutdown_grace",
			Kind: KindDuration, Default: "10s", Commands: Recordsd, field: func(c *Config) any { return &c.ShutdownGrace },
			Help: "How long a stopping server (SIGINT, SIGTERM) waits for requests in flight.",
		},
		{
			Name: "drain_delay", Flag: "drain-delay", Env: "RECORDS_DRAIN_DELAY", Key: "drain_delay",
			Kind: KindDuration, Default: "0s", Commands: Recordsd, field: func(c *Config) any { return &c.DrainDelay },
			Help: "How long a stopping server keeps serving with `GET /readyz` at 503 before it closes its listener, " +
				"so that a load balancer stops sending it requests first. Then `shutdown_grace` applies.",
		},
		{
			Name: "metrics_addr", Flag: "metrics-addr", Env: "RECORDS_METRICS_ADDR", Key: "metrics_addr", Kind: KindString,
			Commands: Recordsd, field: func(c *Config) any { return &c.MetricsAddr },
			Help: "Separate listen address serving Prometheus metrics at `GET /metrics`. Empty: off.",
		},
		{
			Name: "debug_addr", Flag: "debug-addr", Env: "RECORDS_DEBUG_ADDR", Key: "debug_addr", Kind: KindString,
			Commands: Recordsd, field: func(c *Config) any { return &c.DebugAddr },
			Help: "Separate listen address serving Go profiles at `/debug/pprof/` (`go tool pprof " +
				"http://ADDR/debug/pprof/profile`); keep it on loopback or an operator network. Empty: off. The " +
				"command line is not served.",
		},
		{
			Name: "log_level", Flag: "log-level", Env: "RECORDS_LOG_LEVEL", Key: "log_level", Kind: KindString,
			Default: "info", Commands: Recordsd, field: func(c *Config) any { return &c.LogLevel },
			clean: func(s string) string { return strings.ToLower(strings.TrimSpace(s)) },
			Help:  "`debug`, `info`, `warn` or `error`; `info` logs one access line per request, `warn` only failures and warnings.",
		},
		{
			Name: "log_format", Flag: "log-format", Env: "RECORDS_LOG_FORMAT", Key: "log_format", Kind: KindString,
			Default: "json", Commands: Recordsd, field: func(c *Config) any { return &c.LogFormat },
			clean: func(s string) string { return strings.ToLower(strings.TrimSpace(s)) },
			Help:  "`json` (one object per line) or `text` (`key=value`), on stderr.",
		},
		{
			Name: "allow_destructive", Flag: "allow-destructive", Subcommand: "migrate", Kind: KindBool, Default: "false",
			Commands: Recordsctl, field: func(c *Config) any { return &c.AllowDestructive },
			Help: "Let `recordsctl migrate` drop columns no definition declares. Command line only, on purpose: " +
				"dropping data is a decision per run, not a standing setting.",
		},
	}
}

// parse converts text from a flag or the environment into the setting's Go value.
func (s Setting) parse(text string) (any, error) {
	switch s.Kind {
	case KindBool:
		b, err := strconv.ParseBool(strings.TrimSpace(text))
		if err != nil {
			return nil, fmt.Errorf("%q: want true or false", text)
		}
		return b, nil
	case KindDuration:
		d, err := time.ParseDuration(strings.TrimSpace(text))
		if err != nil {
			return nil, fmt.Errorf("%q: want a duration such as 10s or 1m30s", text)
		}
		return d, nil
	case KindInt:
		n, err := strconv.ParseInt(strings.TrimSpace(text), 10, 64)
		if err != nil {
			return nil, fmt.Errorf("%q: want a whole number", text)
		}
		return n, nil
	default:
		if s.clean != nil {
			text = s.clean(text)
		}
		return text, nil
	}
}

// set stores v, the setting's Go value, in c.
func (s Setting) set(c *Config, v any) {
	switch p := s.field(c).(type) {
	case *string:
		*p = v.(string)
	case *bool:
		*p = v.(bool)
	case *time.Duration:
		*p = v.(time.Duration)
	case *int64:
		*p = v.(int64)
	}
}

// get returns the setting's value in c.
func (s Setting) get(c *Config) any {
	switch p := s.field(c).(type) {
	case *string:
		return *p
	case *bool:
		return *p
	case *time.Duration:
		return *p
	case *int64:
		return *p
	}
	return nil
}

// defaultValue returns the parsed Default.
func (s Setting) defaultValue() any {
	v, err := s.parse(s.Default)
	if err != nil {
		panic(fmt.Sprintf("config: setting %s: default %v", s.Name, err)) // a bug in the table; a test parses every default
	}
	return v
}

// label names the setting with every way to set it, for error messages: "log_level (--log-level,
// RECORDS_LOG_LEVEL)".
func (s Setting) label() string {
	var ways []string
	if s.Flag != "" {
		ways = append(ways, "--"+s.Flag)
	}
	if s.Env != "" {
		ways = append(ways, s.Env)
	}
	if len(ways) == 0 {
		return s.Name
	}
	return s.Name + " (" + strings.Join(ways, ", ") + ")"
}

// show returns the value as logs and error messages may show it.
func (s Setting) show(v any) string {
	switch v := v.(type) {
	case string:
		switch s.Secrecy {
		case SecretURL:
			return RedactURL(v)
		case Secret:
			if v != "" {
				return Redacted
			}
		}
		return v
	case time.Duration:
		return v.String()
	default:
		return fmt.Sprint(v)
	}
}

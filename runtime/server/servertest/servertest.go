// Package servertest starts real servers for tests: a fresh SQLite file or a uniquely named PostgreSQL
// database per test, recordsd's handler on a real loopback listener, and a workspace with an admin key.
//
// PostgreSQL is reached at RECORDS_TEST_POSTGRES (default postgres://postgres@127.0.0.1:5432/postgres).
// When it cannot be reached the PostgreSQL variant is skipped, except when CI=true, where it fails.
package servertest

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"

	"github.com/workspace-records/records/runtime/auth"
	"github.com/workspace-records/records/runtime/config"
	"github.com/workspace-records/records/runtime/httpapi"
	"github.com/workspace-records/records/runtime/members"
	"github.com/workspace-records/records/runtime/migrate"
	"github.com/workspace-records/records/runtime/server"
	"github.com/workspace-records/records/runtime/store"
)

// Backend names a database kind to test against.
type Backend string

// The backends every behaviour test runs on.
const (
	SQLite   Backend = "sqlite"
	Postgres Backend = "postgres"
)

// AppRole is the non-superuser PostgreSQL role the tested servers connect as.
const AppRole = "records_test_app"

// Backends lists them.
var Backends = []Backend{SQLite, Postgres}

// DefinitionsDir is the repository's definitions directory.
func DefinitionsDir() string { return filepath.Join(RepoDir(), "definitions") }

// OpenBackend opens a fresh database of kind b, migrated to the shipped definitions, with the services
// over it (server.Open: what recordsctl uses), closed when the test ends.
func OpenBackend(t testing.TB, b Backend) *server.Backend {
	t.Helper()
	cfg := config.Default(nil)
	cfg.DB = DatabaseURL(t, b)
	cfg.DefinitionsDir = DefinitionsDir()
	be, err := server.Open(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { be.Close() })
	return be
}

// DatabaseURL returns a fresh, empty database of kind b, dropped when the test ends.
func DatabaseURL(t testing.TB, b Backend) string {
	t.Helper()
	if b == SQLite {
		return "sqlite:" + filepath.Join(t.TempDir(), "records.db")
	}
	return newPostgresDatabase(t, "", os.Getenv("RECORDS_TEST_NO_LEAKPROOF") == "")
}

// adminURL is the superuser URL the tests create databases with.
func adminURL() string {
	if admin := os.Getenv("RECORDS_TEST_POSTGRES"); admin != "" {
		return admin
	}
	return "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"
}

// ensureAppRole creates AppRole if it is missing.
func ensureAppRole(ctx context.Context, conn *pgx.Conn) error {
	// The server connects as a role that owns its database but is not a superuser, as in production:
	// superusers bypass row-level security, which the tests must exercise.
	if _, err := conn.Exec(ctx, "DO $$ BEGIN IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = '"+AppRole+"') THEN CREATE ROLE "+AppRole+" LOGIN; END IF; END $$"); err != nil {
		return fmt.Errorf("create role: %w", err)
	}
	return nil
}

// markLeakproof does, in database name, what the deployment guide asks a superuser to do once per
// database (see migrate.LeakproofSQL).
func markLeakproof(ctx context.Context, admin *pgx.ConnConfig, name string) error {
	cfg := admin.Copy()
	cfg.Database = name
	dbc, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return fmt.Errorf("connect to %s: %w", name, err)
	}
	_, err = dbc.Exec(ctx, migrate.LeakproofSQL())
	dbc.Close(ctx)
	if err != nil {
		return fmt.Errorf("mark numeric comparisons leakproof in %s: %w", name, err)
	}
	return nil
}

// newPostgresDatabase creates a uniquely named PostgreSQL database owned by AppRole, a copy of
// template ("" for an empty one, marked leakproof when asked), dropped when the test ends, and returns
// AppRole's URL of it.
func newPostgresDatabase(t testing.TB, template string, leakproof bool) string {
	t.Helper()
	url, drop, err := createPostgresDatabase(context.Background(), template, leakproof)
	if errors.Is(err, errUnreachable) {
		if os.Getenv("CI") == "true" {
			t.Fatalf("PostgreSQL is required when CI=true: %v", err)
		}
		t.Skipf("PostgreSQL not reachable (%v); set RECORDS_TEST_POSTGRES", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(drop)
	return url
}

// errUnreachable wraps the failure to connect to PostgreSQL at all.
var errUnreachable = errors.New("connect to PostgreSQL")

// createPostgresDatabase creates a uniquely named PostgreSQL database owned by AppRole, a copy of
// template ("" for an empty one, marked leakproof when asked), and returns AppRole's URL of it and the
// function that drops it.
func createPostgresDatabase(ctx context.Context, template string, leakproof bool) (string, func(), error) {
	admin := adminURL()
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, admin)
	if err != nil {
		return "", nil, fmt.Errorf("%w: %w", errUnreachable, err)
	}
	defer conn.Close(ctx)
	raw := make([]byte, 6)
	_, _ = rand.Read(raw)
	name := "records_test_" + hex.EncodeToString(raw)
	if err := ensureAppRole(ctx, conn); err != nil {
		return "", nil, err
	}
	create := "CREATE DATABASE " + name + " OWNER " + AppRole
	if template != "" {
		create += " TEMPLATE " + template
	}
	if _, err := conn.Exec(ctx, create); err != nil {
		return "", nil, fmt.Errorf("create database: %w", err)
	}
	drop := func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		c, err := pgx.Connect(ctx, admin)
		if err != nil {
			slog.Warn("drop test database", "name", name, "err", err)
			return
		}
		defer c.Close(ctx)
		if _, err := c.Exec(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)"); err != nil {
			slog.Warn("drop test database", "name", name, "err", err)
		}
	}
	cfg, _ := pgx.ParseConfig(admin)
	if template == "" && leakproof {
		if err := markLeakproof(ctx, cfg, name); err != nil {
			drop()
			return "", nil, err
		}
	}
	url := fmt.Sprintf("postgres://%s@%s:%d/%s?sslmode=disable", AppRole, cfg.Host, cfg.Port, name)
	if !StrictTiming {
		// On a loaded machine PostgreSQL can take more than the server's 2 s (store.ConnectTimeout) to
		// start a session: seen in CI on a machine running several suites, as 503s and failed commands in
		// tests that are not about connecting. Strict timing keeps the documented bound.
		url = store.WithConnectTimeout(url, loadedConnectTimeout)
	}
	return url, drop, nil
}

// loadedConnectTimeout is how long the tests' servers and commands wait for a PostgreSQL session
// outside strict timing (Budget).
const loadedConnectTimeout = 10 * time.Second

// Env is a running server with one workspace and an admin write key.
type Env struct {
	T         testing.TB
	Server    *server.Server
	URL       string
	Workspace string
	Member    string
	Key       string
	Config    config.Config
	// contract is the validator, loaded at the first request; copies of an Env (one per subtest) share it,
	// and requests of several goroutines may load it at once.
	contract *lazyContract
	// errs keeps the 5xx answers other than 503 and the key material logged for this test's requests
	// (see serverErrors).
	errs *guardSink
}

// Options change what Start builds. With every option at its default, Start gives the test the process's
// shared server (shared.go) and a workspace of its own on it.
type Options struct {
	// Private starts a server of the test's own even with every other option at its default: for a test
	// that changes what other tests' requests would see server-wide (the database by hand, plans, the
	// server's caches, sweeps over every workspace, the planner's statistics) or measures the server alone.
	Private        bool
	DefinitionsDir string // default: the repository's definitions
	DB             string // default: a fresh database of the backend
	TrustedProxies string // see config.Config.TrustedProxies
	PluginsDir     string // default: the shipped plugins, built from source (ShippedPlugins)
	PublicURL      string // see config.Config.PublicURL
	Redis          string // see config.Config.Redis
	// RedisTimeout bounds one Redis call of the limits (config.Config.RedisTimeout; default 250 ms).
	RedisTimeout time.Duration
	// PluginTimeout is the deadline of one hook call (config.Config.PluginTimeout; default 2 s).
	PluginTimeout time.Duration
	// Metrics makes the server keep Prometheus metrics (Server.Metrics); the test serves them itself.
	Metrics bool
	// RequestTimeout is the deadline of one request (default: the server's, 10 s).
	RequestTimeout time.Duration
	// Log receives the server's JSON log lines (default: discarded), at Info level unless LogLevel says.
	Log      io.Writer
	LogLevel slog.Level
	// FailedAuthPerMinute bounds the failing keys one client address may present a minute (see
	// config.Config). Default: no bound, since every test client is 127.0.0.1 and the key tests present
	// hundreds of failing keys on purpose; TestFailedAuthThrottle sets one.
	FailedAuthPerMinute int64
	// RefusePrivateWebhooks keeps the default of webhook_allow_private_addresses (false), under which no
	// endpoint may name 127.0.0.1. Tests otherwise allow it: their receivers listen there.
	RefusePrivateWebhooks bool
	// WebhookClock, when set, is the webhook dispatcher's clock (schedules and leases): a test moves it
	// forward to run a day of retries at once.
	WebhookClock func() time.Time
}

// Start starts a server on backend b, or, when opts are all defaults, gives the test the process's
// shared server of b (shared.go) behind a listener of its own. Either way the test gets a workspace of
// its own with an admin write key, and its cleanup fails it for any 5xx but 503 its requests were
// answered with and for any log line of its requests holding key material.
func Start(t testing.TB, b Backend, opts Options) *Env {
	t.Helper()
	if opts.shareable() {
		return startShared(t, b)
	}
	cfg := config.Default(func(string) string { return "" })
	cfg.DB = opts.DB
	switch {
	case cfg.DB != "":
	case opts.DefinitionsDir == "" || opts.DefinitionsDir == DefinitionsDir() || sameTables(opts.DefinitionsDir, b):
		// A copy of a database migrated once per process (templates.go): also for definitions of their
		// own whose tables are the shipped ones (other roles, plans or rules), which a server finds
		// current as it is (the schema fingerprint covers the tables alone) and would migrate to the
		// same database.
		cfg.DB = migratedDatabase(t, b)
	default:
		cfg.DB = DatabaseURL(t, b)
	}
	cfg.TrustedProxies = opts.TrustedProxies
	cfg.PublicURL = opts.PublicURL
	cfg.Redis = opts.Redis
	cfg.FailedAuthPerMinute = opts.FailedAuthPerMinute
	cfg.WebhookAllowPrivate = !opts.RefusePrivateWebhooks
	if opts.Metrics {
		cfg.MetricsAddr = "127.0.0.1:0"
	}
	if opts.PluginTimeout > 0 {
		cfg.PluginTimeout = opts.PluginTimeout
	}
	if opts.RequestTimeout > 0 {
		cfg.RequestTimeout = opts.RequestTimeout
	}
	if opts.RedisTimeout > 0 {
		cfg.RedisTimeout = opts.RedisTimeout
	}
	cfg.PluginsDir = opts.PluginsDir
	if cfg.PluginsDir == "" {
		cfg.PluginsDir = ShippedPlugins(t)
	}
	cfg.DefinitionsDir = opts.DefinitionsDir
	if cfg.DefinitionsDir == "" {
		cfg.DefinitionsDir = DefinitionsDir()
	}
	out := opts.Log
	if out == nil {
		out = io.Discard
	}
	sink := &guardSink{}
	guard := &serverErrors{Handler: slog.NewJSONHandler(out, &slog.HandlerOptions{Level: opts.LogLevel}), sink: sink}
	srv, stop, err := launch(cfg, guard, opts.WebhookClock)
	if err != nil {
		t.Fatalf("start server: %v", err)
	}
	ts := listen(srv.Handler(), guard)
	t.Cleanup(func() {
		ts.Close()
		stop()
		sink.check(t)
	})
	e := &Env{T: t, Server: srv, URL: ts.URL, Config: cfg, contract: &lazyContract{}, errs: sink}
	e.Workspace, e.Member, e.Key = e.NewWorkspace("growth", "admin", "write")
	return e
}

// launch starts a server of cfg logging to guard, as recordsd serves: it remembers keys while
// listening for changes (PostgreSQL) and numbers the change feed's events. stop ends that and closes it.
func launch(cfg config.Config, guard *serverErrors, webhookClock func() time.Time) (srv *server.Server, stop func(), err error) {
	ctx := context.Background()
	srv, err = server.New(ctx, cfg, slog.New(guard))
	if err != nil {
		return nil, nil, err
	}
	if d := srv.Backend().Dispatcher; d != nil && webhookClock != nil {
		d.Now = webhookClock
	}
	watch, stopWatch := context.WithCancel(ctx)
	watched := make(chan struct{})
	go func() { srv.Watch(watch); close(watched) }()
	return srv, func() {
		stopWatch()
		<-watched
		srv.Close()
	}, nil
}

// listen serves h on a loopback listener as recordsd does, so that net/http's own refusals are in the
// envelope too (logged through guard).
func listen(h http.Handler, guard *serverErrors) *httptest.Server {
	ts := httptest.NewUnstartedServer(h)
	ts.Listener = httpapi.TransportErrors(ts.Listener, slog.New(guard))
	ts.Start()
	return ts
}

// NewWorkspace creates a workspace on plan with one member of role and a key of access.
func (e *Env) NewWorkspace(plan, role, access string) (workspace, member, key string) {
	e.T.Helper()
	ctx := context.Background()
	w, err := e.Server.Backend().Members.CreateWorkspace(ctx, "Test "+plan, plan)
	if err != nil {
		e.T.Fatal(err)
	}
	// Behaviour tests make thousands of requests a minute; limit tests set their own numbers.
	lifted := int64(1_000_000_000)
	if err := e.Server.Backend().Members.SetLimits(ctx, w.ID, auth.Limits{KeyPerMinute: &lifted, KeyPerHour: &lifted, WorkspacePerMinute: &lifted}); err != nil {
		e.T.Fatal(err)
	}
	m, err := e.Server.Backend().Members.CreateMember(ctx, w.ID, members.MemberProfile{Email: role + "@" + w.ID[:8] + ".example", Role: role, FirstName: "Test", LastName: "Member"})
	if err != nil {
		e.T.Fatal(err)
	}
	return w.ID, m.ID, e.NewKey(m.ID, auth.KeyOptions{Access: access})
}

// NewMember adds a member of role (in department, optional) to the env's workspace and returns its id.
func (e *Env) NewMember(email, role, department string) string {
	e.T.Helper()
	m, err := e.Server.Backend().Members.CreateMember(context.Background(), e.Workspace, members.MemberProfile{Email: email, Role: role, Department: department})
	if err != nil {
		e.T.Fatal(err)
	}
	return m.ID
}

// NewKey creates a key for member (expiring in 30 days unless set).
func (e *Env) NewKey(member string, o auth.KeyOptions) string {
	e.T.Helper()
	if o.ExpiresIn == 0 {
		o.ExpiresIn = 30 * 24 * time.Hour
	}
	_, secret, err := e.Server.Backend().Directory.CreateKey(context.Background(), member, o)
	if err != nil {
		e.T.Fatal(err)
	}
	return secret
}

// Response is a decoded API response.
type Response struct {
	Status int
	Header http.Header
	Body   map[string]any
	Raw    []byte
}

// Data returns the data member as an object.
func (r *Response) Data() map[string]any {
	d, _ := r.Body["data"].(map[string]any)
	return d
}

// List returns the data member as a list of objects.
func (r *Response) List() []map[string]any {
	items, _ := r.Body["data"].([]any)
	out := make([]map[string]any, len(items))
	for i, it := range items {
		out[i], _ = it.(map[string]any)
	}
	return out
}

// Code returns error.code.
func (r *Response) Code() string {
	e, _ := r.Body["error"].(map[string]any)
	c, _ := e["code"].(string)
	return c
}

// Message is the error envelope's message ("" for an answer without one).
func (r *Response) Message() string {
	e, _ := r.Body["error"].(map[string]any)
	m, _ := e["message"].(string)
	return m
}

// Results returns a batch answer's results, from data (200) or error.details.results (422
// batch_failed).
func (r *Response) Results() []map[string]any {
	list, ok := r.Body["data"].([]any)
	if !ok {
		env, _ := r.Body["error"].(map[string]any)
		d, _ := env["details"].(map[string]any)
		list, _ = d["results"].([]any)
	}
	out := make([]map[string]any, len(list))
	for i, x := range list {
		out[i], _ = x.(map[string]any)
	}
	return out
}

// Statuses lists a batch answer's results' statuses, joined by commas ("201,409,201").
func (r *Response) Statuses() string {
	var out []string
	for _, res := range r.Results() {
		out = append(out, fmt.Sprint(res["status"]))
	}
	return strings.Join(out, ",")
}

// NextCursor returns a list answer's meta.next_cursor ("" when there is none).
func (r *Response) NextCursor() string {
	meta, _ := r.Body["meta"].(map[string]any)
	c, _ := meta["next_cursor"].(string)
	return c
}

// ExpandedIDs returns the ids member name of rec expanded to: none for null, one for a reference, the
// linked records' for an association ({"data": [...]}). It fails the test when the member is absent or
// of another shape.
func ExpandedIDs(t testing.TB, rec map[string]any, name string) []string {
	t.Helper()
	v, ok := rec[name]
	if !ok {
		t.Fatalf("no member %s in %v", name, rec)
	}
	switch x := v.(type) {
	case nil:
		return nil
	case map[string]any:
		if data, ok := x["data"].([]any); ok {
			var out []string
			for _, d := range data {
				out = append(out, d.(map[string]any)["id"].(string))
			}
			return out
		}
		return []string{x["id"].(string)}
	}
	t.Fatalf("member %s is %T", name, v)
	return nil
}

// Do sends a request with the env's key. body may be nil, a []byte sent verbatim, or a value to encode.
// It fails the test on any 5xx and on any response that breaks the envelope rules.
func (e *Env) Do(method, path string, body any, header ...string) *Response {
	e.T.Helper()
	return e.DoKey(e.Key, method, path, body, header...)
}

// DoServed is Do repeated while the answer is 503 service_unavailable with Retry-After (a rule's plugin
// still starting, which takes longer than a hook's deadline on a loaded machine), as a client honouring
// Retry-After would (sooner: every 50 ms), for at most budget (servertest.Budget); every answer is
// checked as Do's are. It answers the last one.
func (e *Env) DoServed(budget time.Duration, method, path string, body any, header ...string) *Response {
	e.T.Helper()
	for start := time.Now(); ; time.Sleep(50 * time.Millisecond) {
		res := e.Do(method, path, body, header...)
		if res.Status != http.StatusServiceUnavailable || res.Code() != "service_unavailable" || res.Header.Get("Retry-After") == "" || time.Since(start) > budget {
			return res
		}
	}
}

// DoKey is Do with another key ("" sends no Authorization header).
func (e *Env) DoKey(key, method, path string, body any, header ...string) *Response {
	e.T.Helper()
	var rd io.Reader
	var sent []byte
	switch b := body.(type) {
	case nil:
	case []byte:
		sent = b
		rd = bytes.NewReader(b)
	default:
		data, err := json.Marshal(b)
		if err != nil {
			e.T.Fatal(err)
		}
		sent = data
		rd = bytes.NewReader(data)
	}
	req, err := http.NewRequest(method, e.URL+path, rd)
	if err != nil {
		e.T.Fatal(err)
	}
	if rd != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		e.T.Fatalf("%s %s: %v", method, path, err)
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	out := &Response{Status: res.StatusCode, Header: res.Header, Raw: raw}
	// A file (an export's download: CSV, NDJSON) is kept as it is, in Raw; every other answer is a JSON
	// object.
	if mt, _, _ := mime.ParseMediaType(res.Header.Get("Content-Type")); len(raw) > 0 && (res.StatusCode >= 400 || JSONMedia(mt) || mt == "") {
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.UseNumber()
		if err := dec.Decode(&out.Body); err != nil {
			e.T.Fatalf("%s %s: %d with a body that is not a JSON object: %q", method, path, res.StatusCode, raw)
		}
	}
	e.checkEnvelope(method, path, out)
	e.checkContract(req, sent, res, out)
	return out
}

// checkContract validates the exchange against the OpenAPI document the server serves: every response
// must match it (status documented for the operation, body and documented headers); a request the server
// accepted (2xx) must match it too. A path or method the document lacks may only be answered 404 or 405,
// or 400 invalid_request when the path is one the server refuses before routing (RefusedPath).
func (e *Env) checkContract(req *http.Request, sent []byte, res *http.Response, out *Response) {
	e.T.Helper()
	c := e.Contract()
	// The body decoded already (a JSON object, numbers as json.Number) is what the schemas check.
	var decoded any
	if out.Body != nil {
		decoded = out.Body
	}
	undocumented, problems := c.checkResponse(req, res, out.Raw, decoded)
	if undocumented {
		if out.Status != 404 && out.Status != 405 && (out.Status != 400 || out.Code() != "invalid_request" || !RefusedPath(req.URL.Path)) {
			e.T.Errorf("%s %s: %d for a path or method the OpenAPI document does not have", req.Method, req.URL.RequestURI(), out.Status)
		}
		return
	}
	for _, p := range problems {
		e.T.Errorf("%s %s: %d response breaks the OpenAPI document: %s\n%.600s", req.Method, req.URL.RequestURI(), out.Status, p, out.Raw)
	}
	if out.Status < 300 {
		for _, p := range c.CheckRequest(req, sent) {
			e.T.Errorf("%s %s: the server accepted a request the OpenAPI document refuses: %s", req.Method, req.URL.RequestURI(), p)
		}
	}
}

// RefusedPath reports whether the server refuses a request for path (percent-decoded, as
// url.URL.Path) before routing, with 400 invalid_request: the path, or a segment of it decoded once
// more, holds a control character (U+0000–U+001F, U+007F–U+009F) or bytes that are not UTF-8. Written
// here apart from the server's own check, which the tests hold to it.
func RefusedPath(path string) bool {
	bad := func(s string) bool { return !utf8.ValidString(s) || strings.ContainsFunc(s, unicode.IsControl) }
	if bad(path) {
		return true
	}
	for _, seg := range strings.Split(path, "/") {
		if twice, err := url.PathUnescape(seg); err == nil && bad(twice) {
			return true
		}
	}
	return false
}

// Contract returns the validator of the OpenAPI document this env's server serves.
func (e *Env) Contract() *Contract {
	e.T.Helper()
	e.contract.mu.Lock()
	defer e.contract.mu.Unlock()
	if e.contract.c != nil {
		return e.contract.c
	}
	if e.Config.DefinitionsDir == DefinitionsDir() && e.Config.PublicURL == "" {
		// A server of the shipped definitions serves what the generator makes of them with its own
		// address in it (nothing else of the configuration changes the document), which ContractFor holds
		// to the golden contract; were the document it serves to differ, the golden contract is still
		// the one it must keep. Fetching the document only made every server build, encode and compress
		// it (some 10 s of processor a run of the package).
		c, err := GoldenContract()
		if err != nil {
			e.T.Fatal(err)
		}
		e.contract.c = c
		return c
	}
	res, err := http.Get(e.URL + "/v1/openapi.json")
	if err != nil {
		e.T.Fatalf("get the OpenAPI document: %v", err)
	}
	defer res.Body.Close()
	doc, err := io.ReadAll(res.Body)
	if err != nil || res.StatusCode != 200 {
		e.T.Fatalf("get the OpenAPI document: %d %v", res.StatusCode, err)
	}
	// Every env's document names its own address; one validator serves every env of the same
	// definitions (the validator matches paths, not hosts).
	doc = bytes.Replace(doc, []byte(`"url":"`+e.URL+`"`), []byte(`"url":"http://server.test"`), 1)
	if e.contract.c, err = ContractFor(doc); err != nil {
		e.T.Fatal(err)
	}
	return e.contract.c
}

type lazyContract struct {
	mu sync.Mutex
	c  *Contract
}

func (e *Env) checkEnvelope(method, path string, r *Response) {
	e.T.Helper()
	id := r.Header.Get("X-Request-Id")
	if id == "" {
		e.T.Errorf("%s %s: no X-Request-Id", method, path)
	}
	for k := range r.Header {
		if strings.HasPrefix(strings.ToLower(k), "access-control-") {
			e.T.Errorf("%s %s: CORS header %s", method, path, k)
		}
	}
	if r.Status >= 500 && (r.Status != 503 || r.Code() != "service_unavailable") {
		e.T.Errorf("%s %s: status %d: %s", method, path, r.Status, r.Raw)
	}
	if r.Status < 400 {
		return
	}
	env, ok := r.Body["error"].(map[string]any)
	if !ok || len(r.Body) != 1 {
		e.T.Errorf("%s %s: %d without the error envelope: %s", method, path, r.Status, r.Raw)
		return
	}
	for _, k := range []string{"type", "code", "message", "request_id"} {
		if s, _ := env[k].(string); s == "" {
			e.T.Errorf("%s %s: error.%s missing: %s", method, path, k, r.Raw)
		}
	}
	if env["request_id"] != id {
		e.T.Errorf("%s %s: error.request_id %v differs from X-Request-Id %s", method, path, env["request_id"], id)
	}
	if r.Status == 401 && r.Header.Get("WWW-Authenticate") == "" {
		e.T.Errorf("%s %s: 401 without WWW-Authenticate", method, path)
	}
	if r.Status == 405 && r.Header.Values("Allow") == nil {
		e.T.Errorf("%s %s: 405 without Allow", method, path)
	}
}

// Expect fails the test unless r has status and (when code is not "") error code.
func (e *Env) Expect(r *Response, status int, code string) {
	e.T.Helper()
	if r.Status != status || (code != "" && r.Code() != code) {
		e.T.Errorf("got %d %s, want %d %s: %s", r.Status, r.Code(), status, code, r.Raw)
	}
}

// serverErrors is the test server's log handler: it passes every record on, keeps the access lines of
// answers with a 5xx status other than 503, which the spec never calls for (a 5xx logs at error level, so
// it is seen at any test log level), and keeps every line holding API key material. It keeps them in the
// sink of the test whose request the line belongs to (the request's context names it, see withSink), or
// else in its own sink: a private server's test, or for a shared server the lines no test's request made
// (Main reports those).
type serverErrors struct {
	slog.Handler
	sink *guardSink
}

// guardSink is what the guard kept for one test.
type guardSink struct {
	mu        sync.Mutex
	lines     []string // 5xx access lines other than 503
	tolerated []string // causes a test provokes on purpose
	secrets   []string // log lines holding key material
}

// sinkKey is the context key of the sink a request's log lines go to.
type sinkKey struct{}

// withSink routes the log lines of requests served by h to sink: a shared server's handler, wrapped for
// one test's listener.
func withSink(h http.Handler, sink *guardSink) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), sinkKey{}, sink)))
	})
}

// TolerateServerErrors lets 5xx answers whose logged cause contains cause pass the check that fails
// the test on any 5xx but 503: for a test that breaks an invariant on purpose to show the server fails
// closed.
func (e *Env) TolerateServerErrors(cause string) {
	e.errs.mu.Lock()
	defer e.errs.mu.Unlock()
	e.errs.tolerated = append(e.errs.tolerated, cause)
}

func (h *serverErrors) sinkOf(ctx context.Context) *guardSink {
	if ctx != nil {
		if s, ok := ctx.Value(sinkKey{}).(*guardSink); ok {
			return s
		}
	}
	return h.sink
}

func (h *serverErrors) Handle(ctx context.Context, r slog.Record) error {
	var status int64
	line := []string{r.Message}
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == "status" {
			status = a.Value.Int64()
		}
		line = append(line, a.String())
		return true
	})
	text := strings.Join(line, " ")
	sink := h.sinkOf(ctx)
	sink.scan(text)
	if r.Message == "request" && r.Level >= slog.LevelError && status >= 500 && status != 503 {
		sink.mu.Lock()
		if !slices.ContainsFunc(sink.tolerated, func(cause string) bool { return strings.Contains(text, cause) }) {
			sink.lines = append(sink.lines, text)
		}
		sink.mu.Unlock()
	}
	return h.Handler.Handle(ctx, r)
}

// keyMaterial matches an API key or a long enough piece of one (the secret is wsk_ and 64 hex digits).
var keyMaterial = regexp.MustCompile(`wsk_[0-9a-f]{8,}`)

// scan keeps text when it holds key material: no log line may, whatever the request sent.
func (s *guardSink) scan(text string) {
	if strings.Contains(text, "wsk_") && keyMaterial.MatchString(text) {
		s.mu.Lock()
		s.secrets = append(s.secrets, text)
		s.mu.Unlock()
	}
}

func (h *serverErrors) WithAttrs(attrs []slog.Attr) slog.Handler {
	for _, a := range attrs {
		h.sink.scan(a.String())
	}
	return &serverErrors{Handler: h.Handler.WithAttrs(attrs), sink: h.sink}
}

func (h *serverErrors) WithGroup(name string) slog.Handler {
	return &serverErrors{Handler: h.Handler.WithGroup(name), sink: h.sink}
}

// to returns the guard with sink as its own: the handler of a logger whose lines all belong to one test
// (its listener's).
func (h *serverErrors) to(sink *guardSink) *serverErrors {
	return &serverErrors{Handler: h.Handler, sink: sink}
}

func (s *guardSink) seen() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.lines...)
}

func (s *guardSink) leaked() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.secrets...)
}

// check fails t for what the sink kept: whoever sent them (Env.Do, a raw client, a fuzzer), no answer
// was a 5xx other than the spec's 503, and no log line held an API key or a piece of one, right or wrong,
// whatever the tests sent.
func (s *guardSink) check(t testing.TB) {
	if lines := s.seen(); len(lines) > 0 {
		t.Errorf("the server answered %d requests with a 5xx other than 503:\n%s", len(lines), strings.Join(lines, "\n"))
	}
	if lines := s.leaked(); len(lines) > 0 {
		t.Errorf("the server logged key material in %d lines:\n%s", len(lines), strings.Join(lines, "\n"))
	}
}

// AwaitReady waits until /readyz answers 200: the schemas compile after the server starts serving, half
// a second of a processor alone, and more than 20 s with a second make test beside this one (load 52).
// It is not a documented bound: 60 s only tells a server that never gets ready.
func (e *Env) AwaitReady() {
	e.T.Helper()
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		res, err := http.Get(e.URL + "/readyz")
		if err == nil {
			res.Body.Close()
			if res.StatusCode == http.StatusOK {
				return
			}
		}
		if time.Now().After(deadline) {
			e.T.Fatalf("/readyz not 200 within 60 s (last: %v %v)", res, err)
		}
	}
}

// JSONMedia reports whether the media type mt is JSON: application/json or a +json type (not NDJSON).
func JSONMedia(mt string) bool { return mt == "application/json" || strings.HasSuffix(mt, "+json") }

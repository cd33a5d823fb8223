package servertest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/workspace-records/records/engine/model"
	"github.com/workspace-records/records/engine/sqlgen"
	"github.com/workspace-records/records/runtime/migrate"
	"github.com/workspace-records/records/runtime/server"
	"github.com/workspace-records/records/runtime/store"
)

// Migrating the repository's definitions into an empty database takes a second on SQLite and several
// on a loaded PostgreSQL, and most tests start a server on them. So each test process migrates them once
// per backend, into a template, and copies it for each test that asks for the default definitions: a
// file copy for SQLite, CREATE DATABASE … TEMPLATE for PostgreSQL. The copy is what migrate.Run makes of
// an empty database and nothing more (no cursor secret: each copy makes its own at its first start, as a
// new database does); the server finds it current at its start (migrate.Unchanged) and skips the
// migration. Tests with definitions of their own get a copy too when their tables are the shipped ones
// (sameTables); others, and DatabaseURL's callers, get an empty database.

// templatePrefix names the PostgreSQL templates: records_tpl_<unix seconds>_<random>.
const templatePrefix = "records_tpl_"

// templateMaxAge is how long a template may outlive its process (killed before Main could drop it)
// before a later build drops it: longer than any test binary runs.
const templateMaxAge = 3 * time.Hour

type template struct {
	once    sync.Once
	started atomic.Bool // its build was started in the background
	ref     string      // the template's database name (PostgreSQL) or file (SQLite)
	err     error
}

var templates struct {
	mu   sync.Mutex
	byID map[string]*template // backend and leakproof setting
	pg   []string             // PostgreSQL templates this process made, dropped by Main
	dir  string               // this process's SQLite templates, removed by Main
	// building counts the templates built in the background, which Main waits for before dropping.
	building sync.WaitGroup
}

// Main is a TestMain body for packages whose tests Start servers: it runs the tests, then drops the
// templates this process made. It returns the code for os.Exit.
func Main(m interface{ Run() int }) int {
	// The servers and clients of a test process allocate fast and keep a few hundred MB live; at Go's
	// default (GOGC=100) the collector took a quarter of the process's processor time. Twice the
	// headroom halves its work for a third more memory. An explicit GOGC wins.
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(200)
	}
	// The golden contract takes a few tenths of a second to parse and index (its schemas compile at
	// their first use); start it beside the first servers and databases instead of inside the first
	// test that checks an answer. Env.Contract waits for it.
	go GoldenContract()
	code := m.Run()
	if err := closeShared(); err != nil {
		fmt.Fprintln(os.Stderr, "FAIL:", err)
		code = 1
	}
	dropTemplates()
	return code
}

// migratedDatabase returns a new database of kind b holding the repository's definitions migrated,
// dropped (or removed) when the test ends.
func migratedDatabase(t testing.TB, b Backend) string {
	t.Helper()
	leakproof := os.Getenv("RECORDS_TEST_NO_LEAKPROOF") == ""
	// A process that starts servers of one backend starts servers of the other too: its template is
	// built meanwhile, not when its first test waits for it (the first tests run one at a time).
	other := SQLite
	if b == SQLite {
		other = Postgres
	}
	if o := templateOf(other, leakproof); o.started.CompareAndSwap(false, true) {
		templates.building.Add(1)
		go func() {
			defer templates.building.Done()
			o.build(other, leakproof)
		}()
	}
	url, drop, err := migratedCopy(b)
	if err != nil {
		if b == Postgres && os.Getenv("CI") != "true" && errors.Is(err, errUnreachable) {
			t.Skipf("PostgreSQL not reachable (%v); set RECORDS_TEST_POSTGRES", err)
		}
		t.Fatal(err)
	}
	t.Cleanup(drop)
	return url
}

// templateOf returns the template of backend b (made, not built).
func templateOf(b Backend, leakproof bool) *template {
	id := fmt.Sprintf("%s/%t", b, leakproof)
	templates.mu.Lock()
	defer templates.mu.Unlock()
	if templates.byID == nil {
		templates.byID = map[string]*template{}
	}
	tpl := templates.byID[id]
	if tpl == nil {
		tpl = &template{}
		templates.byID[id] = tpl
	}
	return tpl
}

// build builds the template once; later calls wait for the first.
func (tpl *template) build(b Backend, leakproof bool) {
	tpl.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		if b == SQLite {
			tpl.ref, tpl.err = buildSQLiteTemplate(ctx)
		} else {
			tpl.ref, tpl.err = buildPostgresTemplate(ctx, leakproof)
		}
	})
}

// migrateInto migrates the repository's definitions into the database at url.
func migrateInto(ctx context.Context, url string) error {
	cat, err := shippedCatalog()
	if err != nil {
		return err
	}
	st, err := store.Open(ctx, url)
	if err != nil {
		return fmt.Errorf("open %s: %w", redactURL(url), err)
	}
	defer st.Close()
	if _, err := migrate.Run(ctx, st, cat, migrate.Options{}); err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	return nil
}

func buildSQLiteTemplate(ctx context.Context) (string, error) {
	templates.mu.Lock()
	if templates.dir == "" {
		dir, err := os.MkdirTemp("", "records-test-templates-")
		if err != nil {
			templates.mu.Unlock()
			return "", fmt.Errorf("template directory: %w", err)
		}
		templates.dir = dir
	}
	dir := templates.dir
	templates.mu.Unlock()
	path := filepath.Join(dir, "records.db")
	if err := migrateInto(ctx, "sqlite:"+path); err != nil {
		return "", err
	}
	// Closed, the database is all in its main file (the last connection checkpoints the WAL).
	if st, err := os.Stat(path + "-wal"); err == nil && st.Size() > 0 {
		return "", fmt.Errorf("the SQLite template %s kept a write-ahead log of %d bytes after closing", path, st.Size())
	}
	return path, nil
}

func buildPostgresTemplate(ctx context.Context, leakproof bool) (string, error) {
	admin := adminURL()
	conn, err := pgx.Connect(ctx, admin)
	if err != nil {
		return "", fmt.Errorf("%w: %w", errUnreachable, err)
	}
	defer conn.Close(ctx)
	dropStaleTemplates(ctx, conn)
	if err := ensureAppRole(ctx, conn); err != nil {
		return "", err
	}
	raw := make([]byte, 4)
	_, _ = rand.Read(raw)
	name := templatePrefix + strconv.FormatInt(time.Now().Unix(), 10) + "_" + hex.EncodeToString(raw)
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+name+" OWNER "+AppRole); err != nil {
		return "", fmt.Errorf("create template %s: %w", name, err)
	}
	templates.mu.Lock()
	templates.pg = append(templates.pg, name)
	templates.mu.Unlock()
	cfg, _ := pgx.ParseConfig(admin)
	if leakproof {
		if err := markLeakproof(ctx, cfg, name); err != nil {
			return "", err
		}
	}
	url := fmt.Sprintf("postgres://%s@%s:%d/%s?sslmode=disable", AppRole, cfg.Host, cfg.Port, name)
	if err := migrateInto(ctx, url); err != nil {
		return "", fmt.Errorf("template %s: %w", name, err)
	}
	// No one may be connected to a template while it is copied; the store above is closed, and nothing
	// else connects to it. PostgreSQL waits a few seconds for closing sessions to end.
	return name, nil
}

// dropStaleTemplates drops the templates of processes that ended without dropping theirs.
func dropStaleTemplates(ctx context.Context, conn *pgx.Conn) {
	rows, err := conn.Query(ctx, "SELECT datname FROM pg_database WHERE datname LIKE 'records\\_tpl\\_%'")
	if err != nil {
		return
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return
	}
	for _, n := range names {
		parts := strings.Split(strings.TrimPrefix(n, templatePrefix), "_")
		made, err := strconv.ParseInt(parts[0], 10, 64)
		if err != nil || time.Since(time.Unix(made, 0)) < templateMaxAge {
			continue
		}
		if _, err := conn.Exec(ctx, "DROP DATABASE IF EXISTS "+n+" WITH (FORCE)"); err != nil {
			slog.Warn("drop stale template database", "name", n, "err", err)
		}
	}
}

func dropTemplates() {
	templates.building.Wait()
	templates.mu.Lock()
	pg, dir := templates.pg, templates.dir
	templates.mu.Unlock()
	if dir != "" {
		os.RemoveAll(dir)
	}
	if len(pg) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, adminURL())
	if err != nil {
		slog.Warn("drop template databases", "err", err)
		return
	}
	defer conn.Close(ctx)
	for _, n := range pg {
		if _, err := conn.Exec(ctx, "DROP DATABASE IF EXISTS "+n+" WITH (FORCE)"); err != nil {
			slog.Warn("drop template database", "name", n, "err", err)
		}
	}
}

// sameTables reports whether the definitions in dir make the same tables on b as the repository's
// (migrate.Fingerprint): a database migrated for either is current for both. Definitions that do not
// load are not (their server's start reports why).
func sameTables(dir string, b Backend) bool {
	cat, _, err := server.LoadDefinitions(os.DirFS(dir))
	if err != nil {
		return false
	}
	shipped, err := shippedCatalog()
	if err != nil {
		return false
	}
	d := sqlgen.New(sqlgen.SQLite)
	if b == Postgres {
		d = sqlgen.New(sqlgen.Postgres)
	}
	return migrate.Fingerprint(d, cat) == migrate.Fingerprint(d, shipped)
}

// shippedCatalog loads the repository's definitions once per process.
var shippedCatalog = sync.OnceValues(func() (*model.Catalog, error) {
	cat, _, err := server.LoadDefinitions(os.DirFS(DefinitionsDir()))
	if err != nil {
		return nil, fmt.Errorf("load definitions: %w", err)
	}
	return cat, nil
})

func copyFile(from, to string, mode os.FileMode) error {
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_CREATE|os.O_EXCL|os.O_WRONLY, mode)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// redactURL drops a URL's password, for messages.
func redactURL(u string) string {
	if i, j := strings.Index(u, "://"), strings.LastIndex(u, "@"); i >= 0 && j > i {
		if k := strings.Index(u[i+3:j], ":"); k >= 0 {
			return u[:i+3+k] + ":xxx" + u[j:]
		}
	}
	return u
}

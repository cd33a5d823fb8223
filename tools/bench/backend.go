package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	mrand "math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/workspace-records/records/engine/listplan"
	"github.com/workspace-records/records/runtime/migrate"
	"github.com/workspace-records/records/runtime/store"
)

// report is what one backend's run measured.
type report struct {
	backend     string
	rows        int
	seed        time.Duration
	ready       []time.Duration // process start to first answered request, per start
	startedIn   []time.Duration // as recordsd logged it
	filterValue int
	declared    int // records matching the declared-field filter
	custom      int // records matching the custom-field filter
	phases      []phase
	rounds      []sample
	pool        int             // connection pool of recordsd, the floor and raw SQL
	tls         string          // what the database connections negotiated
	redisKeys   int             // keys of the Redis configuration (0: not run)
	delivery    *deliveryReport // the webhook delivery phases (nil: not run)
	reads       []readPair      // the read-power comparisons (issue 23; reads.go)
	readsSetup  *readsSetup     // what they seeded (nil: not run)
	admin       []readPair      // the administration comparisons (issue 24; admin.go)
	jobs        *jobsReport     // the bulk jobs (issue 37; jobs.go); nil: not run
}

// phase is one operation at one concurrency on its targets, and recordsd's state after it.
type phase struct {
	op                      string
	c                       int
	config                  string // "" for the default configuration, else its label
	api, floor, raw, su     result // su: the API connected as the superuser (list reads on PostgreSQL)
	hasFloor, hasRaw, hasSU bool
	vsFloor, vsRaw, vsSU    []float64 // the API's rate over the other target's, one per round
	// off: the same operation on a recordsd started with --events=false (create_events_off); vsOff is
	// the API's (outbox on) rate over it, one per round.
	off    result
	hasOff bool
	vsOff  []float64
	after  sample
}

type sample struct {
	rssMB      float64
	goroutines int
}

// bench is the state of one backend's run.
type bench struct {
	o         options
	backend   string
	dsn       string // recordsd's and recordsctl's: the owner role on PostgreSQL
	suDSN     string // the superuser's (PostgreSQL; SQLite: dsn): the floor, raw SQL, the superuser run
	workspace string
	key       string
	member    string // the member holding the bench's keys
	field     string // custom field id
	secret    string
	api       *proc
	apiSU     *proc // PostgreSQL: the same server connected as the superuser (no row-level security)
	apiOff    *proc // the same server with the change feed off (--events=false): create_events_off
	floor     *proc
	raw       *db
	ids       []string
	value     int    // filter value
	deepAPI   string // cursor at depth rows/2
	deepAt    string // created_at of the row at depth, as the database compares it
	deepID    string
	rep       *report
	clients   []*http.Client // of the current phase, closed after it
}

// profile records recordsd's CPU profile for about d from now; the returned function waits for it
// (-profile).
func (b *bench) profile(name string, d time.Duration) func() {
	if b.o.profile == "" {
		return func() {}
	}
	secs := int(d.Seconds())
	done := make(chan struct{})
	go func() {
		defer close(done)
		res, err := http.Get(fmt.Sprintf("http://%s/debug/pprof/profile?seconds=%d", b.api.debug, max(secs, 1)))
		if err != nil {
			fmt.Fprintln(os.Stderr, "profile:", err)
			return
		}
		defer res.Body.Close()
		os.MkdirAll(b.o.profile, 0o755)
		f, err := os.Create(filepath.Join(b.o.profile, name+".pprof"))
		if err != nil {
			fmt.Fprintln(os.Stderr, "profile:", err)
			return
		}
		defer f.Close()
		io.Copy(f, res.Body)
	}()
	return func() { <-done }
}

// closeClients drops the phase's keep-alive connections, so that the next sample of recordsd's
// goroutines counts live work, not idle connections of finished phases.
func (b *bench) closeClients() {
	for _, c := range b.clients {
		c.CloseIdleConnections()
	}
	b.clients = nil
	time.Sleep(50 * time.Millisecond)
}

func runBackend(ctx context.Context, o options, backend string) (*report, error) {
	b := &bench{o: o, backend: backend, rep: &report{backend: backend, rows: o.rows, pool: poolSize()}}
	drop, err := b.createDatabase(ctx)
	if err != nil {
		return nil, err
	}
	defer drop()
	if err := b.setup(ctx); err != nil {
		return nil, err
	}
	if b.raw, err = openDB(ctx, b.suDSN, poolSize()); err != nil {
		return nil, err
	}
	defer b.raw.close()
	b.rep.tls = b.tlsInUse(ctx)
	// Fresh statistics after a bulk load, as an operator would take (autovacuum would, later).
	if _, err := b.raw.exec(ctx, "ANALYZE"); err != nil {
		return nil, fmt.Errorf("analyze: %w", err)
	}
	secret := make([]byte, 32)
	rand.Read(secret)
	b.secret = hex.EncodeToString(secret)
	for range 3 {
		p, err := startRecordsd(ctx, o, b.dsn, b.secret)
		if err != nil {
			return nil, err
		}
		b.rep.ready = append(b.rep.ready, p.Ready)
		b.rep.startedIn = append(b.rep.startedIn, p.startedIn())
		p.stop()
	}
	if b.api, err = startRecordsd(ctx, o, b.dsn, b.secret); err != nil {
		return nil, err
	}
	defer b.api.stop()
	if backend == "postgres" {
		// The same server as the superuser, which row-level security does not apply to: what RLS costs.
		if b.apiSU, err = startRecordsd(ctx, o, b.suDSN, b.secret); err != nil {
			return nil, err
		}
		defer b.apiSU.stop()
	}
	if b.selected("create_events_off") {
		// What the outbox costs a create: the same binary and database, no event written or numbered.
		if b.apiOff, err = startRecordsd(ctx, o, b.dsn, b.secret, "--events=false"); err != nil {
			return nil, err
		}
		defer b.apiOff.stop()
	}
	if b.floor, err = startFloor(ctx, b.suDSN, b.workspace); err != nil {
		return nil, err
	}
	defer b.floor.stop()
	if err := b.prepare(ctx); err != nil {
		return nil, err
	}
	for _, op := range b.operations() {
		if !b.selected(op.name) && (op.name != "create" || b.apiOff == nil) {
			continue
		}
		for _, c := range o.conc {
			if err := b.runPhase(ctx, op, c, ""); err != nil {
				return nil, err
			}
		}
	}
	if backend == "postgres" && o.redis != "" && (len(o.only) == 0 || o.only["get"]) {
		if err := b.runRedisKeys(ctx); err != nil {
			return nil, err
		}
	}
	if b.selected("reads") {
		if err := b.runReads(ctx); err != nil {
			return nil, err
		}
	}
	// Closing rounds of the heaviest traffic: memory and goroutines must come back to the same level.
	ops := map[string]operation{}
	for _, op := range b.operations() {
		ops[op.name] = op
	}
	for i := range o.rounds {
		for _, name := range []string{"get", "first_page", "create"} {
			r := drive(ctx, 32, 0, o.duration, ops[name].api(32))
			if r.Errors > 0 {
				return nil, fmt.Errorf("round %d %s: %s", i+1, name, r.FirstErr)
			}
		}
		b.closeClients()
		b.rep.rounds = append(b.rep.rounds, sample{b.api.rssMB(), b.api.goroutines()})
	}
	if b.selected("admin") {
		if err := b.runAdmin(ctx); err != nil {
			return nil, err
		}
	}
	if b.selected("jobs") {
		if err := b.runJobs(ctx); err != nil {
			return nil, err
		}
	}
	if b.selected("deliveries") {
		// Every server's dispatcher leases deliveries: only the delivery phase's may run (the others
		// would refuse the loopback receiver and put the deliveries off to a retry).
		b.api.stop()
		b.apiSU.stop()
		b.apiOff.stop()
		if err := b.runDeliveries(ctx); err != nil {
			return nil, err
		}
	}
	return b.rep, nil
}

// selected reports whether -only asks for the named operation (every operation without -only).
func (b *bench) selected(name string) bool { return len(b.o.only) == 0 || b.o.only[name] }

// listOps are the reads whose cost under row-level security is compared with the superuser's.
var listOps = map[string]bool{"first_page": true, "deep_page": true, "filter_declared": true, "filter_custom": true, "query": true}

// runPhase measures op at concurrency c on every target it has — the API, the floor, raw SQL and, for
// the lists on PostgreSQL, the API as the superuser — interleaved: o.repeats rounds, each running every
// target for one slice of o.duration/o.repeats in an order that rotates from round to round, so that a
// disturbance of the shared machine falls on all targets alike. The ratios are taken per round and
// reported as their median and spread. label names a configuration other than the default.
func (b *bench) runPhase(ctx context.Context, op operation, c int, label string) error {
	ph := phase{op: op.name, c: c, config: label}
	fmt.Fprintf(os.Stderr, "%s %-16s c=%-3d", b.backend, op.name+label, c)
	type target struct {
		w      worker
		slices *[]result
	}
	var apiS, floorS, rawS, suS, offS []result
	ts := []target{{op.api(c), &apiS}}
	if op.floor != nil {
		ts = append(ts, target{op.floor(c), &floorS})
		ph.hasFloor = true
	}
	if op.raw != nil {
		ts = append(ts, target{op.raw(c), &rawS})
		ph.hasRaw = true
	}
	if b.apiSU != nil && listOps[op.name] && label == "" {
		ts = append(ts, target{b.onServer(b.apiSU, op.api)(c), &suS})
		ph.hasSU = true
	}
	if b.apiOff != nil && op.name == "create" && label == "" {
		ts = append(ts, target{b.onServer(b.apiOff, op.api)(c), &offS})
		ph.hasOff = true
	}
	slice := b.o.duration / time.Duration(b.o.repeats)
	stopProfile := b.profile(fmt.Sprintf("%s-%s%s-c%d", b.backend, op.name, label, c), time.Duration(b.o.repeats)*(slice+settle)+b.o.warmup)
	for round := range b.o.repeats {
		for j := range ts {
			t := ts[(round+j)%len(ts)]
			warm := settle
			if round == 0 {
				warm = b.o.warmup
			}
			*t.slices = append(*t.slices, drive(ctx, c, warm, slice, t.w))
			if ctx.Err() != nil {
				stopProfile()
				return ctx.Err()
			}
		}
	}
	stopProfile()
	b.closeClients()
	ph.api, ph.floor, ph.raw, ph.su = combine(apiS), combine(floorS), combine(rawS), combine(suS)
	ph.vsFloor, ph.vsRaw, ph.vsSU = ratios(apiS, floorS), ratios(apiS, rawS), ratios(apiS, suS)
	ph.off, ph.vsOff = combine(offS), ratios(apiS, offS)
	ph.after = sample{b.api.rssMB(), b.api.goroutines()}
	fmt.Fprintf(os.Stderr, " api %8.0f/s  floor %8.0f/s  raw %8.0f/s", ph.api.Rate(), ph.floor.Rate(), ph.raw.Rate())
	if ph.hasSU {
		fmt.Fprintf(os.Stderr, "  superuser %8.0f/s", ph.su.Rate())
	}
	if ph.hasOff {
		fmt.Fprintf(os.Stderr, "  events off %8.0f/s (on/off %s)", ph.off.Rate(), spread(ph.vsOff))
	}
	fmt.Fprintf(os.Stderr, "  rss %5.1f MB\n", ph.after.rssMB)
	for _, r := range []result{ph.api, ph.floor, ph.raw, ph.su, ph.off} {
		if r.Errors > 0 {
			return fmt.Errorf("%s%s c=%d: %d errors, first: %s\nrecordsd log:\n%s", op.name, label, c, r.Errors, r.FirstErr, b.api.Log.Tail())
		}
	}
	b.rep.phases = append(b.rep.phases, ph)
	return nil
}

// settle is the unmeasured start of every slice after a target's first: the closed loop refills.
const settle = 100 * time.Millisecond

// combine sums the slices of one target: operations, errors and time; the latency percentiles are the
// medians of the slices'.
func combine(slices []result) result {
	var r result
	var p50, p99 []time.Duration
	for _, s := range slices {
		r.N += s.N
		r.Errors += s.Errors
		r.Elapsed += s.Elapsed
		if r.FirstErr == "" {
			r.FirstErr = s.FirstErr
		}
		p50, p99 = append(p50, s.P50), append(p99, s.P99)
	}
	if len(slices) > 0 {
		r.P50, r.P99 = median(p50), median(p99)
	}
	return r
}

// ratios are a's rates over b's, round by round (none when b was not measured).
func ratios(a, b []result) []float64 {
	if len(b) != len(a) {
		return nil
	}
	out := make([]float64, 0, len(a))
	for i := range a {
		if b[i].Rate() > 0 {
			out = append(out, a[i].Rate()/b[i].Rate())
		}
	}
	return out
}

// onServer makes an API worker factory send its requests to p instead of b.api.
func (b *bench) onServer(p *proc, mk func(c int) worker) func(c int) worker {
	return func(c int) worker {
		w := mk(c)
		from, to := b.api.addr, p.addr
		return func(ctx context.Context, rnd *mrand.Rand) error {
			return w(withTarget(ctx, from, to), rnd)
		}
	}
}

// runRedisKeys is the multi-replica configuration: a recordsd keeping its limits and quota in Redis
// (-redis), and o.keys keys of the workspace used round-robin, so that the key cache rarely holds the
// key of the next request. GET by id is measured against the floor as in the default configuration.
func (b *bench) runRedisKeys(ctx context.Context) error {
	api, err := startRecordsd(ctx, b.o, b.dsn, b.secret, "--redis", b.o.redis)
	if err != nil {
		return err
	}
	defer api.stop()
	keys, err := b.makeKeys(ctx, b.o.keys)
	if err != nil {
		return err
	}
	var next atomic.Uint64
	get := b.operations()[0]
	base := b.onServer(api, get.api)
	get.api = func(c int) worker {
		w := base(c)
		return func(ctx context.Context, rnd *mrand.Rand) error {
			return w(withKey(ctx, keys[next.Add(1)%uint64(len(keys))]), rnd)
		}
	}
	get.raw = nil
	label := fmt.Sprintf(" (Redis, %d keys)", len(keys))
	b.rep.redisKeys = len(keys)
	for _, c := range b.o.conc {
		if err := b.runPhase(ctx, get, c, label); err != nil {
			return err
		}
	}
	return nil
}

// makeKeys creates n write keys of the bench member (the first is b.key), with recordsctl, four at a time.
func (b *bench) makeKeys(ctx context.Context, n int) ([]string, error) {
	keys := make([]string, n)
	keys[0] = b.key
	sem := make(chan struct{}, 4)
	errs := make(chan error, n)
	var wg sync.WaitGroup
	for i := 1; i < n; i++ {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			k, err := ctl(ctx, b.o, b.dsn, "key", "create", "--member", b.member, "--access", "write")
			if err != nil {
				errs <- err
				return
			}
			keys[i] = k["secret"].(string)
		}()
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return nil, fmt.Errorf("create keys: %w", err)
	}
	return keys, nil
}

// benchRole is the PostgreSQL role recordsd and recordsctl connect as: the production configuration
// (README, Tenancy) — it owns the run's database and is neither a superuser nor BYPASSRLS, so row-level
// security applies to every statement. The floor and raw SQL connect as the superuser of -postgres: they
// are the least a server must do, with no tenancy at all.
const benchRole = "records_bench_owner"

// poolSize is the connection pool of recordsd, the floor server and raw SQL alike: recordsd's default
// on this machine (runtime/store: max(8, 4 × cores)), passed to all three as pool_max_conns.
func poolSize() int { return max(8, 4*runtime.NumCPU()) }

// withPool returns dsn with pool_max_conns set to poolSize().
func withPool(u url.URL) string {
	q := u.Query()
	q.Set("pool_max_conns", strconv.Itoa(poolSize()))
	u.RawQuery = q.Encode()
	return u.String()
}

// createDatabase makes the run's own database and returns how to drop it. On PostgreSQL the database is
// owned by benchRole (b.dsn, for recordsd and recordsctl), the numeric comparisons are marked LEAKPROOF
// as the deployment guide asks a superuser to do once, and b.suDSN is the superuser's URL of the same
// database (the floor, raw SQL and the superuser comparison run).
func (b *bench) createDatabase(ctx context.Context) (func(), error) {
	if b.backend == "sqlite" {
		dir, err := os.MkdirTemp("", "records-bench-")
		if err != nil {
			return nil, err
		}
		b.dsn = "sqlite:" + filepath.Join(dir, "records.db")
		b.suDSN = b.dsn
		return func() {
			if b.o.keep {
				fmt.Fprintln(os.Stderr, "kept", b.dsn)
				return
			}
			os.RemoveAll(dir)
		}, nil
	}
	u, err := url.Parse(b.o.postgres)
	if err != nil {
		return nil, fmt.Errorf("-postgres: %w", err)
	}
	conn, err := pgx.Connect(ctx, b.o.postgres)
	if err != nil {
		return nil, fmt.Errorf("connect %s: %w", u.Redacted(), err)
	}
	defer conn.Close(ctx)
	name := fmt.Sprintf("records_bench_%d_%d", os.Getpid(), time.Now().Unix())
	for _, stmt := range []string{
		"DO $$ BEGIN IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = '" + benchRole + "') THEN CREATE ROLE " + benchRole + " LOGIN NOSUPERUSER NOBYPASSRLS; END IF; END $$",
		"CREATE DATABASE " + name + " OWNER " + benchRole,
	} {
		if _, err := conn.Exec(ctx, stmt); err != nil {
			return nil, fmt.Errorf("create database: %s: %w", stmt, err)
		}
	}
	su := *u
	su.Path = "/" + name
	if err := leakproof(ctx, su.String()); err != nil {
		return nil, err
	}
	owner := su
	owner.User = url.User(benchRole)
	b.dsn, b.suDSN = withPool(owner), withPool(su)
	return func() {
		if b.o.keep {
			fmt.Fprintln(os.Stderr, "kept", su.Redacted())
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		conn, err := pgx.Connect(ctx, b.o.postgres)
		if err != nil {
			fmt.Fprintln(os.Stderr, "drop database:", err)
			return
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, "DROP DATABASE "+name+" WITH (FORCE)"); err != nil {
			fmt.Fprintln(os.Stderr, "drop database:", err)
		}
	}, nil
}

// leakproof runs, as the superuser in the run's database, the one-time step of the deployment guide.
func leakproof(ctx context.Context, dsn string) error {
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return fmt.Errorf("connect for LEAKPROOF: %w", err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, migrate.LeakproofSQL()); err != nil {
		return fmt.Errorf("LEAKPROOF step: %w", err)
	}
	return nil
}

// tlsInUse reports what the raw connection negotiated: the connection strings' sslmode decides, and
// recordsd, the floor and raw SQL share it.
func (b *bench) tlsInUse(ctx context.Context) string {
	if b.raw.pg == nil {
		return "none (SQLite file)"
	}
	var on bool
	var version string
	err := b.raw.query(ctx, "SELECT ssl, coalesce(version, '') FROM pg_stat_ssl WHERE pid = pg_backend_pid()", nil, func(_ []string, v []any) error {
		on, _ = v[0].(bool)
		version = fmt.Sprint(v[1])
		return nil
	})
	mode := "prefer (the driver's default)"
	if u, perr := url.Parse(b.suDSN); perr == nil && u.Query().Get("sslmode") != "" {
		mode = u.Query().Get("sslmode")
	}
	switch {
	case err != nil:
		return "unknown (" + err.Error() + "), sslmode " + mode
	case on:
		return "on, " + version + " (sslmode " + mode + ")"
	}
	return "off (sslmode " + mode + ")"
}

// setup creates the database's tables (and its SQLite file), the workspace, member, key and custom
// field with recordsctl, and seeds the companies through its bulk path (progress bar on stderr).
func (b *bench) setup(ctx context.Context) error {
	if _, err := ctl(ctx, b.o, b.dsn, "migrate"); err != nil {
		return err
	}
	ws, err := ctl(ctx, b.o, b.dsn, "workspace", "create", "--name", "Bench", "--plan", "enterprise")
	if err != nil {
		return err
	}
	b.workspace = ws["id"].(string)
	// Limits stay in force (every request is counted and checked) but never refuse during the run.
	const high = "1000000000000"
	if _, err := ctl(ctx, b.o, b.dsn, "workspace", "set-limits", b.workspace, "--key-per-minute", high,
		"--key-per-hour", high, "--workspace-per-minute", high, "--monthly-quota", high); err != nil {
		return err
	}
	m, err := ctl(ctx, b.o, b.dsn, "member", "create", "--workspace", b.workspace, "--email", "bench@example.com", "--role", "admin")
	if err != nil {
		return err
	}
	k, err := ctl(ctx, b.o, b.dsn, "key", "create", "--member", m["id"].(string), "--access", "write")
	if err != nil {
		return err
	}
	b.key, b.member = k["secret"].(string), m["id"].(string)
	// An integer custom field whose values follow employee_count's distribution (the sample generator
	// chooses by key), so that both filters select about as many records.
	f, err := ctl(ctx, b.o, b.dsn, "field", "create", "--workspace", b.workspace, "--resource", "companies",
		"--key", "employee_target", "--type", "integer")
	if err != nil {
		return err
	}
	b.field = f["id"].(string)
	t0 := time.Now()
	cmd := exec.CommandContext(ctx, b.o.bin+"/recordsctl", "--db", b.dsn, "--definitions", b.o.defs, "seed",
		"--workspace", b.workspace, "--resource", "companies", "--count", strconv.Itoa(b.o.rows), "--seed", "1")
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("seed: %w", err)
	}
	b.rep.seed = time.Since(t0)
	return nil
}

// prepare picks the ids, the filter value and the deep cursor the phases use, and checks the API and
// the floor agree on what they return.
func (b *bench) prepare(ctx context.Context) error {
	err := b.raw.query(ctx, `SELECT "id" FROM "rec_companies" WHERE "workspace_id" = $1 ORDER BY random() LIMIT 10000`, []any{b.workspace},
		func(_ []string, v []any) error { b.ids = append(b.ids, fmt.Sprint(jsonValue("id", v[0]))); return nil })
	if err != nil || len(b.ids) == 0 {
		return fmt.Errorf("sample ids: %v", err)
	}
	// A selective filter, as real ones are: the largest employee count held by 5 to 40 records whose
	// custom-field twin (same distribution) also matches at least half as many, so that both filters
	// return about the same number of records.
	var candidates [][2]int
	err = b.raw.query(ctx, `SELECT "employee_count", count(*) FROM "rec_companies" WHERE "workspace_id" = $1 AND "archived" = $2
AND "employee_count" IS NOT NULL GROUP BY "employee_count" HAVING count(*) BETWEEN 5 AND 40 ORDER BY "employee_count" DESC LIMIT 200`,
		[]any{b.workspace, b.raw.archived()}, func(_ []string, v []any) error {
			var c [2]int
			c[0], _ = strconv.Atoi(fmt.Sprint(v[0]))
			c[1], _ = strconv.Atoi(fmt.Sprint(v[1]))
			candidates = append(candidates, c)
			return nil
		})
	if err != nil {
		return fmt.Errorf("filter value: %w", err)
	}
	for _, c := range candidates {
		custom := 0
		err = b.raw.query(ctx, `SELECT count(*) FROM "custom_values" WHERE "workspace_id" = $1 AND "field_id" = $2 AND "t" = $3`,
			[]any{b.workspace, b.field, strconv.Itoa(c[0])}, func(_ []string, v []any) error {
				custom, _ = strconv.Atoi(fmt.Sprint(v[0]))
				return nil
			})
		if err != nil {
			return fmt.Errorf("custom matches: %w", err)
		}
		if 2*custom >= c[1] && custom <= 2*c[1] {
			b.value, b.rep.declared, b.rep.custom = c[0], c[1], custom
			break
		}
	}
	if b.value == 0 {
		return fmt.Errorf("no employee count matches 5 to 40 records on both fields (of %d candidates)", len(candidates))
	}
	b.rep.filterValue = b.value
	// The row at depth rows/2 in the default order, and the one after it (the deep page's first).
	depth := b.o.rows / 2
	var next string
	err = b.raw.query(ctx, `SELECT "id", "created_at" FROM "rec_companies" WHERE "workspace_id" = $1 AND "archived" = $2
ORDER BY "created_at" DESC, "id" DESC LIMIT 2 OFFSET $3`, []any{b.workspace, b.raw.archived(), depth - 1}, func(_ []string, v []any) error {
		if b.deepID == "" {
			b.deepID = fmt.Sprint(jsonValue("id", v[0]))
			if t, ok := v[1].(time.Time); ok {
				b.deepAt = t.UTC().Format(time.RFC3339Nano)
			} else {
				b.deepAt = fmt.Sprint(v[1])
			}
			return nil
		}
		next = fmt.Sprint(jsonValue("id", v[0]))
		return nil
	})
	if err != nil || next == "" {
		return fmt.Errorf("row at depth %d: %v", depth, err)
	}
	cursor, err := b.deepCursor(ctx)
	if err != nil {
		return err
	}
	b.deepAPI = cursor
	// The deep page starts right after the row at depth, through the API and through the floor.
	var page struct {
		Data []struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	if err := b.getJSON(ctx, b.apiURL("/v1/companies?page_size=25&cursor="+url.QueryEscape(cursor)), &page); err != nil {
		return err
	}
	if len(page.Data) != 25 || page.Data[0].ID != next {
		return fmt.Errorf("deep cursor page starts at %v, want %s", page.Data, next)
	}
	if err := b.getJSON(ctx, b.floorURL("/companies?limit=25&"+b.deepFloorQuery()), &page); err != nil {
		return err
	}
	if len(page.Data) != 25 || page.Data[0].ID != next {
		return fmt.Errorf("floor deep page starts at %v, want %s", page.Data, next)
	}
	return nil
}

// deepCursor makes the API's cursor for the position at depth: the payload of a real first-page cursor
// (so it names the same plan) with the position replaced, signed with the secret recordsd was given.
// It is exactly what walking rows/2 records page by page would end with, without the walk.
func (b *bench) deepCursor(ctx context.Context) (string, error) {
	var first struct {
		Meta struct {
			NextCursor string `json:"next_cursor"`
		} `json:"meta"`
	}
	if err := b.getJSON(ctx, b.apiURL("/v1/companies?page_size=25&cursor=start"), &first); err != nil {
		return "", err
	}
	body, _, ok := strings.Cut(first.Meta.NextCursor, ".")
	payload, err := base64.RawURLEncoding.DecodeString(body)
	if !ok || err != nil {
		return "", fmt.Errorf("first page cursor %q", first.Meta.NextCursor)
	}
	var rec struct {
		Data struct {
			CreatedAt string `json:"created_at"`
		} `json:"data"`
	}
	if err := b.getJSON(ctx, b.apiURL("/v1/companies/"+b.deepID), &rec); err != nil {
		return "", err
	}
	var c map[string]any
	if err := json.Unmarshal(payload, &c); err != nil {
		return "", fmt.Errorf("cursor payload: %w", err)
	}
	c["k"], c["i"] = rec.Data.CreatedAt, b.deepID
	payload, _ = json.Marshal(c)
	return listplan.Sign([]byte(b.secret), payload), nil
}

func (b *bench) deepFloorQuery() string {
	return "after_created=" + url.QueryEscape(b.deepAt) + "&after_id=" + b.deepID
}

func (b *bench) apiURL(path string) string   { return "http://" + b.api.addr + path }
func (b *bench) floorURL(path string) string { return "http://" + b.floor.addr + path }

func (b *bench) getJSON(ctx context.Context, u string, v any) error {
	req, _ := http.NewRequestWithContext(ctx, "GET", u, nil)
	req.Header.Set("Authorization", "Bearer "+b.key)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	data, _ := io.ReadAll(res.Body)
	if res.StatusCode != 200 {
		return fmt.Errorf("GET %s: %d %s", u, res.StatusCode, data)
	}
	return json.Unmarshal(data, v)
}

// operation is one measured operation: how a worker does it through the API, the floor and raw SQL
// (nil where there is no counterpart), given the phase's concurrency.
type operation struct {
	name       string
	api, floor func(c int) worker
	raw        func(c int) worker
}

func (b *bench) pick(rnd *mrand.Rand) string { return b.ids[rnd.IntN(len(b.ids))] }

// httpOp makes a worker factory sending one request per call, built by mk.
func (b *bench) httpOp(want int, mk func(rnd *mrand.Rand) (*http.Request, error)) func(c int) worker {
	return func(c int) worker {
		client := httpClient(c)
		b.clients = append(b.clients, client)
		return func(ctx context.Context, rnd *mrand.Rand) error {
			req, err := mk(rnd)
			if err != nil {
				return err
			}
			if t, ok := ctx.Value(retargetKey{}).(retarget); ok && req.URL.Host == t.from {
				req.URL.Host = t.to
			}
			if k, ok := ctx.Value(apiKeyKey{}).(string); ok {
				req.Header.Set("Authorization", "Bearer "+k)
			}
			return call(client, req.WithContext(ctx), want)
		}
	}
}

type (
	retargetKey struct{}
	apiKeyKey   struct{}
	retarget    struct{ from, to string }
)

// withTarget makes the requests of an API worker called with ctx go to the server at to instead of from.
func withTarget(ctx context.Context, from, to string) context.Context {
	return context.WithValue(ctx, retargetKey{}, retarget{from, to})
}

// withKey makes the request of an API worker called with ctx authenticate with key.
func withKey(ctx context.Context, key string) context.Context {
	return context.WithValue(ctx, apiKeyKey{}, key)
}

func (b *bench) apiReq(method, path string, body []byte, idempotent bool) (*http.Request, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequest(method, b.apiURL(path), rd)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+b.key)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if idempotent {
		req.Header.Set("Idempotency-Key", store.NewID())
	}
	return req, nil
}

func (b *bench) floorReq(method, path string, body []byte) (*http.Request, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequest(method, b.floorURL(path), rd)
	if err == nil && body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	return req, err
}

// rawOp makes a worker running q and checking it returned rows (want < 0: any number).
func (b *bench) rawOp(want int, q func() string, args func(rnd *mrand.Rand) []any) func(c int) worker {
	return func(int) worker {
		stmt := q()
		return func(ctx context.Context, rnd *mrand.Rand) error {
			n := 0
			if err := b.raw.query(ctx, stmt, args(rnd), func([]string, []any) error { n++; return nil }); err != nil {
				return err
			}
			if want >= 0 && n != want {
				return fmt.Errorf("raw: %d rows, want %d", n, want)
			}
			return nil
		}
	}
}

// domainSeq numbers the domains of created companies: domain is a unique key, and random numbers (the
// same seeds for every target) repeated one within a run, failing the floor's and raw SQL's inserts.
var (
	domainRun = strconv.FormatInt(time.Now().UnixNano(), 36)
	domainSeq atomic.Int64
)

func companyBody(rnd *mrand.Rand, custom bool) []byte {
	n := rnd.IntN(1_000_000_000)
	body := map[string]any{"name": "Bench company " + strconv.Itoa(n), "industry": "software", "employee_count": n % 50000,
		"domain": "b" + domainRun + "-" + strconv.FormatInt(domainSeq.Add(1), 36) + ".example.com", "billing_city": "Berlin", "billing_country": "DE"}
	if custom {
		body["cf__employee_target"] = n % 50000
	}
	data, _ := json.Marshal(body)
	return data
}

func dealBody(rnd *mrand.Rand) []byte {
	n := rnd.IntN(1_000_000_000)
	data, _ := json.Marshal(map[string]any{"name": "Bench deal " + strconv.Itoa(n), "amount": n % 100000, "currency": "EUR"})
	return data
}

func (b *bench) operations() []operation {
	filter := url.QueryEscape(fmt.Sprintf(`[{"field":"employee_count","op":"eq","value":%d}]`, b.value))
	customFilter := url.QueryEscape(fmt.Sprintf(`[{"field":"cfv:%s","op":"eq","value":%d}]`, b.field, b.value))
	query, _ := json.Marshal(map[string]any{"filters": []any{map[string]any{"field": "employee_count", "op": "eq", "value": b.value}}, "page_size": 25})
	d := b.raw
	page := func(rnd *mrand.Rand) []any { return []any{b.workspace, d.archived(), 26} }
	declaredArgs := func(rnd *mrand.Rand) []any { return []any{b.workspace, d.archived(), 26, b.value} }
	deepAt := any(b.deepAt)
	if d.pg != nil {
		deepAt, _ = time.Parse(time.RFC3339Nano, b.deepAt)
	}
	return []operation{
		{name: "get",
			api: b.httpOp(200, func(rnd *mrand.Rand) (*http.Request, error) {
				return b.apiReq("GET", "/v1/companies/"+b.pick(rnd), nil, false)
			}),
			floor: b.httpOp(200, func(rnd *mrand.Rand) (*http.Request, error) { return b.floorReq("GET", "/companies/"+b.pick(rnd), nil) }),
			raw:   b.rawOp(1, func() string { return d.getSQL("rec_companies") }, func(rnd *mrand.Rand) []any { return []any{b.workspace, b.pick(rnd)} })},
		{name: "first_page",
			api: b.httpOp(200, func(*mrand.Rand) (*http.Request, error) {
				return b.apiReq("GET", "/v1/companies?page_size=25", nil, false)
			}),
			floor: b.httpOp(200, func(*mrand.Rand) (*http.Request, error) { return b.floorReq("GET", "/companies?limit=25", nil) }),
			raw:   b.rawOp(26, func() string { return d.pageSQL("rec_companies", false) }, page)},
		{name: "deep_page",
			api: b.httpOp(200, func(*mrand.Rand) (*http.Request, error) {
				return b.apiReq("GET", "/v1/companies?page_size=25&cursor="+url.QueryEscape(b.deepAPI), nil, false)
			}),
			floor: b.httpOp(200, func(*mrand.Rand) (*http.Request, error) {
				return b.floorReq("GET", "/companies?limit=25&"+b.deepFloorQuery(), nil)
			}),
			raw: b.rawOp(26, func() string { return d.pageSQL("rec_companies", true) }, func(*mrand.Rand) []any {
				return []any{b.workspace, d.archived(), 26, deepAt, b.deepID}
			})},
		{name: "filter_declared",
			api: b.httpOp(200, func(*mrand.Rand) (*http.Request, error) {
				return b.apiReq("GET", "/v1/companies?page_size=25&filter="+filter, nil, false)
			}),
			floor: b.httpOp(200, func(*mrand.Rand) (*http.Request, error) {
				return b.floorReq("GET", "/companies?limit=25&column=employee_count&value="+strconv.Itoa(b.value), nil)
			}),
			raw: b.rawOp(-1, func() string { return d.filterSQL("rec_companies", "employee_count") }, declaredArgs)},
		{name: "filter_custom",
			api: b.httpOp(200, func(*mrand.Rand) (*http.Request, error) {
				return b.apiReq("GET", "/v1/companies?page_size=25&filter="+customFilter, nil, false)
			}),
			floor: b.httpOp(200, func(*mrand.Rand) (*http.Request, error) {
				return b.floorReq("GET", "/companies?limit=25&custom_field="+b.field+"&value="+strconv.Itoa(b.value), nil)
			}),
			raw: b.rawOp(-1, func() string { return d.customSQL("rec_companies") }, func(*mrand.Rand) []any {
				return []any{b.workspace, d.archived(), 26, b.field, strconv.Itoa(b.value)}
			})},
		{name: "query",
			api: b.httpOp(200, func(*mrand.Rand) (*http.Request, error) { return b.apiReq("POST", "/v1/companies/query", query, false) }),
			floor: b.httpOp(200, func(*mrand.Rand) (*http.Request, error) {
				return b.floorReq("GET", "/companies?limit=25&column=employee_count&value="+strconv.Itoa(b.value), nil)
			}),
			raw: b.rawOp(-1, func() string { return d.filterSQL("rec_companies", "employee_count") }, declaredArgs)},
		{name: "create",
			api: b.httpOp(201, func(rnd *mrand.Rand) (*http.Request, error) {
				return b.apiReq("POST", "/v1/companies", companyBody(rnd, true), true)
			}),
			floor: b.httpOp(201, func(rnd *mrand.Rand) (*http.Request, error) {
				return b.floorReq("POST", "/companies", companyBody(rnd, false))
			}),
			raw: b.rawWrite("rec_companies", false)},
		{name: "update",
			api: b.httpOp(200, func(rnd *mrand.Rand) (*http.Request, error) {
				return b.apiReq("PATCH", "/v1/companies/"+b.pick(rnd), []byte(`{"employee_count":`+strconv.Itoa(rnd.IntN(50000))+`}`), true)
			}),
			floor: b.httpOp(200, func(rnd *mrand.Rand) (*http.Request, error) {
				return b.floorReq("PATCH", "/companies/"+b.pick(rnd), []byte(`{"employee_count":`+strconv.Itoa(rnd.IntN(50000))+`}`))
			}),
			raw: b.rawWrite("rec_companies", true)},
		{name: "batch_create",
			api: b.httpOp(200, func(rnd *mrand.Rand) (*http.Request, error) {
				items := make([]json.RawMessage, batchRows)
				for i := range items {
					items[i] = json.RawMessage(`{"op":"create","body":` + string(companyBody(rnd, false)) + `}`)
				}
				body, _ := json.Marshal(map[string]any{"mode": "atomic", "items": items})
				return b.apiReq("POST", "/v1/companies/batch", body, true)
			}),
			raw: b.rawBatch("rec_companies")},
		{name: "create_hooked",
			api: b.httpOp(201, func(rnd *mrand.Rand) (*http.Request, error) {
				return b.apiReq("POST", "/v1/deals", dealBody(rnd), true)
			}),
			floor: b.httpOp(201, func(rnd *mrand.Rand) (*http.Request, error) { return b.floorReq("POST", "/deals", dealBody(rnd)) }),
			raw:   b.rawWrite("rec_deals", false)},
	}
}

// batchRows is how many records one batch_create operation writes: the API's largest batch.
const batchRows = 100

// rawBatch inserts batchRows rows of table with one multi-row statement returning them, as the batch
// create writes them.
func (b *bench) rawBatch(table string) func(c int) worker {
	return func(int) worker {
		d := b.raw
		cols := []string{"name", "industry", "employee_count", "domain", "billing_city", "billing_country"}
		stmt := d.insertManySQL(table, cols, batchRows)
		return func(ctx context.Context, rnd *mrand.Rand) error {
			now := d.now()
			args := make([]any, 0, batchRows*(len(cols)+4))
			for range batchRows {
				n := rnd.IntN(1_000_000_000)
				args = append(args, b.workspace, store.NewID(), now, now, "Bench company "+strconv.Itoa(n), "software", n%50000,
					"b"+domainRun+"-"+strconv.FormatInt(domainSeq.Add(1), 36)+".example.com", "Berlin", "DE")
			}
			rows := 0
			if err := d.query(ctx, stmt, args, func([]string, []any) error { rows++; return nil }); err != nil {
				return err
			}
			if rows != batchRows {
				return fmt.Errorf("raw batch: %d rows", rows)
			}
			return nil
		}
	}
}

// rawWrite inserts a row of table (or, with update, changes one) with one statement.
func (b *bench) rawWrite(table string, update bool) func(c int) worker {
	return func(int) worker {
		d := b.raw
		var stmt string
		switch {
		case update:
			stmt = d.updateSQL(table, []string{"employee_count"})
		case table == "rec_deals":
			stmt = d.insertSQL(table, []string{"name", "amount", "currency"})
		default:
			stmt = d.insertSQL(table, []string{"name", "industry", "employee_count", "domain", "billing_city", "billing_country"})
		}
		return func(ctx context.Context, rnd *mrand.Rand) error {
			n := rnd.IntN(1_000_000_000)
			now := d.now()
			var args []any
			switch {
			case update:
				args = []any{b.workspace, b.pick(rnd), now, n % 50000}
			case table == "rec_deals":
				args = []any{b.workspace, store.NewID(), now, now, "Bench deal " + strconv.Itoa(n), n % 100000, "EUR"}
			default:
				args = []any{b.workspace, store.NewID(), now, now, "Bench company " + strconv.Itoa(n), "software", n % 50000,
					"b" + domainRun + "-" + strconv.FormatInt(domainSeq.Add(1), 36) + ".example.com", "Berlin", "DE"}
			}
			rows := 0
			if err := d.query(ctx, stmt, args, func([]string, []any) error { rows++; return nil }); err != nil {
				return err
			}
			if rows != 1 {
				return fmt.Errorf("raw write: %d rows", rows)
			}
			return nil
		}
	}
}

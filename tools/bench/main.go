// Command bench is the performance harness of Workspace Records: it starts recordsd on PostgreSQL (and,
// with -backend, on SQLite), seeds a million companies with a custom field through `recordsctl seed`,
// and drives the API at several concurrencies next to a bare net/http + driver + encoding/json server
// over the same tables (the floor) and raw SQL, printing one table of throughput, latency and ratios,
// with the server's memory and goroutines after each phase, and checking the targets of
// docs/benchmarks.md. The change feed of issue 22 is measured too (feed.go): create with the outbox on
// against a recordsd started with --events=false, and webhook delivery to a receiver in the harness.
//
//	go run ./tools/bench [-backend postgres|sqlite|both] [-rows 1000000] [-duration 4s] [-out FILE]
//	go run ./tools/bench soak [-duration 10m] [-warmup 1m] [-out FILE]   (soak.go)
//
// It needs the binaries `make build plugins` makes (bin/recordsd, bin/recordsctl, plugins/bin) and, for
// PostgreSQL, a server at -postgres (default RECORDS_TEST_POSTGRES or postgres://postgres@127.0.0.1:5432/postgres)
// where it creates and drops its own database.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"runtime"
	"strconv"
	"strings"
	"time"
)

type options struct {
	backends []string
	rows     int
	warmup   time.Duration
	duration time.Duration
	conc     []int
	rounds   int
	postgres string
	bin      string
	plugins  string
	defs     string
	out      string
	keep     bool
	only     map[string]bool
	profile  string
	repeats  int    // rounds of interleaved slices per phase
	redis    string // Redis of the multi-replica configuration ("" : not run)
	keys     int    // keys used round-robin in that configuration
}

func main() {
	if len(os.Args) > 1 && os.Args[1] == "floor" {
		if err := runFloor(os.Args[2:]); err != nil {
			fmt.Fprintln(os.Stderr, "bench floor:", err)
			os.Exit(1)
		}
		return
	}
	if len(os.Args) > 1 && os.Args[1] == "soak" {
		o, err := parseSoakFlags(os.Args[2:])
		if err != nil {
			fmt.Fprintln(os.Stderr, "bench soak:", err)
			os.Exit(2)
		}
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
		err = runSoak(ctx, o)
		stop()
		if err != nil {
			fmt.Fprintln(os.Stderr, "bench soak:", err)
			os.Exit(1)
		}
		return
	}
	o, err := parseFlags(os.Args[1:])
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, o); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

func parseFlags(args []string) (options, error) {
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	backend := fs.String("backend", "postgres", "postgres, sqlite or both")
	rows := fs.Int("rows", 1_000_000, "companies to seed")
	warmup := fs.Duration("warmup", time.Second, "unmeasured warm-up of each phase")
	duration := fs.Duration("duration", 4*time.Second, "measured time of each phase")
	conc := fs.String("concurrency", "1,8,32", "client concurrencies")
	rounds := fs.Int("rounds", 3, "closing rounds of c=32 traffic whose memory must stay flat")
	admin := os.Getenv("RECORDS_TEST_POSTGRES")
	if admin == "" {
		admin = "postgres://postgres@127.0.0.1:5432/postgres"
	}
	pg := fs.String("postgres", admin, "PostgreSQL server where the bench creates its database")
	bin := fs.String("bin", "bin", "directory with recordsd and recordsctl")
	plugins := fs.String("plugins", "plugins/bin", "plugins directory")
	defs := fs.String("definitions", "definitions", "definitions directory")
	out := fs.String("out", "", "also write the report (Markdown) to this file")
	keep := fs.Bool("keep", false, "keep the database after the run")
	only := fs.String("only", "", "comma-separated operations to run (default: all): get, first_page, deep_page, filter_declared, filter_custom, query, create, update, batch_create, create_hooked, create_events_off (create against a --events=false recordsd in the create phase's rounds), deliveries (webhook delivery throughput and lag), reads (expand, count=estimated and filters across relations against the same lists without them), admin (a console session against a key, the admin audit trail against a record list), jobs (an import and an export job of -rows companies against a raw COPY)")
	profile := fs.String("profile", "", "write a CPU profile of recordsd during each API phase into this directory")
	repeats := fs.Int("repeats", 4, "rounds per phase: each target runs duration/repeats per round, interleaved with the others")
	redis := os.Getenv("RECORDS_TEST_REDIS")
	if redis == "" {
		redis = "redis://127.0.0.1:6379/0"
	}
	redisURL := fs.String("redis", redis, "Redis of the multi-replica configuration (limits and quota in Redis, many keys); empty: not run")
	keys := fs.Int("keys", 1000, "keys used round-robin in the Redis configuration")
	if err := fs.Parse(args); err != nil {
		return options{}, err
	}
	o := options{rows: *rows, warmup: *warmup, duration: *duration, rounds: *rounds, postgres: *pg, bin: *bin,
		plugins: *plugins, defs: *defs, out: *out, keep: *keep, only: map[string]bool{}, profile: *profile,
		repeats: *repeats, redis: *redisURL, keys: *keys}
	if o.repeats < 1 || o.keys < 1 {
		return o, errors.New("-repeats and -keys must be at least 1")
	}
	switch *backend {
	case "postgres", "sqlite":
		o.backends = []string{*backend}
	case "both":
		o.backends = []string{"postgres", "sqlite"}
	default:
		return o, fmt.Errorf("-backend %q: want postgres, sqlite or both", *backend)
	}
	for _, s := range strings.Split(*conc, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < 1 || n > 1024 {
			return o, fmt.Errorf("-concurrency %q: want positive integers", *conc)
		}
		o.conc = append(o.conc, n)
	}
	if o.rows < 1000 {
		return o, errors.New("-rows must be at least 1000")
	}
	for _, s := range strings.Split(*only, ",") {
		if s = strings.TrimSpace(s); s != "" {
			o.only[s] = true
		}
	}
	return o, nil
}

func run(ctx context.Context, o options) error {
	for _, name := range []string{o.bin + "/recordsd", o.bin + "/recordsctl"} {
		if _, err := os.Stat(name); err != nil {
			return fmt.Errorf("%s missing: run make build plugins first", name)
		}
	}
	var reports []*report
	for _, backend := range o.backends {
		rep, err := runBackend(ctx, o, backend)
		if err != nil {
			return fmt.Errorf("%s: %w", backend, err)
		}
		reports = append(reports, rep)
	}
	text := render(o, reports, runtime.NumCPU())
	fmt.Print(text)
	if o.out != "" {
		if err := os.WriteFile(o.out, []byte(text), 0o644); err != nil {
			return fmt.Errorf("write %s: %w", o.out, err)
		}
	}
	return nil
}

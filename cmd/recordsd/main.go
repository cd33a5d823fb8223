// Command recordsd serves the Workspace Records API v1.
//
//	recordsd serve [--addr 127.0.0.1:8080] [--db URL] [--definitions DIR] [--plugins DIR] [--dev]
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/workspace-records/records/runtime/config"
	"github.com/workspace-records/records/runtime/server"
)

// started is when the process began, for the start-to-serving time the "serving" line reports.
var started = time.Now()

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "recordsd:", err)
		os.Exit(1)
	}
}

const usage = "usage: recordsd serve [--addr 127.0.0.1:8080] [--db URL] [--definitions DIR] [--plugins DIR] [--dev]"

func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	if len(args) == 0 || args[0] != "serve" {
		if len(args) > 0 && (args[0] == "-h" || args[0] == "--help" || args[0] == "help") {
			fmt.Fprintln(stdout, usage)
			return nil
		}
		return errors.New(usage)
	}
	cfg := config.Default(getenv)
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&cfg.Addr, "addr", cfg.Addr, "listen address")
	fs.StringVar(&cfg.DB, "db", cfg.DB, "database: sqlite:PATH or postgres://… (env RECORDS_DB)")
	fs.StringVar(&cfg.DefinitionsDir, "definitions", cfg.DefinitionsDir, "definitions directory")
	fs.StringVar(&cfg.PluginsDir, "plugins", cfg.PluginsDir, "plugins directory (env RECORDS_PLUGINS)")
	fs.DurationVar(&cfg.PluginTimeout, "plugin-timeout", cfg.PluginTimeout, "deadline of one plugin hook call (env RECORDS_PLUGIN_TIMEOUT)")
	fs.BoolVar(&cfg.Dev, "dev", false, "on an empty database, create a demo workspace and print its key")
	fs.StringVar(&cfg.DevKeyFile, "dev-key-file", cfg.DevKeyFile, "where --dev writes the demo key")
	fs.StringVar(&cfg.PublicURL, "public-url", cfg.PublicURL, "the address clients use, http(s)://host[:port], for the OpenAPI server and openapi_url (env RECORDS_PUBLIC_URL; default: the caller's Host)")
	fs.StringVar(&cfg.TrustedProxies, "trusted-proxies", cfg.TrustedProxies, "reverse proxies (IPs/CIDRs) whose X-Forwarded-For is believed (env RECORDS_TRUSTED_PROXIES)")
	fs.StringVar(&cfg.Redis, "redis", cfg.Redis, "redis://host:port/db to share rate limits between servers (env RECORDS_REDIS)")
	debugAddr := fs.String("debug-addr", getenv("RECORDS_DEBUG_ADDR"), "serve Go runtime profiles (net/http/pprof) on this separate address; off when empty (env RECORDS_DEBUG_ADDR)")
	logLevel := fs.String("log-level", "info", "debug, info, warn or error")
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q\n%s", fs.Arg(0), usage)
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(*logLevel)); err != nil {
		return fmt.Errorf("--log-level: %w", err)
	}
	log := slog.New(slog.NewJSONHandler(stderr, &slog.HandlerOptions{Level: level}))

	srv, err := server.New(ctx, cfg, log)
	if err != nil {
		return err
	}
	defer srv.Close()
	if cfg.Dev {
		demo, err := server.SeedDemo(ctx, srv.Backend(), time.Now())
		if err != nil {
			return err
		}
		if demo != nil {
			if err := server.WriteKeyFile(cfg.DevKeyFile, demo.Secret); err != nil {
				return err
			}
			log.Info("demo workspace created", "workspace", demo.Workspace, "records", demo.Records, "key_file", cfg.DevKeyFile)
			fmt.Fprintf(stdout, "Demo workspace %s with %d records.\nAPI key (also in %s): %s\n", demo.Workspace, demo.Records, cfg.DevKeyFile, demo.Secret)
		} else if data, err := os.ReadFile(cfg.DevKeyFile); err == nil {
			fmt.Fprintf(stdout, "Database already initialised; demo key in %s: %s", cfg.DevKeyFile, data)
		}
	}
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return fmt.Errorf("listen %s: %w", cfg.Addr, err)
	}
	if *debugAddr != "" {
		dln, err := net.Listen("tcp", *debugAddr)
		if err != nil {
			return fmt.Errorf("listen %s: %w", *debugAddr, err)
		}
		go serveDebug(ctx, dln, log)
		log.Info("serving profiles", "addr", dln.Addr().String())
	}
	log.Info("serving", "addr", ln.Addr().String(), "db", redact(cfg.DB), "started_in", time.Since(started).String())
	fmt.Fprintf(stdout, "Serving the Workspace Records API on http://%s/v1\n", ln.Addr())
	return srv.Serve(ctx, ln)
}

// redact hides a password in a database URL.
func redact(db string) string {
	if u, err := parseURL(db); err == nil && u != "" {
		return u
	}
	return db
}

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
	"path/filepath"
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

const usage = "usage: recordsd serve [--config FILE] [--addr 127.0.0.1:8080] [--db URL] [--definitions DIR] [--plugins DIR] [--dev]\n" +
	"(recordsd serve -h lists every flag; each has a RECORDS_* variable and a config file key, see README.md)"

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
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), usage)
		fs.PrintDefaults()
	}
	config.Bind(fs, &cfg, config.Recordsd)
	if err := fs.Parse(args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q\n%s", fs.Arg(0), usage)
	}
	if err := cfg.Validate(); err != nil {
		return err
	}
	log := newLogger(cfg, stderr)
	file := cfg.File()
	if abs, err := filepath.Abs(file); file != "" && err == nil {
		file = abs
	}
	log.Info("configuration", "file", file, "config", cfg)

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
	if cfg.DebugAddr != "" {
		dln, err := net.Listen("tcp", cfg.DebugAddr)
		if err != nil {
			ln.Close()
			return fmt.Errorf("listen %s: %w", cfg.DebugAddr, err)
		}
		go serveDebug(ctx, dln, log)
		log.Info("serving profiles", "addr", dln.Addr().String())
	}
	log.Info("serving", "addr", ln.Addr().String(), "db", config.RedactURL(cfg.DB), "started_in", time.Since(started).String())
	fmt.Fprintf(stdout, "Serving the Workspace Records API on http://%s/v1\n", ln.Addr())
	return srv.Serve(ctx, ln)
}

// newLogger returns the logger of cfg.LogLevel and cfg.LogFormat (checked by Validate) on w.
func newLogger(cfg config.Config, w io.Writer) *slog.Logger {
	var level slog.Level
	_ = level.UnmarshalText([]byte(cfg.LogLevel))
	opts := &slog.HandlerOptions{Level: level}
	if cfg.LogFormat == "text" {
		return slog.New(slog.NewTextHandler(w, opts))
	}
	return slog.New(slog.NewJSONHandler(w, opts))
}

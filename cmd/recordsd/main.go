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
	"strings"
	"syscall"
	"time"

	"github.com/workspace-records/records/engine/suggest"
	"github.com/workspace-records/records/runtime/config"
	"github.com/workspace-records/records/runtime/server"
	"github.com/workspace-records/records/runtime/version"
)

// started is when the process began, for the start-to-serving time the "serving" line reports.
var started = time.Now()

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "recordsd:", err)
		os.Exit(suggest.ExitCode(err))
	}
}

const usage = "usage: recordsd serve [--config FILE] [--addr 127.0.0.1:8080] [--db URL] [--definitions DIR] [--plugins DIR] [--dev]\n" +
	"(recordsd help serve lists every flag; each has a RECORDS_* variable and a config file key, see README.md)"

// overview is the text of recordsd help.
const overview = `recordsd serves the Workspace Records API v1.

usage: recordsd COMMAND [FLAGS]

commands:
  serve           migrate the database and serve the API (recordsd help serve lists the flags)
  help [COMMAND]  this text, or a command's flags
  version         the version of recordsd (also --version)

Errors go to stderr: exit status 2 for a mistake in the command line (unknown command or flag), 1 for
any other error.
`

// commandWords are recordsd's commands, for suggestions.
var commandWords = []string{"serve", "help", "version"}

func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return suggest.Usage(errors.New("no command given\n" + usage))
	}
	switch args[0] {
	case "serve":
		return serve(ctx, args[1:], getenv, stdout, stderr)
	case "help", "-h", "-help", "--help":
		switch {
		case len(args) == 1:
			_, err := fmt.Fprint(stdout, overview)
			return err
		case len(args) == 2 && args[1] == "serve":
			return serve(ctx, []string{"--help"}, getenv, stdout, stderr)
		case len(args) == 2 && (args[1] == "help" || args[1] == "version"):
			_, err := fmt.Fprint(stdout, overview)
			return err
		}
		return suggest.Usage(fmt.Errorf("%s\n%s", unknown(args[1]), usage))
	case "version", "-version", "--version":
		if len(args) > 1 {
			return suggest.Usage(errors.New("usage: recordsd version"))
		}
		_, err := fmt.Fprintln(stdout, "recordsd "+version.Get().String())
		return err
	}
	if strings.HasPrefix(args[0], "-") {
		return suggest.Usage(fmt.Errorf("flag %s before the command: the flags are serve's (recordsd serve %s …)\n%s", args[0], args[0], usage))
	}
	return suggest.Usage(fmt.Errorf("%s\n%s", unknown(args[0]), usage))
}

// unknown is the error text for an unknown command, naming the nearest one.
func unknown(name string) string {
	if near, ok := suggest.Nearest(name, commandWords); ok {
		return fmt.Sprintf("unknown command %q (did you mean %q?)", name, near)
	}
	return fmt.Sprintf("unknown command %q", name)
}

// serve is recordsd serve: it returns when ctx is done and the server has shut down.
func serve(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	cfg := config.Default(getenv)
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	config.Bind(fs, &cfg, config.Recordsd)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fs.SetOutput(stdout)
			fmt.Fprintln(stdout, usage)
			fmt.Fprintln(stdout, "\nflags:")
			fs.PrintDefaults()
			return nil
		}
		return suggest.Usage(fmt.Errorf("%w\n%s", suggest.Flag(fs, err), usage))
	}
	if fs.NArg() > 0 {
		return suggest.Usage(fmt.Errorf("unexpected argument %q\n%s", fs.Arg(0), usage))
	}
	if err := cfg.Validate(); err != nil {
		return err
	}
	// The log (an access-log line per request) is written by a goroutine of its own, coalescing lines.
	logOut := newLogWriter(stderr)
	defer logOut.Close()
	log := newLogger(cfg, logOut)
	file := cfg.File()
	if abs, err := filepath.Abs(file); file != "" && err == nil {
		file = abs
	}
	log.Info("configuration", "version", version.Get().Version, "file", file, "config", cfg)

	// From here a SIGHUP reloads the definitions (once serving) instead of ending the process.
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	srv, err := server.New(ctx, cfg, log)
	if err != nil {
		return err
	}
	defer srv.Close()
	var demoAdmin string // the demo's admin, who gets a console sign-in link once serving
	if cfg.Dev {
		demo, err := server.SeedDemo(ctx, srv.Backend(), time.Now())
		if err != nil {
			return err
		}
		if demo != nil {
			if err := server.WriteKeyFile(cfg.DevKeyFile, demo.Secret); err != nil {
				return err
			}
			demoAdmin = demo.Admin
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
	if demoAdmin != "" {
		if token, _, err := srv.Backend().Directory.CreateSignInLink(ctx, demoAdmin, 0); err == nil {
			fmt.Fprintf(stdout, "Web console, signed in as the demo admin (the link works once, for 15 minutes; recordsctl console-link makes more): http://%s/console#sign-in=%s\n", ln.Addr(), token)
		} else {
			log.Warn("demo console link", "err", err)
		}
	}
	go reloadOnHangup(ctx, hup, srv, log)
	return srv.Serve(ctx, ln)
}

// reloadOnHangup reads the definitions directory again on each SIGHUP (server.Reload): applied and
// served at once when valid, refused and reported (log, metric, /readyz) when not, the server serving on
// either way.
func reloadOnHangup(ctx context.Context, hup <-chan os.Signal, srv *server.Server, log *slog.Logger) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-hup:
		}
		log.Info("SIGHUP: reading the definitions directory again")
		if err := srv.Reload(ctx); err != nil {
			log.Error("SIGHUP: definitions not applied", "err", err)
		}
	}
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

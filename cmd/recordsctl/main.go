// Command recordsctl administers a Workspace Records database: migrations, workspaces, members, roles,
// keys, custom fields, data models, bulk import, synthetic data, the audit trail, webhook endpoints and
// definition linting.
// See README.md for every command, or run recordsctl help.
//
//	recordsctl [--db URL] [--definitions DIR] [--json] COMMAND [ARGS]
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/workspace-records/records/engine/suggest"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "recordsctl:", err)
		os.Exit(suggest.ExitCode(err))
	}
}

// env is what a command runs with.
type env struct {
	ctx    context.Context
	stdout io.Writer
	stderr io.Writer
	json   bool
}

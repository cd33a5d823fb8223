package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/workspace-records/records/engine/suggest"
	"github.com/workspace-records/records/runtime/config"
)

// globalFlags registers the flags every command accepts, before or after the command name: recordsctl's
// settings from the table of runtime/config (--db, --definitions, --plugins, --plugin-timeout and
// --config; the server's settings in a shared config file are accepted and ignored) and --json.
func globalFlags(fs *flag.FlagSet, cfg *config.Config, asJSON *bool) {
	config.Bind(fs, cfg, config.Recordsctl)
	fs.BoolVar(asJSON, "json", *asJSON, "print one JSON object on stdout")
}

// parse parses args with fs, allowing flags and positional arguments in any order. It returns the
// positional arguments, or the problems of the config file and RECORDS_* environment the settings were
// read from (also for the commands that never open the database, which would otherwise not see them).
func parse(fs *flag.FlagSet, args []string) ([]string, error) {
	fs.SetOutput(io.Discard)
	var pos []string
	for len(args) > 0 {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, err
			}
			return nil, suggest.Usage(suggest.Flag(fs, err))
		}
		rest := fs.Args()
		if len(rest) == 0 {
			break
		}
		if rest[0] == "--" {
			pos = append(pos, rest[1:]...)
			break
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
	if err := config.LoadErr(fs); err != nil {
		return nil, err
	}
	return pos, nil
}

// need checks that a command got n positional arguments: a usage error otherwise.
func need(pos []string, n int, usage string) error {
	if len(pos) != n {
		return suggest.Usage(fmt.Errorf("usage: recordsctl %s", usage))
	}
	return nil
}

// required checks that flag name was given: a usage error otherwise.
func required(name, value string) error {
	if strings.TrimSpace(value) == "" {
		return suggest.Usage(fmt.Errorf("--%s is required", name))
	}
	return nil
}

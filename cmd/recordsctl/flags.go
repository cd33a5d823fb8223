package main

import (
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/workspace-records/records/runtime/config"
)

// globalFlags registers the flags every command accepts, before or after the command name.
func globalFlags(fs *flag.FlagSet, cfg *config.Config, asJSON *bool) {
	fs.StringVar(&cfg.DB, "db", cfg.DB, "database: sqlite:PATH or postgres://… (env RECORDS_DB)")
	fs.StringVar(&cfg.DefinitionsDir, "definitions", cfg.DefinitionsDir, "definitions directory")
	fs.StringVar(&cfg.PluginsDir, "plugins", cfg.PluginsDir, "plugins directory")
	fs.BoolVar(asJSON, "json", *asJSON, "print one JSON object on stdout")
}

// parse parses args with fs, allowing flags and positional arguments in any order. It returns the
// positional arguments.
func parse(fs *flag.FlagSet, args []string) ([]string, error) {
	fs.SetOutput(io.Discard)
	var pos []string
	for len(args) > 0 {
		if err := fs.Parse(args); err != nil {
			return nil, err
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
	return pos, nil
}

func need(pos []string, n int, usage string) error {
	if len(pos) != n {
		return fmt.Errorf("usage: recordsctl %s", usage)
	}
	return nil
}

func required(name, value string) error {
	if strings.TrimSpace(value) == "" {
		return fmt.Errorf("--%s is required", name)
	}
	return nil
}

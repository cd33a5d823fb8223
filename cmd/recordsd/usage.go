package main

import (
	"errors"
	"flag"
	"fmt"
	"strings"

	"github.com/workspace-records/records/engine/suggest"
)

// usageError is a mistake in the command line itself: an unknown command or flag, an argument serve
// does not take, a flag's value of the wrong form. recordsd exits with status 2 for it (as Go's flag
// package does), 1 for every other error.
type usageError struct{ err error }

func (u usageError) Error() string { return u.err.Error() }
func (u usageError) Unwrap() error { return u.err }

func usageErr(err error) error { return usageError{err} }

// exitCode is the exit status for err: 0 for none, 2 for a usage error, 1 otherwise.
func exitCode(err error) int {
	var u usageError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &u):
		return 2
	}
	return 1
}

// flagErr rewords the flag package's error for an undefined flag to name the nearest defined one.
func flagErr(fs *flag.FlagSet, err error) error {
	name, ok := strings.CutPrefix(err.Error(), "flag provided but not defined: -")
	if !ok {
		return err
	}
	var defined []string
	fs.VisitAll(func(f *flag.Flag) { defined = append(defined, f.Name) })
	if near, ok := suggest.Nearest(name, defined); ok {
		return fmt.Errorf("unknown flag --%s (did you mean --%s?)", name, near)
	}
	return fmt.Errorf("unknown flag --%s", name)
}

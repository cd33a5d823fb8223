// Package suggest words the error for a name that is not one of a known set (a command, a plan, a role,
// a resource, a type): it lists the valid names and, when one is a likely typo away, names it, as
// `did you mean "growth"?`.
// It also holds the command line's own mistakes shared by recordsd and recordsctl: Usage marks one
// (exit status 2, ExitCode) and Flag words an unknown flag.
package suggest

import (
	"errors"
	"flag"
	"fmt"
	"slices"
	"strings"
)

// Nearest returns the valid name closest to name, when it is close enough to be what was meant: a case
// difference, or an edit distance (insertions, deletions, substitutions and swaps of neighbours) of at
// most a third of the name's length, at least 1. Ties go to the name that sorts first.
func Nearest(name string, valid []string) (string, bool) {
	lower := strings.ToLower(name)
	best, bestD := "", -1
	for _, v := range valid {
		d := distance(lower, strings.ToLower(v))
		if bestD < 0 || d < bestD || d == bestD && v < best {
			best, bestD = v, d
		}
	}
	if bestD < 0 || bestD > max(1, len([]rune(name))/3) {
		return "", false
	}
	return best, true
}

// Unknown describes name, which is not one of valid, for an error message: `unknown plan "grwth" (did
// you mean "growth"? valid: enterprise, free, growth, pro, scale)`. The valid names are listed sorted.
func Unknown(kind, name string, valid []string) string {
	sorted := slices.Sorted(slices.Values(valid))
	sorted = slices.Compact(sorted)
	var hint string
	if near, ok := Nearest(name, sorted); ok {
		hint = fmt.Sprintf("did you mean %q? ", near)
	}
	if len(sorted) == 0 {
		return fmt.Sprintf("unknown %s %q (there are none)", kind, name)
	}
	return fmt.Sprintf("unknown %s %q (%svalid: %s)", kind, name, hint, strings.Join(sorted, ", "))
}

// distance is the optimal string alignment distance between a and b: the Levenshtein distance with a
// swap of two neighbouring characters counting as one edit ("wrokspace" is one edit from "workspace").
func distance(a, b string) int {
	s, t := []rune(a), []rune(b)
	prev2 := make([]int, len(t)+1)
	prev := make([]int, len(t)+1)
	cur := make([]int, len(t)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(s); i++ {
		cur[0] = i
		for j := 1; j <= len(t); j++ {
			cost := 1
			if s[i-1] == t[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && s[i-1] == t[j-2] && s[i-2] == t[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(t)]
}

// usageError is a mistake in the command line itself: an unknown command or flag, a missing or extra
// argument, a flag's value of the wrong form. recordsd and recordsctl exit with status 2 for it (as Go's
// flag package does), 1 for every other error.
type usageError struct{ err error }

func (u usageError) Error() string { return u.err.Error() }
func (u usageError) Unwrap() error { return u.err }

// Usage marks err as a mistake in the command line (ExitCode 2).
func Usage(err error) error { return usageError{err} }

// ExitCode is the exit status for err: 0 for none, 2 for a usage error, 1 otherwise.
func ExitCode(err error) int {
	var u usageError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &u):
		return 2
	}
	return 1
}

// Flag rewords the flag package's error for an undefined flag of fs to name the nearest defined one.
func Flag(fs *flag.FlagSet, err error) error {
	name, ok := strings.CutPrefix(err.Error(), "flag provided but not defined: -")
	if !ok {
		return err
	}
	var defined []string
	fs.VisitAll(func(f *flag.Flag) { defined = append(defined, f.Name) })
	if near, ok := Nearest(name, defined); ok {
		return fmt.Errorf("unknown flag --%s (did you mean --%s?)", name, near)
	}
	return fmt.Errorf("unknown flag --%s", name)
}

package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/workspace-records/records/engine/suggest"
	"github.com/workspace-records/records/runtime/config"
	"github.com/workspace-records/records/runtime/version"
)

const (
	shortUsage = "usage: recordsctl [--db URL] [--definitions DIR] [--json] COMMAND [ARGS]\n" + seeHelp
	seeHelp    = `run "recordsctl help" for the commands, "recordsctl help COMMAND" for one command's flags`
)

// overview is the text of recordsctl help: every command with what it does, and the global flags.
func overview(root *flag.FlagSet) string {
	var b strings.Builder
	b.WriteString(`recordsctl administers a Workspace Records database: migrations, workspaces, members, roles, API
keys, custom fields, data models, bulk import, synthetic data, the audit trail, webhook endpoints and the
definitions.

usage: recordsctl [--db URL] [--definitions DIR] [--json] COMMAND [ARGS]

commands:
`)
	cmds := commands()
	w := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	for _, n := range commandNames() {
		fmt.Fprintf(w, "  %s\t%s\n", n, cmds[n].summary)
	}
	fmt.Fprintf(w, "  help [COMMAND]\t%s\n", "this text, or a command's usage and flags")
	fmt.Fprintf(w, "  version\t%s\n", "the version of recordsctl (also --version)")
	w.Flush()
	b.WriteString("\nglobal flags (before or after the command; each also has a RECORDS_* variable, see README.md):\n")
	b.WriteString(flagDefaults(root))
	b.WriteString(`
With --json a command prints one JSON object on stdout. Errors go to stderr: exit status 2 for a
mistake in the command line (unknown command or flag, missing argument), 1 for any other error.
"recordsctl help COMMAND" or "recordsctl COMMAND --help" shows a command's usage and flags.
`)
	return b.String()
}

// flagDefaults is fs.PrintDefaults as a string.
func flagDefaults(fs *flag.FlagSet) string {
	var b strings.Builder
	out := fs.Output()
	fs.SetOutput(&b)
	fs.PrintDefaults()
	fs.SetOutput(out)
	return b.String()
}

// commandNames returns every command's name, sorted.
func commandNames() []string {
	cmds := commands()
	names := make([]string, 0, len(cmds))
	for n := range cmds {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// help answers recordsctl help [COMMAND].
func help(stdout io.Writer, root *flag.FlagSet, args []string) error {
	if len(args) == 0 || len(args) == 1 && (args[0] == "help" || args[0] == "version") {
		_, err := fmt.Fprint(stdout, overview(root))
		return err
	}
	if len(args) == 1 && groups[args[0]] {
		_, err := fmt.Fprint(stdout, groupHelp(args[0]))
		return err
	}
	name, rest, err := commandName(args)
	if err != nil {
		return err
	}
	if len(rest) > 0 {
		return suggest.Usage(fmt.Errorf("usage: recordsctl help [COMMAND]"))
	}
	cmd := commands()[name]
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	var asJSON bool
	cfg := config.Default(func(string) string { return "" })
	globalFlags(fs, &cfg, &asJSON)
	cmd.flags(fs)
	_, err = fmt.Fprint(stdout, commandHelp(name, cmd, fs))
	return err
}

// commandHelp is the text of recordsctl help COMMAND and recordsctl COMMAND --help.
func commandHelp(name string, cmd command, fs *flag.FlagSet) string {
	var b strings.Builder
	fmt.Fprintf(&b, "usage: recordsctl %s\n\n%s.\n", cmd.usage, capitalize(cmd.summary))
	if h := helps[name]; h != "" {
		b.WriteString("\n" + h + "\n")
	}
	b.WriteString("\nflags (the global ones too, before or after the command):\n")
	b.WriteString(flagDefaults(fs))
	return b.String()
}

// groupHelp lists the commands of a group (recordsctl help key, recordsctl key --help).
func groupHelp(group string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "the %s commands:\n", group)
	cmds := commands()
	w := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	for _, n := range commandNames() {
		if strings.HasPrefix(n, group+" ") {
			fmt.Fprintf(w, "  %s\t%s\n", n, cmds[n].summary)
		}
	}
	w.Flush()
	fmt.Fprintf(&b, "\n\"recordsctl help %s SUBCOMMAND\" shows a command's usage and flags.\n", group)
	return b.String()
}

func capitalize(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// commandName reads the command's name (one word, or two for a group) off the front of args and returns
// it with the arguments after it. An unknown name is a usage error that names the nearest command.
func commandName(args []string) (string, []string, error) {
	cmds := commands()
	name, rest := args[0], args[1:]
	if groups[name] {
		if len(rest) == 0 || strings.HasPrefix(rest[0], "-") {
			if len(rest) > 0 && (rest[0] == "-h" || rest[0] == "--help" || rest[0] == "-help") {
				return "", nil, helpShown{groupHelp(name)}
			}
			return "", nil, suggest.Usage(fmt.Errorf("%q needs a subcommand\n%s", name, groupHelp(name)))
		}
		name, rest = name+" "+rest[0], rest[1:]
	}
	if _, ok := cmds[name]; ok {
		return name, rest, nil
	}
	return "", nil, suggest.Usage(unknownCommand(args))
}

// helpShown is what commandName returns for "recordsctl GROUP --help": the help to print, no error.
type helpShown struct{ text string }

func (h helpShown) Error() string { return h.text }

// unknownCommand is the error for args, which start with no command: it names the nearest one.
func unknownCommand(args []string) error {
	names := commandNames()
	if groups[args[0]] {
		var sub []string
		for _, n := range names {
			if strings.HasPrefix(n, args[0]+" ") {
				sub = append(sub, n)
			}
		}
		return errors.New(suggest.Unknown("command", args[0]+" "+args[1], sub))
	}
	if len(args) > 1 {
		if near, ok := suggest.Nearest(args[0]+" "+args[1], names); ok {
			return fmt.Errorf("unknown command %q (did you mean %q?)\n%s", args[0]+" "+args[1], near, seeHelp)
		}
	}
	words := []string{"help", "version"}
	for _, n := range names {
		words = append(words, strings.Fields(n)[0])
	}
	if near, ok := suggest.Nearest(args[0], words); ok {
		return fmt.Errorf("unknown command %q (did you mean %q?)\n%s", args[0], near, seeHelp)
	}
	return fmt.Errorf("unknown command %q\n%s", args[0], seeHelp)
}

// printVersion prints the version of recordsctl: one line, or {"version", "revision", …} with --json.
func printVersion(e *env) error {
	v := version.Get()
	return e.emit(v, "recordsctl "+v.String())
}

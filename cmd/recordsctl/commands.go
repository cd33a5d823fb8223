package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/workspace-records/records/runtime/auth"
	"github.com/workspace-records/records/runtime/config"
	"github.com/workspace-records/records/runtime/server"
)

type command struct {
	usage string
	flags func(fs *flag.FlagSet) func(e *env, cfg config.Config, pos []string) error
}

var groups = map[string]bool{"audit": true, "field": true, "role": true, "workspace": true, "member": true, "key": true, "model": true, "notification": true, "records": true, "definitions": true, "plugins": true}

func commands() map[string]command {
	return map[string]command{
		"migrate":              {"migrate [--allow-destructive]", cmdMigrate},
		"workspace create":     {"workspace create --name N --plan P", cmdWorkspaceCreate},
		"workspace set-plan":   {"workspace set-plan ID --plan P", cmdWorkspaceSetPlan},
		"workspace set-limits": {"workspace set-limits ID [--key-per-minute N] [--key-per-hour N] [--workspace-per-minute N] [--monthly-quota N]", cmdWorkspaceSetLimits},
		"member create":        {"member create --workspace W --email E --role R [--department D]", cmdMemberCreate},
		"member set-role":      {"member set-role ID --role R", cmdMemberSetRole},
		"member deactivate":    {"member deactivate ID", memberAction((*auth.Directory).Deactivate)},
		"member activate":      {"member activate ID", memberAction((*auth.Directory).Activate)},
		"member mfa-verified":  {"member mfa-verified ID", memberAction((*auth.Directory).MFAVerified)},
		"key create":           {"key create --member M --access read|write [--resources r1,r2] [--allow-ip CIDR,…] [--expires-in DURATION]", cmdKeyCreate},
		"key revoke":           {"key revoke ID", cmdKeyRevoke},
		"key list":             {"key list --workspace W", cmdKeyList},
		"key reminders":        {"key reminders --workspace W", cmdKeyReminders},
		"member notifications": {"member notifications ID --key-expiry on|off", cmdMemberNotifications},
		"notification list":    {notificationListUsage, cmdNotificationList},
		"notification read":    {"notification read ID", cmdNotificationRead},
		"model create":         {"model create --workspace W --name N --fields-file F", cmdModelCreate},
		"model update":         {"model update ID [--name N] [--fields-file F]", cmdModelUpdate},
		"role create":          {"role create --workspace W --file ROLES.yaml", cmdRolePut(true)},
		"field create":         {"field create --workspace W --resource R --key K --type T [--required] [--options a,b] [--label L] [--description D] [--target R]", cmdFieldCreate},
		"field update":         {"field update ID [--label L] [--description D] [--required true|false] [--options a,b]", cmdFieldUpdate(nil)},
		"field archive":        {"field archive ID", cmdFieldUpdate(ptrBool(true))},
		"field restore":        {"field restore ID", cmdFieldUpdate(ptrBool(false))},
		"role update":          {"role update --workspace W --file ROLES.yaml", cmdRolePut(false)},
		"records import":       {"records import --workspace W --resource R --file F.jsonl [--model-id M]", cmdImport},
		"audit list":           {auditListUsage, cmdAuditList},
		"seed":                 {"seed --workspace W --resource R --count N [--model-id M]", cmdSeed},
		"definitions lint":     {"definitions lint [DIR]", cmdLint},
		"plugins list":         {"plugins list [--plugins DIR]", cmdPluginsList},
		"openapi":              {"openapi [--server-url URL]", cmdOpenAPI},
	}
}

// helps explain commands beyond their usage line, for COMMAND --help.
var helps = map[string]string{"audit list": auditListHelp}

func usage() string {
	cmds := commands()
	names := make([]string, 0, len(cmds))
	for n := range cmds {
		names = append(names, n)
	}
	sort.Strings(names)
	var b strings.Builder
	b.WriteString("usage: recordsctl [--db URL] [--definitions DIR] [--json] COMMAND\ncommands:\n")
	for _, n := range names {
		b.WriteString("  " + cmds[n].usage + "\n")
	}
	return strings.TrimRight(b.String(), "\n")
}

func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	cfg := config.Default(getenv)
	asJSON := false
	root := flag.NewFlagSet("recordsctl", flag.ContinueOnError)
	root.SetOutput(io.Discard)
	globalFlags(root, &cfg, &asJSON)
	if err := root.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(stdout, usage())
			return nil
		}
		return fmt.Errorf("%w\n%s", err, usage())
	}
	rest := root.Args()
	if len(rest) == 0 {
		return errors.New(usage())
	}
	name := rest[0]
	rest = rest[1:]
	if groups[name] && len(rest) > 0 {
		name += " " + rest[0]
		rest = rest[1:]
	}
	cmd, ok := commands()[name]
	if !ok {
		return fmt.Errorf("unknown command %q\n%s", name, usage())
	}
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	globalFlags(fs, &cfg, &asJSON)
	runCmd := cmd.flags(fs)
	pos, err := parse(fs, rest)
	if errors.Is(err, flag.ErrHelp) {
		fmt.Fprintln(stdout, "usage: recordsctl "+cmd.usage)
		if h := helps[name]; h != "" {
			fmt.Fprintln(stdout, "\n"+h)
		}
		fmt.Fprintln(stdout, "\nflags:")
		fs.SetOutput(stdout)
		fs.PrintDefaults()
		return nil
	}
	if err != nil {
		return fmt.Errorf("%s: %w\nusage: recordsctl %s", name, err, cmd.usage)
	}
	e := &env{ctx: ctx, stdout: stdout, stderr: stderr, json: asJSON}
	if err := runCmd(e, cfg, pos); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	return nil
}

// emit prints v as one JSON object with --json, or text otherwise.
func (e *env) emit(v any, text string) error {
	if e.json {
		enc := json.NewEncoder(e.stdout)
		return enc.Encode(v)
	}
	_, err := fmt.Fprintln(e.stdout, text)
	return err
}

func withBackend(e *env, cfg config.Config, fn func(b *server.Backend) error) error {
	b, err := server.Open(e.ctx, cfg)
	if err != nil {
		return err
	}
	defer b.Close()
	return fn(b)
}

func cmdMigrate(fs *flag.FlagSet) func(*env, config.Config, []string) error {
	destructive := fs.Bool("allow-destructive", false, "also drop columns no definition declares")
	return func(e *env, cfg config.Config, pos []string) error {
		if err := need(pos, 0, "migrate [--allow-destructive]"); err != nil {
			return err
		}
		cfg.AllowDestructive = *destructive
		return withBackend(e, cfg, func(b *server.Backend) error {
			pending := b.Migration.Pending
			if pending == nil {
				pending = []string{}
			}
			text := fmt.Sprintf("applied %d change(s)", len(b.Migration.Applied))
			for _, l := range b.Migration.Applied {
				text += "\n  " + l
			}
			for _, l := range pending {
				text += "\n  pending: " + l
			}
			return e.emit(map[string]any{"applied": b.Migration.Applied, "pending": pending}, text)
		})
	}
}

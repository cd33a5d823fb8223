package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"

	"github.com/workspace-records/records/engine/suggest"
	"github.com/workspace-records/records/runtime/config"
	"github.com/workspace-records/records/runtime/members"
	"github.com/workspace-records/records/runtime/server"
	"github.com/workspace-records/records/runtime/store"
)

type command struct {
	usage   string // the command line, after "recordsctl "
	summary string // what it does, one line
	flags   func(fs *flag.FlagSet) func(e *env, cfg config.Config, pos []string) error
}

// groups are the first words of two-word commands (workspace create, key list, …).
var groups = map[string]bool{"audit": true, "field": true, "role": true, "workspace": true, "member": true, "key": true, "model": true, "notification": true, "records": true, "definitions": true, "plugins": true, "webhook": true, "jobs": true}

func commands() map[string]command {
	return map[string]command{
		"migrate":               {"migrate [--allow-destructive]", "create the database (a SQLite file too) or bring its tables in line with the definitions", cmdMigrate},
		"workspace create":      {"workspace create --name N --plan P", "create a workspace on a plan of plans.yaml", cmdWorkspaceCreate},
		"workspace set-plan":    {"workspace set-plan ID --plan P", "move a workspace to another plan", cmdWorkspaceSetPlan},
		"workspace list":        {"workspace list", "list every workspace", cmdWorkspaceList},
		"workspace set-limits":  {"workspace set-limits ID [--key-per-minute N] [--key-per-hour N] [--workspace-per-minute N] [--monthly-quota N]", "override a workspace's plan limits", cmdWorkspaceSetLimits},
		"console-link":          {consoleLinkUsage, "print a one-time sign-in link to the web console for a member", cmdConsoleLink},
		"member create":         {"member create --workspace W --email E --role R [--department D]", "add a member to a workspace", cmdMemberCreate},
		"member list":           {"member list --workspace W", "list the members of a workspace", cmdMemberList},
		"member set-role":       {"member set-role ID --role R", "change a member's role", cmdMemberSetRole},
		"member deactivate":     {"member deactivate ID", "deactivate a member, revoke their keys and end their console sessions", memberAction((*members.Service).Deactivate)},
		"member activate":       {"member activate ID", "activate a member again (their revoked keys stay revoked, their console sessions ended)", memberAction((*members.Service).Activate)},
		"member mfa-verified":   {"member mfa-verified ID", "record that a member verified a new MFA factor now", memberAction((*members.Service).MFAVerified)},
		"member notifications":  {"member notifications ID --key-expiry on|off", "turn a member's key-expiry reminders on or off", cmdMemberNotifications},
		"notification list":     {notificationListUsage, "list a workspace's notifications (key expiry reminders), newest first", cmdNotificationList},
		"notification read":     {"notification read ID", "mark a notification read", cmdNotificationRead},
		"key create":            {"key create --member M --access read|write|admin [--resources r1,r2] [--allow-ip CIDR,…] [--expires-in DURATION]", "create an API key for a member; prints its secret once", cmdKeyCreate},
		"key revoke":            {"key revoke ID", "revoke an API key", cmdKeyRevoke},
		"key list":              {"key list --workspace W", "list a workspace's API keys, newest first", cmdKeyList},
		"key reminders":         {"key reminders --workspace W", "list the key-expiry reminders of a workspace", cmdKeyReminders},
		"model create":          {"model create --workspace W --name N --fields-file F", "create a custom data model", cmdModelCreate},
		"model list":            {"model list --workspace W", "list the custom data models of a workspace", cmdModelList},
		"model update":          {"model update ID [--name N] [--fields-file F]", "rename a data model or replace its fields", cmdModelUpdate},
		"role list":             {"role list --workspace W", "list the roles a member of a workspace may have: built-in and the workspace's", cmdRoleList},
		"role create":           {"role create --workspace W --file ROLES.yaml", "create workspace roles from a file in the format of roles.yaml", cmdRolePut(true)},
		"role update":           {"role update --workspace W --file ROLES.yaml", "replace workspace roles from a file in the format of roles.yaml", cmdRolePut(false)},
		"field create":          {"field create --workspace W --resource R --key K --type T [--required] [--unique] [--options a,b] [--label L] [--description D] [--target R]", "add a custom field to a resource of a workspace", cmdFieldCreate},
		"field list":            {"field list --workspace W [--resource R]", "list the custom fields of a workspace, archived ones too", cmdFieldList},
		"field update":          {"field update ID [--label L] [--description D] [--required true|false] [--options a,b]", "change a custom field", cmdFieldUpdate(nil)},
		"field archive":         {"field archive ID", "archive a custom field (its values are kept)", cmdFieldUpdate(ptrBool(true))},
		"field restore":         {"field restore ID", "restore an archived custom field", cmdFieldUpdate(ptrBool(false))},
		"records import":        {"records import --workspace W --resource R --file F.jsonl [--model-id M]", "import records from a JSON Lines file (the admin path)", cmdImport},
		"audit list":            {auditListUsage, "list the audit trail of a workspace, newest first", cmdAuditList},
		"webhook create":        {webhookCreateUsage, "add a webhook endpoint to a workspace; prints its signing secret once", cmdWebhookCreate},
		"webhook list":          {webhookListUsage, "list a workspace's webhook endpoints (never their secrets), oldest first", cmdWebhookList},
		"webhook update":        {webhookUpdateUsage, "change a webhook endpoint's URL, description, event types, resources or state", cmdWebhookUpdate},
		"webhook rotate-secret": {webhookRotateUsage, "give a webhook endpoint a new signing secret, printed once; the old one signs too during the overlap", cmdWebhookRotateSecret},
		"webhook delete":        {webhookDeleteUsage, "delete a webhook endpoint with its pending deliveries and delivery log", cmdWebhookDelete},
		"webhook deliveries":    {webhookDeliveriesUsage, "list a webhook endpoint's deliveries, newest first, with their attempts", cmdWebhookDeliveries},
		"webhook replay":        {webhookReplayUsage, "send a webhook endpoint one event, or every event after a sequence, again", cmdWebhookReplay},
		"jobs import":           {jobsImportUsage, "import a CSV or NDJSON file through a bulk job the servers run, acting as an API key; follows it to its end", cmdJobsImport},
		"jobs export":           {jobsExportUsage, "export a list through a bulk job the servers run, acting as an API key; writes the file once it completes", cmdJobsExport},
		"jobs list":             {"jobs list --workspace W [--limit N]", "list a workspace's bulk jobs, newest first", cmdJobsList},
		"jobs show":             {"jobs show ID [--watch]", "show a bulk job; --watch follows it to its end with its progress", cmdJobsShow},
		"jobs cancel":           {"jobs cancel ID", "cancel a bulk job: an open or queued one at once, a running one at its next chunk", cmdJobsCancel},
		"jobs failures":         {"jobs failures ID [--limit N] [--after ROW]", "list an import's failed rows: row number, status and problems", cmdJobsFailures},
		"jobs download":         {"jobs download ID [--out F]", "write a completed export's file to F, or to standard output", cmdJobsDownload},
		"seed":                  {"seed --workspace W --resource R --count N [--model-id M] [--seed S] [--batch B]", "create synthetic records", cmdSeed},
		"definitions lint":      {"definitions lint [DIR]", "check the definitions and report every problem", cmdLint},
		"definitions diff":      {"definitions diff [DIR]", "show what applying the definitions in DIR would change: the definitions and the database migration", cmdDefinitionsApply(true)},
		"definitions apply":     {"definitions apply [DIR] [--allow-destructive]", "validate and apply the definitions in DIR: every server on the database serves them within seconds, without a restart", cmdDefinitionsApply(false)},
		"definitions versions":  {"definitions versions [--limit N]", "list the definitions versions applied to the database, newest first, and the one served", cmdDefinitionsVersions},
		"plugins list":          {"plugins list [--plugins DIR]", "start the plugins the definitions name and report their health", cmdPluginsList},
		"openapi":               {"openapi [--server-url URL]", "print the OpenAPI document recordsd serves", cmdOpenAPI},
	}
}

// helps explain commands beyond their usage line, for COMMAND --help.
var helps = map[string]string{"audit list": auditListHelp, "webhook create": webhookCreateHelp,
	"webhook deliveries": webhookDeliveriesHelp, "webhook replay": webhookReplayHelp, "console-link": consoleLinkHelp,
	"jobs import": jobsHelp, "jobs export": jobsHelp, "jobs show": jobsHelp}

func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	cfg := config.Default(getenv)
	asJSON := false
	root := flag.NewFlagSet("recordsctl", flag.ContinueOnError)
	root.SetOutput(io.Discard)
	globalFlags(root, &cfg, &asJSON)
	showVersion := root.Bool("version", false, "print the version of recordsctl and exit")
	if err := root.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			_, err := fmt.Fprint(stdout, overview(root))
			return err
		}
		return suggest.Usage(fmt.Errorf("%w\n%s", suggest.Flag(root, err), seeHelp))
	}
	rest := root.Args()
	e := &env{ctx: ctx, stdout: stdout, stderr: stderr, json: asJSON}
	if *showVersion {
		return printVersion(e)
	}
	if len(rest) == 0 {
		return suggest.Usage(errors.New("no command given\n" + shortUsage))
	}
	switch rest[0] {
	case "help":
		return help(stdout, root, rest[1:])
	case "version":
		if len(rest) > 1 {
			return suggest.Usage(errors.New("usage: recordsctl version"))
		}
		return printVersion(e)
	}
	name, rest, err := commandName(rest)
	var shown helpShown
	if errors.As(err, &shown) {
		_, err := fmt.Fprint(stdout, shown.text)
		return err
	}
	if err != nil {
		return err
	}
	cmd := commands()[name]
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	globalFlags(fs, &cfg, &asJSON)
	runCmd := cmd.flags(fs)
	pos, err := parse(fs, rest)
	if errors.Is(err, flag.ErrHelp) {
		_, err := fmt.Fprint(stdout, commandHelp(name, cmd, fs))
		return err
	}
	if err != nil {
		return fmt.Errorf("%s: %w\nusage: recordsctl %s", name, err, cmd.usage)
	}
	e.json = asJSON
	cfg.DB = store.WithConnectTimeout(cfg.DB, store.CommandConnectTimeout)
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

// withBackend runs fn with the database open: a missing SQLite file is an error, the migration runs only
// when the database is not current, and the JSON Schemas are not compiled.
func withBackend(e *env, cfg config.Config, fn func(b *server.Backend) error) error {
	return withBackendFor(e, cfg, server.AdminOptions{}, fn)
}

// withBackendFor is withBackend for a command that needs more of the backend (opts).
func withBackendFor(e *env, cfg config.Config, opts server.AdminOptions, fn func(b *server.Backend) error) error {
	b, err := server.OpenAdmin(e.ctx, cfg, opts)
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
		return withBackendFor(e, cfg, server.AdminOptions{Migrate: true}, func(b *server.Backend) error {
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

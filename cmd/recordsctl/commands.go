package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/workspace-records/records/engine/catalog"
	"github.com/workspace-records/records/engine/model"
	"github.com/workspace-records/records/runtime/auth"
	"github.com/workspace-records/records/runtime/config"
	"github.com/workspace-records/records/runtime/customfields"
	"github.com/workspace-records/records/runtime/plugins"
	"github.com/workspace-records/records/runtime/records"
	"github.com/workspace-records/records/runtime/server"
)

type command struct {
	usage string
	flags func(fs *flag.FlagSet) func(e *env, cfg config.Config, pos []string) error
}

var groups = map[string]bool{"audit": true, "field": true, "role": true, "workspace": true, "member": true, "key": true, "model": true, "records": true, "definitions": true, "plugins": true}

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

func cmdWorkspaceCreate(fs *flag.FlagSet) func(*env, config.Config, []string) error {
	name := fs.String("name", "", "workspace name")
	plan := fs.String("plan", "", "plan name from plans.yaml")
	return func(e *env, cfg config.Config, pos []string) error {
		if err := errors.Join(need(pos, 0, "workspace create --name N --plan P"), required("name", *name), required("plan", *plan)); err != nil {
			return err
		}
		return withBackend(e, cfg, func(b *server.Backend) error {
			w, err := b.Directory.CreateWorkspace(e.ctx, *name, *plan)
			if err != nil {
				return err
			}
			return e.emit(map[string]any{"id": w.ID, "name": w.Name, "plan": w.Plan}, w.ID)
		})
	}
}

func cmdWorkspaceSetPlan(fs *flag.FlagSet) func(*env, config.Config, []string) error {
	plan := fs.String("plan", "", "plan name")
	return func(e *env, cfg config.Config, pos []string) error {
		if err := errors.Join(need(pos, 1, "workspace set-plan ID --plan P"), required("plan", *plan)); err != nil {
			return err
		}
		return withBackend(e, cfg, func(b *server.Backend) error {
			if err := b.Directory.SetPlan(e.ctx, pos[0], *plan); err != nil {
				return err
			}
			return e.emit(map[string]any{"id": strings.ToLower(pos[0]), "plan": *plan}, pos[0]+" "+*plan)
		})
	}
}

type optInt struct{ v **int64 }

func (o optInt) String() string { return "" }
func (o optInt) Set(s string) error {
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 {
		return errors.New("must be a whole number >= 0")
	}
	*o.v = &n
	return nil
}

func cmdWorkspaceSetLimits(fs *flag.FlagSet) func(*env, config.Config, []string) error {
	var l auth.Limits
	fs.Var(optInt{&l.KeyPerMinute}, "key-per-minute", "requests per key per minute")
	fs.Var(optInt{&l.KeyPerHour}, "key-per-hour", "requests per key per hour")
	fs.Var(optInt{&l.WorkspacePerMinute}, "workspace-per-minute", "requests per workspace per minute")
	fs.Var(optInt{&l.MonthlyQuota}, "monthly-quota", "requests per workspace per month")
	return func(e *env, cfg config.Config, pos []string) error {
		if err := need(pos, 1, "workspace set-limits ID [--key-per-minute N] [--key-per-hour N] [--workspace-per-minute N] [--monthly-quota N]"); err != nil {
			return err
		}
		return withBackend(e, cfg, func(b *server.Backend) error {
			if err := b.Directory.SetLimits(e.ctx, pos[0], l); err != nil {
				return err
			}
			return e.emit(map[string]any{"id": strings.ToLower(pos[0])}, pos[0])
		})
	}
}

func cmdMemberCreate(fs *flag.FlagSet) func(*env, config.Config, []string) error {
	ws := fs.String("workspace", "", "workspace id")
	email := fs.String("email", "", "member email")
	role := fs.String("role", "", "role from roles.yaml")
	dept := fs.String("department", "", "entity_departments id")
	return func(e *env, cfg config.Config, pos []string) error {
		if err := errors.Join(need(pos, 0, "member create --workspace W --email E --role R [--department D]"), required("workspace", *ws), required("email", *email), required("role", *role)); err != nil {
			return err
		}
		return withBackend(e, cfg, func(b *server.Backend) error {
			m, err := b.Directory.CreateMember(e.ctx, *ws, auth.MemberProfile{Email: *email, Role: *role, Department: *dept})
			if err != nil {
				return err
			}
			return e.emit(map[string]any{"id": m.ID, "email": m.Email, "role": m.Role}, m.ID)
		})
	}
}

func cmdMemberSetRole(fs *flag.FlagSet) func(*env, config.Config, []string) error {
	role := fs.String("role", "", "role from roles.yaml")
	return func(e *env, cfg config.Config, pos []string) error {
		if err := errors.Join(need(pos, 1, "member set-role ID --role R"), required("role", *role)); err != nil {
			return err
		}
		return withBackend(e, cfg, func(b *server.Backend) error {
			if err := b.Directory.SetRole(e.ctx, pos[0], *role); err != nil {
				return err
			}
			return e.emit(map[string]any{"id": strings.ToLower(pos[0]), "role": *role}, pos[0])
		})
	}
}

func memberAction(act func(*auth.Directory, context.Context, string) error) func(*flag.FlagSet) func(*env, config.Config, []string) error {
	return func(fs *flag.FlagSet) func(*env, config.Config, []string) error {
		return func(e *env, cfg config.Config, pos []string) error {
			if err := need(pos, 1, fs.Name()+" ID"); err != nil {
				return err
			}
			return withBackend(e, cfg, func(b *server.Backend) error {
				if err := act(b.Directory, e.ctx, pos[0]); err != nil {
					return err
				}
				return e.emit(map[string]any{"id": strings.ToLower(pos[0])}, pos[0])
			})
		}
	}
}

// parseLifetime reads a Go duration, also accepting a number of days ("90d").
func parseLifetime(s string) (time.Duration, error) {
	if d, ok := strings.CutSuffix(s, "d"); ok {
		n, err := strconv.Atoi(d)
		if err != nil || n <= 0 {
			return 0, fmt.Errorf("--expires-in %q: want a duration like 720h or 90d", s)
		}
		return time.Duration(n) * 24 * time.Hour, nil
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("--expires-in %q: want a duration like 720h or 90d", s)
	}
	return v, nil
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

func cmdKeyCreate(fs *flag.FlagSet) func(*env, config.Config, []string) error {
	member := fs.String("member", "", "owner member id")
	access := fs.String("access", "", "read or write")
	resources := fs.String("resources", "", "comma-separated resource allowlist (default: all)")
	allowIP := fs.String("allow-ip", "", "comma-separated IP/CIDR allowlist (default: any)")
	expires := fs.String("expires-in", "90d", "lifetime, at most one year (e.g. 720h, 90d)")
	return func(e *env, cfg config.Config, pos []string) error {
		if err := errors.Join(need(pos, 0, "key create --member M --access read|write [--resources r1,r2] [--allow-ip CIDR,…] [--expires-in DURATION]"), required("member", *member), required("access", *access)); err != nil {
			return err
		}
		life, err := parseLifetime(*expires)
		if err != nil {
			return err
		}
		return withBackend(e, cfg, func(b *server.Backend) error {
			k, secret, err := b.Directory.CreateKey(e.ctx, *member, auth.KeyOptions{Access: *access, Resources: splitList(*resources), AllowIPs: splitList(*allowIP), ExpiresIn: life})
			if err != nil {
				return err
			}
			return e.emit(map[string]any{"id": k.ID, "secret": secret, "expires_at": k.ExpiresAt.Format(time.RFC3339)},
				fmt.Sprintf("key %s (expires %s)\nsecret (shown once): %s", k.ID, k.ExpiresAt.Format(time.RFC3339), secret))
		})
	}
}

func cmdKeyRevoke(fs *flag.FlagSet) func(*env, config.Config, []string) error {
	return func(e *env, cfg config.Config, pos []string) error {
		if err := need(pos, 1, "key revoke ID"); err != nil {
			return err
		}
		return withBackend(e, cfg, func(b *server.Backend) error {
			if err := b.Directory.RevokeKey(e.ctx, pos[0]); err != nil {
				return err
			}
			return e.emit(map[string]any{"id": strings.ToLower(pos[0])}, "revoked "+pos[0])
		})
	}
}

func cmdKeyList(fs *flag.FlagSet) func(*env, config.Config, []string) error {
	ws := fs.String("workspace", "", "workspace id")
	return func(e *env, cfg config.Config, pos []string) error {
		if err := errors.Join(need(pos, 0, "key list --workspace W"), required("workspace", *ws)); err != nil {
			return err
		}
		return withBackend(e, cfg, func(b *server.Backend) error {
			keys, err := b.Directory.ListKeys(e.ctx, *ws)
			if err != nil {
				return err
			}
			var text strings.Builder
			for _, k := range keys {
				state := "active"
				if k.RevokedAt != nil {
					state = "revoked"
				} else if !time.Now().Before(k.ExpiresAt) {
					state = "expired"
				}
				fmt.Fprintf(&text, "%s  %s  %-5s  %-7s  expires %s\n", k.ID, k.Hint, k.Access, state, k.ExpiresAt.Format(time.RFC3339))
			}
			return e.emit(map[string]any{"data": keys}, strings.TrimRight(text.String(), "\n"))
		})
	}
}

func cmdModelCreate(fs *flag.FlagSet) func(*env, config.Config, []string) error {
	ws := fs.String("workspace", "", "workspace id")
	name := fs.String("name", "", "model name")
	file := fs.String("fields-file", "", "YAML or JSON file: field key -> {type, label, required, options, target}")
	return func(e *env, cfg config.Config, pos []string) error {
		if err := errors.Join(need(pos, 0, "model create --workspace W --name N --fields-file F"), required("workspace", *ws), required("name", *name), required("fields-file", *file)); err != nil {
			return err
		}
		fields, err := readModelFields(*file)
		if err != nil {
			return err
		}
		return withBackend(e, cfg, func(b *server.Backend) error {
			id, err := b.Directory.CreateModel(e.ctx, *ws, *name, fields)
			if err != nil {
				return err
			}
			return e.emit(map[string]any{"id": id}, id)
		})
	}
}

// readModelFields reads a fields file: field key -> {type, label, required, options, target}.
func readModelFields(file string) (map[string]auth.ModelField, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	fields := map[string]auth.ModelField{}
	dec := yaml.NewDecoder(strings.NewReader(string(data)))
	dec.KnownFields(true)
	if err := dec.Decode(&fields); err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("read %s: %w", file, err)
	}
	return fields, nil
}

func cmdModelUpdate(fs *flag.FlagSet) func(*env, config.Config, []string) error {
	name := fs.String("name", "", "new name")
	file := fs.String("fields-file", "", "YAML or JSON file replacing the fields")
	return func(e *env, cfg config.Config, pos []string) error {
		if err := need(pos, 1, "model update ID [--name N] [--fields-file F]"); err != nil {
			return err
		}
		var fields map[string]auth.ModelField
		if *file != "" {
			var err error
			if fields, err = readModelFields(*file); err != nil {
				return err
			}
		}
		return withBackend(e, cfg, func(b *server.Backend) error {
			if err := b.Directory.UpdateModel(e.ctx, pos[0], *name, fields); err != nil {
				return err
			}
			return e.emit(map[string]any{"id": strings.ToLower(pos[0])}, pos[0])
		})
	}
}

func resourceOf(b *server.Backend, name string) (*model.Resource, error) {
	r, ok := b.Catalog.Resource(name)
	if !ok {
		return nil, fmt.Errorf("unknown resource %q", name)
	}
	return r, nil
}

func cmdImport(fs *flag.FlagSet) func(*env, config.Config, []string) error {
	ws := fs.String("workspace", "", "workspace id")
	res := fs.String("resource", "", "resource name")
	file := fs.String("file", "", "JSON Lines file, one record body per line")
	modelID := fs.String("model-id", "", "data model id (data_model_records)")
	return func(e *env, cfg config.Config, pos []string) error {
		if err := errors.Join(need(pos, 0, "records import --workspace W --resource R --file F.jsonl"), required("workspace", *ws), required("resource", *res), required("file", *file)); err != nil {
			return err
		}
		f, err := os.Open(*file)
		if err != nil {
			return err
		}
		defer f.Close()
		var bodies []map[string]any
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for line := 1; sc.Scan(); line++ {
			text := strings.TrimSpace(sc.Text())
			if text == "" {
				continue
			}
			dec := json.NewDecoder(strings.NewReader(text))
			dec.UseNumber()
			var body map[string]any
			if err := dec.Decode(&body); err != nil || body == nil {
				return fmt.Errorf("%s:%d: not a JSON object", *file, line)
			}
			bodies = append(bodies, body)
		}
		if err := sc.Err(); err != nil {
			return fmt.Errorf("read %s: %w", *file, err)
		}
		return withBackend(e, cfg, func(b *server.Backend) error {
			r, err := resourceOf(b, *res)
			if err != nil {
				return err
			}
			a := records.Actor{Workspace: strings.ToLower(*ws)}
			if err := b.Records.CheckModel(e.ctx, r, a.Workspace, strings.ToLower(*modelID)); err != nil {
				return err
			}
			if err := workspaceExists(b, e.ctx, a.Workspace); err != nil {
				return err
			}
			n, err := b.Records.Import(e.ctx, a, r, strings.ToLower(*modelID), bodies)
			if err != nil {
				return err
			}
			return e.emit(map[string]any{"imported": n}, fmt.Sprintf("imported %d %s", n, r.Name))
		})
	}
}

func workspaceExists(b *server.Backend, ctx context.Context, id string) error {
	if _, err := b.Directory.Workspace(ctx, id); err != nil {
		return err
	}
	return nil
}

func cmdLint(fs *flag.FlagSet) func(*env, config.Config, []string) error {
	return func(e *env, cfg config.Config, pos []string) error {
		dir := cfg.DefinitionsDir
		if len(pos) > 1 {
			return errors.New("usage: recordsctl definitions lint [DIR]")
		}
		if len(pos) == 1 {
			dir = pos[0]
		}
		if _, _, err := server.LoadDefinitions(os.DirFS(dir)); err != nil {
			if e.json {
				_ = json.NewEncoder(e.stdout).Encode(map[string]any{"ok": false, "errors": strings.Split(strings.TrimPrefix(err.Error(), "definitions:\n"), "\n")})
			}
			return err
		}
		return e.emit(map[string]any{"ok": true}, "definitions in "+dir+" are valid")
	}
}

// cmdOpenAPI prints the OpenAPI document recordsd serves for the definitions, byte for byte, with
// server-url as its server address.
func cmdOpenAPI(fs *flag.FlagSet) func(*env, config.Config, []string) error {
	base := fs.String("server-url", "http://"+config.DefaultAddr, "the server address the document names (scheme and host, without /v1)")
	return func(e *env, cfg config.Config, pos []string) error {
		if err := need(pos, 0, "openapi [--server-url URL]"); err != nil {
			return err
		}
		cat, sch, err := server.LoadDefinitions(os.DirFS(cfg.DefinitionsDir))
		if err != nil {
			return err
		}
		doc, err := catalog.Encode(catalog.OpenAPI(cat, sch), catalog.ServerURL)
		if err != nil {
			return err
		}
		body := doc.Render(strings.TrimRight(*base, "/"))
		_, err = e.stdout.Write(append(body, '\n'))
		return err
	}
}

// cmdPluginsList starts the plugins the definitions name from the plugins directory, as recordsd would,
// reports each one's version, resources and health, and stops them.
func cmdPluginsList(*flag.FlagSet) func(*env, config.Config, []string) error {
	return func(e *env, cfg config.Config, pos []string) error {
		if err := need(pos, 0, "plugins list [--plugins DIR]"); err != nil {
			return err
		}
		cat, _, err := server.LoadDefinitions(os.DirFS(cfg.DefinitionsDir))
		if err != nil {
			return err
		}
		host, err := plugins.New(e.ctx, plugins.Config{Dir: cfg.PluginsDir, Timeout: cfg.PluginTimeout}, cat)
		if err != nil {
			return err
		}
		defer host.Close()
		st := host.Statuses()
		lines := make([]string, 0, len(st))
		for _, p := range st {
			health := "running"
			if !p.Running {
				health = "down: " + p.LastError
			}
			lines = append(lines, fmt.Sprintf("%s %s (%s) resources=%s %s", p.Name, p.Version, p.Path, strings.Join(p.Resources, ","), health))
		}
		if len(lines) == 0 {
			lines = append(lines, "no definition names a plugin")
		}
		return e.emit(map[string]any{"plugins": st}, strings.Join(lines, "\n"))
	}
}

func cmdRolePut(create bool) func(*flag.FlagSet) func(*env, config.Config, []string) error {
	return func(fs *flag.FlagSet) func(*env, config.Config, []string) error {
		ws := fs.String("workspace", "", "workspace id")
		file := fs.String("file", "", "YAML file in the format of definitions/roles.yaml")
		return func(e *env, cfg config.Config, pos []string) error {
			if err := errors.Join(need(pos, 0, fs.Name()+" --workspace W --file ROLES.yaml"), required("workspace", *ws), required("file", *file)); err != nil {
				return err
			}
			data, err := os.ReadFile(*file)
			if err != nil {
				return err
			}
			return withBackend(e, cfg, func(b *server.Backend) error {
				names, err := b.Directory.PutRoles(e.ctx, *ws, filepath.Base(*file), data, create)
				if err != nil {
					return err
				}
				return e.emit(map[string]any{"workspace": strings.ToLower(*ws), "roles": names}, strings.Join(names, "\n"))
			})
		}
	}
}

func cmdKeyReminders(fs *flag.FlagSet) func(*env, config.Config, []string) error {
	ws := fs.String("workspace", "", "workspace id")
	return func(e *env, cfg config.Config, pos []string) error {
		if err := errors.Join(need(pos, 0, "key reminders --workspace W"), required("workspace", *ws)); err != nil {
			return err
		}
		return withBackend(e, cfg, func(b *server.Backend) error {
			list, err := b.Directory.Reminders(e.ctx, *ws)
			if err != nil {
				return err
			}
			var text strings.Builder
			for _, r := range list {
				fmt.Fprintf(&text, "%s  key %s  %2dd before  due %s  %s %s\n", r.ID, r.KeyID, r.DaysBefore, r.DueAt.Format(time.RFC3339), r.Status, r.Detail)
			}
			return e.emit(map[string]any{"data": list}, strings.TrimRight(text.String(), "\n"))
		})
	}
}

func cmdMemberNotifications(fs *flag.FlagSet) func(*env, config.Config, []string) error {
	expiry := fs.String("key-expiry", "", "on or off: reminders 14 and 3 days before a key expires")
	return func(e *env, cfg config.Config, pos []string) error {
		if err := need(pos, 1, "member notifications ID --key-expiry on|off"); err != nil {
			return err
		}
		if *expiry != "on" && *expiry != "off" {
			return errors.New("--key-expiry must be on or off")
		}
		return withBackend(e, cfg, func(b *server.Backend) error {
			if err := b.Directory.SetKeyExpiryReminders(e.ctx, pos[0], *expiry == "on"); err != nil {
				return err
			}
			return e.emit(map[string]any{"id": strings.ToLower(pos[0]), "key_expiry_reminders": *expiry == "on"}, pos[0])
		})
	}
}

func ptrBool(b bool) *bool { return &b }

func cmdFieldCreate(fs *flag.FlagSet) func(*env, config.Config, []string) error {
	ws := fs.String("workspace", "", "workspace id")
	res := fs.String("resource", "", "resource name")
	key := fs.String("key", "", "write key (written as cf__<key>)")
	typ := fs.String("type", "", "text, long_text, integer, decimal, boolean, date, datetime, select, multi_select, email, url, phone, reference")
	req := fs.Bool("required", false, "must be given on create")
	options := fs.String("options", "", "comma-separated options (select, multi_select)")
	label := fs.String("label", "", "label")
	desc := fs.String("description", "", "description")
	target := fs.String("target", "", "target resource (reference)")
	return func(e *env, cfg config.Config, pos []string) error {
		if err := errors.Join(need(pos, 0, "field create --workspace W --resource R --key K --type T"), required("workspace", *ws), required("resource", *res), required("key", *key), required("type", *typ)); err != nil {
			return err
		}
		return withBackend(e, cfg, func(b *server.Backend) error {
			if err := workspaceExists(b, e.ctx, *ws); err != nil {
				return err
			}
			d, err := b.Custom.Create(e.ctx, *ws, customfields.Def{Resource: *res, Key: *key, Type: *typ, Required: *req, Options: splitList(*options), Label: *label, Description: *desc, Target: *target})
			if err != nil {
				return err
			}
			return e.emit(map[string]any{"id": d.ID, "key": d.Key, "filter_key": d.FilterKey(), "write_key": "cf__" + d.Key}, d.ID+"  filter key "+d.FilterKey())
		})
	}
}

func cmdFieldUpdate(archive *bool) func(*flag.FlagSet) func(*env, config.Config, []string) error {
	return func(fs *flag.FlagSet) func(*env, config.Config, []string) error {
		label := fs.String("label", "", "new label")
		desc := fs.String("description", "", "new description")
		req := fs.String("required", "", "true or false")
		options := fs.String("options", "", "comma-separated options (replaces them)")
		return func(e *env, cfg config.Config, pos []string) error {
			if err := need(pos, 1, fs.Name()+" ID"); err != nil {
				return err
			}
			c := customfields.Change{Archived: archive}
			set := map[string]bool{}
			fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
			if set["label"] {
				c.Label = label
			}
			if set["description"] {
				c.Description = desc
			}
			if set["required"] {
				v, err := strconv.ParseBool(*req)
				if err != nil {
					return errors.New("--required must be true or false")
				}
				c.Required = &v
			}
			if set["options"] {
				c.Options = splitList(*options)
			}
			return withBackend(e, cfg, func(b *server.Backend) error {
				d, err := b.Custom.Update(e.ctx, pos[0], c)
				if err != nil {
					return err
				}
				return e.emit(map[string]any{"id": d.ID, "key": d.Key, "filter_key": d.FilterKey(), "archived": d.Archived}, d.ID)
			})
		}
	}
}

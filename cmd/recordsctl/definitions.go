package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/user"
	"strings"
	"time"

	"github.com/workspace-records/records/engine/catalog"
	"github.com/workspace-records/records/engine/suggest"
	"github.com/workspace-records/records/runtime/config"
	"github.com/workspace-records/records/runtime/defset"
	"github.com/workspace-records/records/runtime/plugins"
	"github.com/workspace-records/records/runtime/server"
)

// cmdLint is definitions lint: every problem of the definitions, one a line on stderr as
// `file:line:col: path: message` (the files under DIR as given, so editors and CI annotations find
// them), then status 1; with --json also {"ok": false, "errors": [those lines], "problems": [{file,
// line, column, path, code, message}]} on stdout. Valid definitions print {"ok": true}.
func cmdLint(fs *flag.FlagSet) func(*env, config.Config, []string) error {
	return func(e *env, cfg config.Config, pos []string) error {
		dir := cfg.DefinitionsDir
		if len(pos) > 1 {
			return suggest.Usage(errors.New("usage: recordsctl definitions lint [DIR]"))
		}
		if len(pos) == 1 {
			dir = pos[0]
		}
		if st, err := os.Stat(dir); err != nil || !st.IsDir() {
			if err == nil {
				err = fmt.Errorf("%s is not a directory", dir)
			}
			if e.json {
				_ = json.NewEncoder(e.stdout).Encode(map[string]any{"ok": false, "errors": []string{err.Error()}})
			}
			return fmt.Errorf("definitions: %w", err)
		}
		_, _, err := server.LoadDefinitionsDir(dir)
		var de *server.DefinitionsError
		switch {
		case errors.As(err, &de):
			lines := de.Lines()
			if e.json {
				_ = json.NewEncoder(e.stdout).Encode(map[string]any{"ok": false, "errors": lines, "problems": lintProblems(de)})
			}
			fmt.Fprintln(e.stderr, strings.Join(lines, "\n"))
			noun := "problems"
			if len(lines) == 1 {
				noun = "problem"
			}
			return fmt.Errorf("%d %s in the definitions in %s", len(lines), noun, dir)
		case err != nil:
			if e.json {
				_ = json.NewEncoder(e.stdout).Encode(map[string]any{"ok": false, "errors": strings.Split(strings.TrimPrefix(err.Error(), "definitions:\n"), "\n")})
			}
			return err
		}
		return e.emit(map[string]any{"ok": true}, "definitions in "+dir+" are valid")
	}
}

// lintProblem is one problem in lint's --json output.
type lintProblem struct {
	File    string `json:"file"`
	Line    int    `json:"line,omitempty"`
	Column  int    `json:"column,omitempty"`
	Path    string `json:"path"`
	Code    string `json:"code"`
	Message string `json:"message"`
}

func lintProblems(de *server.DefinitionsError) []lintProblem {
	prefix := de.Prefix()
	out := make([]lintProblem, len(de.Problems))
	for i, p := range de.Problems {
		out[i] = lintProblem{File: prefix + p.File, Line: p.Line, Column: p.Column, Path: p.Field, Code: string(p.Code), Message: p.Message}
	}
	return out
}

// cmdOpenAPI prints the OpenAPI document recordsd serves for the definitions, byte for byte, with
// server-url as its server address.
func cmdOpenAPI(fs *flag.FlagSet) func(*env, config.Config, []string) error {
	base := fs.String("server-url", "http://"+config.DefaultAddr, "the server address the document names (scheme and host, without /v1)")
	return func(e *env, cfg config.Config, pos []string) error {
		if err := need(pos, 0, "openapi [--server-url URL]"); err != nil {
			return err
		}
		cat, sch, err := server.LoadDefinitionsDir(cfg.DefinitionsDir)
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
		cat, _, err := server.LoadDefinitionsDir(cfg.DefinitionsDir)
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

// cmdDefinitionsApply applies the definitions directory (or, with plan, only shows what applying it
// would do): the set is validated whole, the migration planned, destructive changes refused without
// --allow-destructive (docs/issue-25.md).
func cmdDefinitionsApply(plan bool) func(fs *flag.FlagSet) func(*env, config.Config, []string) error {
	return func(fs *flag.FlagSet) func(*env, config.Config, []string) error {
		destructive := fs.Bool("allow-destructive", false, "also apply destructive changes (a resource, field, association, role or plan removed, a column dropped)")
		return func(e *env, cfg config.Config, pos []string) error {
			verb := "apply"
			if plan {
				verb = "diff"
			}
			if len(pos) > 1 {
				return suggest.Usage(fmt.Errorf("usage: recordsctl definitions %s [DIR]", verb))
			}
			dir := cfg.DefinitionsDir
			if len(pos) == 1 {
				dir = pos[0]
			}
			by := "recordsctl"
			if u, err := user.Current(); err == nil {
				by += " (" + u.Username + ")"
			}
			set, p, err := server.ApplyDefinitions(e.ctx, cfg, dir, defset.Options{AllowDestructive: *destructive, DryRun: plan, By: by})
			if p == nil {
				if err != nil && e.json {
					_ = json.NewEncoder(e.stdout).Encode(map[string]any{"ok": false, "errors": strings.Split(strings.TrimPrefix(err.Error(), "definitions:\n"), "\n")})
				}
				return err
			}
			if e.json {
				if encErr := json.NewEncoder(e.stdout).Encode(map[string]any{"ok": err == nil, "applied": err == nil && !plan && !p.Unchanged, "plan": p}); encErr != nil {
					return encErr
				}
				return err
			}
			if _, werr := fmt.Fprint(e.stdout, planText(set, p, plan, err == nil)); werr != nil {
				return werr
			}
			return err
		}
	}
}

// planText prints a plan for people.
func planText(set *defset.Set, p *defset.Plan, dryRun, ok bool) string {
	var b strings.Builder
	from := defset.Short(p.From)
	if from == "" {
		from = "none stored"
	}
	fmt.Fprintf(&b, "definitions version %s (serving: %s)\n", set.Short(), from)
	section := func(title string, lines []string) {
		if len(lines) == 0 {
			return
		}
		fmt.Fprintf(&b, "%s:\n", title)
		for _, l := range lines {
			fmt.Fprintf(&b, "  %s\n", l)
		}
	}
	section("changes", p.Changes)
	section("migration", p.Migration)
	section("destructive (needs --allow-destructive)", p.Destructive)
	section("blocked (no apply can make these)", p.Blocked)
	switch {
	case p.Unchanged:
		b.WriteString("nothing to apply: the database serves this version\n")
	case !ok:
	case dryRun:
		b.WriteString("not applied (diff); recordsctl definitions apply applies it\n")
	default:
		fmt.Fprintf(&b, "applied: every server on this database serves version %s within seconds\n", set.Short())
	}
	return b.String()
}

// cmdDefinitionsVersions lists the stored definitions versions.
func cmdDefinitionsVersions(fs *flag.FlagSet) func(*env, config.Config, []string) error {
	limit := fs.Int("limit", 20, "how many versions to list, newest first")
	return func(e *env, cfg config.Config, pos []string) error {
		if err := need(pos, 0, "definitions versions [--limit N]"); err != nil {
			return err
		}
		if *limit < 1 || *limit > 1000 {
			return suggest.Usage(errors.New("--limit must be between 1 and 1000"))
		}
		current, versions, err := server.DefinitionsHistory(e.ctx, cfg, *limit)
		if err != nil {
			return err
		}
		type row struct {
			Version   string    `json:"version"`
			Current   bool      `json:"current"`
			AppliedAt time.Time `json:"applied_at"`
			AppliedBy string    `json:"applied_by"`
			Changes   []string  `json:"changes"`
		}
		rows := make([]row, 0, len(versions))
		lines := make([]string, 0, len(versions)+1)
		for _, v := range versions {
			rows = append(rows, row{Version: v.ID, Current: v.ID == current, AppliedAt: v.AppliedAt, AppliedBy: v.AppliedBy, Changes: v.Changes})
			mark := " "
			if v.ID == current {
				mark = "*"
			}
			lines = append(lines, fmt.Sprintf("%s %s  %s  %s  (%d changes)", mark, defset.Short(v.ID), v.AppliedAt.Format(time.RFC3339), v.AppliedBy, len(v.Changes)))
		}
		if len(lines) == 0 {
			lines = append(lines, "no definitions version stored yet (recordsd stores its directory's at its start)")
		}
		return e.emit(map[string]any{"current": current, "versions": rows}, strings.Join(lines, "\n"))
	}
}

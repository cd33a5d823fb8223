package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"

	"github.com/workspace-records/records/engine/catalog"
	"github.com/workspace-records/records/engine/suggest"
	"github.com/workspace-records/records/runtime/config"
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

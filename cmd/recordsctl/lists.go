package main

import (
	"errors"
	"flag"
	"fmt"
	"github.com/workspace-records/records/runtime/admin"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/workspace-records/records/runtime/auth"
	"github.com/workspace-records/records/runtime/config"
	"github.com/workspace-records/records/runtime/server"
)

// The list commands print `{"data": [...]}` with --json, one object per row with the same field names
// on every row (snake_case, null when unset), and otherwise a table with a header, columns aligned.

// table renders rows under header, columns aligned, or empty when there are no rows.
func table(empty string, header []string, rows [][]string) string {
	if len(rows) == 0 {
		return empty
	}
	var b strings.Builder
	w := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, strings.Join(header, "\t"))
	for _, r := range rows {
		fmt.Fprintln(w, strings.Join(r, "\t"))
	}
	w.Flush()
	return strings.TrimRight(b.String(), "\n")
}

func stamp(t time.Time) string { return t.UTC().Format(time.RFC3339) }

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func cmdWorkspaceList(fs *flag.FlagSet) func(*env, config.Config, []string) error {
	return func(e *env, cfg config.Config, pos []string) error {
		if err := need(pos, 0, "workspace list"); err != nil {
			return err
		}
		return withBackend(e, cfg, func(b *server.Backend) error {
			list, err := b.Members.ListWorkspaces(e.ctx)
			if err != nil {
				return err
			}
			rows := make([][]string, len(list))
			for i, w := range list {
				rows[i] = []string{w.ID, w.Name, w.Plan, limitsText(w.Limits), stamp(w.CreatedAt)}
			}
			return e.emit(map[string]any{"data": list}, table("no workspaces", []string{"ID", "NAME", "PLAN", "LIMITS", "CREATED_AT"}, rows))
		})
	}
}

// limitsText shows a workspace's overrides of its plan's limits, "-" when none.
func limitsText(l auth.Limits) string {
	var parts []string
	for _, p := range []struct {
		name string
		v    *int64
	}{{"key-per-minute", l.KeyPerMinute}, {"key-per-hour", l.KeyPerHour}, {"workspace-per-minute", l.WorkspacePerMinute}, {"monthly-quota", l.MonthlyQuota}} {
		if p.v != nil {
			parts = append(parts, fmt.Sprintf("%s=%d", p.name, *p.v))
		}
	}
	return orDash(strings.Join(parts, ","))
}

func cmdMemberList(fs *flag.FlagSet) func(*env, config.Config, []string) error {
	ws := fs.String("workspace", "", "workspace id")
	return func(e *env, cfg config.Config, pos []string) error {
		if err := errors.Join(need(pos, 0, "member list --workspace W"), required("workspace", *ws)); err != nil {
			return err
		}
		return withBackend(e, cfg, func(b *server.Backend) error {
			list, err := b.Members.ListMembers(e.ctx, *ws)
			if err != nil {
				return err
			}
			rows := make([][]string, len(list))
			for i, m := range list {
				state, dept := "active", "-"
				if !m.Active {
					state = "inactive"
				}
				if m.Department != nil {
					dept = *m.Department
				}
				rows[i] = []string{m.ID, m.Email, m.Role, state, dept, stamp(m.CreatedAt)}
			}
			return e.emit(map[string]any{"data": list}, table("no members", []string{"ID", "EMAIL", "ROLE", "STATE", "DEPARTMENT", "CREATED_AT"}, rows))
		})
	}
}

func cmdRoleList(fs *flag.FlagSet) func(*env, config.Config, []string) error {
	ws := fs.String("workspace", "", "workspace id")
	return func(e *env, cfg config.Config, pos []string) error {
		if err := errors.Join(need(pos, 0, "role list --workspace W"), required("workspace", *ws)); err != nil {
			return err
		}
		return withBackend(e, cfg, func(b *server.Backend) error {
			list, err := b.Members.ListRoles(e.ctx, *ws)
			if err != nil {
				return err
			}
			rows := make([][]string, len(list))
			for i, r := range list {
				source := "workspace"
				if r.Builtin {
					source = "built-in"
				}
				rows[i] = []string{r.Name, source, orDash(r.Label), orDash(strings.Join(r.Permissions, ",")), accessText(r.Resources)}
			}
			return e.emit(map[string]any{"data": list}, table("no roles", []string{"NAME", "SOURCE", "LABEL", "PERMISSIONS", "RESOURCES"}, rows))
		})
	}
}

// accessText sums up a role's access to resources: the default ("*", none when absent) and how many
// resources differ from it, as "write, except 8 read".
func accessText(resources map[string]string) string {
	def := resources["*"]
	if def == "" {
		def = "none"
	}
	count := map[string]int{}
	for r, a := range resources {
		if r != "*" && a != def {
			count[a]++
		}
	}
	var parts []string
	for _, a := range []string{"write", "read", "none"} {
		if count[a] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", count[a], a))
		}
	}
	if len(parts) == 0 {
		return def
	}
	return def + ", except " + strings.Join(parts, ", ")
}

func cmdFieldList(fs *flag.FlagSet) func(*env, config.Config, []string) error {
	ws := fs.String("workspace", "", "workspace id")
	res := fs.String("resource", "", "only the custom fields of this resource")
	return func(e *env, cfg config.Config, pos []string) error {
		if err := errors.Join(need(pos, 0, "field list --workspace W [--resource R]"), required("workspace", *ws)); err != nil {
			return err
		}
		return withBackend(e, cfg, func(b *server.Backend) error {
			if err := workspaceExists(b, e.ctx, *ws); err != nil {
				return err
			}
			if *res != "" {
				if _, err := resourceOf(b, *res); err != nil {
					return err
				}
			}
			defs, err := b.Current().Custom.List(e.ctx, *ws)
			if err != nil {
				return err
			}
			list := []admin.CustomField{}
			var rows [][]string
			for _, d := range defs {
				if *res != "" && d.Resource != *res {
					continue
				}
				f := admin.CustomFieldOf(d) // the admin API's shape, field for field
				list = append(list, f)
				state := "active"
				if d.Archived {
					state = "archived"
				}
				typ := d.Type
				if d.Target != "" {
					typ += " → " + d.Target
				}
				rows = append(rows, []string{d.ID, d.Resource, d.Key, typ, fmt.Sprint(d.Required), state, f.FilterKey})
			}
			return e.emit(map[string]any{"data": list}, table("no custom fields", []string{"ID", "RESOURCE", "KEY", "TYPE", "REQUIRED", "STATE", "FILTER_KEY"}, rows))
		})
	}
}

func cmdModelList(fs *flag.FlagSet) func(*env, config.Config, []string) error {
	ws := fs.String("workspace", "", "workspace id")
	return func(e *env, cfg config.Config, pos []string) error {
		if err := errors.Join(need(pos, 0, "model list --workspace W"), required("workspace", *ws)); err != nil {
			return err
		}
		return withBackend(e, cfg, func(b *server.Backend) error {
			list, err := b.Current().Custom.ListModels(e.ctx, *ws)
			if err != nil {
				return err
			}
			rows := make([][]string, len(list))
			for i, m := range list {
				keys := make([]string, 0, len(m.Fields))
				for k := range m.Fields {
					keys = append(keys, k)
				}
				sort.Strings(keys)
				rows[i] = []string{m.ID, m.Name, orDash(strings.Join(keys, ",")), stamp(m.CreatedAt)}
			}
			return e.emit(map[string]any{"data": list}, table("no data models", []string{"ID", "NAME", "FIELDS", "CREATED_AT"}, rows))
		})
	}
}

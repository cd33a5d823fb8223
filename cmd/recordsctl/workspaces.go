package main

import (
	"context"
	"errors"
	"flag"
	"strconv"
	"strings"

	"github.com/workspace-records/records/runtime/auth"
	"github.com/workspace-records/records/runtime/config"
	"github.com/workspace-records/records/runtime/members"
	"github.com/workspace-records/records/runtime/server"
)

func cmdWorkspaceCreate(fs *flag.FlagSet) func(*env, config.Config, []string) error {
	name := fs.String("name", "", "workspace name")
	plan := fs.String("plan", "", "plan name from plans.yaml")
	return func(e *env, cfg config.Config, pos []string) error {
		if err := errors.Join(need(pos, 0, "workspace create --name N --plan P"), required("name", *name), required("plan", *plan)); err != nil {
			return err
		}
		return withBackend(e, cfg, func(b *server.Backend) error {
			w, err := b.Members.CreateWorkspace(e.ctx, *name, *plan)
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
			if err := b.Members.SetPlan(e.ctx, pos[0], *plan); err != nil {
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
			if err := b.Members.SetLimits(e.ctx, pos[0], l); err != nil {
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
			m, err := b.Members.CreateMember(e.ctx, *ws, members.MemberProfile{Email: *email, Role: *role, Department: *dept})
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
			if err := b.Members.SetRole(e.ctx, pos[0], *role); err != nil {
				return err
			}
			return e.emit(map[string]any{"id": strings.ToLower(pos[0]), "role": *role}, pos[0])
		})
	}
}

func memberAction(act func(*members.Service, context.Context, string) error) func(*flag.FlagSet) func(*env, config.Config, []string) error {
	return func(fs *flag.FlagSet) func(*env, config.Config, []string) error {
		return func(e *env, cfg config.Config, pos []string) error {
			if err := need(pos, 1, fs.Name()+" ID"); err != nil {
				return err
			}
			return withBackend(e, cfg, func(b *server.Backend) error {
				if err := act(b.Members, e.ctx, pos[0]); err != nil {
					return err
				}
				return e.emit(map[string]any{"id": strings.ToLower(pos[0])}, pos[0])
			})
		}
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
			if err := b.Notices.SetKeyExpiryReminders(e.ctx, pos[0], *expiry == "on"); err != nil {
				return err
			}
			return e.emit(map[string]any{"id": strings.ToLower(pos[0]), "key_expiry_reminders": *expiry == "on"}, pos[0])
		})
	}
}

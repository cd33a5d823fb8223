package main

import (
	"errors"
	"flag"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/workspace-records/records/runtime/auth"
	"github.com/workspace-records/records/runtime/config"
	"github.com/workspace-records/records/runtime/server"
)

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
	access := fs.String("access", "", "read or write (data keys), or admin (the admin API; the owner needs api.manage)")
	resources := fs.String("resources", "", "comma-separated resource allowlist (default: all)")
	allowIP := fs.String("allow-ip", "", "comma-separated IP/CIDR allowlist (default: any)")
	expires := fs.String("expires-in", "90d", "lifetime, at most one year (e.g. 720h, 90d)")
	return func(e *env, cfg config.Config, pos []string) error {
		if err := errors.Join(need(pos, 0, "key create --member M --access read|write|admin [--resources r1,r2] [--allow-ip CIDR,…] [--expires-in DURATION]"), required("member", *member), required("access", *access)); err != nil {
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
			if err := workspaceExists(b, e.ctx, *ws); err != nil {
				return err
			}
			keys, err := b.Directory.ListKeys(e.ctx, *ws)
			if err != nil {
				return err
			}
			rows := make([][]string, len(keys))
			for i, k := range keys {
				state := "active"
				if k.RevokedAt != nil {
					state = "revoked"
				} else if !time.Now().Before(k.ExpiresAt) {
					state = "expired"
				}
				used := "never"
				if k.LastUsedAt != nil {
					used = stamp(*k.LastUsedAt)
					if k.LastUsedIP != nil {
						used += " from " + *k.LastUsedIP
					}
				}
				rows[i] = []string{k.ID, k.Hint, k.Access, state, k.Member, stamp(k.ExpiresAt), used}
			}
			return e.emit(map[string]any{"data": keys}, table("no keys", []string{"ID", "HINT", "ACCESS", "STATE", "MEMBER", "EXPIRES_AT", "LAST_USED"}, rows))
		})
	}
}

func cmdKeyReminders(fs *flag.FlagSet) func(*env, config.Config, []string) error {
	ws := fs.String("workspace", "", "workspace id")
	return func(e *env, cfg config.Config, pos []string) error {
		if err := errors.Join(need(pos, 0, "key reminders --workspace W"), required("workspace", *ws)); err != nil {
			return err
		}
		return withBackend(e, cfg, func(b *server.Backend) error {
			list, err := b.Notices.Reminders(e.ctx, *ws)
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

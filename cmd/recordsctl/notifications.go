package main

import (
	"errors"
	"flag"
	"fmt"
	"strings"
	"time"

	"github.com/workspace-records/records/runtime/config"
	"github.com/workspace-records/records/runtime/notices"
	"github.com/workspace-records/records/runtime/server"
)

const notificationListUsage = "notification list --workspace W [--member M] [--unread] [--limit N]"

func cmdNotificationList(fs *flag.FlagSet) func(*env, config.Config, []string) error {
	ws := fs.String("workspace", "", "workspace id")
	member := fs.String("member", "", "only this member's notifications")
	unread := fs.Bool("unread", false, "only those not marked read")
	limit := fs.Int("limit", 100, "at most this many, newest first (at most 1000)")
	return func(e *env, cfg config.Config, pos []string) error {
		if err := errors.Join(need(pos, 0, notificationListUsage), required("workspace", *ws)); err != nil {
			return err
		}
		if *limit < 1 || *limit > 1000 {
			return fmt.Errorf("--limit %d: want 1 to 1000", *limit)
		}
		return withBackend(e, cfg, func(b *server.Backend) error {
			list, err := b.Notices.List(e.ctx, *ws, notices.Filter{Member: *member, Unread: *unread, Limit: *limit})
			if err != nil {
				return err
			}
			var text strings.Builder
			for _, n := range list {
				state := "unread"
				if n.ReadAt != nil {
					state = "read " + n.ReadAt.Format(time.RFC3339)
				}
				delivered := "not yet shown"
				if n.DeliveredAt != nil {
					delivered = "shown " + n.DeliveredAt.Format(time.RFC3339)
				}
				fmt.Fprintf(&text, "%s  %s  member %s  key %s (%s) expires %s, %dd reminder  %s  %s  %s\n", n.ID, n.CreatedAt.Format(time.RFC3339), n.Member,
					n.KeyID, n.KeyHint, n.ExpiresAt.Format(time.RFC3339), n.DaysBefore, n.Kind, delivered, state)
			}
			return e.emit(map[string]any{"data": list}, strings.TrimRight(text.String(), "\n"))
		})
	}
}

func cmdNotificationRead(fs *flag.FlagSet) func(*env, config.Config, []string) error {
	return func(e *env, cfg config.Config, pos []string) error {
		if err := need(pos, 1, "notification read ID"); err != nil {
			return err
		}
		return withBackend(e, cfg, func(b *server.Backend) error {
			n, err := b.Notices.MarkRead(e.ctx, pos[0])
			if err != nil {
				return err
			}
			return e.emit(map[string]any{"id": n.ID, "read_at": n.ReadAt}, "read "+n.ID)
		})
	}
}

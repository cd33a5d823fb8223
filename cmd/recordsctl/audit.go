package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/workspace-records/records/engine/model"
	"github.com/workspace-records/records/runtime/audit"
	"github.com/workspace-records/records/runtime/config"
	"github.com/workspace-records/records/runtime/records"
	"github.com/workspace-records/records/runtime/server"
)

const auditListUsage = "audit list --workspace W [--resource R] [--record ID] [--since T] [--limit N] [--cursor C] [--as-member M]"

// auditListHelp explains the command beyond its usage line (recordsctl audit list --help).
const auditListHelp = `Lists the audit trail of a workspace, newest first: every create, update, archive, restore, link,
unlink and import, with the member, key and request id that made it, the values it wrote ("changes")
and, for an update, the values it replaced ("previous").

recordsctl is the operator's path, like records import: without --as-member it shows every entry with
its values as stored, masked and hidden fields included. With --as-member M it shows the trail as
member M's role would see it: resources the role cannot read and records outside its record rules
are left out, masked fields are masked as in API responses, and hidden fields are left out and named
in "withheld".

--since takes an RFC 3339 time (2026-05-01T00:00:00Z) or a duration ago (90m, 24h, 7d).
--limit is the page size (1..1000, default 50); --cursor continues from a page's next_cursor.`

func cmdAuditList(fs *flag.FlagSet) func(*env, config.Config, []string) error {
	ws := fs.String("workspace", "", "workspace id")
	res := fs.String("resource", "", "only entries of this resource")
	record := fs.String("record", "", "only entries of this record id")
	since := fs.String("since", "", "only entries from this time on: RFC 3339, or a duration ago (24h, 7d)")
	limit := fs.Int("limit", audit.DefaultPage, fmt.Sprintf("entries per page (1..%d)", audit.MaxPage))
	cursor := fs.String("cursor", "", "next_cursor of the previous page")
	asMember := fs.String("as-member", "", "show the trail as this member's role sees it (default: everything, as stored)")
	return func(e *env, cfg config.Config, pos []string) error {
		if err := errors.Join(need(pos, 0, auditListUsage), required("workspace", *ws)); err != nil {
			return err
		}
		q := audit.Query{Resource: *res, RecordID: strings.ToLower(*record), Limit: *limit, Cursor: *cursor}
		var errs []error
		for _, f := range [][2]string{{"workspace", *ws}, {"record", *record}, {"as-member", *asMember}} {
			if f[1] != "" && !model.IsUUID(f[1]) {
				errs = append(errs, fmt.Errorf("--%s %q: must be a UUID", f[0], f[1]))
			}
		}
		if *limit < 1 || *limit > audit.MaxPage {
			errs = append(errs, fmt.Errorf("--limit must be between 1 and %d", audit.MaxPage))
		}
		if *since != "" {
			t, err := parseSince(*since, time.Now())
			if err != nil {
				errs = append(errs, err)
			}
			q.Since = t
		}
		if err := errors.Join(errs...); err != nil {
			return err
		}
		return withBackend(e, cfg, func(b *server.Backend) error {
			a := records.Actor{Workspace: strings.ToLower(*ws)}
			if err := workspaceExists(b, e.ctx, a.Workspace); err != nil {
				return err
			}
			if q.Resource != "" && !audit.IsAdminResource(q.Resource) {
				if _, err := resourceOf(b, q.Resource); err != nil {
					return err
				}
			}
			if *asMember != "" {
				var err error
				if a, err = b.Current().Records.MemberActor(e.ctx, a.Workspace, *asMember); err != nil {
					return err
				}
			}
			page, err := b.Current().Records.AuditLog(e.ctx, a, q)
			if err != nil {
				return err
			}
			return e.emit(map[string]any{"data": page.Entries, "next_cursor": page.NextCursor}, auditTable(page))
		})
	}
}

// parseSince reads an RFC 3339 time, or a duration before now: a Go duration (90m, 24h) or days (7d).
func parseSince(s string, now time.Time) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t.UTC(), nil
	}
	bad := fmt.Errorf("--since %q: want an RFC 3339 time (2026-05-01T00:00:00Z) or a duration ago (24h, 7d)", s)
	var d time.Duration
	if days, ok := strings.CutSuffix(s, "d"); ok {
		n, err := strconv.Atoi(days)
		if err != nil || n < 0 {
			return time.Time{}, bad
		}
		d = time.Duration(n) * 24 * time.Hour
	} else {
		var err error
		if d, err = time.ParseDuration(s); err != nil || d < 0 {
			return time.Time{}, bad
		}
	}
	return now.Add(-d).UTC(), nil
}

// auditTable renders a page as a table, one entry per line, values as compact JSON.
func auditTable(page *audit.Page) string {
	if len(page.Entries) == 0 {
		return "no audit entries"
	}
	var b strings.Builder
	w := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "CREATED_AT\tACTION\tRESOURCE\tRECORD\tMEMBER\tKEY\tREQUEST\tCHANGES")
	or := func(s *string) string {
		if s == nil {
			return "-"
		}
		return *s
	}
	for _, en := range page.Entries {
		changes, _ := json.Marshal(en.Changes)
		text := string(changes)
		if en.Previous != nil {
			prev, _ := json.Marshal(en.Previous)
			text += " was " + string(prev)
		}
		if len(en.Withheld) > 0 {
			text += " withheld " + strings.Join(en.Withheld, ",")
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", en.CreatedAt, en.Action, en.Resource, en.RecordID, or(en.MemberID), or(en.KeyID), or(en.RequestID), text)
	}
	w.Flush()
	out := strings.TrimRight(b.String(), "\n")
	if page.NextCursor != nil {
		out += "\nmore: --cursor " + *page.NextCursor
	}
	return out
}

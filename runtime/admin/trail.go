package admin

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/workspace-records/records/engine/apierr"
	"github.com/workspace-records/records/engine/field"
	"github.com/workspace-records/records/runtime/audit"
	"github.com/workspace-records/records/runtime/records"
)

// Audit returns one page of the workspace's audit trail, newest first, as the actor's role sees it
// (recordsctl audit list --as-member): entries of resources and records the role cannot read are left out,
// field masks apply, a link names the other record only when the role sees it (its resource readable, the
// record inside the role's record rule: records.Service.AuditLog), and the admin API's own entries
// (admin.*) are shown, since the role holds api.manage.
// Refused parameters are 400 invalid_request.
func (s *Service) Audit(ctx context.Context, a Actor, q audit.Query) (*audit.Page, error) {
	p := a.Principal
	reader := records.Actor{Workspace: p.Workspace.ID, Member: p.Member.ID, Department: p.Member.Department, Key: p.Key.ID, RequestID: a.RequestID,
		Role: p.Role, ReadOnly: true}
	page, err := s.cfg.Records.AuditLog(ctx, reader, q)
	var list field.ErrorList
	if errors.As(err, &list) {
		return nil, apierr.Invalid("", list)
	}
	return page, err
}

// ParseSince reads the since parameter of the audit trail: an RFC 3339 time, or a duration before now (a
// Go duration such as 90m or 24h, or days: 7d), as recordsctl audit list --since.
func ParseSince(s string, now time.Time) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t.UTC(), nil
	}
	bad := apierr.InvalidField(field.CodeFormat, "since", "must be an RFC 3339 time (2026-05-01T00:00:00Z) or a duration ago (90m, 24h, 7d)")
	var d time.Duration
	if days, ok := strings.CutSuffix(s, "d"); ok {
		n, err := strconv.Atoi(days)
		if err != nil || n < 0 || n > 100000 {
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

package admin

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/workspace-records/records/engine/apierr"
	"github.com/workspace-records/records/engine/field"
	"github.com/workspace-records/records/engine/model"
	"github.com/workspace-records/records/runtime/auth"
	"github.com/workspace-records/records/runtime/limits"
	"github.com/workspace-records/records/runtime/store"
)

// Bounds of a usage report.
const (
	DefaultUsageDays = 30  // without from: the last 30 days, today included
	MaxUsageDays     = 366 // from and to at most this many days apart, both included
)

// UsageQuery is what a usage report covers: dates YYYY-MM-DD (UTC days, both included; "" takes the
// default) and one key ("" every key). UsedHere is the month's quota usage as the calling server knows
// it (its count not yet flushed included).
type UsageQuery struct {
	From, To, Key string
	UsedHere      int64
}

// UsageDay is one UTC day's counts.
type UsageDay struct {
	Day      string `json:"day"`
	Requests int64  `json:"requests"`
	Refusals int64  `json:"refusals"`
}

// KeyUsage is one key's counts, per day (the days it was used) and in all.
type KeyUsage struct {
	KeyID    string     `json:"key_id"`
	Hint     string     `json:"hint"`
	Access   string     `json:"access"`
	State    string     `json:"state"`
	Member   KeyMember  `json:"member"`
	Requests int64      `json:"requests"`
	Refusals int64      `json:"refusals"`
	Days     []UsageDay `json:"days"`
}

// QuotaUsage is the workspace's monthly quota (UTC calendar month).
type QuotaUsage struct {
	Period    string `json:"period"` // YYYY-MM
	Limit     *int64 `json:"limit"`  // null: uncapped
	Used      int64  `json:"used"`
	Remaining *int64 `json:"remaining"` // null: uncapped
}

// UsageReport is the workspace's usage between two days.
type UsageReport struct {
	From  string     `json:"from"`
	To    string     `json:"to"`
	Keys  []KeyUsage `json:"keys"`
	Days  []UsageDay `json:"days"` // every day of the range, the workspace's totals
	Quota QuotaUsage `json:"quota"`
}

// Usage reports the requests and refusals (answers 403 and 429) of each key of the actor's workspace
// per UTC day, as every server has flushed them (each does every key_usage_interval), with the totals
// per day and the monthly quota.
func (s *Service) Usage(ctx context.Context, a Actor, uq UsageQuery) (UsageReport, error) {
	now := time.Now().UTC()
	from, to, err := usageRange(uq.From, uq.To, now)
	if err != nil {
		return UsageReport{}, err
	}
	ws := a.Principal.Workspace.ID
	keys, err := s.cfg.Directory.ListKeys(ctx, ws)
	if err != nil {
		return UsageReport{}, err
	}
	byID := make(map[string]*auth.Key, len(keys))
	for i := range keys {
		byID[keys[i].ID] = &keys[i]
	}
	if uq.Key != "" {
		if !model.IsUUID(uq.Key) {
			return UsageReport{}, apierr.InvalidField(field.CodeFormat, "key", "must be a key's id (a UUID)")
		}
		k, err := s.cfg.Directory.WorkspaceKey(ctx, ws, uq.Key)
		if errors.Is(err, auth.ErrNotFound) {
			return UsageReport{}, errNoKey
		}
		if err != nil {
			return UsageReport{}, err
		}
		uq.Key = k.ID
	}
	emails, err := s.memberEmails(ctx, ws)
	if err != nil {
		return UsageReport{}, err
	}
	fromDay, toDay := from.Format(time.DateOnly), to.Format(time.DateOnly)
	sql, args := "SELECT key_id, day, requests, refusals FROM key_usage_daily WHERE workspace_id = ? AND day >= ? AND day <= ?", []any{ws, fromDay, toDay}
	if uq.Key != "" {
		sql, args = sql+" AND key_id = ?", append(args, uq.Key)
	}
	sql += " ORDER BY key_id, day"
	d := s.cfg.Store.Dialect()
	totals := map[string]*UsageDay{}
	perKey := map[string]*KeyUsage{}
	var order []string
	err = s.cfg.Store.Query(store.WithWorkspace(ctx, ws), d.Bind(sql, args...), func(row []any) error {
		id, day := store.UUIDText(row[0]), store.Text(row[1])
		n := UsageDay{Day: day, Requests: store.Int(row[2]), Refusals: store.Int(row[3])}
		ku := perKey[id]
		if ku == nil {
			ku = &KeyUsage{KeyID: id, Days: []UsageDay{}}
			if k := byID[id]; k != nil {
				ku.Hint, ku.Access, ku.State, ku.Member = k.Hint, k.Access, auth.KeyState(k, now), KeyMember{ID: k.Member, Email: emails[k.Member]}
			}
			perKey[id] = ku
			order = append(order, id)
		}
		ku.Days = append(ku.Days, n)
		ku.Requests += n.Requests
		ku.Refusals += n.Refusals
		t := totals[day]
		if t == nil {
			t = &UsageDay{Day: day}
			totals[day] = t
		}
		t.Requests += n.Requests
		t.Refusals += n.Refusals
		return nil
	})
	if err != nil {
		return UsageReport{}, fmt.Errorf("read key usage: %w", err)
	}
	rep := UsageReport{From: fromDay, To: toDay, Keys: make([]KeyUsage, 0, len(order)), Days: []UsageDay{}}
	// The busiest keys first; ties by id, so the order is stable.
	sort.SliceStable(order, func(i, j int) bool {
		a, b := perKey[order[i]], perKey[order[j]]
		if a.Requests != b.Requests {
			return a.Requests > b.Requests
		}
		return a.KeyID < b.KeyID
	})
	for _, id := range order {
		rep.Keys = append(rep.Keys, *perKey[id])
	}
	for day := from; !day.After(to); day = day.AddDate(0, 0, 1) {
		name := day.Format(time.DateOnly)
		if t := totals[name]; t != nil {
			rep.Days = append(rep.Days, *t)
		} else {
			rep.Days = append(rep.Days, UsageDay{Day: name})
		}
	}
	rep.Quota, err = s.quota(ctx, a, now, uq.UsedHere)
	return rep, err
}

// quota reports the workspace's monthly quota: its limit (the plan's, or the workspace's override) and
// the month's usage, the stored count of every server or this server's, whichever is higher.
func (s *Service) quota(ctx context.Context, a Actor, now time.Time, usedHere int64) (QuotaUsage, error) {
	period, _ := limits.Period(now)
	q := QuotaUsage{Period: period, Limit: a.Principal.Limits.MonthlyQuota, Used: usedHere}
	ws := a.Principal.Workspace.ID
	_, err := store.QueryOne(ctx, s.cfg.Store, s.cfg.Store.Dialect().Bind("SELECT count FROM usage_counters WHERE workspace_id = ? AND period = ?", ws, period), func(row []any) error {
		q.Used = max(q.Used, store.Int(row[0]))
		return nil
	})
	if err != nil {
		return q, fmt.Errorf("read quota usage: %w", err)
	}
	if q.Limit != nil {
		left := max(*q.Limit-q.Used, 0)
		q.Remaining = &left
	}
	return q, nil
}

// usageRange parses from and to (YYYY-MM-DD; defaults: today and DefaultUsageDays-1 days before to),
// refusing a range that is reversed or longer than MaxUsageDays with 400 invalid_request.
func usageRange(fromText, toText string, now time.Time) (from, to time.Time, err error) {
	var errs field.ErrorList
	day := func(name, text string, dflt time.Time) time.Time {
		if text == "" {
			return dflt
		}
		t, err := time.Parse(time.DateOnly, text)
		if err != nil {
			errs = append(errs, field.New(field.CodeFormat, field.NewPath(name), "must be a date, YYYY-MM-DD"))
		}
		return t
	}
	today := time.Date(now.Year(), now.Month(), now.Day(), 0, 0, 0, 0, time.UTC)
	to = day("to", toText, today)
	from = day("from", fromText, to.AddDate(0, 0, -(DefaultUsageDays-1)))
	if errs != nil {
		return from, to, apierr.Invalid("", errs)
	}
	switch {
	case from.After(to):
		return from, to, apierr.Invalid("", field.ErrorList{field.New(field.CodeRange, field.NewPath("from"), "must not be after to")})
	case to.Sub(from) >= MaxUsageDays*24*time.Hour:
		return from, to, apierr.Invalid("", field.ErrorList{field.New(field.CodeRange, field.NewPath("to"), fmt.Sprintf("must be at most %d days from from, both included", MaxUsageDays))})
	}
	return from, to, nil
}

package sample

import (
	"strings"
	"time"

	"github.com/workspace-records/records/engine/model"
)

// dateWindow returns the day offsets from now a date field of key usually falls in.
func dateWindow(k string) (from, to int) {
	for _, p := range []string{"completed", "resolved", "delivered", "signed", "decided", "requested", "converted",
		"last_", "received", "closed", "close_date", "approved", "sent", "joined", "hired"} {
		if strings.Contains(k, p) {
			return -730, 0
		}
	}
	switch {
	case strings.HasPrefix(k, "start"):
		return -365, 90
	case strings.Contains(k, "due") || strings.Contains(k, "expected") || strings.HasPrefix(k, "end") || strings.Contains(k, "expir"):
		return -60, 365
	}
	return -730, 365
}

func (c *rec) day(k string) time.Time {
	from, to := dateWindow(k)
	d := time.Date(c.now.Year(), c.now.Month(), c.now.Day(), 0, 0, 0, 0, time.UTC)
	return d.AddDate(0, 0, int(c.g.between(int64(from), int64(to))))
}

func (c *rec) date(f *model.Field) string {
	if strings.Contains(f.Key, "birth") {
		d := time.Date(1958, 1, 1, 0, 0, 0, 0, time.UTC)
		return d.AddDate(0, 0, int(c.g.between(0, 45*365))).Format(time.DateOnly)
	}
	return c.day(f.Key).Format(time.DateOnly)
}

func (c *rec) datetime(f *model.Field) string {
	t := c.day(f.Key).Add(time.Duration(c.g.between(7*12, 18*12)) * 5 * time.Minute)
	if from, to := dateWindow(f.Key); from < 0 && to == 0 && t.After(c.now) {
		t = c.now.Truncate(5 * time.Minute).Add(-time.Duration(c.g.between(1, 48)) * 5 * time.Minute)
	}
	return t.Format("2006-01-02T15:04:05Z")
}

// tidy drops optional values a create body's status makes unlikely (a loss reason on an open deal).
func (c *rec) tidy() {
	status, _ := c.body["status"].(string)
	drop := func(key string, keep bool) {
		if f, ok := c.r.Field(key); ok && !f.Required && !keep {
			delete(c.body, key)
		}
	}
	if _, ok := c.body["status"]; !ok {
		return
	}
	drop("loss_reason_id", status == "lost")
	drop("disqualification_reason_id", status == "disqualified")
	if c.r.Name == "deals" {
		drop("close_date", status != "open")
	}
	if c.r.Name == "activities" {
		drop("completed_at", status == "completed")
	}
}

// orderDates keeps start before end when a body has both: equal types are swapped; a datetime end
// before a date start moves the start back to that day or a little earlier.
func (c *rec) orderDates() {
	for _, p := range [][2]string{{"start_date", "due_date"}, {"start_date", "end_date"}, {"requested_at", "decided_at"},
		{"start_date", "completed_at"}, {"start_date", "signed_at"}} {
		a, okA := c.body[p[0]].(string)
		b, okB := c.body[p[1]].(string)
		fa, _ := c.r.Field(p[0])
		fb, _ := c.r.Field(p[1])
		if !okA || !okB || fa == nil || fb == nil {
			continue
		}
		switch {
		case fa.Type == fb.Type && a > b:
			c.body[p[0]], c.body[p[1]] = b, a
		case fa.Type == model.Date && fb.Type == model.DateTime && b[:10] < a:
			d, err := time.Parse(time.DateOnly, b[:10])
			if err != nil {
				continue
			}
			floor := c.now.AddDate(-2, 0, 0)
			if d = d.AddDate(0, 0, -int(c.g.between(0, 30))); d.Before(floor) {
				d = floor
			}
			if v, ok := valid(fa, d.Format(time.DateOnly)); ok && v.(string) <= b[:10] {
				c.body[p[0]] = v
			}
		}
	}
}

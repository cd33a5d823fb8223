package admin

import (
	"testing"
	"time"

	"github.com/workspace-records/records/engine/apierr"
)

// usageRange: the default is the last 30 days, today included; a range spans at most 366 days, both
// ends included; reversed ranges and malformed dates are 400 invalid_request.
func TestUsageRange(t *testing.T) {
	now := time.Date(2026, 3, 1, 23, 59, 0, 0, time.UTC)
	day := func(s string) time.Time { d, _ := time.Parse(time.DateOnly, s); return d }
	for _, c := range []struct {
		from, to         string
		wantFrom, wantTo string
		bad              bool
	}{
		{"", "", "2026-01-31", "2026-03-01", false},
		{"", "2026-01-10", "2025-12-12", "2026-01-10", false},
		{"2026-02-01", "", "2026-02-01", "2026-03-01", false},
		{"2025-01-01", "2026-01-01", "2025-01-01", "2026-01-01", false}, // 366 days
		{"2024-01-01", "2024-12-31", "2024-01-01", "2024-12-31", false}, // a leap year: 366 days
		{"2025-01-01", "2026-01-02", "", "", true},                      // 367 days
		{"2026-02-10", "2026-02-01", "", "", true},
		{"2026-02-30", "", "", "", true},
		{"", "01/02/2026", "", "", true},
		{"2026-2-1", "", "", "", true},
	} {
		from, to, err := usageRange(c.from, c.to, now)
		if c.bad {
			if ae, ok := apierr.As(err); !ok || ae.Code != apierr.InvalidRequest {
				t.Errorf("from %q to %q: %v; want 400 invalid_request", c.from, c.to, err)
			}
			continue
		}
		if err != nil || !from.Equal(day(c.wantFrom)) || !to.Equal(day(c.wantTo)) {
			t.Errorf("from %q to %q: %v to %v, %v; want %s to %s", c.from, c.to, from, to, err, c.wantFrom, c.wantTo)
		}
	}
}

package records

import (
	"encoding/json"
	"testing"
)

func TestWithheldScrub(t *testing.T) {
	var w withheld
	for _, v := range []any{"2031-07-19", "Layoffs", json.Number("987654.321"), json.Number("1000000"), int64(5), "2030-01-02T03:04:05.000000Z", true, ""} {
		w.addValue(v)
	}
	for in, want := range map[string]string{
		"may not be before the project's start date 2031-07-19": "may not be before the project's start date •••",
		`subtask "Layoffs" is still open`:                       `subtask "•••" is still open`,
		"budget 987654.321 exceeded; at most 50 items, 15 left": "budget ••• exceeded; at most 50 items, 15 left",
		"amount 1e+06 is over the limit of 1000000":             "amount ••• is over the limit of •••",
		"5 of 5 slots, 55 used":                                 "••• of ••• slots, 55 used",
		"due 2030-01-02, created 2030-01-02T03:04:05Z":          "due •••, created •••",
		"LayoffsPlanned and Layoffs.":                           "LayoffsPlanned and •••.",
		"nothing withheld here: true, 2031-07-190, x2031-07-19": "nothing withheld here: true, 2031-07-190, x2031-07-19",
	} {
		if got := w.scrub(in); got != want {
			t.Errorf("scrub(%q) = %q, want %q", in, got, want)
		}
	}
	var empty withheld
	if got := empty.scrub("start date 2031-07-19"); got != "start date 2031-07-19" {
		t.Errorf("an empty set scrubbed %q", got)
	}
}

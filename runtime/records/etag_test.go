package records

import (
	"testing"
	"time"
)

func TestParseIfMatch(t *testing.T) {
	tag := ETag(1700000000000001, []byte(`{"data":{}}`))
	for _, tc := range []struct {
		values []string
		bad    bool
		holds  map[int64]bool
	}{
		{values: nil, holds: map[int64]bool{1: true}},
		{values: []string{"*"}, holds: map[int64]bool{1: true, 1700000000000001: true}},
		{values: []string{tag}, holds: map[int64]bool{1700000000000001: true, 1700000000000002: false}},
		{values: []string{`"x", ` + tag}, holds: map[int64]bool{1700000000000001: true}},
		{values: []string{`"x"`, tag}, holds: map[int64]bool{1700000000000001: true}},
		{values: []string{"W/" + tag}, holds: map[int64]bool{1700000000000001: false}},
		{values: []string{`"1700000000000001-abc-gzip"`}, holds: map[int64]bool{1700000000000001: true}},
		{values: []string{`"nonsense"`}, holds: map[int64]bool{1: false}},
		{values: []string{`"-5-x"`}, holds: map[int64]bool{-5: false}},
		{values: []string{"bare"}, bad: true},
		{values: []string{`"open`}, bad: true},
		{values: []string{`"a b"`}, bad: true},
		{values: []string{""}, bad: true},
		{values: []string{" , "}, bad: true},
	} {
		m, err := ParseIfMatch(tc.values)
		if (err != nil) != tc.bad {
			t.Errorf("%q: error %v, want bad=%v", tc.values, err, tc.bad)
			continue
		}
		for v, want := range tc.holds {
			if got := m.holds(v); got != want {
				t.Errorf("%q holds for version %d: %v, want %v", tc.values, v, got, want)
			}
		}
	}
}

func TestNoneMatch(t *testing.T) {
	tag := ETag(42, []byte("body"))
	gz := tag[:len(tag)-1] + `-gzip"`
	for _, tc := range []struct {
		values []string
		want   bool
	}{
		{[]string{tag}, true},
		{[]string{"W/" + tag}, true},
		{[]string{gz}, true},
		{[]string{`"a", ` + tag}, true},
		{[]string{"*"}, true},
		{[]string{ETag(42, []byte("other body"))}, false},
		{[]string{"bare"}, false},
		{[]string{""}, false},
	} {
		if got := NoneMatch(tc.values, tag); got != tc.want {
			t.Errorf("If-None-Match %q against %s: %v, want %v", tc.values, tag, got, tc.want)
		}
	}
}

func TestNextVersion(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 6000, time.UTC)
	cur := Record{"updated_at": at.Format(time.RFC3339Nano)}
	if got := nextVersion(cur, at); got.UnixMicro() != at.UnixMicro()+1 {
		t.Errorf("same clock: %v, want one microsecond later", got)
	}
	if got := nextVersion(cur, at.Add(-time.Second)); got.UnixMicro() != at.UnixMicro()+1 {
		t.Errorf("clock behind: %v, want one microsecond past the stored version", got)
	}
	if later := at.Add(time.Second); !nextVersion(cur, later).Equal(later) {
		t.Error("clock ahead: not the clock")
	}
}

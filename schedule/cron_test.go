package schedule

import (
	"testing"
	"time"
)

func mustLoc(t testing.TB, name string) *time.Location {
	t.Helper()
	l, err := time.LoadLocation(name)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// TestNextAcrossDST walks schedules over the 2026 clock changes: wall
// times stay put, a skipped time runs once an hour later, a repeated one
// runs once.
func TestNextAcrossDST(t *testing.T) {
	berlin := mustLoc(t, "Europe/Berlin")
	ny := mustLoc(t, "America/New_York")
	cases := []struct {
		name  string
		expr  string
		loc   *time.Location
		start time.Time
		want  []string // RFC 3339 in loc
	}{
		{"daily 02:30 over spring forward", "30 2 * * *", berlin, time.Date(2026, 3, 27, 12, 0, 0, 0, berlin),
			[]string{"2026-03-28T02:30:00+01:00", "2026-03-29T03:30:00+02:00", "2026-03-30T02:30:00+02:00"}},
		{"daily 02:30 over fall back runs once", "30 2 * * *", berlin, time.Date(2026, 10, 23, 12, 0, 0, 0, berlin),
			[]string{"2026-10-24T02:30:00+02:00", "2026-10-25T02:30:00+02:00", "2026-10-26T02:30:00+01:00"}},
		{"weekdays 9:00 stay 9:00", "0 9 * * 1-5", berlin, time.Date(2026, 3, 26, 12, 0, 0, 0, berlin),
			[]string{"2026-03-27T09:00:00+01:00", "2026-03-30T09:00:00+02:00"}},
		{"every 30 min over fall back", "*/30 * * * *", berlin, time.Date(2026, 10, 25, 1, 10, 0, 0, berlin),
			[]string{"2026-10-25T01:30:00+02:00", "2026-10-25T02:00:00+02:00", "2026-10-25T02:30:00+02:00", "2026-10-25T03:00:00+01:00"}},
		{"every 30 min over spring forward", "*/30 * * * *", berlin, time.Date(2026, 3, 29, 1, 10, 0, 0, berlin),
			[]string{"2026-03-29T01:30:00+01:00", "2026-03-29T03:00:00+02:00", "2026-03-29T03:30:00+02:00"}},
		{"New York 8:00 over November change", "0 8 * * *", ny, time.Date(2026, 10, 31, 12, 0, 0, 0, ny),
			[]string{"2026-11-01T08:00:00-05:00", "2026-11-02T08:00:00-05:00"}},
		{"New York 01:30 on the repeated hour", "30 1 * * *", ny, time.Date(2026, 10, 31, 12, 0, 0, 0, ny),
			[]string{"2026-11-01T01:30:00-04:00", "2026-11-02T01:30:00-05:00"}},
		{"New York 02:30 on the skipped hour", "30 2 * * *", ny, time.Date(2026, 3, 7, 12, 0, 0, 0, ny),
			[]string{"2026-03-08T03:30:00-04:00", "2026-03-09T02:30:00-04:00"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s, err := parseCron(c.expr)
			if err != nil {
				t.Fatal(err)
			}
			at := c.start
			for i, w := range c.want {
				at = next(s, at, c.loc)
				if got := at.In(c.loc).Format(time.RFC3339); got != w {
					t.Fatalf("run %d: got %s, want %s", i, got, w)
				}
			}
		})
	}
}

func TestParseCronRefuses(t *testing.T) {
	for _, expr := range []string{"", "* * * *", "* * * * * *", "61 * * * *", "TZ=UTC * * * *", "@daily", "0 0 32 * *", "a b c d e"} {
		if _, err := parseCron(expr); err == nil {
			t.Errorf("%q: no error", expr)
		}
	}
	s, err := parseCron("0 0 30 2 *")
	if err != nil {
		t.Fatal(err)
	}
	if n := next(s, time.Now(), time.UTC); !n.IsZero() {
		t.Errorf("Feb 30 runs at %v", n)
	}
}

func TestMinGap(t *testing.T) {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for expr, want := range map[string]time.Duration{
		"* * * * *":      time.Minute,
		"*/5 * * * *":    5 * time.Minute,
		"0,1 9 * * *":    time.Minute,
		"0 9 * * 1-5":    24 * time.Hour,
		"0 0 1 1 *":      365 * 24 * time.Hour, // 2027 → 2028
		"30 2 * * 0":     7 * 24 * time.Hour,
		"0 8,20 * * 1-5": 12 * time.Hour,
		"* * 29 2 *":     time.Minute, // every minute, but only on 29 February (2028)
	} {
		s, err := parseCron(expr)
		if err != nil {
			t.Fatal(err)
		}
		if got := minGap(s, start, 1000); got != want {
			t.Errorf("%q: got %v, want %v", expr, got, want)
		}
	}
}

package schedule

import (
	"fmt"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
)

// parser reads the classic five fields (minute hour day-of-month month
// day-of-week) and nothing else: no seconds, no @descriptors, no TZ=
// prefix (the zone is the schedule's tz field).
//
// robfig/cron/v3 parses an expression once into bit sets, so the next
// run of 10,000 schedules is cheap to compute; it is what Kubernetes
// CronJobs use. It is no longer developed, but its parser is small and
// settled. Its own time-zone handling is not used (see next): both it and
// gronx run a daily 02:30 twice on the night clocks go back.
var parser = cron.NewParser(cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow)

// parseCron checks and parses a five-field expression.
func parseCron(expr string) (cron.Schedule, error) {
	fields := strings.Fields(expr)
	if len(fields) != 5 {
		return nil, fmt.Errorf("%q has %d fields; a cron expression has five: minute hour day-of-month month day-of-week (e.g. \"0 8 * * 1-5\" is weekdays at 8:00)", expr, len(fields))
	}
	if strings.Contains(expr, "=") {
		return nil, fmt.Errorf("%q: put the time zone in tz, not in the expression", expr)
	}
	s, err := parser.Parse(strings.Join(fields, " "))
	if err != nil {
		return nil, fmt.Errorf("%q: %v", expr, err)
	}
	return s, nil
}

// next returns the first run of s strictly after t, reading s as wall-clock
// times in loc. The expression is evaluated on a clock without daylight
// saving (the wall clock written as UTC) and the result placed in loc:
//
//   - a wall time skipped when clocks go forward (02:30 on the spring
//     night in Europe/Berlin) runs at the same distance after the change
//     (03:30), once;
//   - a wall time that happens twice when clocks go back runs once, at
//     its first occurrence;
//   - "0 9 * * *" stays at 9:00 local time on both sides of a change.
//
// It returns the zero time when s never matches (e.g. "0 0 30 2 *").
func next(s cron.Schedule, t time.Time, loc *time.Location) time.Time {
	lt := t.In(loc)
	wall := time.Date(lt.Year(), lt.Month(), lt.Day(), lt.Hour(), lt.Minute(), lt.Second(), lt.Nanosecond(), time.UTC)
	// Bounded: a candidate earlier than t is the first occurrence of an
	// hour that repeats; the one after it is past the repeat.
	for range 4 {
		nw := s.Next(wall)
		if nw.IsZero() {
			return time.Time{}
		}
		real := resolve(nw, loc)
		if real.After(t) {
			return real
		}
		wall = nw
	}
	return time.Time{}
}

// resolve places the wall time w (written as UTC) in loc. time.Date
// leaves open which instant it picks for a wall time that is skipped or
// repeated at a clock change; resolve takes the first occurrence of a
// repeated one, and for a skipped one the instant as far after the change
// as the wall time was after the last valid minute (02:30 → 03:30).
func resolve(w time.Time, loc *time.Location) time.Time {
	t := time.Date(w.Year(), w.Month(), w.Day(), w.Hour(), w.Minute(), 0, 0, loc)
	// w read with the offset in force a few hours before (no zone changes
	// its offset twice within three hours).
	_, before := t.Add(-3 * time.Hour).Zone()
	e := w.Add(-time.Duration(before) * time.Second)
	switch {
	case sameWall(e.In(loc), w) && e.Before(t): // repeated: the first
		return e
	case !sameWall(t.In(loc), w): // skipped
		return e
	}
	return t
}

func sameWall(t, w time.Time) bool {
	return t.Year() == w.Year() && t.YearDay() == w.YearDay() && t.Hour() == w.Hour() && t.Minute() == w.Minute()
}

// minGap is the shortest time between two runs of s (on the wall clock)
// found among its runs after t, looking at most maxRuns runs or a year
// from the first; it returns 0 when s runs fewer than twice in that time.
func minGap(s cron.Schedule, t time.Time, maxRuns int) time.Duration {
	wall := time.Date(t.Year(), t.Month(), t.Day(), t.Hour(), t.Minute(), 0, 0, time.UTC)
	var gap time.Duration
	prev := s.Next(wall)
	end := prev.AddDate(1, 0, 0)
	for range maxRuns {
		if prev.IsZero() || prev.After(end) {
			break
		}
		n := s.Next(prev)
		if n.IsZero() || n.After(end) {
			break
		}
		if d := n.Sub(prev); gap == 0 || d < gap {
			gap = d
		}
		prev = n
	}
	return gap
}

package schedule

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strings"
	"sync"
	"time"
	"unicode/utf8"
)

// Spec asks for a schedule: from the API, the agent's schedule_create
// tool or the REPL. Exactly one of At, InSeconds and Cron is set.
type Spec struct {
	// Content is the input the session gets when it fires.
	Content string `json:"content"`
	// At is a one-shot's time: RFC 3339 with an offset
	// (2026-11-27T09:00:00+01:00), or a local time (2026-11-27T09:00)
	// read in TZ.
	At string `json:"at,omitempty"`
	// InSeconds is a one-shot this many seconds from now.
	InSeconds int64 `json:"in_seconds,omitempty"`
	// Cron is a five-field expression, read as wall-clock times in TZ.
	Cron string `json:"cron,omitempty"`
	// TZ is an IANA zone name; empty: schedules.tz (the server's zone).
	TZ string `json:"tz,omitempty"`
	// Notify is none (default), email or auto.
	Notify string `json:"notify,omitempty"`
	// CreatedBy is the door asking, CreatedByAPI or CreatedByAgent (set
	// by the door, not the caller).
	CreatedBy string `json:"-"`
	// Person is who asked (a people id; set by the door, or for the
	// agent's tool the person of the turn): the schedule fires as them.
	Person string `json:"-"`
}

// Error is why a request was refused; nothing was written. Code is a
// stable word for the API, Message a sentence for people.
type Error struct {
	Code    string
	Message string
}

func (e *Error) Error() string { return e.Message }

func errorf(code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// Error codes besides the validation ones (bad_content, content_too_long,
// bad_time, time_in_past, bad_cron, bad_tz, too_frequent, bad_notify,
// notify_unavailable).
const (
	CodeNotFound = "no_such_schedule"
	CodeTooMany  = "too_many_schedules"
)

// maxAhead bounds how far ahead a one-shot may be.
const maxAhead = 10 * 366 * 24 * time.Hour

// localLayouts are the accepted forms of a local time without an offset.
var localLayouts = []string{"2006-01-02T15:04:05", "2006-01-02T15:04", "2006-01-02 15:04:05", "2006-01-02 15:04"}

// build checks sp and makes the schedule it asks for, due after now. It
// writes nothing.
func (s *Scheduler) build(sp Spec, now time.Time) (*Schedule, error) {
	content := strings.TrimSpace(sp.Content)
	if err := s.checkContent(content); err != nil {
		return nil, err
	}
	set := 0
	for _, b := range []bool{sp.At != "", sp.InSeconds != 0, sp.Cron != ""} {
		if b {
			set++
		}
	}
	if set != 1 {
		return nil, errorf("bad_time", "give exactly one of at (a time), in_seconds (a delay) or cron (a recurring schedule)")
	}
	loc, tz, err := s.zone(sp.TZ)
	if err != nil {
		return nil, err
	}
	notify, err := s.checkNotify(sp.Notify)
	if err != nil {
		return nil, err
	}
	sc := &Schedule{ID: newID(), Content: content, CreatedBy: sp.CreatedBy, Person: sp.Person, CreatedAt: now.UTC(),
		TZ: tz, Notify: notify, loc: loc}
	var due time.Time
	if sp.Cron != "" {
		if due, err = s.recurring(sc, sp.Cron, now); err != nil {
			return nil, err
		}
	} else {
		if due, err = oneShot(sp, now, loc); err != nil {
			return nil, err
		}
		at := due.UTC()
		sc.At = &at
	}
	nr := due.UTC()
	sc.NextRun = &nr
	return sc, nil
}

func (s *Scheduler) checkContent(content string) error {
	switch {
	case content == "":
		return errorf("bad_content", "content is empty: say what the session should be told when it fires")
	case !utf8.ValidString(content):
		return errorf("bad_content", "content is not valid UTF-8")
	case len(content) > s.opts.MaxContentBytes:
		return errorf("content_too_long", "content is %d bytes; a schedule's content may have at most %d (schedules.max_content_bytes): keep it to the instruction and let the reply fetch the rest", len(content), s.opts.MaxContentBytes)
	}
	return nil
}

// zone is the schedule's zone: tz, or the default.
func (s *Scheduler) zone(tz string) (*time.Location, string, error) {
	if tz == "" || tz == s.opts.TZ.String() {
		// The default by the name the list shows, even when that is
		// "Local" (a server whose zone has no name we could find).
		return s.opts.TZ, s.opts.TZ.String(), nil
	}
	l, err := loadLocation(tz)
	if err != nil || tz == "Local" {
		return nil, "", errorf("bad_tz", "unknown time zone %q: use an IANA name such as Europe/Berlin, America/New_York or UTC", tz)
	}
	return l, tz, nil
}

func (s *Scheduler) checkNotify(notify string) (string, error) {
	switch notify {
	case "", NotifyNone:
		return NotifyNone, nil
	case NotifyEmail, NotifyAuto:
		if s.opts.Mailer == nil || s.opts.NotifyTo == "" {
			return "", errorf("notify_unavailable", "notify: %s needs channels.email enabled and schedules.notify_to set", notify)
		}
		return notify, nil
	}
	return "", errorf("bad_notify", "notify %q: use none, email or auto", notify)
}

// recurring parses expr into sc and returns its first run after now.
func (s *Scheduler) recurring(sc *Schedule, expr string, now time.Time) (time.Time, error) {
	cs, err := parseCron(expr)
	if err != nil {
		return time.Time{}, errorf("bad_cron", "invalid cron: %v", err)
	}
	due := next(cs, now, sc.loc)
	if due.IsZero() {
		return time.Time{}, errorf("bad_cron", "cron %q never runs", expr)
	}
	// Five fields cannot run more often than every minute: only a larger
	// min_interval_sec needs the runs looked at.
	if s.opts.MinInterval > time.Minute {
		if gap := minGap(cs, now.In(sc.loc), 1000); gap > 0 && gap < s.opts.MinInterval {
			return time.Time{}, errorf("too_frequent", "cron %q runs %s apart; schedules.min_interval_sec allows no less than %s",
				expr, gap, s.opts.MinInterval)
		}
	}
	sc.Cron, sc.sched = strings.Join(strings.Fields(expr), " "), cs
	return due, nil
}

// oneShot is the time of an at or in_seconds schedule.
func oneShot(sp Spec, now time.Time, loc *time.Location) (time.Time, error) {
	if sp.InSeconds != 0 {
		if sp.InSeconds < 1 || sp.InSeconds > int64(maxAhead/time.Second) {
			return time.Time{}, errorf("bad_time", "in_seconds must be from 1 to %d", int64(maxAhead/time.Second))
		}
		// Whole seconds, rounded up: the times shown stay readable.
		return now.Add(time.Duration(sp.InSeconds)*time.Second + time.Second - 1).Truncate(time.Second), nil
	}
	t, err := parseAt(sp.At, loc)
	if err != nil {
		return time.Time{}, err
	}
	if !t.After(now) {
		return time.Time{}, errorf("time_in_past", "at %s is in the past (it is now %s)", t.In(loc).Format(time.RFC3339), now.In(loc).Format(time.RFC3339))
	}
	if t.Sub(now) > maxAhead {
		return time.Time{}, errorf("bad_time", "at %s is more than ten years ahead", t.Format(time.RFC3339))
	}
	return t, nil
}

// parseAt reads RFC 3339, or a local time in loc.
func parseAt(at string, loc *time.Location) (time.Time, error) {
	at = strings.TrimSpace(at)
	if t, err := time.Parse(time.RFC3339, at); err == nil {
		return t, nil
	}
	for _, l := range localLayouts {
		if t, err := time.ParseInLocation(l, at, loc); err == nil {
			return t, nil
		}
	}
	return time.Time{}, errorf("bad_time", "at %q is neither RFC 3339 (2026-11-27T09:00:00+01:00) nor a local time (2026-11-27T09:00, read in tz)", at)
}

// locations caches loaded zones: each time.LoadLocation parses the zone
// file again, and 10,000 schedules in a handful of zones need a handful
// of copies.
var locations = struct {
	sync.Mutex
	m map[string]*time.Location
}{m: map[string]*time.Location{}}

// loadLocation is time.LoadLocation, cached. Safe from any goroutine.
func loadLocation(name string) (*time.Location, error) {
	locations.Lock()
	defer locations.Unlock()
	if l, ok := locations.m[name]; ok {
		return l, nil
	}
	l, err := time.LoadLocation(name)
	if err != nil {
		return nil, err
	}
	locations.m[name] = l
	return l, nil
}

// newID is a short random id ("s-" and 12 hex digits).
func newID() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return "s-" + hex.EncodeToString(b[:])
}

package schedule

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/robfig/cron/v3"

	"github.com/frontdesk-hq/frontdesk/internal/atomicfile"
)

// Notify modes: who hears of a fired schedule besides every connected
// client.
const (
	NotifyNone  = "none"  // the session's clients only (default)
	NotifyEmail = "email" // also mail the reply to schedules.notify_to
	NotifyAuto  = "auto"  // mail it only when no client was connected when it fired
)

// Schedule is one entry of schedules.json: a one-shot (At) or a recurring
// (Cron with TZ) input for the session.
type Schedule struct {
	ID      string `json:"id"`
	Content string `json:"content"`
	// CreatedBy is the channel it was made from: web (the API), console,
	// or the channel of the turn whose agent called schedule_create.
	CreatedBy string    `json:"created_by"`
	CreatedAt time.Time `json:"created_at"`
	// At is a one-shot's time; Cron a recurring one's expression, read as
	// wall-clock times in TZ.
	At   *time.Time `json:"at,omitempty"`
	Cron string     `json:"cron,omitempty"`
	TZ   string     `json:"tz"`
	// NextRun is when it fires next; nil for a one-shot that has fired
	// (it stays listed until its turn ended, then is removed).
	NextRun *time.Time `json:"next_run"`
	LastRun *time.Time `json:"last_run"`
	Notify  string     `json:"notify"`
	// Firing is the firing handed to the session and not yet finished.
	// It is written before the input is submitted: after a crash the
	// same firing (same client_msg_id) is offered again, and the session
	// runs it only if it never recorded it.
	Firing *Firing `json:"firing,omitempty"`

	sched cron.Schedule // parsed Cron
	loc   *time.Location
}

// Firing is one run of a schedule.
type Firing struct {
	// Due is the run's planned time; Key ("schedule:<id>:<due unix>") is
	// the input's client_msg_id.
	Due time.Time `json:"due"`
	Key string    `json:"key"`
	// Late: it ran more than a minute after Due (the server was stopped).
	Late bool `json:"late,omitempty"`
	// Email: the reply is to be mailed (notify email, or auto with no
	// client connected when it fired).
	Email bool `json:"email,omitempty"`
	// Mailed: the reply is in the email outbox.
	Mailed bool `json:"mailed,omitempty"`
}

// recurring reports whether s has a cron expression.
func (s *Schedule) recurring() bool { return s.Cron != "" }

// clone is a copy for another goroutine.
func (s *Schedule) clone() Schedule {
	c := *s
	if s.Firing != nil {
		f := *s.Firing
		c.Firing = &f
	}
	return c
}

// file is schedules.json.
type file struct {
	V         int         `json:"v"`
	Schedules []*Schedule `json:"schedules"`
}

func storePath(dataDir string) string { return filepath.Join(dataDir, "schedules.json") }

// load reads schedules.json; a missing file is no schedules. An entry
// that no longer parses (a zone gone from the time-zone database) is an
// error naming it: a schedule is never dropped silently.
func load(path string) ([]*Schedule, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read schedules: %w", err)
	}
	var f file
	if err := json.Unmarshal(b, &f); err != nil {
		return nil, fmt.Errorf("read %s: %w (fix or remove the file; removing it deletes every schedule)", path, err)
	}
	for _, s := range f.Schedules {
		if s == nil || s.ID == "" {
			return nil, fmt.Errorf("read %s: an entry has no id", path)
		}
		if s.loc, err = loadLocation(s.TZ); err != nil {
			return nil, fmt.Errorf("read %s: schedule %s: time zone %q: %w", path, s.ID, s.TZ, err)
		}
		if s.recurring() {
			if s.sched, err = parseCron(s.Cron); err != nil {
				return nil, fmt.Errorf("read %s: schedule %s: %w", path, s.ID, err)
			}
		}
	}
	return f.Schedules, nil
}

// save writes every schedule to path atomically (temp file, fsync,
// rename), oldest first, mode 0600.
func save(path string, all map[string]*Schedule) error {
	list := make([]*Schedule, 0, len(all))
	for _, s := range all {
		list = append(list, s)
	}
	sortSchedules(list)
	b, err := json.MarshalIndent(file{V: 1, Schedules: list}, "", "  ")
	if err != nil {
		return err
	}
	return atomicfile.Write(path, b, 0o600)
}

// sortSchedules orders by creation, then id.
func sortSchedules(list []*Schedule) {
	slices.SortFunc(list, func(a, b *Schedule) int {
		if c := a.CreatedAt.Compare(b.CreatedAt); c != 0 {
			return c
		}
		return cmp.Compare(a.ID, b.ID)
	})
}

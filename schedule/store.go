package schedule

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
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
	// CreatedBy is the door it was made through: api (POST
	// /api/schedules) or agent (the assistant's schedule_create tool).
	// Files written before api existed say web for the API.
	CreatedBy string `json:"created_by"`
	// Person is who made it (a people id; absent when nobody was named):
	// it fires as their input, and only while they may still talk.
	Person    string    `json:"person,omitempty"`
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
	// Late: Due passed while the server was stopped, or it ran more
	// than a minute after Due (the machine slept, a write failed).
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

// fileVersion is the only "v" this build reads and writes.
const fileVersion = 1

func storePath(dataDir string) string { return filepath.Join(dataDir, "schedules.json") }

// Damage is what a damaged schedules.json cost at start: the file was
// kept aside as it was and the server started without what could not be
// read. Nil when the file was sound.
type Damage struct {
	// At is when it was found (the start).
	At time.Time `json:"at"`
	// File is the copy kept aside, schedules.json.damaged-<time>, in the
	// data directory.
	File string `json:"file"`
	// Problem says what was wrong, in a sentence.
	Problem string `json:"problem"`
	// Dropped names each entry left out (its id, or its place in the file
	// when it has none); empty when the whole file was unreadable.
	Dropped []string `json:"dropped,omitempty"`
	// Loaded is how many schedules were read from the file after all.
	Loaded int `json:"loaded"`
}

// Message is the damage in one sentence, for the log, /healthz and the UI.
func (d *Damage) Message() string {
	msg := "schedules.json was damaged (" + d.Problem + "); kept as " + d.File
	if len(d.Dropped) > 0 {
		return fmt.Sprintf("%s; started with the %d readable schedules, without %s", msg, d.Loaded, strings.Join(d.Dropped, ", "))
	}
	return msg + "; started without its schedules"
}

// load reads schedules.json; a missing file is no schedules. A file that
// is not what this build wrote (garbage, cut short, empty, an unknown
// "v") or an entry that does not parse (no id, a duplicate id, a zone
// gone from the time-zone database, a bad cron) is damage: the file is
// kept aside, byte for byte, as schedules.json.damaged-<now>, and the
// readable entries are written back as the new schedules.json. Only a
// file that cannot be read or kept aside at all is an error.
func load(path string, now time.Time) ([]*Schedule, *Damage, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("read schedules: %w", err)
	}
	list, problem, dropped := parse(b)
	if problem == "" {
		return list, nil, nil
	}
	d := &Damage{At: now.UTC(), Problem: problem, Dropped: dropped, Loaded: len(list)}
	aside, err := keepAside(path, b, now, len(list) == 0)
	if err != nil {
		return nil, nil, fmt.Errorf("%s is damaged (%s) and could not be kept aside: %w", path, problem, err)
	}
	d.File = filepath.Base(aside)
	if len(list) > 0 {
		all := make(map[string]*Schedule, len(list))
		for _, s := range list {
			all[s.ID] = s
		}
		if err := save(path, all); err != nil {
			return nil, nil, fmt.Errorf("%s is damaged (%s), kept as %s; writing back its readable schedules: %w", path, problem, aside, err)
		}
	}
	return list, d, nil
}

// parse reads a schedules.json. problem is empty when every byte of it
// was understood; otherwise list holds the entries that are sound and
// dropped names the others.
func parse(b []byte) (list []*Schedule, problem string, dropped []string) {
	if len(bytes.TrimSpace(b)) == 0 {
		return nil, "the file is empty", nil
	}
	var f struct {
		V         *int              `json:"v"`
		Schedules []json.RawMessage `json:"schedules"`
	}
	if err := json.Unmarshal(b, &f); err != nil {
		return nil, "not readable JSON: " + err.Error(), nil
	}
	if f.V == nil || *f.V != fileVersion {
		v := "none"
		if f.V != nil {
			v = strconv.Itoa(*f.V)
		}
		return nil, fmt.Sprintf(`format version "v" is %s; this build reads only %d (written by another version of frontdesk?)`, v, fileVersion), nil
	}
	seen := map[string]bool{}
	var bad []string
	for i, raw := range f.Schedules {
		s, err := parseEntry(raw)
		switch {
		case err != nil:
			bad = append(bad, fmt.Sprintf("entry %d: %v", i+1, err))
		case seen[s.ID]:
			bad = append(bad, fmt.Sprintf("entry %d: %s again (the first one is kept)", i+1, s.ID))
		default:
			seen[s.ID] = true
			list = append(list, s)
		}
	}
	if len(bad) > 0 {
		return list, fmt.Sprintf("%d of %d entries unreadable", len(bad), len(f.Schedules)), bad
	}
	return list, "", nil
}

// parseEntry reads one entry and checks what Run relies on.
func parseEntry(raw json.RawMessage) (*Schedule, error) {
	var s *Schedule
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, err
	}
	if s == nil || s.ID == "" {
		return nil, errors.New("no id")
	}
	var err error
	if s.loc, err = loadLocation(s.TZ); err != nil {
		return nil, fmt.Errorf("%s: time zone %q: %w", s.ID, s.TZ, err)
	}
	if s.recurring() {
		if s.sched, err = parseCron(s.Cron); err != nil {
			return nil, fmt.Errorf("%s: %w", s.ID, err)
		}
	}
	return s, nil
}

// keepAside keeps b, the damaged file at path, as
// schedules.json.damaged-<now>: by renaming path when nothing in it is
// kept (move), else by writing a copy.
func keepAside(path string, b []byte, now time.Time, move bool) (string, error) {
	base := path + ".damaged-" + now.UTC().Format("20060102T150405Z")
	aside := base
	for i := 2; ; i++ {
		if _, err := os.Lstat(aside); errors.Is(err, os.ErrNotExist) {
			break
		}
		aside = fmt.Sprintf("%s-%d", base, i)
	}
	if !move {
		return aside, atomicfile.Write(aside, b, 0o600)
	}
	if err := os.Rename(path, aside); err != nil {
		return "", err
	}
	return aside, atomicfile.SyncDir(filepath.Dir(path))
}

// save writes every schedule to path atomically (temp file, fsync,
// rename), oldest first, mode 0600.
func save(path string, all map[string]*Schedule) error {
	_, err := saveBytes(path, all)
	return err
}

// saveBytes is save that also returns the bytes written.
func saveBytes(path string, all map[string]*Schedule) ([]byte, error) {
	list := make([]*Schedule, 0, len(all))
	for _, s := range all {
		list = append(list, s)
	}
	sortSchedules(list)
	b, err := json.MarshalIndent(file{V: fileVersion, Schedules: list}, "", "  ")
	if err != nil {
		return nil, err
	}
	return b, atomicfile.Write(path, b, 0o600)
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

package schedule

import (
	"errors"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/frontdesk-hq/frontdesk/internal/testkit/fakeclock"
)

// TestOpenKeepsADamagedFileAside: a schedules.json that is garbage, cut
// short, empty, of an unknown "v", or that holds a bad or duplicate entry
// does not stop the start. The file is kept aside byte for byte, the
// readable entries load (and are written back), every entry left out is
// named, and the next start finds a sound file.
func TestOpenKeepsADamagedFileAside(t *testing.T) {
	good := func(id string) string {
		return `{"id":"` + id + `","content":"x","created_by":"api","created_at":"2026-11-01T00:00:00Z","tz":"UTC",` +
			`"cron":"0 9 * * *","next_run":"2026-11-25T09:00:00Z","last_run":null,"notify":"none"}`
	}
	for name, c := range map[string]struct {
		body    string
		problem string
		loaded  []string
		dropped []string
	}{
		"garbage":       {body: "\x00\x17garbage{{", problem: "not readable JSON"},
		"truncated":     {body: `{"v":1,"schedules":[` + good("s-a"), problem: "not readable JSON"},
		"empty":         {body: "", problem: "the file is empty"},
		"unknown v":     {body: `{"v":2,"schedules":[` + good("s-a") + `]}`, problem: `"v" is 2; this build reads only 1`},
		"no v":          {body: `{"schedules":[` + good("s-a") + `]}`, problem: `"v" is none`},
		"no id":         {body: `{"v":1,"schedules":[` + good("s-a") + `,{"content":"x","tz":"UTC"},` + good("s-b") + `]}`, problem: "1 of 3 entries", loaded: []string{"s-a", "s-b"}, dropped: []string{"entry 2: no id"}},
		"null entry":    {body: `{"v":1,"schedules":[null,` + good("s-a") + `]}`, problem: "1 of 2 entries", loaded: []string{"s-a"}, dropped: []string{"entry 1: no id"}},
		"wrong type":    {body: `{"v":1,"schedules":[{"id":7},` + good("s-a") + `]}`, problem: "1 of 2 entries", loaded: []string{"s-a"}, dropped: []string{"entry 1: json: cannot unmarshal number"}},
		"unknown zone":  {body: `{"v":1,"schedules":[{"id":"s-1","content":"x","tz":"Mars/Olympus"},` + good("s-a") + `]}`, problem: "1 of 2 entries", loaded: []string{"s-a"}, dropped: []string{`entry 1: s-1: time zone "Mars/Olympus"`}},
		"bad cron":      {body: `{"v":1,"schedules":[{"id":"s-2","content":"x","tz":"UTC","cron":"61 * * * *"},` + good("s-a") + `]}`, problem: "1 of 2 entries", loaded: []string{"s-a"}, dropped: []string{"entry 1: s-2: "}},
		"duplicate ids": {body: `{"v":1,"schedules":[` + good("s-a") + `,` + good("s-a") + `]}`, problem: "1 of 2 entries", loaded: []string{"s-a"}, dropped: []string{"entry 2: s-a again"}},
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.WriteFile(storePath(dir), []byte(c.body), 0o600); err != nil {
				t.Fatal(err)
			}
			s, err := Open(nil, Options{DataDir: dir, Logger: slog.New(slog.DiscardHandler)})
			if err != nil {
				t.Fatalf("Open = %v, want a start without the damaged part", err)
			}
			d := s.Damage()
			if d == nil || !strings.Contains(d.Problem, c.problem) {
				t.Fatalf("Damage = %+v, want a problem with %q", d, c.problem)
			}
			if len(d.Dropped) != len(c.dropped) {
				t.Fatalf("dropped %q, want %d like %q", d.Dropped, len(c.dropped), c.dropped)
			}
			for i, w := range c.dropped {
				if !strings.HasPrefix(d.Dropped[i], w) {
					t.Errorf("dropped[%d] = %q, want it to start %q", i, d.Dropped[i], w)
				}
			}
			if got := slices.Sorted(maps.Keys(s.all)); !slices.Equal(got, c.loaded) {
				t.Errorf("loaded %q, want %q", got, c.loaded)
			}
			if !strings.Contains(d.Message(), d.File) || !strings.HasPrefix(d.File, "schedules.json.damaged-") {
				t.Errorf("message %q, file %q: want the kept copy named", d.Message(), d.File)
			}
			kept, err := os.ReadFile(filepath.Join(dir, d.File))
			if err != nil || string(kept) != c.body {
				t.Fatalf("kept aside: %q, %v; want the damaged file byte for byte", kept, err)
			}
			_, err = os.Stat(storePath(dir))
			if len(c.loaded) == 0 && !errors.Is(err, os.ErrNotExist) {
				t.Errorf("schedules.json after a wholly damaged file: %v, want it moved aside", err)
			}
			again, err := Open(nil, Options{DataDir: dir})
			if err != nil || again.Damage() != nil || len(again.all) != len(c.loaded) {
				t.Fatalf("next start: %v, damage %+v, %d schedules; want a sound file with %d", err, again.Damage(), len(again.all), len(c.loaded))
			}
		})
	}
	// No file: no schedules, no damage.
	if s, err := Open(nil, Options{DataDir: t.TempDir()}); err != nil || len(s.all) != 0 || s.Damage() != nil {
		t.Fatalf("no file: %v, %d schedules", err, len(s.all))
	}
}

// TestOpenDamagedTwiceInOneSecond: a second damaged file found in the
// same second does not overwrite the first one kept aside.
func TestOpenDamagedTwiceInOneSecond(t *testing.T) {
	dir := t.TempDir()
	clock := fakeclock.New(time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC))
	var files []string
	for _, body := range []string{"first", "second"} {
		if err := os.WriteFile(storePath(dir), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		s, err := Open(nil, Options{DataDir: dir, Clock: clock, Logger: slog.New(slog.DiscardHandler)})
		if err != nil || s.Damage() == nil {
			t.Fatalf("Open: %v, %v", err, s)
		}
		b, _ := os.ReadFile(filepath.Join(dir, s.Damage().File))
		if string(b) != body {
			t.Fatalf("%s holds %q, want %q", s.Damage().File, b, body)
		}
		files = append(files, s.Damage().File)
	}
	if files[0] == files[1] {
		t.Fatalf("both kept as %s", files[0])
	}
}

package schedule

import (
	"log/slog"
	"os"
	"testing"
	"time"

	"github.com/frontdesk-hq/frontdesk/internal/strictjson"
	"github.com/frontdesk-hq/frontdesk/internal/testkit/fakeclock"
)

// FuzzSpec feeds the body of POST /api/schedules (and the tool's
// arguments) to the decoder and the checks: no panic; anything accepted
// is due in the future, within ten years, with content inside the limit;
// a recurring schedule's next run after the first is later still.
func FuzzSpec(f *testing.F) {
	for _, s := range []string{
		`{"content":"x","at":"2026-11-27T09:00","tz":"Europe/Berlin"}`,
		`{"content":"x","at":"2026-11-27T09:00:00+01:00"}`,
		`{"content":"x","in_seconds":60,"notify":"none"}`,
		`{"content":"x","cron":"0 8 * * 1-5","tz":"America/New_York"}`,
		`{"content":"x","cron":"*/7 1-5/2 1,15 */3 MON-FRI"}`,
		`{"content":"x","cron":"0 0 30 2 *"}`,
		`{"content":"x","cron":"59 23 31 12 *","tz":"Pacific/Kiritimati"}`,
		`{"content":"x","at":"2026-03-29 02:30","tz":"Europe/Berlin"}`,
	} {
		f.Add([]byte(s))
	}
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	s, err := Open(nil, Options{DataDir: f.TempDir(), Clock: fakeclock.New(now), TZ: time.UTC, MinInterval: 5 * time.Minute,
		MaxContentBytes: 1024, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		var sp Spec
		if strictjson.Unmarshal(body, &sp) != nil {
			return
		}
		sc, err := s.build(sp, now)
		if err != nil {
			if _, ok := err.(*Error); !ok {
				t.Fatalf("%s: error %T %v, want *Error", body, err, err)
			}
			return
		}
		if sc.NextRun == nil || !sc.NextRun.After(now) || sc.NextRun.Sub(now) > maxAhead+24*time.Hour || len(sc.Content) > 1024 {
			t.Fatalf("%s: accepted with next_run %v, content %d bytes", body, sc.NextRun, len(sc.Content))
		}
		if sc.recurring() {
			if n := next(sc.sched, *sc.NextRun, sc.loc); !n.IsZero() && !n.After(*sc.NextRun) {
				t.Fatalf("%s: next run %v is not after %v", body, n, sc.NextRun)
			}
		}
	})
}

// FuzzParse feeds schedules.json as found on disk to its reader: no
// panic; every entry it keeps has a unique id, a zone and (recurring) a
// parsed cron; a file with a problem says so, and what it kept, written
// back, reads again without one.
func FuzzParse(f *testing.F) {
	good := `{"id":"s-a","content":"x","created_by":"api","created_at":"2026-11-01T00:00:00Z","tz":"UTC",` +
		`"cron":"0 9 * * *","next_run":"2026-11-25T09:00:00Z","last_run":null,"notify":"none"}`
	for _, s := range []string{
		``, `{}`, `null`, `{"v":1}`, `{"v":2,"schedules":[]}`, `{"v":1,"schedules":[` + good + `]}`,
		`{"v":1,"schedules":[` + good + `,` + good + `]}`, `{"v":1,"schedules":[null,{"id":7}]}`,
		`{"v":1,"schedules":[{"id":"s-1","tz":"Mars/Olympus"}]}`, `{"v":1,"schedules":[` + good,
	} {
		f.Add([]byte(s))
	}
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, b []byte) {
		list, problem, dropped := parse(b)
		if problem == "" && len(dropped) > 0 {
			t.Fatalf("%q: dropped %q without a problem", b, dropped)
		}
		all := map[string]*Schedule{}
		for _, s := range list {
			if s.ID == "" || all[s.ID] != nil || s.loc == nil || (s.recurring() && s.sched == nil) {
				t.Fatalf("%q: kept %+v", b, s)
			}
			all[s.ID] = s
		}
		if len(list) == 0 {
			return
		}
		path := storePath(dir)
		if err := save(path, all); err != nil {
			t.Fatal(err)
		}
		back, _ := os.ReadFile(path)
		if again, problem, _ := parse(back); problem != "" || len(again) != len(list) {
			t.Fatalf("%q written back as %s: %d entries, problem %q", b, back, len(again), problem)
		}
	})
}

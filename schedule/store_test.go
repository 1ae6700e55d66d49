package schedule

import (
	"os"
	"strings"
	"testing"
)

// TestOpenRefusesABadFile: a schedules.json that does not parse, or an
// entry whose zone or cron does not, stops the start with the file (and
// the entry) named; nothing is dropped silently.
func TestOpenRefusesABadFile(t *testing.T) {
	for name, c := range map[string]struct{ body, want string }{
		"not json":     {`{"v":1,"schedules":[`, "fix or remove the file"},
		"no id":        {`{"v":1,"schedules":[{"content":"x","tz":"UTC"}]}`, "an entry has no id"},
		"unknown zone": {`{"v":1,"schedules":[{"id":"s-1","content":"x","tz":"Mars/Olympus"}]}`, `schedule s-1: time zone "Mars/Olympus"`},
		"bad cron":     {`{"v":1,"schedules":[{"id":"s-2","content":"x","tz":"UTC","cron":"61 * * * *"}]}`, "schedule s-2:"},
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.WriteFile(storePath(dir), []byte(c.body), 0o600); err != nil {
				t.Fatal(err)
			}
			_, err := Open(nil, Options{DataDir: dir})
			if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "schedules.json") {
				t.Fatalf("Open = %v, want an error naming schedules.json with %q", err, c.want)
			}
		})
	}
	// No file: no schedules.
	if s, err := Open(nil, Options{DataDir: t.TempDir()}); err != nil || len(s.all) != 0 {
		t.Fatalf("no file: %v, %d schedules", err, len(s.all))
	}
}

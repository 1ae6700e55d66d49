package schedule

import (
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/frontdesk-hq/frontdesk/internal/testkit/fakeclock"
)

// TestServerZoneByName: the default zone is shown by its IANA name — from
// schedules.tz, the TZ variable or the /etc/localtime link — never
// "Local" while a name can be found.
func TestServerZoneByName(t *testing.T) {
	dir := t.TempDir()
	link := filepath.Join(dir, "localtime")
	zoneinfo := filepath.Join(dir, "usr", "share", "zoneinfo", "America")
	if err := os.MkdirAll(zoneinfo, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(zoneinfo, "New_York"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(zoneinfo, "New_York"), link); err != nil {
		t.Fatal(err)
	}
	env := func(tz string) func(string) string {
		return func(k string) string {
			if k == "TZ" {
				return tz
			}
			return ""
		}
	}
	for _, c := range []struct {
		name, configured, tz, localtime, want string
	}{
		{"configured", "Asia/Tokyo", "Europe/Berlin", link, "Asia/Tokyo"},
		{"TZ", "", ":Europe/Berlin", link, "Europe/Berlin"},
		{"localtime link", "", "", link, "America/New_York"},
		{"unknown TZ falls to the link", "", "Mars/Olympus", link, "America/New_York"},
		{"no name at all", "", "", filepath.Join(dir, "missing"), time.Local.String()},
	} {
		t.Run(c.name, func(t *testing.T) {
			l, err := serverZone(c.configured, env(c.tz), c.localtime)
			if err != nil || l.String() != c.want {
				t.Fatalf("zone %v, %v; want %s", l, err, c.want)
			}
		})
	}
	if _, err := serverZone("Mars/Olympus", env(""), link); err == nil {
		t.Fatal("an unknown schedules.tz was taken")
	}
}

// TestDefaultZoneTakenBackByItsName: what the list shows as a schedule's
// tz, the API takes back — even "Local" for a server whose zone has no
// name (it used to be listed and refused as bad_tz).
func TestDefaultZoneTakenBackByItsName(t *testing.T) {
	local := time.FixedZone("Local", 2*3600)
	clock := fakeclock.New(time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC))
	s, err := Open(nil, Options{DataDir: t.TempDir(), Clock: clock, TZ: local, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	first, err := s.build(Spec{Content: "x", Cron: "0 9 * * *"}, clock.Now())
	if err != nil || first.TZ != "Local" {
		t.Fatalf("default: %+v, %v", first, err)
	}
	again, err := s.build(Spec{Content: "x", Cron: "0 9 * * *", TZ: first.TZ}, clock.Now())
	if err != nil || again.TZ != "Local" || !again.NextRun.Equal(*first.NextRun) {
		t.Fatalf("tz %q as listed: %+v, %v; want the same schedule", first.TZ, again, err)
	}
	if _, err := s.build(Spec{Content: "x", Cron: "0 9 * * *", TZ: "Mars/Olympus"}, clock.Now()); err == nil {
		t.Fatal("an unknown zone was taken")
	}
}

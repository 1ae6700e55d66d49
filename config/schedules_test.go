package config

import (
	"strings"
	"testing"
)

func TestValidateSchedules(t *testing.T) {
	tests := []struct {
		name   string
		email  bool
		mutate func(*Schedules)
		want   string // "" for valid; else a part of the error
	}{
		{"defaults", false, func(*Schedules) {}, ""},
		{"notify_to allowed by address", true, func(s *Schedules) { s.NotifyTo = "ana@example.com" }, ""},
		{"notify_to allowed by domain", true, func(s *Schedules) { s.NotifyTo = "Bo@Example.org" }, ""},
		{"a zone", false, func(s *Schedules) { s.TZ = "Europe/Berlin" }, ""},
		{"notify_to without email", false, func(s *Schedules) { s.NotifyTo = "ana@example.com" }, "schedules.notify_to: needs channels.email enabled"},
		{"notify_to not allowed", true, func(s *Schedules) { s.NotifyTo = "eve@evil.test" }, "not on channels.email.allow_from"},
		{"notify_to not an address", true, func(s *Schedules) { s.NotifyTo = "Ana <ana@example.com>" }, "not a plain email address"},
		{"min interval under a minute", false, func(s *Schedules) { s.MinIntervalSec = 30 }, "schedules.min_interval_sec: 30"},
		{"no schedules allowed", false, func(s *Schedules) { s.MaxSchedules = 0 }, "schedules.max_schedules: 0"},
		{"no content allowed", false, func(s *Schedules) { s.MaxContentBytes = 0 }, "schedules.max_content_bytes: 0"},
		{"content over the body limit", false, func(s *Schedules) { s.MaxContentBytes = 2 << 20 }, "schedules.max_content_bytes: 2097152"},
		{"unknown zone", false, func(s *Schedules) { s.TZ = "Mars/Olympus" }, "schedules.tz: unknown time zone"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := Defaults()
			if tc.email {
				enableEmail(&c)
				c.Channels.Email.AllowFrom = []string{"ana@example.com", "@example.org"}
			}
			tc.mutate(&c.Schedules)
			err := c.Validate()
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("Validate() = %v, want nil", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("Validate() = %v, want an error with %q", err, tc.want)
			}
		})
	}
}

package config

import (
	"net/mail"
	"strings"
	"time"
)

// Schedules configures reminders and recurring tasks (package schedule).
type Schedules struct {
	// MinIntervalSec is the shortest time allowed between two runs of a
	// recurring schedule. Default 60 (a cron every minute is allowed).
	MinIntervalSec int `yaml:"min_interval_sec"`
	// NotifyTo is the address that notify: email and notify: auto mail a
	// fired schedule's reply to. It must be on channels.email.allow_from.
	// Empty (default): notify email/auto are refused.
	NotifyTo string `yaml:"notify_to"`
	// MaxSchedules caps how many schedules exist at once. Default 1000.
	MaxSchedules int `yaml:"max_schedules"`
	// MaxContentBytes caps one schedule's content; server.max_message_bytes
	// applies too (the smaller wins). Default 4096: a reminder or a task
	// is a few sentences, and max_schedules × this bounds schedules.json,
	// which is rewritten on every change, and GET /api/schedules.
	MaxContentBytes int `yaml:"max_content_bytes"`
	// TZ is the time zone of a schedule that names none (an IANA name).
	// Empty (default): the server's zone (the TZ variable, else UTC in a
	// container).
	TZ string `yaml:"tz"`
}

func scheduleDefaults() Schedules {
	return Schedules{MinIntervalSec: 60, MaxSchedules: 1000, MaxContentBytes: 4096}
}

// validateSchedules checks schedules.
func (c *Config) validateSchedules(bad func(string, string, ...any)) {
	s := c.Schedules
	if s.MinIntervalSec < 60 || s.MinIntervalSec > 7*86400 {
		bad("schedules.min_interval_sec", "%d: use 60 to 604800 seconds (default 60; cron cannot run more often than every minute)", s.MinIntervalSec)
	}
	if s.MaxSchedules < 1 || s.MaxSchedules > 100000 {
		bad("schedules.max_schedules", "%d: use 1 to 100000 (default 1000)", s.MaxSchedules)
	}
	if s.MaxContentBytes < 1 || s.MaxContentBytes > 1<<20 {
		bad("schedules.max_content_bytes", "%d: use 1 to 1048576 bytes (default 4096)", s.MaxContentBytes)
	}
	if s.TZ != "" {
		if _, err := time.LoadLocation(s.TZ); err != nil || s.TZ == "Local" {
			bad("schedules.tz", "unknown time zone %q: use an IANA name such as Europe/Berlin, or leave it empty for the server's zone", s.TZ)
		}
	}
	if s.NotifyTo == "" {
		return
	}
	if a, err := mail.ParseAddress(s.NotifyTo); err != nil || a.Address != strings.TrimSpace(s.NotifyTo) {
		bad("schedules.notify_to", "%q is not a plain email address", s.NotifyTo)
		return
	}
	e := c.Channels.Email
	if !e.Enabled {
		bad("schedules.notify_to", "needs channels.email enabled (the reply is sent through its SMTP server)")
		return
	}
	if !allowed(e.AllowFrom, s.NotifyTo) {
		bad("schedules.notify_to", "%q is not on channels.email.allow_from; the assistant mails only people who may mail it", s.NotifyTo)
	}
}

// allowed matches addr against allow_from entries (addresses or @domains).
func allowed(list []string, addr string) bool {
	addr = strings.ToLower(addr)
	_, domain, _ := strings.Cut(addr, "@")
	for _, a := range list {
		a = strings.ToLower(a)
		if a == addr || a == "@"+domain {
			return true
		}
	}
	return false
}

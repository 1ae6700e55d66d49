package schedule

import (
	"fmt"
	"path/filepath"
	"strings"
	"time"
)

// ServerZone is the zone of a schedule that names none: configured
// (schedules.tz) if set, else the server's zone by its IANA name — from
// the TZ variable, else the name /etc/localtime links to — so that
// schedules.json, the API, the panel and the model say "Europe/Berlin"
// rather than "Local". Only when no name can be found is it time.Local,
// which the API then takes back by the name it shows ("Local").
func ServerZone(configured string, getenv func(string) string) (*time.Location, error) {
	return serverZone(configured, getenv, "/etc/localtime")
}

func serverZone(configured string, getenv func(string) string, localtime string) (*time.Location, error) {
	if configured != "" {
		l, err := loadLocation(configured)
		if err != nil {
			return nil, fmt.Errorf("schedules.tz: %w", err)
		}
		return l, nil
	}
	if tz := strings.TrimPrefix(getenv("TZ"), ":"); tz != "" && !filepath.IsAbs(tz) {
		if l, err := loadLocation(tz); err == nil {
			return l, nil
		}
	}
	if target, err := filepath.EvalSymlinks(localtime); err == nil {
		if _, name, ok := strings.Cut(filepath.ToSlash(target), "/zoneinfo/"); ok {
			if l, err := loadLocation(name); err == nil {
				return l, nil
			}
		}
	}
	return time.Local, nil
}

package admin

import (
	"slices"

	"github.com/frontdesk-hq/frontdesk/auth"
	"github.com/frontdesk-hq/frontdesk/event"
	"github.com/frontdesk-hq/frontdesk/people"
)

// Snapshot is the people of dir as the audit trail records them.
func Snapshot(dir *people.Directory) []auth.PersonRecord {
	var out []auth.PersonRecord
	for _, p := range dir.All() {
		out = append(out, auth.PersonRecord{ID: p.ID, Role: p.Role, Permissions: slices.Clone(p.Permissions)})
	}
	return out
}

// PeopleChanges compares the people last recorded (old; nil: never
// recorded) with now and returns the person_changed events that say what
// changed (By "config"), in now's order then the removed. The implicit
// owner of a desk that never recorded anyone is no news: none then.
func PeopleChanges(old []auth.PersonRecord, neverRecorded, implicit bool, now []auth.PersonRecord) []event.PersonChangedData {
	if neverRecorded && implicit {
		return nil
	}
	was := map[string]auth.PersonRecord{}
	for _, p := range old {
		was[p.ID] = p
	}
	var out []event.PersonChangedData
	seen := map[string]bool{}
	for _, p := range now {
		seen[p.ID] = true
		o, ok := was[p.ID]
		switch {
		case !ok:
			out = append(out, event.PersonChangedData{Action: event.PersonAdded, Person: p.ID, By: "config", Role: p.Role, Permissions: p.Permissions})
		case o.Role != p.Role || !slices.Equal(o.Permissions, p.Permissions):
			out = append(out, event.PersonChangedData{Action: event.PersonRoleChanged, Person: p.ID, By: "config", Role: p.Role, Permissions: p.Permissions})
		}
	}
	for _, p := range old {
		if !seen[p.ID] {
			out = append(out, event.PersonChangedData{Action: event.PersonRemoved, Person: p.ID, By: "config"})
		}
	}
	return out
}

package admin

import (
	"errors"
	"testing"
	"time"

	"github.com/frontdesk-hq/frontdesk/auth"
	"github.com/frontdesk-hq/frontdesk/config"
	"github.com/frontdesk-hq/frontdesk/event"
	"github.com/frontdesk-hq/frontdesk/people"
)

func TestParseExpires(t *testing.T) {
	for in, want := range map[string]time.Duration{"": 0, "0": 0, "90d": 90 * 24 * time.Hour, "12h": 12 * time.Hour, "30m": 30 * time.Minute} {
		if got, err := ParseExpires(in); err != nil || got != want {
			t.Errorf("%q: %v %v, want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"soon", "-3d", "0d", "-1h", "d", "1.5d"} {
		var ue *UsageError
		if _, err := ParseExpires(in); !errors.As(err, &ue) {
			t.Errorf("%q: err %v, want a usage error", in, err)
		}
	}
}

// PeopleChanges: added, removed, role_changed by config; nothing for a
// desk that never recorded anyone and has only the implicit owner.
func TestPeopleChanges(t *testing.T) {
	if got := PeopleChanges(nil, true, true, Snapshot(people.New(nil))); len(got) != 0 {
		t.Fatalf("implicit owner at the first start: %+v", got)
	}
	old := Snapshot(people.New([]config.Person{{ID: "ann", Role: "admin"}, {ID: "ci", Permissions: []string{"talk"}}}))
	now := Snapshot(people.New([]config.Person{{ID: "ann", Role: "member"}, {ID: "bo", Role: "viewer"}}))
	got := PeopleChanges(old, false, false, now)
	want := []struct{ action, person string }{{event.PersonRoleChanged, "ann"}, {event.PersonAdded, "bo"}, {event.PersonRemoved, "ci"}}
	if len(got) != len(want) {
		t.Fatalf("got %+v", got)
	}
	for i, w := range want {
		if got[i].Action != w.action || got[i].Person != w.person || got[i].By != "config" {
			t.Errorf("%d: %+v, want %s %s", i, got[i], w.action, w.person)
		}
	}
	if got := PeopleChanges(now, false, false, now); len(got) != 0 {
		t.Fatalf("no change: %+v", got)
	}
}

// A revoked session is session_revoked in the audit, a revoked token
// token_revoked; neither names a hash.
func TestRevokeAudit(t *testing.T) {
	s, _ := auth.New(auth.Memory{}, nil)
	var got []event.PersonChangedData
	svc := &Service{Store: s, People: people.New(nil), Addr: "127.0.0.1:8080", By: "cli", Now: time.Now,
		Record: func(d event.PersonChangedData) error { got = append(got, d); return nil }}
	_, sess, _ := s.Issue(auth.KindSession, "owner", "", "link", time.Hour)
	if _, err := svc.Revoke("owner", sess.ID); err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].Action != event.SessionRevoked || got[0].Credential != sess.ID {
		t.Fatalf("audit %+v", got)
	}
	a, err := svc.LoginLink("owner")
	if err != nil || a.URL != "http://127.0.0.1:8080/auth/link?code="+a.Secret {
		t.Fatalf("link %+v %v", a, err)
	}
	if c, err := s.Redeem(a.Secret); err != nil || c.Person != "owner" {
		t.Fatalf("redeem %+v %v", c, err)
	}
}

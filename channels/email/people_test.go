package email

import (
	"context"
	"testing"

	"github.com/frontdesk-hq/frontdesk/event"
)

// A sender is the person whose emails hold their address: mallory, on no
// allow list but listed as a person who may talk, is answered as
// "mallory"; ana, a person who may not talk, is skipped (forbidden) though
// allow_from lists her; bob, allowed and nobody's, has no person.
func TestEmailSendersArePeople(t *testing.T) {
	e := newEnv(t)
	p := e.start(func(o *Options) {
		o.People = func(addr string) (string, bool) {
			switch addr {
			case mallory:
				return "mallory", true
			case ana:
				return "ana", false
			}
			return "", false
		}
	})
	sub, _, err := p.hub.Subscribe(context.Background(), 0)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	e.connected()
	e.imap.deliver(t, newMail(ana, "hi", "may I?"))
	eventually(t, "ana skipped as forbidden", func() bool { return p.ch.Metrics().Skipped[SkipForbidden] == 1 })
	e.imap.deliver(t, newMail(mallory, "hello", "from a person"))
	e.smtp.next(t)
	e.imap.deliver(t, newMail(bob, "hey", "from nobody"))
	e.smtp.next(t)
	got := map[string]string{}
	for len(got) < 2 {
		f, ok := sub.Next(context.Background())
		if !ok {
			t.Fatal("stream ended")
		}
		var d event.UserData
		if f.Event.Type == event.User && f.Event.Decode(&d) == nil {
			got[d.From] = d.Person
		}
	}
	if got[mallory] != "mallory" || got[bob] != "" {
		t.Fatalf("persons by sender %v, want mallory for %s and none for %s", got, mallory, bob)
	}
}

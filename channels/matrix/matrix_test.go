//go:build goolm

package matrix

import (
	"context"
	"strings"
	"testing"

	"maunium.net/go/mautrix/id"

	"github.com/frontdesk-hq/frontdesk/channels/chat/chattest"
	"github.com/frontdesk-hq/frontdesk/event"
	"github.com/frontdesk-hq/frontdesk/hub"
	"github.com/frontdesk-hq/frontdesk/internal/testkit/testagent"
)

// TestConversation: ann invites the bot to a DM (plain, then encrypted)
// and talks; her message is a user event of the matrix door from
// @ann:localhost, the bot is seen typing, and the reply streams into one message (first "part ")
// that is edited to the exact final text, as ann's own client reads it.
func TestConversation(t *testing.T) {
	for _, tc := range []struct {
		name      string
		encrypted bool
	}{{"plain", false}, {"encrypted", true}} {
		t.Run(tc.name, func(t *testing.T) {
			gate := testagent.NewGate()
			w := newWorld(t, hub.Config{}, gate)
			w.startDoor()
			ann := w.person("ann")
			room := ann.Room(w.bot, tc.encrypted)
			msg := ann.Say(room, "hello")

			chattest.Eventually(t, "the streamed words", func() bool {
				r, ok := ann.ReplyTo(w.bot, msg)
				return ok && r.First == "part "
			})
			chattest.Eventually(t, "the bot typing", func() bool { return ann.SawTyping(w.bot) })
			gate.Release <- struct{}{}
			r := ann.WaitReply(w.bot, msg, "reply to hello")
			if r.Edits < 1 || r.Encrypted != tc.encrypted {
				t.Fatalf("reply %+v: want at least one edit, encrypted %v", r, tc.encrypted)
			}
			us := w.sess.Users()
			if len(us) != 1 || us[0].Channel != event.ChannelMatrix || us[0].From != "@ann:localhost" || us[0].Content != "hello" {
				t.Fatalf("user events = %+v, want ann's hello on matrix", us)
			}
			if n := ann.RepliesTo(w.bot, msg); n != 1 {
				t.Fatalf("%d replies to ann's message, want 1", n)
			}
		})
	}
}

// TestNotAllowed: eve (not on allow) invites the bot and writes; the bot
// does not join and nothing of hers is in the log. ann's message after
// hers is answered, so the bot has seen eve's invite by then.
func TestNotAllowed(t *testing.T) {
	w := newWorld(t, hub.Config{}, echo{})
	w.startDoor()
	eve := w.person("eve")
	eveRoom := eve.CreateRoom(w.bot, false)
	eve.Say(eveRoom, "hello bot")
	ann := w.person("ann")
	room := ann.Room(w.bot, false)
	msg := ann.Say(room, "hi")
	ann.WaitReply(w.bot, msg, "echo: hi")

	joined, err := eve.Client().JoinedMembers(context.Background(), eveRoom)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := joined.Joined[w.bot]; ok || len(joined.Joined) != 1 {
		t.Fatalf("joined members of eve's room = %v, want eve alone", joined.Joined)
	}
	for _, u := range w.sess.Users() {
		if strings.Contains(u.From, "eve") {
			t.Fatalf("eve's message is in the log: %+v", u)
		}
	}
	if us := w.sess.Users(); len(us) != 1 {
		t.Fatalf("user events = %+v, want ann's alone", us)
	}
}

// TestRestart: the door stops (its context cancelled) while its reply
// to "one" streams; ann writes "two" while it is down. A new connector
// on the same data dir is the same device, finishes the reply to "one"
// in the message it had posted, answers "two" once, and "one" is not
// taken again.
func TestRestart(t *testing.T) {
	gate := testagent.NewGate()
	w := newWorld(t, hub.Config{}, gate)
	d1 := w.startDoor()
	ann := w.person("ann")
	room := ann.Room(w.bot, true)
	one := ann.Say(room, "one")
	chattest.Eventually(t, "the first words to one", func() bool {
		r, ok := ann.ReplyTo(w.bot, one)
		return ok && r.First == "part "
	})
	device := d1.conn.DeviceID()
	d1.stop()

	two := ann.Say(room, "two")
	gate.Release <- struct{}{}
	chattest.Eventually(t, "the turn of one to end", func() bool { return turnEnds(w) == 1 })
	d2 := w.startDoor()
	ann.WaitReply(w.bot, one, "reply to one")
	chattest.Eventually(t, "the first words to two", func() bool { _, ok := ann.ReplyTo(w.bot, two); return ok })
	gate.Release <- struct{}{}
	ann.WaitReply(w.bot, two, "reply to two")

	if got := d2.conn.DeviceID(); got != device || device == "" {
		t.Fatalf("device after restart = %q, want %q", got, device)
	}
	var texts []string
	for _, u := range w.sess.Users() {
		texts = append(texts, u.Content)
	}
	if strings.Join(texts, ",") != "one,two" {
		t.Fatalf("user events = %q, want one,two", texts)
	}
	for _, m := range []id.EventID{one, two} {
		if n := ann.RepliesTo(w.bot, m); n != 1 {
			t.Fatalf("%d replies to %s, want 1", n, m)
		}
	}
}

func turnEnds(w *world) int {
	n := 0
	for _, e := range w.sess.Events() {
		if e.Type == event.TurnEnd {
			n++
		}
	}
	return n
}

//go:build goolm

package testdendrite

import (
	"context"
	"testing"
	"time"

	mevent "maunium.net/go/mautrix/event"
)

// TestUsers: ann and bob, each a User with its own device, in an
// encrypted room: bob reads ann's message decrypted, answers it and
// edits his answer; ann sees the reply's first and final text, encrypted
// throughout, and bob typing.
func TestUsers(t *testing.T) {
	s := Start(t)
	s.CreateAccount(t, "ann", "ann-password")
	s.CreateAccount(t, "bob", "bob-password")
	ann := NewUser(t, s, "ann", "ann-password")
	bob := NewUser(t, s, "bob", "bob-password")
	room := ann.CreateRoom(bob.ID(), true)
	if _, err := bob.Client().JoinRoomByID(context.Background(), room); err != nil {
		t.Fatal(err)
	}
	ann.WaitJoined(room, bob.ID())
	bob.WaitJoined(room, ann.ID())
	msg := ann.Say(room, "hello")
	eventually(t, "bob to read hello", func() bool {
		for _, e := range bob.Events() {
			if e.ID == msg && e.Content.AsMessage().Body == "hello" && e.Mautrix.WasEncrypted {
				return true
			}
		}
		return false
	})
	if _, err := bob.Client().UserTyping(context.Background(), room, true, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	answer := bob.Send(room, mevent.EventMessage, &mevent.MessageEventContent{MsgType: mevent.MsgText, Body: "hi",
		RelatesTo: &mevent.RelatesTo{InReplyTo: &mevent.InReplyTo{EventID: msg}}})
	bob.Send(room, mevent.EventMessage, &mevent.MessageEventContent{MsgType: mevent.MsgText, Body: "* hi ann",
		NewContent: &mevent.MessageEventContent{MsgType: mevent.MsgText, Body: "hi ann"},
		RelatesTo:  &mevent.RelatesTo{Type: mevent.RelReplace, EventID: answer}})
	r := ann.WaitReply(bob.ID(), msg, "hi ann")
	if r.ID != answer || r.First != "hi" || r.Edits != 1 || !r.Encrypted {
		t.Fatalf("reply %+v, want %s first hi, one edit, encrypted", r, answer)
	}
	if n := ann.RepliesTo(bob.ID(), msg); n != 1 {
		t.Fatalf("%d replies, want 1", n)
	}
	eventually(t, "bob typing", func() bool { return ann.SawTyping(bob.ID()) })
}

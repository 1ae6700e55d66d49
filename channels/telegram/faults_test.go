package telegram_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/frontdesk-hq/frontdesk/channels/chat"
	"github.com/frontdesk-hq/frontdesk/channels/chat/chattest"
	"github.com/frontdesk-hq/frontdesk/channels/telegram"
	"github.com/frontdesk-hq/frontdesk/internal/testkit/faketelegram"
)

// TestTooManyRequests: a 429 with retry_after 1 on a post or on the poll
// is waited out for at least that second (the door's and connector's own
// backoffs here are 10 ms), and the message is answered.
func TestTooManyRequests(t *testing.T) {
	for _, method := range []string{"sendMessage", "getUpdates"} {
		t.Run(method, func(t *testing.T) {
			r := newRig(t, rigOptions{agent: answer("ok")})
			r.f.TooMany(method, 1, 1)
			r.start(t)
			id := r.f.Message(annChat, ann, "hi", nil)
			r.f.WaitFor(t, "the answer", func() bool { m, ok := r.f.ReplyTo(id); return ok && m.Text == "ok" })
			calls := r.f.Calls()
			var refused time.Time
			for _, c := range calls {
				switch {
				case c.Method != method:
				case c.Status == 429:
					refused = c.At
				case !refused.IsZero():
					if gap := c.At.Sub(refused); gap < time.Second {
						t.Fatalf("%s asked again %v after a 429 with retry_after 1", method, gap)
					}
					return
				}
			}
			t.Fatalf("no 429 then a retry of %s in %v", method, calls)
		})
	}
}

// TestDroppedPoll: long polls that lose their connection (one waiting,
// one new) are retried; the door says it is unwell, then well again, and
// the next message is answered.
func TestDroppedPoll(t *testing.T) {
	r := newRig(t, rigOptions{agent: answer("ok")})
	r.start(t)
	r.f.WaitFor(t, "a waiting poll", func() bool { return r.f.Polling() > 0 })
	r.f.DropPolls(2)
	r.f.WaitFor(t, "two polls dropped", func() bool { return r.f.Drops() == 2 })
	id := r.f.Message(annChat, ann, "still there?", nil)
	r.f.WaitFor(t, "the answer", func() bool { _, ok := r.f.ReplyTo(id); return ok })
	reps := r.spy.reported()
	if len(reps) < 2 || reps[0] == nil || reps[len(reps)-1] != nil {
		t.Fatalf("reports %v, want an error then nil", reps)
	}
}

// TestRevokedToken: a refused token (401, at getMe and later at
// getUpdates) is reported as chat.ErrUnauthorized and shows in the door's
// health; once the token works again the door is well and answers.
func TestRevokedToken(t *testing.T) {
	r := newRig(t, rigOptions{agent: answer("ok")})
	r.f.SetRevoked(true)
	d, _ := r.start(t)
	for round, where := range []string{"getMe", "getUpdates"} {
		r.f.WaitFor(t, "401s at "+where, func() bool { return r.f.Count(where, 401) >= 2 })
		chattest.Eventually(t, "the health saying so", func() bool { return strings.Contains(d.Health(), "refused the token") })
		reps := r.spy.reported()
		if last := reps[len(reps)-1]; !errors.Is(last, chat.ErrUnauthorized) {
			t.Fatalf("reported %v, want chat.ErrUnauthorized", last)
		}
		r.f.SetRevoked(false)
		id := r.f.Message(annChat, ann, "back? "+strconv.Itoa(round), nil)
		r.f.WaitFor(t, "the answer", func() bool { _, ok := r.f.ReplyTo(id); return ok })
		chattest.Eventually(t, "the health well again", func() bool { return d.Health() == "" })
		r.f.SetRevoked(true)
	}
}

// TestKill stops the door between receiving an update and confirming it:
// the fake hands the update again to a new door on the same data
// directory, and the log has one user event and the chat one reply.
// "after Message": the Door took it, the offset was not stored. "before
// Message": the process died on receipt, before the Door had it.
func TestKill(t *testing.T) {
	for _, c := range []struct {
		name     string
		callDoor bool
	}{{"after Message", true}, {"before Message", false}} {
		t.Run(c.name, func(t *testing.T) {
			release := make(held)
			r := newRig(t, rigOptions{agent: release})
			d := r.door(t)
			ctx, kill := context.WithCancel(context.Background())
			ran := make(chan error, 1)
			go func() { ran <- d.Run(ctx) }()
			killed := false
			r.spy.hook(func(ctx context.Context, m chat.Message, next func() error) error {
				var err error = context.Canceled
				if c.callDoor {
					err = next()
				}
				killed = err == nil || !c.callDoor
				kill()
				return err
			}, func(cursor string, next func() error) error {
				if killed {
					return nil // died before the offset was stored
				}
				return next()
			})
			id := r.f.Message(annChat, ann, "hello", nil)
			select {
			case err := <-ran:
				if err != nil || !killed {
					t.Fatalf("door Run = %v, killed %v", err, killed)
				}
			case <-time.After(15 * time.Second):
				kill()
				t.Fatal("the update never reached the door")
			}
			r.spy.hook(nil, nil)

			r.start(t)
			r.f.WaitFor(t, "the update handed again and confirmed", func() bool { return r.f.Acked() == r.f.LastUpdate()+1 })
			close(release)
			r.f.WaitFor(t, "the reply", func() bool { m, ok := r.f.ReplyTo(id); return ok && m.Text == "reply to hello" })
			sent := len(r.f.Posts())
			if us, n := r.s.Users(), r.f.Delivered(r.f.LastUpdate()); len(us) != 1 || sent != 1 || n != 2 {
				t.Fatalf("%d user events, %d messages sent, the update delivered %d times; want 1, 1 and 2", len(us), sent, n)
			}
		})
	}
}

// TestEditNotModified: an edit to the text a message has already is
// Telegram's 400 "message is not modified", which is success; an edit
// of a message that is not there is an error.
func TestEditNotModified(t *testing.T) {
	f := faketelegram.New(t)
	c, err := telegram.New(telegram.Options{Token: faketelegram.Token, BaseURL: f.URL(), Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	id, err := c.Send(ctx, chat.Post{Chat: "42", Text: "same", Plain: "same"})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Edit(ctx, chat.Edit{Chat: "42", ID: id, Text: "same", Plain: "same"}); err != nil {
		t.Fatalf("edit to the same text = %v, want nil", err)
	}
	if err := c.Edit(ctx, chat.Edit{Chat: "42", ID: "77777", Text: "x", Plain: "x"}); err == nil {
		t.Fatal("edit of a missing message = nil, want an error")
	}
	if n := f.Count("editMessageText", 400); n != 2 {
		t.Fatalf("%d edits refused by the fake, want 2", n)
	}
}

// TestMessageRefused: while the Door cannot take a message (its Message
// returns an error: a full disk, say) the offset stays; after a pause the
// same update is handed again and answered once.
func TestMessageRefused(t *testing.T) {
	r := newRig(t, rigOptions{agent: answer("ok")})
	refusals := 2
	r.spy.hook(func(ctx context.Context, m chat.Message, next func() error) error {
		if refusals > 0 {
			refusals--
			return errors.New("disk full")
		}
		return next()
	}, nil)
	r.start(t)
	id := r.f.Message(annChat, ann, "hi", nil)
	r.f.WaitFor(t, "the answer", func() bool { _, ok := r.f.ReplyTo(id); return ok })
	if us, n := r.s.Users(), r.f.Delivered(r.f.LastUpdate()); len(us) != 1 || n != 3 {
		t.Fatalf("%d user events, the update delivered %d times; want 1 and 3", len(us), n)
	}
}

package chat_test

import (
	"context"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/frontdesk-hq/frontdesk/agent"
	"github.com/frontdesk-hq/frontdesk/channels/chat"
	"github.com/frontdesk-hq/frontdesk/channels/chat/chattest"
	"github.com/frontdesk-hq/frontdesk/event"
	"github.com/frontdesk-hq/frontdesk/hub"
	"github.com/frontdesk-hq/frontdesk/internal/testkit/testagent"
)

func newDoor(t *testing.T, s *chattest.Session, f *fake, o chat.Options) *chat.Door {
	t.Helper()
	o.Door, o.DataDir = "telegram", s.Dir
	if o.Allow == nil {
		o.Allow = []string{"@ann"}
	}
	o.MinBackoff = 5 * o.MinBackoff
	d, err := chat.New(s, f, o)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func (f *fake) send(t *testing.T, x any) error {
	t.Helper()
	f.in <- x
	return <-f.handled
}

// TestStreamedReply: a message from an allowed account is a user event
// of the door, its reply streams into one message posted as a reply to it,
// and the final edit is the exact reply; the connector's cursor moved.
func TestStreamedReply(t *testing.T) {
	gate := testagent.NewGate()
	s := chattest.Start(t, "", hub.Config{}, gate)
	f := newFake(4000)
	d := newDoor(t, s, f, chat.Options{Owner: "owner"})
	chattest.RunDoor(t, d)

	if err := f.send(t, chat.Message{ID: "7", Chat: "c1", From: "@Ann", Aliases: []string{"42"}, Text: "hello", Direct: true}); err != nil {
		t.Fatal(err)
	}
	chattest.Eventually(t, "the streamed words", func() bool {
		_, texts, _ := f.snapshot()
		return texts["m1"] == "part "
	})
	gate.Release <- struct{}{}
	chattest.Eventually(t, "the final edit", func() bool {
		_, texts, _ := f.snapshot()
		return texts["m1"] == "reply to hello"
	})
	posts, _, _ := f.snapshot()
	if len(posts) != 1 || posts[0].ReplyTo != "7" || posts[0].Chat != "c1" {
		t.Fatalf("posts = %+v, want one reply to message 7 in c1", posts)
	}
	us := s.Users()
	if len(us) != 1 || us[0].Channel != "telegram" || us[0].From != "@Ann" || us[0].Person != "owner" || us[0].ClientMsgID != "telegram:c1:7" {
		t.Fatalf("user events = %+v", us)
	}
	if d.Cursor() != "7" {
		t.Fatalf("cursor = %q, want 7", d.Cursor())
	}
}

// TestWhoIsAnswered: an account not allowed, and an allowed one in a
// group without a mention, are not answered and leave nothing in the log;
// a person's account is theirs even when allow does not list it, and a
// person who may not talk is not answered.
func TestWhoIsAnswered(t *testing.T) {
	s := chattest.Start(t, "", hub.Config{}, answer("ok"))
	f := newFake(4000)
	people := func(acct string) (string, bool) {
		switch acct {
		case "@bo":
			return "bo", true
		case "@vi":
			return "vi", false
		}
		return "", false
	}
	d := newDoor(t, s, f, chat.Options{People: people})
	chattest.RunDoor(t, d)
	for _, m := range []chat.Message{
		{ID: "1", Chat: "c", From: "@eve", Text: "hi", Direct: true},
		{ID: "2", Chat: "g", From: "@ann", Text: "hi all"},
		{ID: "3", Chat: "c", From: "@vi", Text: "hi", Direct: true},
	} {
		if err := f.send(t, m); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.send(t, chat.Message{ID: "4", Chat: "g", From: "@bo", Text: "@bot hi", Mentioned: true}); err != nil {
		t.Fatal(err)
	}
	chattest.Eventually(t, "the answer to bo", func() bool { _, texts, _ := f.snapshot(); return texts["m1"] == "ok" })
	us := s.Users()
	if len(us) != 1 || us[0].Person != "bo" || us[0].From != "@bo" {
		t.Fatalf("user events = %+v, want bo's alone", us)
	}
}

// TestBusy: while a turn runs, busy_policy reject answers in the chat and
// records nothing; the message is not owed.
func TestBusy(t *testing.T) {
	gate := testagent.NewGate()
	s := chattest.Start(t, "", hub.Config{}, gate)
	f := newFake(4000)
	d := newDoor(t, s, f, chat.Options{})
	chattest.RunDoor(t, d)
	f.send(t, chat.Message{ID: "1", Chat: "c", From: "@ann", Text: "first", Direct: true})
	if err := f.send(t, chat.Message{ID: "2", Chat: "c", From: "@ann", Text: "second", Direct: true}); err != nil {
		t.Fatal(err)
	}
	posts, _, _ := f.snapshot()
	if len(posts) == 0 || !strings.Contains(posts[len(posts)-1].Plain, "still working") || posts[len(posts)-1].ReplyTo != "2" {
		t.Fatalf("posts = %+v, want a busy answer to message 2", posts)
	}
	gate.Release <- struct{}{}
	chattest.Eventually(t, "the first reply", func() bool { _, texts, _ := f.snapshot(); return texts["m1"] == "reply to first" })
	if n := len(s.Users()); n != 1 {
		t.Fatalf("%d user events, want 1", n)
	}
}

// TestResumeAfterStop: the door stops while a reply streams; the turn
// ends meanwhile; a new door on the same data directory finishes the reply
// by editing the message it posted — nothing posted twice. The message
// handed again (the cursor not moved) is neither run nor answered again.
func TestResumeAfterStop(t *testing.T) {
	gate := testagent.NewGate()
	s := chattest.Start(t, "", hub.Config{}, gate)
	f := newFake(4000)
	stop := chattest.RunDoor(t, newDoor(t, s, f, chat.Options{}))
	m := chat.Message{ID: "1", Chat: "c", From: "@ann", Text: "hello", Direct: true}
	f.send(t, m)
	chattest.Eventually(t, "the streamed words", func() bool { _, texts, _ := f.snapshot(); return texts["m1"] == "part " })
	stop()
	gate.Release <- struct{}{}
	chattest.Eventually(t, "the turn's end", func() bool {
		evs := s.Events()
		return evs[len(evs)-1].Type == event.TurnEnd
	})
	chattest.RunDoor(t, newDoor(t, s, f, chat.Options{}))
	chattest.Eventually(t, "the final edit", func() bool { _, texts, _ := f.snapshot(); return texts["m1"] == "reply to hello" })
	if err := f.send(t, m); err != nil { // handed again
		t.Fatal(err)
	}
	// A second reply to it would be posted at once (the session has its
	// outcome); the next message's whole turn gives it time to show.
	f.send(t, chat.Message{ID: "2", Chat: "c", From: "@ann", Text: "next", Direct: true})
	gate.Release <- struct{}{}
	chattest.Eventually(t, "the next reply", func() bool { _, texts, _ := f.snapshot(); return texts["m2"] == "reply to next" })
	posts, _, _ := f.snapshot()
	if len(posts) != 2 || posts[1].ReplyTo != "2" || len(s.Users()) != 2 {
		t.Fatalf("posts %+v, %d user events; want one reply each to 1 and 2", posts, len(s.Users()))
	}
}

// TestLongReplySplit: a reply over the platform's limit arrives as
// several messages, in order, each within the limit, the whole text kept;
// a 429 on the way is waited out.
func TestLongReplySplit(t *testing.T) {
	var words []string
	for i := range 300 {
		words = append(words, strings.Repeat("w", i%7+1))
	}
	long := strings.Join(words, " ")
	s := chattest.Start(t, "", hub.Config{}, answer(long))
	f := newFake(200)
	f.failNow = 2
	chattest.RunDoor(t, newDoor(t, s, f, chat.Options{}))
	f.send(t, chat.Message{ID: "1", Chat: "c", From: "@ann", Text: "long", Direct: true})
	var got []string
	chattest.Eventually(t, "every part", func() bool {
		posts, texts, _ := f.snapshot()
		got = got[:0]
		for i := range posts {
			got = append(got, texts["m"+strconv.Itoa(i+1)])
		}
		return strings.Join(strings.Fields(strings.Join(got, " ")), " ") == long
	})
	for _, p := range got {
		if len([]rune(p)) > 200 {
			t.Fatalf("a part of %d runes, over 200", len([]rune(p)))
		}
	}
}

// TestApprovalInChat: an approval request of the door's turn is posted
// with two buttons; pressing Approve by a person who may runs the tool and
// the request's message then says who approved.
func TestApprovalInChat(t *testing.T) {
	var runs atomic.Int32
	s := chattest.Start(t, "", hub.Config{Tools: testagent.Confirmed("probe", &runs)}, testagent.CallTool{Name: "probe", Args: `{}`})
	f := newFake(4000)
	d := newDoor(t, s, f, chat.Options{Owner: "owner", Names: func(string) string { return "Ann" }})
	chattest.RunDoor(t, d)
	f.send(t, chat.Message{ID: "1", Chat: "c", From: "@ann", Text: "go", Direct: true})
	var ask chat.Post
	chattest.Eventually(t, "the approval request", func() bool {
		posts, _, _ := f.snapshot()
		for _, p := range posts {
			if len(p.Buttons) == 2 {
				ask = p
				return true
			}
		}
		return false
	})
	var answered string
	f.send(t, chat.Action{Chat: "c", From: "@ann", Approval: ask.Buttons[0].Approval, Decision: ask.Buttons[0].Decision,
		Answer: func(_ context.Context, s string) { answered = s }})
	if answered != "Approved." {
		t.Fatalf("answer = %q", answered)
	}
	chattest.Eventually(t, "the tool's run and the marked request", func() bool {
		_, texts, _ := f.snapshot()
		for _, txt := range texts {
			if strings.Contains(txt, "Approved by Ann · telegram") {
				return runs.Load() == 1
			}
		}
		return false
	})
}

// answer is an agent that replies text at once.
type answer string

func (a answer) Run(ctx context.Context, req agent.Request, emit agent.Emitter) (agent.Reply, error) {
	return agent.Reply{Content: string(a)}, nil
}

// TestCancelCommand: /cancel (and !cancel, for Slack) stops the running
// reply and says so in the chat; with nothing running it says that.
func TestCancelCommand(t *testing.T) {
	gate := testagent.NewGate()
	s := chattest.Start(t, "", hub.Config{}, gate)
	f := newFake(4000)
	chattest.RunDoor(t, newDoor(t, s, f, chat.Options{Owner: "owner"}))
	f.send(t, chat.Message{ID: "1", Chat: "c", From: "@ann", Text: "work", Direct: true})
	chattest.Eventually(t, "the turn", func() bool { _, texts, _ := f.snapshot(); return texts["m1"] == "part " })
	f.send(t, chat.Message{ID: "2", Chat: "c", From: "@ann", Text: "!cancel", Direct: true})
	chattest.Eventually(t, "the cancelled reply", func() bool {
		_, texts, _ := f.snapshot()
		return texts["m2"] == "Cancelled." && strings.Contains(texts["m1"], "(cancelled)")
	})
	f.send(t, chat.Message{ID: "3", Chat: "c", From: "@ann", Text: "/cancel@frontdesk_bot", Direct: true})
	if _, texts, _ := f.snapshot(); texts["m3"] != "Nothing is running." {
		t.Fatalf("answer = %q", texts["m3"])
	}
	if n := len(s.Users()); n != 1 {
		t.Fatalf("%d user events, want 1: commands are not messages", n)
	}
}

// TestEditRefusedPostsAnew: the streamed message is gone (deleted in the
// chat): its final edit is refused for good, so after a few tries the
// final text is posted as a new message — the reply is not stuck owed.
func TestEditRefusedPostsAnew(t *testing.T) {
	gate := testagent.NewGate()
	s := chattest.Start(t, "", hub.Config{}, gate)
	f := newFake(4000)
	chattest.RunDoor(t, newDoor(t, s, f, chat.Options{MinBackoff: 10 * time.Millisecond}))
	f.send(t, chat.Message{ID: "1", Chat: "c", From: "@ann", Text: "hello", Direct: true})
	chattest.Eventually(t, "the streamed words", func() bool { _, texts, _ := f.snapshot(); return texts["m1"] == "part " })
	f.mu.Lock()
	delete(f.msgs, "m1")
	f.mu.Unlock()
	gate.Release <- struct{}{}
	chattest.Eventually(t, "the final text posted anew", func() bool { _, texts, _ := f.snapshot(); return texts["m2"] == "reply to hello" })
	posts, _, _ := f.snapshot()
	if len(posts) != 2 || posts[1].ReplyTo != "1" {
		t.Fatalf("posts = %+v, want the final text as a reply to message 1", posts)
	}
}

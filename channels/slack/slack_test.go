package slack

import (
	"bytes"
	"context"
	"image"
	"image/png"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/frontdesk-hq/frontdesk/agent"
	"github.com/frontdesk-hq/frontdesk/attachments"
	"github.com/frontdesk-hq/frontdesk/channels/chat"
	"github.com/frontdesk-hq/frontdesk/channels/chat/chattest"
	"github.com/frontdesk-hq/frontdesk/hub"
	"github.com/frontdesk-hq/frontdesk/internal/testkit/fakeslack"
	"github.com/frontdesk-hq/frontdesk/internal/testkit/testagent"
)

// options are Options for a connector on f, with short waits.
func options(f *fakeslack.Server) Options {
	return Options{AppToken: fakeslack.AppToken, BotToken: fakeslack.BotToken, APIURL: f.URL(),
		MinBackoff: 20 * time.Millisecond, MaxBackoff: 200 * time.Millisecond, AuthRetry: 50 * time.Millisecond,
		EditEvery: 20 * time.Millisecond}
}

// runDoor runs a real chat.Door over a Connector on f, for session s.
// The door's own backoff is short, so a wait as long as a Retry-After is
// the connector's doing.
func runDoor(t testing.TB, f *fakeslack.Server, s *chattest.Session, o chat.Options) (*chat.Door, func()) {
	t.Helper()
	c, err := New(options(f))
	if err != nil {
		t.Fatal(err)
	}
	o.Door, o.DataDir = "slack", s.Dir
	if o.Allow == nil {
		o.Allow = []string{"U1"}
	}
	o.MinBackoff, o.MaxBackoff = 10*time.Millisecond, 100*time.Millisecond
	d, err := chat.New(s, c, o)
	if err != nil {
		t.Fatal(err)
	}
	return d, chattest.RunDoor(t, d)
}

// TestDMStreamedReply: a direct message is a user event of the slack
// door from the Slack user id; its reply is posted in the message's
// thread, grows by chat.update and ends exact; the envelope is
// acknowledged; the socket was opened with Slack's Origin.
func TestDMStreamedReply(t *testing.T) {
	gate := testagent.NewGate()
	s := chattest.Start(t, "", hub.Config{}, gate)
	f := fakeslack.New(t)
	runDoor(t, f, s, chat.Options{Owner: "owner"})

	env := f.DM("U1", "hello &amp; <https://example.com|the site>", "1700000000.000100")
	f.Wait("the streamed words", func() bool { return f.Text(0) == "part " })
	f.WaitAck(env)
	gate.Release <- struct{}{}
	want := "reply to hello &amp; the site (https://example.com)" // mrkdwn escapes &
	f.Wait("the final edit", func() bool { return f.Text(0) == want })

	all, origins := f.Posts(), f.Origins()
	m, posts := all[0], len(all)
	if posts != 1 || m.Chat != "D1" || m.Thread != "1700000000.000100" {
		t.Fatalf("%d posts, the first %+v; want one in D1 threaded on 1700000000.000100", posts, m)
	}
	if len(origins) != 1 || origins[0] != "https://api.slack.com" {
		t.Fatalf("socket origins = %q, want one https://api.slack.com", origins)
	}
	us := s.Users()
	if len(us) != 1 || us[0].Channel != "slack" || us[0].From != "U1" || us[0].Person != "owner" ||
		us[0].ClientMsgID != "slack:D1:1700000000.000100" || us[0].Content != "hello & the site (https://example.com)" {
		t.Fatalf("user events = %+v", us)
	}
}

// channelMsg is a message event in channel C1.
func channelMsg(user, text, ts string) map[string]any {
	return fakeslack.ChannelMessage("C1", user, text, ts)
}

// TestChannelOnlyWhenMentioned: in a channel, a message without the
// bot's mention, a bot's message and a topic change are not answered; a message
// naming the bot is, once, although Slack sends it both as message and
// as app_mention; the mention is gone from the text. Every envelope is
// acknowledged. A mention seen only in a message event, and an answer in
// the thread of the bot's post, are answered too.
func TestChannelOnlyWhenMentioned(t *testing.T) {
	s := chattest.Start(t, "", hub.Config{}, answer("ok"))
	f := fakeslack.New(t)
	runDoor(t, f, s, chat.Options{Allow: []string{"U1", "U9"}})

	bot := channelMsg("U9", "<@UBOT> I am a bot", "1.2") // U9 is allowed: only bot_id keeps it out
	bot["bot_id"] = "B9"
	topic := channelMsg("U1", "<@UBOT> set the channel topic", "1.3")
	topic["subtype"] = "channel_topic"
	mention := map[string]any{"type": "app_mention", "channel": "C1", "user": "U1", "text": "<@UBOT> what time is it?", "ts": "1.4"}
	var envs []string
	for _, ev := range []map[string]any{channelMsg("U1", "hello all", "1.1"), bot, topic,
		channelMsg("U1", "<@UBOT> what time is it?", "1.4"), mention} {
		envs = append(envs, f.Event(ev))
	}
	for _, e := range envs {
		f.WaitAck(e)
	}
	f.Wait("the answer", func() bool { return f.Text(0) == "ok" })
	// A mention Slack sends only as a message event (no app_mention
	// subscribed), and an answer in the thread of one of the bot's posts.
	f.Event(channelMsg("U1", "and <@UBOT|frontdesk> tomorrow?", "1.5"))
	f.Wait("the second answer", func() bool { return f.Text(1) == "ok" })
	inThread := channelMsg("U1", "thanks", "1.6")
	inThread["thread_ts"], inThread["parent_user_id"] = "1.4", fakeslack.BotID
	f.Event(inThread)
	f.Wait("the third answer", func() bool { return f.Text(2) == "ok" })

	var got []string
	for _, u := range s.Users() {
		got = append(got, u.ClientMsgID+" "+u.Content)
	}
	want := []string{"slack:C1:1.4 what time is it?", "slack:C1:1.5 and tomorrow?", "slack:C1:1.6 thanks"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("user events %q, want %q", got, want)
	}
	posts := f.Posts()
	for i, thread := range []string{"1.4", "1.5", "1.4"} {
		if m := posts[i]; len(posts) != 3 || m.Thread != thread || m.Chat != "C1" {
			t.Fatalf("%d posts, post %d %+v; want 3, in C1 threaded on %s", len(posts), i, m, thread)
		}
	}
}

// TestStranger: a direct message from a user not on allow is
// acknowledged, not answered and leaves nothing in the log; an allowed
// user's next message is answered.
func TestStranger(t *testing.T) {
	s := chattest.Start(t, "", hub.Config{}, answer("ok"))
	f := fakeslack.New(t)
	runDoor(t, f, s, chat.Options{})
	f.WaitAck(f.DM("U666", "let me in", "2.1"))
	f.WaitAck(f.DM("U1", "hi", "2.2"))
	f.Wait("the answer to U1", func() bool { return f.Text(0) == "ok" })
	if us := s.Users(); len(us) != 1 || us[0].From != "U1" {
		t.Fatalf("user events = %+v, want U1's alone", us)
	}
	if posts := f.Posts(); len(posts) != 1 || posts[0].Thread != "2.2" {
		t.Fatalf("%d posts, want one answering 2.2", len(posts))
	}
}

// TestFiles: a photo shared in a DM arrives as an attachment, fetched
// from url_private with the bot token; a file whose URL is not Slack's
// is not fetched (the token stays home) and the model is told.
func TestFiles(t *testing.T) {
	store, err := attachments.Open(t.TempDir(), 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	s := chattest.Start(t, "", hub.Config{Attachments: store}, answer("nice"))
	f := fakeslack.New(t)
	var img bytes.Buffer
	png.Encode(&img, image.NewRGBA(image.Rect(0, 0, 4, 4)))
	catURL := f.AddFile("cat.png", img.Bytes())
	var stolen atomic.Int32 // requests that carried a token to a host not Slack's
	evil := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "" {
			stolen.Add(1)
		}
		w.Write([]byte("abc"))
	}))
	defer evil.Close()
	runDoor(t, f, s, chat.Options{Attachments: store})

	ev := map[string]any{"type": "message", "subtype": "file_share", "channel": "D1", "channel_type": "im", "user": "U1",
		"text": "look", "ts": "3.1", "files": []map[string]any{
			{"id": "F1", "name": "cat.png", "mimetype": "image/png", "size": img.Len(), "url_private": catURL},
			{"id": "F2", "name": "evil.txt", "size": 3, "url_private": strings.Replace(evil.URL, "127.0.0.1", "localhost", 1) + "/steal"},
		}}
	f.WaitAck(f.Event(ev))
	f.Wait("the answer", func() bool { return f.Text(0) == "nice" })
	us := s.Users()
	if len(us) != 1 {
		t.Fatalf("%d user events, want 1", len(us))
	}
	a := us[0].Attachments
	if len(a) != 1 || a[0].Name != "cat.png" || a[0].Size != int64(img.Len()) || a[0].Type != "image/png" {
		t.Fatalf("attachments = %+v, want cat.png of %d bytes", a, img.Len())
	}
	if n := stolen.Load(); n != 0 {
		t.Fatalf("the bot token went to a host not Slack's %d times", n)
	}
	if !strings.HasPrefix(us[0].Content, "look") || !strings.Contains(us[0].Content, `"evil.txt" was not stored`) {
		t.Fatalf("content = %q, want look and a note that evil.txt was not stored", us[0].Content)
	}
}

// TestApprovalButtons: an approval request is posted with Approve and
// Deny buttons whose values are "<decision>:<id>"; Approve pressed
// (block_actions over the socket) runs the tool, tells the presser, and
// the request's message then says who approved, its buttons gone.
func TestApprovalButtons(t *testing.T) {
	var runs atomic.Int32
	s := chattest.Start(t, "", hub.Config{Tools: testagent.Confirmed("probe", &runs)}, testagent.CallTool{Name: "probe", Args: `{}`})
	f := fakeslack.New(t)
	runDoor(t, f, s, chat.Options{Owner: "owner", Names: func(string) string { return "Ann" }})
	f.DM("U1", "go", "4.1")
	var ask string
	var values []string
	f.Wait("the approval request", func() bool {
		for _, m := range f.Posts() {
			if len(m.Buttons) == 2 {
				ask, values = m.TS, m.Buttons
				return true
			}
		}
		return false
	})
	if !strings.HasPrefix(values[0], "approve:") || !strings.HasPrefix(values[1], "deny:") {
		t.Fatalf("button values = %q", values)
	}
	env := f.Press("U1", "D1", ask, values[0])
	f.WaitAck(env)
	f.Wait("the marked request and the whisper", func() bool {
		m, _ := f.Post(ask)
		whispers := f.Whispers()
		return strings.Contains(m.Text, "Approved") && strings.Contains(m.Text, "Ann") && len(m.Buttons) == 0 &&
			len(whispers) == 1 && whispers[0] == "U1: Approved."
	})
	chattest.Eventually(t, "the tool's run", func() bool { return runs.Load() == 1 })
}

// TestCancel: /cancel in the DM stops the running reply and says so in
// the thread of the /cancel.
func TestCancel(t *testing.T) {
	gate := testagent.NewGate()
	s := chattest.Start(t, "", hub.Config{}, gate)
	f := fakeslack.New(t)
	runDoor(t, f, s, chat.Options{Owner: "owner"})
	f.DM("U1", "hello", "5.1")
	f.Wait("the streamed words", func() bool { return f.Text(0) == "part " })
	f.DM("U1", "/cancel", "5.2")
	select {
	case <-gate.Cancelled:
	case <-time.After(15 * time.Second):
		t.Fatal("the turn was not cancelled")
	}
	f.Wait("Cancelled. in the thread of /cancel", func() bool {
		for _, m := range f.Posts() {
			if m.Text == "Cancelled." && m.Thread == "5.2" {
				return true
			}
		}
		return false
	})
}

// TestRateLimited: chat.postMessage answered 429 with Retry-After: 1,
// twice; the reply arrives, and the try after a 429 came no sooner than
// Retry-After (the door's own backoff is 10 ms).
func TestRateLimited(t *testing.T) {
	s := chattest.Start(t, "", hub.Config{}, answer("ok"))
	f := fakeslack.New(t)
	f.RateLimit(2)
	runDoor(t, f, s, chat.Options{})
	f.DM("U1", "hi", "6.1")
	f.Wait("the answer", func() bool { return f.Text(0) == "ok" })
	if left, after := f.RateLimitsLeft(), f.After429(); left != 0 || after < time.Second {
		t.Fatalf("429s left %d, waited %s after the last; want 0 and at least 1s", left, after)
	}
}

// answer is an agent that replies text at once.
type answer string

func (a answer) Run(ctx context.Context, req agent.Request, emit agent.Emitter) (agent.Reply, error) {
	return agent.Reply{Content: string(a)}, nil
}

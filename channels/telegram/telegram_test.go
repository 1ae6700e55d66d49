package telegram_test

import (
	"crypto/sha256"
	"encoding/hex"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/frontdesk-hq/frontdesk/attachments"
	"github.com/frontdesk-hq/frontdesk/channels/chat"
	"github.com/frontdesk-hq/frontdesk/event"
	"github.com/frontdesk-hq/frontdesk/hub"
	"github.com/frontdesk-hq/frontdesk/internal/testkit/faketelegram"
	"github.com/frontdesk-hq/frontdesk/internal/testkit/testagent"
)

// TestDirectMessage: ann's DM is a telegram user event; the reply is
// posted in HTML as a reply to her message while it is written, edited as
// it grows, and ends exactly as the agent's reply; typing was shown; the
// offset after her update is stored and confirmed to Telegram.
func TestDirectMessage(t *testing.T) {
	gate := testagent.NewGate()
	r := newRig(t, rigOptions{agent: gate})
	d, _ := r.start(t)
	id := r.f.Message(annChat, ann, "hello **there**", nil)

	r.f.WaitFor(t, "the streamed words in HTML", func() bool {
		m, ok := r.f.ReplyTo(id)
		return ok && strings.TrimSpace(m.Text) == "part" && m.ParseMode == "HTML"
	})
	gate.Release <- struct{}{}
	r.f.WaitFor(t, "the final edit", func() bool {
		m, _ := r.f.ReplyTo(id)
		return m.Text == "reply to hello <b>there</b>" && r.f.Count("sendChatAction", 200) > 0
	})
	sent := len(r.f.Posts())
	m, _ := r.f.ReplyTo(id)
	if sent != 1 || m.ParseMode != "HTML" || m.Chat != strconv.Itoa(annChat) || m.Edits < 1 {
		t.Fatalf("%d messages sent, the reply %v; want one HTML reply in ann's chat, edited", sent, &m)
	}
	us := r.s.Users()
	want := "telegram:" + strconv.Itoa(annChat) + ":" + strconv.Itoa(id)
	if len(us) != 1 || us[0].Channel != "telegram" || us[0].From != "@ann" || us[0].Content != "hello **there**" || us[0].ClientMsgID != want {
		t.Fatalf("user events = %+v, want one from @ann with client_msg_id %s", us, want)
	}
	r.f.WaitFor(t, "the offset confirmed", func() bool { return r.f.Acked() == r.f.LastUpdate()+1 })
	if got, want := d.Cursor(), strconv.FormatInt(r.f.LastUpdate()+1, 10); got != want {
		t.Fatalf("cursor = %q, want %q", got, want)
	}
}

// TestGroupMention: in a group, ann is answered when she @-mentions the
// bot or replies to its message, and not otherwise.
func TestGroupMention(t *testing.T) {
	r := newRig(t, rigOptions{agent: answer("ok")})
	r.start(t)
	r.f.Message(groupChat, ann, "hi all", nil)
	asked := r.f.Message(groupChat, ann, "@frontdesk_bot what time is it", map[string]any{
		"entities": []any{map[string]any{"type": "mention", "offset": 0, "length": 14}}})
	var botMsg int
	r.f.WaitFor(t, "the answer to the mention", func() bool {
		if m, ok := r.f.ReplyTo(asked); ok {
			botMsg = m.ID
			return true
		}
		return false
	})
	thanks := r.f.Message(groupChat, ann, "thanks", map[string]any{"reply_to_message": map[string]any{
		"message_id": botMsg, "date": 1, "from": faketelegram.Bot(), "chat": map[string]any{"id": groupChat, "type": "supergroup"}, "text": "ok"}})
	r.f.WaitFor(t, "the answer to the reply", func() bool { _, ok := r.f.ReplyTo(thanks); return ok })

	var got []string
	for _, u := range r.s.Users() {
		got = append(got, u.Content)
	}
	if strings.Join(got, "|") != "what time is it|thanks" {
		t.Fatalf("user events %q, want the mention (without it) and the reply alone", got)
	}
}

// TestNotAllowed: eve is not on allow: nothing of hers reaches the log and
// nothing answers her, and her update is confirmed all the same.
func TestNotAllowed(t *testing.T) {
	r := newRig(t, rigOptions{agent: answer("ok")})
	r.start(t)
	hers := r.f.Message(66, eve, "hi, let me in", nil)
	mine := r.f.Message(annChat, ann, "hi", nil)
	r.f.WaitFor(t, "the answer to ann", func() bool { _, ok := r.f.ReplyTo(mine); return ok })
	r.f.WaitFor(t, "every update confirmed", func() bool { return r.f.Acked() == r.f.LastUpdate()+1 })
	us := r.s.Users()
	_, answered := r.f.ReplyTo(hers)
	sent := r.f.Posts()
	if len(us) != 1 || us[0].From != "@ann" || answered || len(sent) != 1 {
		t.Fatalf("user events %+v, %d messages sent; want ann's alone", us, len(sent))
	}
}

// TestFiles: a photo (its largest size, with a caption) and a document
// arrive as attachments with their bytes; the smaller photo size is not
// fetched.
func TestFiles(t *testing.T) {
	store, err := attachments.Open(filepath.Join(t.TempDir(), "attachments"), 0)
	if err != nil {
		t.Fatal(err)
	}
	r := newRig(t, rigOptions{agent: answer("ok"), hub: hub.Config{Attachments: store},
		door: func(o *chat.Options) { o.Attachments = store }})
	big := append([]byte("\x89PNG\r\n\x1a\n"), []byte(strings.Repeat("large photo ", 100))...)
	doc := []byte("notes from the meeting\n")
	r.f.AddFile("small", []byte("\x89PNG\r\n\x1a\nsmall"))
	r.f.AddFile("large", big)
	r.f.AddFile("doc", doc)
	r.start(t)
	photo := r.f.Message(annChat, ann, "", map[string]any{"caption": "look", "photo": []any{
		map[string]any{"file_id": "small", "file_unique_id": "us", "width": 90, "height": 60, "file_size": 13},
		map[string]any{"file_id": "large", "file_unique_id": "ul", "width": 1280, "height": 960, "file_size": len(big)}}})
	file := r.f.Message(annChat, ann, "", map[string]any{"document": map[string]any{
		"file_id": "doc", "file_unique_id": "ud", "file_name": "notes.txt", "mime_type": "text/plain", "file_size": len(doc)}})
	r.f.WaitFor(t, "both answered", func() bool {
		_, p := r.f.ReplyTo(photo)
		_, f := r.f.ReplyTo(file)
		return p && f
	})

	us := r.s.Users()
	if len(us) != 2 || len(us[0].Attachments) != 1 || len(us[1].Attachments) != 1 {
		t.Fatalf("user events = %+v, want two with one attachment each; sent %v", us, r.f.Posts())
	}
	for i, c := range []struct {
		content string
		data    []byte
		name    string
	}{{"look", big, "photo-ul.jpg"}, {"", doc, "notes.txt"}} {
		a, sum := us[i].Attachments[0], sha256.Sum256(c.data)
		if us[i].Content != c.content || a.Name != c.name || a.Size != int64(len(c.data)) || a.SHA256 != hex.EncodeToString(sum[:]) {
			t.Errorf("event %d: content %q attachment %+v; want %q, %s of %d bytes", i, us[i].Content, a, c.content, c.name, len(c.data))
		}
	}
	if n := r.f.Count("file:small", 0); n != 0 {
		t.Errorf("the small photo size was downloaded %d times", n)
	}
}

// TestApprovalButton: the approval request has an Approve and a Deny
// button; ann pressing Approve runs the tool, her press is answered, and
// the request's message says it was approved (its buttons gone).
func TestApprovalButton(t *testing.T) {
	var runs atomic.Int32
	r := newRig(t, rigOptions{hub: hub.Config{Tools: testagent.Confirmed("probe", &runs)},
		agent: testagent.CallTool{Name: "probe", Args: `{}`}})
	r.start(t)
	r.f.Message(annChat, ann, "go", nil)
	var ask faketelegram.Sent
	r.f.WaitFor(t, "the approval request", func() bool {
		for _, m := range r.f.Posts() {
			if len(m.Buttons) == 2 {
				ask = m
				return true
			}
		}
		return false
	})
	data := ask.Buttons[0].CallbackData
	if !strings.HasPrefix(data, "approve:") || ask.Buttons[1].CallbackData != "deny:"+strings.TrimPrefix(data, "approve:") {
		t.Fatalf("buttons %+v, want approve:<id> and deny:<id>", ask.Buttons)
	}
	r.f.Press(ann, "cq1", data, ask)
	r.f.WaitFor(t, "the press answered and the request marked", func() bool {
		m, _ := r.f.Post(ask.Chat, ask.ID)
		return len(r.f.Answers()) == 1 && strings.Contains(m.Text, "Approved") && len(m.Buttons) == 0
	})
	if answers := r.f.Answers(); answers[0] != "Approved." || runs.Load() != 1 {
		t.Fatalf("answer %q, %d runs; want Approved. and one run", answers[0], runs.Load())
	}
}

// TestCancel: /cancel stops the running reply and says so.
func TestCancel(t *testing.T) {
	gate := testagent.NewGate()
	r := newRig(t, rigOptions{agent: gate})
	r.start(t)
	id := r.f.Message(annChat, ann, "write a long essay", nil)
	r.f.WaitFor(t, "the streamed words", func() bool { _, ok := r.f.ReplyTo(id); return ok })
	cancel := r.f.Message(annChat, ann, "/cancel", map[string]any{
		"entities": []any{map[string]any{"type": "bot_command", "offset": 0, "length": 7}}})
	select {
	case <-gate.Cancelled:
	case <-time.After(15 * time.Second):
		t.Fatal("the turn was not cancelled")
	}
	r.f.WaitFor(t, "Cancelled.", func() bool { m, ok := r.f.ReplyTo(cancel); return ok && m.Text == "Cancelled." })
	evs := r.s.Events()
	var ended bool
	for _, e := range evs {
		ended = ended || e.Type == event.TurnEnd
	}
	if !ended || len(r.s.Users()) != 1 {
		t.Fatalf("turn ended %v, %d user events; want the turn ended and one user event", ended, len(r.s.Users()))
	}
}

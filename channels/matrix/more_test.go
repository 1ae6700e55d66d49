//go:build goolm

package matrix

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"

	"maunium.net/go/mautrix"
	mevent "maunium.net/go/mautrix/event"
	"maunium.net/go/mautrix/id"

	"github.com/frontdesk-hq/frontdesk/channels/chat"
	"github.com/frontdesk-hq/frontdesk/channels/chat/chattest"
	"github.com/frontdesk-hq/frontdesk/hub"
	"github.com/frontdesk-hq/frontdesk/internal/testkit/testdendrite"
)

// TestNoHistory: a door without a cursor does not answer what was said
// before it first ran (the bot was in the room already); what comes
// after is answered.
func TestNoHistory(t *testing.T) {
	w := newWorld(t, hub.Config{}, echo{})
	ann := w.person("ann")
	room := ann.CreateRoom(w.bot, false)
	if err := w.srv.Do(context.Background(), http.MethodPost, "/_matrix/client/v3/join/"+testdendrite.PathEscape(room.String()),
		w.botToken, map[string]any{}, nil); err != nil {
		t.Fatal(err)
	}
	ann.WaitJoined(room, w.bot)
	old := ann.Say(room, "old")
	d := w.startDoor()
	chattest.Eventually(t, "the first sync", func() bool { return d.door.Cursor() != "" })
	msg := ann.Say(room, "new")
	ann.WaitReply(w.bot, msg, "echo: new")
	if n := ann.RepliesTo(w.bot, old); n != 0 {
		t.Fatalf("%d replies to the message before the door ran, want 0", n)
	}
	if us := w.sess.Users(); len(us) != 1 || us[0].Content != "new" {
		t.Fatalf("user events = %+v, want new alone", us)
	}
}

// TestGroupMention: in a room of three, ann's message without a mention
// is not answered; each way of naming the bot is: m.mentions, its user
// id or its display name in the text, a reply to its message.
func TestGroupMention(t *testing.T) {
	w := newWorld(t, hub.Config{}, echo{})
	if err := w.srv.Do(context.Background(), http.MethodPut, "/_matrix/client/v3/profile/"+testdendrite.PathEscape(w.bot.String())+"/displayname",
		w.botToken, map[string]string{"displayname": "Desk"}, nil); err != nil {
		t.Fatal(err)
	}
	w.startDoor()
	ann, eve := w.person("ann"), w.person("eve")
	resp, err := ann.Client().CreateRoom(context.Background(), &mautrix.ReqCreateRoom{Preset: "private_chat", Invite: []id.UserID{w.bot, eve.ID()}})
	if err != nil {
		t.Fatal(err)
	}
	room := resp.RoomID
	if _, err := eve.Client().JoinRoomByID(context.Background(), room); err != nil {
		t.Fatal(err)
	}
	ann.WaitJoined(room, w.bot)
	ann.WaitJoined(room, eve.ID())
	quiet := ann.Say(room, "hello all")
	var last testdendrite.Reply
	for _, tc := range []struct {
		name    string
		content *mevent.MessageEventContent
	}{
		{"m.mentions", &mevent.MessageEventContent{Body: "you there", Mentions: &mevent.Mentions{UserIDs: []id.UserID{w.bot}}}},
		{"user id", &mevent.MessageEventContent{Body: "hi " + w.bot.String()}},
		{"display name", &mevent.MessageEventContent{Body: "desk, hi"}},
		{"reply", &mevent.MessageEventContent{Body: "thanks", RelatesTo: &mevent.RelatesTo{InReplyTo: &mevent.InReplyTo{EventID: last.ID}}}},
	} {
		tc.content.MsgType = mevent.MsgText
		if tc.name == "reply" {
			tc.content.RelatesTo.InReplyTo.EventID = last.ID
		}
		msg := ann.Send(room, mevent.EventMessage, tc.content)
		last = ann.WaitReply(w.bot, msg, "echo: "+tc.content.Body)
	}
	if n := ann.RepliesTo(w.bot, quiet); n != 0 {
		t.Fatalf("%d replies to a message without a mention, want 0", n)
	}
	if us := w.sess.Users(); len(us) != 4 {
		t.Fatalf("user events = %+v, want the four mentions", us)
	}
}

// refusing is the Connector with an inbox whose Message fails the first
// n times (a full disk, say); it records the inbox calls in order.
type refusing struct {
	*Connector
	mu    sync.Mutex
	n     int
	calls []string
}

func (r *refusing) Run(ctx context.Context, in chat.Inbox) error {
	return r.Connector.Run(ctx, &refusingInbox{Inbox: in, r: r})
}

type refusingInbox struct {
	chat.Inbox
	r *refusing
}

func (i *refusingInbox) Message(ctx context.Context, m chat.Message) error {
	i.r.mu.Lock()
	fail := i.r.n > 0
	i.r.n--
	i.r.calls = append(i.r.calls, map[bool]string{true: "refused ", false: "message "}[fail]+m.Text)
	i.r.mu.Unlock()
	if fail {
		return errors.New("disk full")
	}
	return i.Inbox.Message(ctx, m)
}

func (i *refusingInbox) Advance(c string) error {
	i.r.mu.Lock()
	i.r.calls = append(i.r.calls, "advance")
	i.r.mu.Unlock()
	return i.Inbox.Advance(c)
}

// TestMessageRefused: while the Door cannot take a message the sync
// token does not move; the message is handed again and answered once.
func TestMessageRefused(t *testing.T) {
	w := newWorld(t, hub.Config{}, echo{})
	conn, err := New(Options{Homeserver: w.srv.URL, UserID: w.bot.String(), Password: "bot-password",
		Encryption: true, DataDir: w.sess.Dir, Logger: testLog(), MinBackoff: 20 * 1e6, MaxBackoff: 100 * 1e6})
	if err != nil {
		t.Fatal(err)
	}
	r := &refusing{Connector: conn, n: 2}
	d, err := chat.New(w.sess, r, chat.Options{Door: "matrix", DataDir: w.sess.Dir, Allow: []string{"@ann:localhost"}, Logger: testLog()})
	if err != nil {
		t.Fatal(err)
	}
	chattest.RunDoor(t, d)
	ann := w.person("ann")
	room := ann.Room(w.bot, false)
	msg := ann.Say(room, "hello")
	ann.WaitReply(w.bot, msg, "echo: hello")
	r.mu.Lock()
	calls := strings.Join(r.calls, ",")
	r.mu.Unlock()
	if !strings.Contains(calls, "refused hello,refused hello,message hello,advance") {
		t.Fatalf("inbox calls = %s, want hello refused twice, then taken, then advance", calls)
	}
	if n := ann.RepliesTo(w.bot, msg); n != 1 || len(w.sess.Users()) != 1 {
		t.Fatalf("%d replies, %d user events; want 1 and 1", n, len(w.sess.Users()))
	}
}

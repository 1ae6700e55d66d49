//go:build goolm

package matrix

import (
	"context"
	"log/slog"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"maunium.net/go/mautrix"
	"maunium.net/go/mautrix/event"
	"maunium.net/go/mautrix/id"

	"github.com/frontdesk-hq/frontdesk/agent"
	"github.com/frontdesk-hq/frontdesk/attachments"
	"github.com/frontdesk-hq/frontdesk/channels/chat"
	"github.com/frontdesk-hq/frontdesk/channels/chat/chattest"
	"github.com/frontdesk-hq/frontdesk/hub"
	"github.com/frontdesk-hq/frontdesk/internal/testkit/testdendrite"
)

// testLog is quiet unless MATRIX_TEST_LOG is set.
func testLog() *slog.Logger {
	lvl := slog.LevelError
	if os.Getenv("MATRIX_TEST_LOG") != "" {
		lvl = slog.LevelDebug
	}
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: lvl}))
}

// world is a real Dendrite with the accounts bot, ann and eve, and a
// session whose chat log the bot's door writes.
type world struct {
	t     testing.TB
	srv   *testdendrite.Server
	sess  *chattest.Session
	files *attachments.Store
	bot   id.UserID
	// botToken is a login of the bot's other than the door's (another
	// device), for acting as the bot before the door runs.
	botToken string
}

func newWorld(t testing.TB, cfg hub.Config, ag agent.Agent) *world {
	srv := testdendrite.Start(t)
	bot, botToken := srv.CreateAccount(t, "bot", "bot-password")
	srv.CreateAccount(t, "ann", "ann-password")
	srv.CreateAccount(t, "eve", "eve-password")
	files, err := attachments.Open(t.TempDir(), 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Attachments = files
	sess := chattest.Start(t, "", cfg, ag)
	return &world{t: t, srv: srv, sess: sess, files: files, bot: id.UserID(bot), botToken: botToken}
}

// door is the bot's connector and door, running on the world's data dir.
type door struct {
	conn *Connector
	door *chat.Door
	stop func()
}

// startDoor runs the bot's door (ann allowed) on w's data directory.
func (w *world) startDoor() *door {
	t := w.t
	t.Helper()
	conn, err := New(Options{Homeserver: w.srv.URL, UserID: w.bot.String(), Password: "bot-password",
		Encryption: true, DataDir: w.sess.Dir, Logger: testLog(), PollTimeout: 5 * time.Second,
		MinBackoff: 20 * time.Millisecond, MaxBackoff: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	d, err := chat.New(w.sess, conn, chat.Options{Door: "matrix", DataDir: w.sess.Dir, Allow: []string{"@ann:localhost"},
		Attachments: w.files, Logger: testLog(), MinBackoff: 20 * time.Millisecond, MaxBackoff: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	stopDoor := chattest.RunDoor(t, d)
	stop := func() { stopDoor(); conn.Close() }
	t.Cleanup(stop)
	return &door{conn: conn, door: d, stop: stop}
}

// person is a Matrix client of its own (its own device and crypto
// store) that syncs in the background and keeps every event it sees,
// decrypted.
type person struct {
	t    testing.TB
	c    *Connector
	id   id.UserID
	mu   sync.Mutex
	evts []*event.Event
	// typing are the users seen typing (m.typing), ever.
	typing map[id.UserID]bool
}

func (w *world) person(name string) *person {
	t := w.t
	t.Helper()
	c, err := New(Options{Homeserver: w.srv.URL, UserID: "@" + name + ":localhost", Password: name + "-password",
		Encryption: true, DataDir: t.TempDir(), Logger: testLog()})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	if err := c.setup(ctx); err != nil {
		t.Fatal(err)
	}
	p := &person{t: t, c: c, id: c.cli.UserID}
	done := make(chan struct{})
	go func() { defer close(done); p.sync(ctx) }()
	t.Cleanup(func() { cancel(); <-done; c.Close() })
	return p
}

func (p *person) sync(ctx context.Context) {
	since := ""
	for ctx.Err() == nil {
		resp, err := p.c.cli.FullSyncRequest(ctx, mautrix.ReqSync{Timeout: 5000, Since: since})
		if err != nil {
			if ctx.Err() == nil {
				p.t.Logf("%s: sync: %v", p.id, err)
			}
			time.Sleep(50 * time.Millisecond)
			continue
		}
		p.c.prepare(ctx, resp, since)
		for room, r := range resp.Rooms.Join {
			for _, evt := range r.Timeline.Events {
				evt.RoomID = room
				p.keep(ctx, evt)
			}
			p.sawTyping(r.Ephemeral.Events)
		}
		since = resp.NextBatch
	}
}

func (p *person) keep(ctx context.Context, evt *event.Event) {
	if evt.StateKey != nil {
		return
	}
	evt.Type.Class = event.MessageEventType
	if evt.Content.ParseRaw(evt.Type) != nil {
		return
	}
	if evt.Type == event.EventEncrypted {
		enc := evt.Content.AsEncrypted()
		p.c.helper.WaitForSession(ctx, evt.RoomID, enc.SenderKey, enc.SessionID, 5*time.Second)
		dec, err := p.c.helper.Decrypt(ctx, evt)
		if err != nil {
			p.t.Errorf("%s could not decrypt %s: %v", p.id, evt.ID, err)
			return
		}
		evt = dec
	}
	p.mu.Lock()
	p.evts = append(p.evts, evt)
	p.mu.Unlock()
}

// sawTyping records the typing users of m.typing events.
func (p *person) sawTyping(evts []*event.Event) {
	for _, evt := range evts {
		evt.Type.Class = event.EphemeralEventType
		if evt.Type != event.EphemeralEventTyping || evt.Content.ParseRaw(evt.Type) != nil {
			continue
		}
		p.mu.Lock()
		for _, u := range evt.Content.AsTyping().UserIDs {
			if p.typing == nil {
				p.typing = map[id.UserID]bool{}
			}
			p.typing[u] = true
		}
		p.mu.Unlock()
	}
}

// seenTyping says whether p has seen who typing.
func (p *person) seenTyping(who id.UserID) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.typing[who]
}

// events returns what p has seen so far.
func (p *person) events() []*event.Event {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]*event.Event(nil), p.evts...)
}

// room creates a room with the bot invited (encrypted if enc) and, if
// join, waits until the bot has joined and p knows it.
func (p *person) room(bot id.UserID, enc, join bool) id.RoomID {
	t := p.t
	t.Helper()
	req := &mautrix.ReqCreateRoom{Preset: "trusted_private_chat", IsDirect: true, Invite: []id.UserID{bot}}
	if enc {
		req.InitialState = []*event.Event{{Type: event.StateEncryption, StateKey: new(string),
			Content: event.Content{Parsed: &event.EncryptionEventContent{Algorithm: id.AlgorithmMegolmV1}}}}
	}
	resp, err := p.c.cli.CreateRoom(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if join {
		p.waitJoined(resp.RoomID, bot)
	}
	return resp.RoomID
}

// waitJoined waits until the server says who joined room. (p's state
// store may not say so: mautrix's CreateRoom marks the invited as invited
// when it returns, which can be after p's sync saw them join; that
// stale mark is mended here.)
func (p *person) waitJoined(room id.RoomID, who id.UserID) {
	p.t.Helper()
	chattest.Eventually(p.t, who.String()+" to join "+room.String(), func() bool {
		resp, err := p.c.cli.JoinedMembers(context.Background(), room)
		if err != nil {
			return false
		}
		_, ok := resp.Joined[who]
		return ok
	})
	if err := p.c.st.state.SetMembership(context.Background(), room, who, event.MembershipJoin); err != nil {
		p.t.Fatal(err)
	}
}

// say sends text to room (encrypted if the room is); its event id.
func (p *person) say(room id.RoomID, text string) id.EventID {
	p.t.Helper()
	return p.send(room, event.EventMessage, &event.MessageEventContent{MsgType: event.MsgText, Body: text})
}

func (p *person) send(room id.RoomID, typ event.Type, content any) id.EventID {
	p.t.Helper()
	resp, err := p.c.cli.SendMessageEvent(context.Background(), room, typ, content)
	if err != nil {
		p.t.Fatal(err)
	}
	return resp.EventID
}

// reply is what p sees of the bot's answer to msg: the first body it
// posted, its id, its current text (after the last m.replace) and how
// many edits it had.
type reply struct {
	id          id.EventID
	first, last string
	edits       int
	// encrypted: the post and all its edits came encrypted.
	encrypted bool
}

func (p *person) replyTo(from id.UserID, msg id.EventID) (r reply, ok bool) {
	for _, e := range p.events() {
		if e.Sender != from || e.Type != event.EventMessage {
			continue
		}
		m := e.Content.AsMessage()
		switch {
		case r.id == "" && m.RelatesTo.GetReplyTo() == msg && m.NewContent == nil:
			r = reply{id: e.ID, first: m.Body, last: m.Body, encrypted: e.Mautrix.WasEncrypted}
			ok = true
		case ok && m.RelatesTo != nil && m.RelatesTo.Type == event.RelReplace && m.RelatesTo.EventID == r.id && m.NewContent != nil:
			r.last = m.NewContent.Body
			r.edits++
			r.encrypted = r.encrypted && e.Mautrix.WasEncrypted
		}
	}
	return r, ok
}

// repliesTo counts the bot's messages (not edits) answering msg.
func (p *person) repliesTo(from id.UserID, msg id.EventID) int {
	n := 0
	for _, e := range p.events() {
		m := e.Content.AsMessage()
		if e.Sender == from && e.Type == event.EventMessage && m.NewContent == nil && m.RelatesTo.GetReplyTo() == msg {
			n++
		}
	}
	return n
}

// waitReply waits until the bot's reply to msg reads want.
func (p *person) waitReply(bot id.UserID, msg id.EventID, want string) reply {
	p.t.Helper()
	var r reply
	chattest.Eventually(p.t, "the reply "+want, func() bool {
		var ok bool
		r, ok = p.replyTo(bot, msg)
		return ok && r.last == want
	})
	return r
}

// echo answers "echo: " and the message at once.
type echo struct{}

func (echo) Run(ctx context.Context, req agent.Request, emit agent.Emitter) (agent.Reply, error) {
	return agent.Reply{Content: "echo: " + strings.TrimSpace(req.Content)}, nil
}

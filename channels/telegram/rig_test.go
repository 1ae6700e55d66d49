package telegram_test

import (
	"context"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/frontdesk-hq/frontdesk/agent"
	"github.com/frontdesk-hq/frontdesk/channels/chat"
	"github.com/frontdesk-hq/frontdesk/channels/chat/chattest"
	"github.com/frontdesk-hq/frontdesk/channels/telegram"
	"github.com/frontdesk-hq/frontdesk/hub"
	"github.com/frontdesk-hq/frontdesk/internal/testkit/faketelegram"
)

// People on the fake: ann is allowed, eve is not.
var (
	ann = map[string]any{"id": 42, "is_bot": false, "first_name": "Ann", "username": "ann"}
	eve = map[string]any{"id": 66, "is_bot": false, "first_name": "Eve", "username": "eve"}
)

const (
	annChat   = 42         // ann's private chat with the bot
	groupChat = -100123456 // a supergroup with ann and the bot
)

// rig is a real session and a real chat.Door over the connector, talking
// to the fake.
type rig struct {
	f   *faketelegram.Server
	s   *chattest.Session
	spy *spy
	// door makes a new Door (and connector) on the same data directory.
	door func(t testing.TB) *chat.Door
}

type rigOptions struct {
	hub   hub.Config
	agent agent.Agent
	door  func(*chat.Options)
	conn  func(*telegram.Options)
}

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func newRig(t testing.TB, o rigOptions) *rig {
	t.Helper()
	r := &rig{f: faketelegram.New(t), s: chattest.Start(t, "", o.hub, o.agent), spy: &spy{}}
	r.door = func(t testing.TB) *chat.Door {
		t.Helper()
		co := telegram.Options{Token: faketelegram.Token, BaseURL: r.f.URL(), Logger: quiet(), PollTimeout: 2 * time.Second,
			MinBackoff: 10 * time.Millisecond, MaxBackoff: 50 * time.Millisecond,
			UnauthorizedBackoff: 50 * time.Millisecond, EditEvery: 20 * time.Millisecond}
		if o.conn != nil {
			o.conn(&co)
		}
		c, err := telegram.New(co)
		if err != nil {
			t.Fatal(err)
		}
		do := chat.Options{Door: "telegram", DataDir: r.s.Dir, Allow: []string{"@ann"}, Owner: "owner", Logger: quiet(),
			MinBackoff: 10 * time.Millisecond, MaxBackoff: 50 * time.Millisecond}
		if o.door != nil {
			o.door(&do)
		}
		d, err := chat.New(r.s, spied{c, r.spy}, do)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	return r
}

// start runs a new door until the test ends; it returns its stop.
func (r *rig) start(t testing.TB) (*chat.Door, func()) {
	d := r.door(t)
	return d, chattest.RunDoor(t, d)
}

// spy stands between the connector and the Door: it records Report and
// lets a test step in before Message and Advance.
type spy struct {
	mu      sync.Mutex
	reports []error
	// message, if set, replaces in.Message (next is the Door's).
	message func(ctx context.Context, m chat.Message, next func() error) error
	// advance, if set, replaces in.Advance.
	advance func(cursor string, next func() error) error
}

// hook sets message and advance.
func (s *spy) hook(message func(ctx context.Context, m chat.Message, next func() error) error, advance func(cursor string, next func() error) error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.message, s.advance = message, advance
}

func (s *spy) reported() []error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]error(nil), s.reports...)
}

// spied is a connector whose Inbox goes through a spy.
type spied struct {
	*telegram.Connector
	spy *spy
}

func (c spied) Run(ctx context.Context, in chat.Inbox) error {
	return c.Connector.Run(ctx, spyInbox{in, c.spy})
}

type spyInbox struct {
	chat.Inbox
	spy *spy
}

func (s spyInbox) Report(err error) {
	s.spy.mu.Lock()
	s.spy.reports = append(s.spy.reports, err)
	s.spy.mu.Unlock()
	s.Inbox.Report(err)
}

func (s spyInbox) Message(ctx context.Context, m chat.Message) error {
	s.spy.mu.Lock()
	hook := s.spy.message
	s.spy.mu.Unlock()
	next := func() error { return s.Inbox.Message(ctx, m) }
	if hook != nil {
		return hook(ctx, m, next)
	}
	return next()
}

func (s spyInbox) Advance(cursor string) error {
	s.spy.mu.Lock()
	hook := s.spy.advance
	s.spy.mu.Unlock()
	next := func() error { return s.Inbox.Advance(cursor) }
	if hook != nil {
		return hook(cursor, next)
	}
	return next()
}

// answer is an agent that replies text at once.
type answer string

func (a answer) Run(ctx context.Context, req agent.Request, emit agent.Emitter) (agent.Reply, error) {
	return agent.Reply{Content: string(a)}, nil
}

// held is an agent that emits nothing until released, then replies.
type held chan struct{}

func (h held) Run(ctx context.Context, req agent.Request, emit agent.Emitter) (agent.Reply, error) {
	select {
	case <-h:
		return agent.Reply{Content: "reply to " + req.Content}, nil
	case <-ctx.Done():
		return agent.Reply{}, ctx.Err()
	}
}

//go:build goolm

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
	"maunium.net/go/mautrix/id"

	"github.com/frontdesk-hq/frontdesk/channels/chat"
	"github.com/frontdesk-hq/frontdesk/event"
	"github.com/frontdesk-hq/frontdesk/internal/testkit/fakeslack"
	"github.com/frontdesk-hq/frontdesk/internal/testkit/faketelegram"
	"github.com/frontdesk-hq/frontdesk/internal/testkit/testdendrite"
)

// TestChatDoorsShareTheConversation is the "done when", with the
// real binary: Tom on Telegram (a fake Bot API), Sue in Slack (a fake Web
// API and Socket Mode) and Ann in an end-to-end encrypted room on a real
// Dendrite talk to the assistant one after the other. The web page (a
// WebSocket) sees each message, labelled with its door and its person,
// and each reply; each person gets their own reply in their own chat,
// as the exact final text, and nobody gets another's.
func TestChatDoorsShareTheConversation(t *testing.T) {
	t.Parallel()
	hs := testdendrite.Start(t)
	hs.CreateAccount(t, "bot", "bot-password")
	hs.CreateAccount(t, "ann", "ann-password")
	tg, sl := faketelegram.New(t), fakeslack.New(t)
	dir := t.TempDir()
	cfg := filepath.Join(dir, "chat.yaml")
	os.WriteFile(cfg, []byte(fmt.Sprintf(`agent: {demo: {delay_ms: 5}}
people:
  - {id: owner, role: admin}
  - {id: tom, name: Tom, role: member, accounts: {telegram: "@tom"}}
  - {id: sue, name: Sue, role: member, accounts: {slack: U1SUE}}
  - {id: ann, name: Ann, role: member, accounts: {matrix: "@ann:localhost"}}
channels:
  telegram: {enabled: true, base_url: %q}
  slack: {enabled: true, api_url: %q}
  matrix: {enabled: true, homeserver: %q, user_id: "@bot:localhost", password_env: E2E_MATRIX_PASSWORD}
`, tg.URL(), sl.URL(), hs.URL)), 0o600)
	p := startBinary(t, dir, []string{"FRONTDESK_TELEGRAM_TOKEN=" + faketelegram.Token,
		"FRONTDESK_SLACK_APP_TOKEN=" + fakeslack.AppToken, "FRONTDESK_SLACK_BOT_TOKEN=" + fakeslack.BotToken,
		"E2E_MATRIX_PASSWORD=bot-password", "FRONTDESK_AUTH_TOKEN=page-token-0123456789abcdef"}, "-addr", "127.0.0.1:0", "-data", "state", "-config", cfg)
	page := watchPage(t, p.url)

	// Ann's encrypted direct chat: the bot joins (she is allowed).
	ann := testdendrite.NewUser(t, hs, "ann", "ann-password")
	bot := id.UserID("@bot:localhost")
	room := ann.Room(bot, true)

	tomMsg := tg.Message(7, faketelegram.User(7, "tom"), "hello from telegram", nil)
	reply := page.reply(t, "telegram", "tom", "hello from telegram")
	tg.WaitFor(t, "Tom's reply", func() bool {
		s, ok := tg.ReplyTo(tomMsg)
		return ok && s.Text == chat.Render(reply, chat.StyleHTML)
	})

	sl.DM("U1SUE", "hello from slack", "1700000000.000100")
	reply = page.reply(t, "slack", "sue", "hello from slack")
	sl.WaitPost("Sue's reply", func(m fakeslack.Msg) bool {
		return m.Thread == "1700000000.000100" && m.Text == chat.Render(reply, chat.StyleSlack)
	})

	annMsg := ann.Say(room, "hello from matrix")
	reply = page.reply(t, "matrix", "ann", "hello from matrix")
	r := ann.WaitReply(bot, annMsg, chat.Render(reply, chat.StylePlain))
	if !r.Encrypted {
		t.Error("the reply in the encrypted room came unencrypted")
	}

	// Nobody got another's reply: one post per chat.
	if n := len(tg.Posts()); n != 1 {
		t.Errorf("Telegram: %d posts, want Tom's reply alone", n)
	}
	if n := len(sl.Posts()); n != 1 {
		t.Errorf("Slack: %d posts, want Sue's reply alone", n)
	}
	if n := ann.RepliesTo(bot, annMsg); n != 1 {
		t.Errorf("Matrix: %d replies to Ann, want 1", n)
	}
}

// pageView is what a web page saw on /ws.
type pageView struct {
	mu     sync.Mutex
	events []event.Event
	seen   chan struct{}
}

// watchPage connects a page (signed in with the shared token) to url and records every event until the
// test ends.
func watchPage(t *testing.T, url string) *pageView {
	ctx, cancel := context.WithCancel(context.Background())
	c, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(url, "http")+"/ws",
		&websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {"Bearer page-token-0123456789abcdef"}}})
	if err != nil {
		t.Fatal(err)
	}
	c.SetReadLimit(1 << 20)
	v := &pageView{seen: make(chan struct{}, 1)}
	go func() {
		for {
			_, b, err := c.Read(ctx)
			if err != nil {
				return
			}
			var e event.Event
			if json.Unmarshal(b, &e) == nil {
				v.mu.Lock()
				v.events = append(v.events, e)
				v.mu.Unlock()
				select {
				case v.seen <- struct{}{}:
				default:
				}
			}
		}
	}()
	t.Cleanup(func() { cancel(); c.CloseNow() })
	return v
}

// reply waits until the page saw person's message content from door and
// the complete reply of its turn, and returns the reply.
func (v *pageView) reply(t *testing.T, door, person, content string) string {
	t.Helper()
	deadline := time.After(30 * time.Second)
	for {
		if r, ok := v.find(door, person, content); ok {
			return r
		}
		select {
		case <-v.seen:
		case <-deadline:
			v.mu.Lock()
			defer v.mu.Unlock()
			t.Fatalf("the page did not see %s's %q from %s and its reply; it saw %d events", person, content, door, len(v.events))
		}
	}
}

func (v *pageView) find(door, person, content string) (string, bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	turn := ""
	for _, e := range v.events {
		var u event.UserData
		if e.Type == event.User && e.Decode(&u) == nil && u.Channel == door && u.Person == person && u.Content == content {
			turn = e.Turn
		}
		var a event.AssistantData
		if turn != "" && e.Turn == turn && e.Type == event.Assistant && e.Decode(&a) == nil && !a.Partial {
			return a.Content, true
		}
	}
	return "", false
}

// BenchmarkChatDoorsIdle is what each chat door costs the running server
// idle: the binary's resident set size a few seconds after start, with no
// chat door, with each one connected alone (fakes for Telegram and Slack,
// a real Dendrite for Matrix, encryption on) and with all three.
func BenchmarkChatDoorsIdle(b *testing.B) {
	hs := testdendrite.Start(b)
	hs.CreateAccount(b, "bot", "bot-password")
	tg, sl := faketelegram.New(b), fakeslack.New(b)
	blocks := map[string]string{
		"telegram": fmt.Sprintf("telegram: {enabled: true, base_url: %q}", tg.URL()),
		"slack":    fmt.Sprintf("slack: {enabled: true, api_url: %q}", sl.URL()),
		"matrix":   fmt.Sprintf(`matrix: {enabled: true, homeserver: %q, user_id: "@bot:localhost", password_env: E2E_MATRIX_PASSWORD}`, hs.URL),
	}
	env := []string{"FRONTDESK_TELEGRAM_TOKEN=" + faketelegram.Token, "FRONTDESK_SLACK_APP_TOKEN=" + fakeslack.AppToken,
		"FRONTDESK_SLACK_BOT_TOKEN=" + fakeslack.BotToken, "E2E_MATRIX_PASSWORD=bot-password"}
	for _, c := range []struct{ name, doors string }{
		{"none", ""}, {"telegram", blocks["telegram"]}, {"slack", blocks["slack"]}, {"matrix", blocks["matrix"]},
		{"all", blocks["telegram"] + "\n  " + blocks["slack"] + "\n  " + blocks["matrix"]},
	} {
		b.Run(c.name, func(b *testing.B) {
			var sum float64
			for b.Loop() {
				sum += idleRSS(b, c.doors, env)
			}
			b.ReportMetric(sum/float64(b.N), "rss-MB")
		})
	}
}

// idleRSS starts the binary with the chat doors of yaml, lets them
// connect and settle, and returns its resident set size.
func idleRSS(b *testing.B, doors string, env []string) float64 {
	dir := b.TempDir()
	cfg := filepath.Join(dir, "idle.yaml")
	yaml := ""
	if doors != "" {
		yaml = "channels:\n  " + doors + "\n"
	}
	os.WriteFile(cfg, []byte(yaml), 0o600)
	p := spawn(b, dir, env, nil, "-addr", "127.0.0.1:0", "-data", "state", "-config", cfg)
	p.await(b, 30*time.Second)
	doorsUp(b, p.url)
	// Running and no failure reported is not yet connected (a Matrix
	// login, a first long poll): they get a moment to, then it is idle.
	time.Sleep(2 * time.Second)
	rss := rssMB(b, p.cmd.Process.Pid)
	p.cmd.Process.Kill()
	<-p.exited
	p.exited <- nil
	return rss
}

// doorsUp waits until every chat door of the server at url runs and has
// reported no failure (/api/session), for up to 30 s.
func doorsUp(b *testing.B, url string) {
	deadline := time.Now().Add(30 * time.Second)
	for {
		var s struct {
			Doors []struct{ Running, Healthy bool }
		}
		resp, err := http.Get(url + "/api/session")
		if err == nil {
			err = json.NewDecoder(resp.Body).Decode(&s)
			resp.Body.Close()
		}
		up := err == nil
		for _, d := range s.Doors {
			up = up && d.Running && d.Healthy
		}
		if up {
			return
		}
		if time.Now().After(deadline) {
			b.Fatalf("the chat doors are not up after 30 s: %+v, %v", s.Doors, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

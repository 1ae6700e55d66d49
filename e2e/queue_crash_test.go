package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/emersion/go-imap/v2"

	"github.com/frontdesk-hq/frontdesk/event"
	"github.com/frontdesk-hq/frontdesk/history"
)

// TestQueuedEmailSurvivesKill9: an email arriving while a long turn runs
// is recorded at once — two WebSocket clients both see it as queued
// before the running turn ends — survives kill -9, and runs exactly once
// after the restart.
func TestQueuedEmailSurvivesKill9(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the binary twice with an IMAP server")
	}
	user, imapAddr := startMemIMAP(t, "imap-pass", true)

	dir := t.TempDir()
	cfg := filepath.Join(dir, "queue.yaml")
	os.WriteFile(cfg, fmt.Appendf(nil, `session: {fsync: always}
agent: {demo: {delay_ms: 100}}
channels:
  email:
    enabled: true
    address: assistant@example.com
    allow_from: ["@example.com"]
    imap: {addr: %q, tls: none, username: assistant, poll_interval_sec: 5}
    smtp: {addr: "127.0.0.1:1", tls: none}
`, imapAddr), 0o600)

	// First run: a long web turn, then an email.
	p := startLogged(t, dir, []string{"FRONTDESK_IMAP_PASSWORD=imap-pass"}, "-addr", "127.0.0.1:0", "-data", "state", "-config", cfg)
	p.logs.waitFor(t, `first start: the cursor is placed`)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	a, b := dialWS(ctx, t, p.url, 0), dialWS(ctx, t, p.url, 0)
	a.send(ctx, t, "please think about this for a while", "w-1")
	for _, c := range []*wsClient{a, b} {
		c.until(ctx, t, func(e event.Event) bool { return e.Type == event.Delta })
	}
	raw := "Return-Path: <ann@example.com>\r\nFrom: ann@example.com\r\nTo: assistant@example.com\r\nSubject: lunch\r\n" +
		"Message-ID: <q1@test.example>\r\nDate: " + time.Now().Format(time.RFC1123Z) + "\r\n" +
		"Content-Type: text/plain; charset=utf-8\r\n\r\nAre we on for lunch?\r\n"
	if _, err := user.Append("INBOX", bytes.NewReader([]byte(raw)), &imap.AppendOptions{Time: time.Now()}); err != nil {
		t.Fatal(err)
	}
	var mail event.Event
	for name, c := range map[string]*wsClient{"a": a, "b": b} {
		evs := c.until(ctx, t, func(e event.Event) bool {
			return e.Type == event.User && userData(e).Channel == event.ChannelEmail
		})
		e := evs[len(evs)-1]
		for _, x := range evs {
			if x.Type == event.TurnEnd {
				t.Fatalf("client %s: the web turn ended before the email showed: the test proves nothing", name)
			}
		}
		if d := userData(e); !d.Queued || d.From != "ann@example.com" || !strings.Contains(d.Content, "lunch") {
			t.Fatalf("client %s: email echo %s, want queued from ann", name, e.Data)
		}
		mail = e
	}
	p.cmd.Process.Kill() // kill -9 while the email waits
	<-p.exited
	p.exited <- nil

	// Second run: the cut web turn is closed, the email runs once.
	p = startLogged(t, dir, []string{"FRONTDESK_IMAP_PASSWORD=imap-pass"}, "-addr", "127.0.0.1:0", "-data", "state", "-config", cfg)
	c := dialWS(ctx, t, p.url, 0)
	evs := c.until(ctx, t, func(e event.Event) bool { return e.Type == event.TurnEnd && e.Turn == mail.Turn })
	if te := turnEnd(evs[len(evs)-1]); te.Status != event.StatusCompleted {
		t.Fatalf("email turn ended %+v", te)
	}
	p.logs.waitFor(t, `email was already in the session before a restart`)
	p.cmd.Process.Signal(os.Interrupt)
	<-p.exited
	p.exited <- nil

	logged, _, err := history.ReadTail(filepath.Join(dir, "state", "chat_history.ndjson"), 10000)
	if err != nil {
		t.Fatal(err)
	}
	count := map[string]int{}
	for _, e := range logged {
		switch {
		case e.Type == event.User && userData(e).Channel == event.ChannelEmail:
			count["email input"]++
		case e.Turn == mail.Turn && (e.Type == event.TurnStart || e.Type == event.Assistant || e.Type == event.TurnEnd):
			count[string(e.Type)]++
		case e.Type == event.TurnEnd && turnEnd(e).Status == event.StatusInterrupted:
			count["interrupted"]++
		}
	}
	want := map[string]int{"email input": 1, "turn_start": 1, "assistant": 1, "turn_end": 1, "interrupted": 1}
	if fmt.Sprint(count) != fmt.Sprint(want) {
		t.Fatalf("in the log: %v, want %v", count, want)
	}
}

type wsClient struct{ c *websocket.Conn }

func dialWS(ctx context.Context, t *testing.T, url string, since int64) *wsClient {
	t.Helper()
	c, _, err := websocket.Dial(ctx, fmt.Sprintf("ws%s/ws?since=%d", strings.TrimPrefix(url, "http"), since), nil)
	if err != nil {
		t.Fatal(err)
	}
	c.SetReadLimit(1 << 20)
	t.Cleanup(func() { c.CloseNow() })
	return &wsClient{c}
}

func (w *wsClient) send(ctx context.Context, t *testing.T, content, id string) {
	t.Helper()
	b, _ := json.Marshal(map[string]string{"type": "message", "content": content, "client_msg_id": id})
	if err := w.c.Write(ctx, websocket.MessageText, b); err != nil {
		t.Fatal(err)
	}
}

// until reads events until one matches, and returns them all.
func (w *wsClient) until(ctx context.Context, t *testing.T, match func(event.Event) bool) []event.Event {
	t.Helper()
	var got []event.Event
	for {
		_, b, err := w.c.Read(ctx)
		if err != nil {
			t.Fatalf("read: %v (after %d events)", err, len(got))
		}
		var e event.Event
		if json.Unmarshal(b, &e) != nil || perConnection(e.Type) {
			continue
		}
		got = append(got, e)
		if match(e) {
			return got
		}
	}
}

// perConnection says whether frames of type t answer one connection
// (they are not of the shared stream).
func perConnection(t event.Type) bool {
	switch t {
	case event.Connected, event.Synced, event.Busy, event.Error:
		return true
	}
	return false
}

func userData(e event.Event) event.UserData {
	var d event.UserData
	_ = e.Decode(&d)
	return d
}

func turnEnd(e event.Event) event.TurnEndData {
	var d event.TurnEndData
	_ = e.Decode(&d)
	return d
}

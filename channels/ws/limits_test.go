package ws_test

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/frontdesk-hq/frontdesk/agent"
	"github.com/frontdesk-hq/frontdesk/channels/ws"
	"github.com/frontdesk-hq/frontdesk/event"
	"github.com/frontdesk-hq/frontdesk/hub"
	"github.com/frontdesk-hq/frontdesk/internal/testkit/testmetrics"
)

// clock is a settable clock for the rate limiter.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// dialStatus opens a WebSocket and reads its first frame: connected (the
// client was admitted) or a close. It returns the client when admitted,
// else the close status.
func dialStatus(t *testing.T, url string) (*client, websocket.StatusCode) {
	t.Helper()
	cl := dial(t, url)
	f, err := cl.read()
	if err != nil {
		var ce websocket.CloseError
		if !errors.As(err, &ce) {
			t.Fatalf("first read: %v; want connected or a close frame", err)
		}
		if ce.Code == websocket.StatusTryAgainLater && ce.Reason != "try again later" {
			t.Errorf("1013 reason %q, want \"try again later\"", ce.Reason)
		}
		return nil, ce.Code
	}
	if f.Type != event.Connected {
		t.Fatalf("first frame %s, want connected", f.Type)
	}
	return cl, 0
}

func mustRefuse(t *testing.T, url, when string) {
	t.Helper()
	if cl, code := dialStatus(t, url); cl != nil || code != websocket.StatusTryAgainLater {
		t.Fatalf("%s: a client over max_clients got admitted=%v close %d; want close 1013", when, cl != nil, code)
	}
}

// admitted dials until a client is admitted (the server frees a slot as
// soon as it has noticed the departure) and returns how many attempts
// were refused first. Each attempt is a full handshake; nothing sleeps.
func admitted(t *testing.T, url, when string) int {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for refused := 0; ; refused++ {
		cl, code := dialStatus(t, url)
		if cl != nil {
			return refused
		}
		if code != websocket.StatusTryAgainLater {
			t.Fatalf("%s: close %d, want 1013 or admission", when, code)
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: still refused after 10 s: the departed client's slot was never freed", when)
		}
	}
}

// TestMaxClients fills the default max_clients (1,000) with real clients:
// the 1,001st is closed with 1013, and the slot frees when a client leaves
// with a close frame and when one vanishes (TCP closed, no close frame).
func TestMaxClients(t *testing.T) {
	s := start(t, hub.Config{}, ws.Options{}, &agent.Demo{})
	const max = 1000
	_, rudeRaw := rudeDial(t, s.url)
	polite := dial(t, s.url)
	polite.join()
	for i := 2; i < max; i++ {
		if cl, code := dialStatus(t, s.url); cl == nil {
			t.Fatalf("client %d of %d refused with %d", i+1, max, code)
		}
	}
	mustRefuse(t, s.url, "1,001st client")

	if err := polite.c.Close(websocket.StatusNormalClosure, "bye"); err != nil {
		t.Fatalf("close: %v", err)
	}
	retries := admitted(t, s.url, "after a client closed")
	mustRefuse(t, s.url, "full again after the polite one's slot was taken")

	rudeRaw.Close()
	retries += admitted(t, s.url, "after a client vanished")
	mustRefuse(t, s.url, "full again after the rude one's slot was taken")

	text := testmetrics.Scrape(t, s.h.Collectors()...)
	if got, want := testmetrics.Must(t, text, `frontdesk_limit_hits_total{limit="max_clients"}`), float64(3+retries); got != want {
		t.Fatalf("max_clients hits = %g, want %g (3 refusals + %d while a slot was freed)", got, want, retries)
	}
}

// TestFrameRateLimit floods one connection: frames past the burst are
// answered rate_limited (a message's one naming its client_msg_id), none
// closes the connection, and once the bucket refills the client talks again.
func TestFrameRateLimit(t *testing.T) {
	clk := &clock{t: time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)}
	s := start(t, hub.Config{}, ws.Options{FrameRatePerSec: 2, FrameRateBurst: 5, Now: clk.Now}, &agent.Demo{})
	cl := dial(t, s.url)
	cl.join()
	const flood = 20
	for range flood { // the clock stands still: exactly the burst gets through
		cl.send(map[string]string{"type": "command", "action": "cancel"})
	}
	counts := map[string]int{}
	for range flood {
		f := cl.next()
		var d event.ErrorData
		if f.Type != event.Error {
			t.Fatalf("got %s, want an error frame for each cancel", f.Type)
		}
		decode(t, f, &d)
		counts[d.Code]++
	}
	if counts["not_busy"] != 5 || counts["rate_limited"] != flood-5 {
		t.Fatalf("answers %v, want 5 not_busy (the burst) and %d rate_limited", counts, flood-5)
	}
	cl.say("too soon", "c-1")
	f := cl.next()
	var d event.ErrorData
	decode(t, f, &d)
	if f.Type != event.Error || d.Code != "rate_limited" || d.ClientMsgID != "c-1" || d.Message == "" {
		t.Fatalf("message past the limit got %s %s, want error rate_limited for c-1", f.Type, f.Data)
	}

	clk.Add(500 * time.Millisecond) // one token at 2 a second
	cl.say("after the flood", "c-2")
	fs := cl.until(event.TurnEnd)
	var u event.UserData
	decode(t, fs[0], &u)
	if fs[0].Type != event.User || u.ClientMsgID != "c-2" {
		t.Fatalf("after the refill got %s %s, want the echo of c-2", fs[0].Type, fs[0].Data)
	}
	text := testmetrics.Scrape(t, s.h.Collectors()...)
	if got := testmetrics.Must(t, text, `frontdesk_limit_hits_total{limit="frame_rate"}`); got != flood-5+1 {
		t.Fatalf("frame_rate hits = %g, want %d", got, flood-5+1)
	}
}

// TestFanoutLagObserved: live frames are measured, the replay is not.
func TestFanoutLagObserved(t *testing.T) {
	s := start(t, hub.Config{}, ws.Options{}, &agent.Demo{})
	a := dial(t, s.url)
	a.join()
	a.say("hello", "a-1")
	live := len(a.until(event.TurnEnd))
	lag := func() float64 {
		return testmetrics.Must(t, testmetrics.Scrape(t, s.h.Collectors()...), "frontdesk_fanout_lag_seconds_count")
	}
	if n := lag(); n < 1 || n > float64(live) {
		t.Fatalf("fan-out lag observed %g times, want 1 to %d (the live frames)", n, live)
	}
	b := dial(t, s.url)
	if _, replay, _ := b.join(); len(replay) == 0 {
		t.Fatal("the second client got no replay")
	}
	if n := lag(); n > float64(live) {
		t.Fatalf("fan-out lag observed %g times after a replay, want at most %d: replayed frames are not live", n, live)
	}
}

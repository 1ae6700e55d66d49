package slack

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/slack-go/slack"

	"github.com/frontdesk-hq/frontdesk/channels/chat"
	"github.com/frontdesk-hq/frontdesk/channels/chat/chattest"
	"github.com/frontdesk-hq/frontdesk/event"
	"github.com/frontdesk-hq/frontdesk/hub"
	"github.com/frontdesk-hq/frontdesk/internal/testkit/fakeslack"
	"github.com/frontdesk-hq/frontdesk/internal/testkit/testagent"
)

// TestSocketDropped: the socket dies under the connector; it opens a new
// one (apps.connections.open again) and the message sent meanwhile is
// answered.
func TestSocketDropped(t *testing.T) {
	s := chattest.Start(t, "", hub.Config{}, answer("ok"))
	f := fakeslack.New(t)
	runDoor(t, f, s, chat.Options{})
	f.WaitAck(f.DM("U1", "one", "7.1"))
	f.Wait("the first answer", func() bool { return f.Text(0) == "ok" })
	f.Drop()
	f.DM("U1", "two", "7.2") // sent on the next socket
	f.Wait("the second answer", func() bool { return f.Text(1) == "ok" })
	opens := f.Opens()
	if opens != 2 || len(s.Users()) != 2 {
		t.Fatalf("%d connections opened, %d user events; want 2 and 2", opens, len(s.Users()))
	}
}

// TestDisconnectRequested: Slack asks the client to reconnect (it does
// every few hours: refresh_requested); the connector opens a new socket
// and goes on answering.
func TestDisconnectRequested(t *testing.T) {
	s := chattest.Start(t, "", hub.Config{}, answer("ok"))
	f := fakeslack.New(t)
	runDoor(t, f, s, chat.Options{})
	f.DM("U1", "one", "11.1")
	f.Wait("the first answer", func() bool { return f.Text(0) == "ok" })
	f.Raw(`{"type":"disconnect","reason":"refresh_requested","debug_info":{"host":"fake"}}`)
	f.Wait("a second socket", func() bool { return f.Opens() == 2 && len(f.Origins()) == 2 })
	f.WaitAck(f.DM("U1", "two", "11.2"))
	f.Wait("both answers", func() bool { return f.Text(0) == "ok" && f.Text(1) == "ok" })
	if n := len(s.Users()); n != 2 {
		t.Fatalf("%d user events, want 2", n)
	}
}

// TestRevokedToken: Slack refuses the tokens (token_revoked) when the
// socket is reopened: the door's health says the token is refused while
// the connector keeps trying; once the tokens work again health is clear
// and messages are answered.
func TestRevokedToken(t *testing.T) {
	s := chattest.Start(t, "", hub.Config{}, answer("ok"))
	f := fakeslack.New(t)
	d, _ := runDoor(t, f, s, chat.Options{})
	f.DM("U1", "one", "8.1")
	f.Wait("the first answer", func() bool { return f.Text(0) == "ok" })
	f.SetRevoked(true)
	f.Drop()
	chattest.Eventually(t, "the refused token in the door's health", func() bool {
		return strings.Contains(d.Health(), chat.ErrUnauthorized.Error()) && strings.Contains(d.Health(), "token_revoked")
	})
	f.SetRevoked(false)
	chattest.Eventually(t, "health again", func() bool { return d.Health() == "" })
	f.DM("U1", "two", "8.2")
	f.Wait("the second answer", func() bool { return f.Text(1) == "ok" })
}

// TestKillBeforeAck: the door takes a message (it is in the log, the
// reply has begun) but its ack never reaches Slack, and the door stops
// (as a killed process would). A new door on the same data directory gets
// the envelope again — at once, while it finishes the reply owed, or
// late, after that reply was delivered: either way one user event in the
// log and one reply, finished by editing the message already posted. A
// next message is answered as usual.
func TestKillBeforeAck(t *testing.T) {
	for _, late := range []bool{false, true} {
		t.Run(map[bool]string{false: "redelivered at once", true: "redelivered after the reply"}[late], func(t *testing.T) {
			killBeforeAck(t, late)
		})
	}
}

func killBeforeAck(t *testing.T, late bool) {
	gate := testagent.NewGate()
	s := chattest.Start(t, "", hub.Config{}, gate)
	f := fakeslack.New(t)
	f.SetLoseAcks(true)
	_, stop := runDoor(t, f, s, chat.Options{})
	env := f.DM("U1", "hello", "9.1")
	f.Wait("the streamed words", func() bool { return f.Text(0) == "part " })
	// The door stores the posted message's ts once Slack answered; a kill
	// before that posts again (the one window chat.go names), not tested.
	state := filepath.Join(chat.StateDir(s.Dir, "slack"), "state.json")
	chattest.Eventually(t, "the posted ts in state.json", func() bool {
		b, _ := os.ReadFile(state)
		return strings.Contains(string(b), `"posted":["1800000000.000001"]`)
	})
	stop()
	f.SetLoseAcks(false)
	f.SetHold(late)
	acked := f.Acked(env)
	if acked || len(s.Users()) != 1 {
		t.Fatalf("acked %v, %d user events before the restart; want false, 1", acked, len(s.Users()))
	}
	gate.Release <- struct{}{}
	chattest.Eventually(t, "the turn's end", func() bool {
		evs := s.Events()
		return evs[len(evs)-1].Type == event.TurnEnd
	})
	runDoor(t, f, s, chat.Options{})
	f.Wait("the final edit", func() bool { return f.Text(0) == "reply to hello" })
	if late {
		chattest.Eventually(t, "nothing owed", func() bool {
			b, _ := os.ReadFile(state)
			return strings.Contains(string(b), `"owed":[]`)
		})
		f.Redeliver()
	}
	f.WaitAck(env)
	gate.Release <- struct{}{}
	f.DM("U1", "two", "9.2")
	f.Wait("the next answer", func() bool { return f.Text(len(f.Posts())-1) == "reply to two" })
	posts, opens := f.Posts(), f.Opens()
	if len(posts) != 2 || posts[0].Text != "reply to hello" || len(s.Users()) != 2 || opens != 2 {
		for _, m := range posts {
			t.Logf("post %s: %+v", m.TS, m)
		}
		t.Fatalf("%d posts, %d user events, %d connections; want 2, 2, 2", len(posts), len(s.Users()), opens)
	}
}

// inbox is a chat.Inbox that refuses messages while refuse is set.
type inbox struct {
	mu      sync.Mutex
	refuse  bool
	got     []chat.Message
	reports []error
}

func (in *inbox) Cursor() string                      { return "" }
func (in *inbox) Allowed(string, ...string) bool      { return true }
func (in *inbox) Action(context.Context, chat.Action) {}
func (in *inbox) Advance(string) error                { return nil }
func (in *inbox) Report(err error) {
	in.mu.Lock()
	in.reports = append(in.reports, err)
	in.mu.Unlock()
}
func (in *inbox) Message(_ context.Context, m chat.Message) error {
	in.mu.Lock()
	defer in.mu.Unlock()
	in.got = append(in.got, m)
	if in.refuse {
		return errors.New("disk full")
	}
	return nil
}

func (in *inbox) count() int { in.mu.Lock(); defer in.mu.Unlock(); return len(in.got) }

// TestRefusedMessageNotAcked: while the door cannot take a message
// (Message errs) the envelope is not acknowledged and the same message is
// handed again; once taken, it is acknowledged.
func TestRefusedMessageNotAcked(t *testing.T) {
	f := fakeslack.New(t)
	c, err := New(options(f))
	if err != nil {
		t.Fatal(err)
	}
	in := &inbox{refuse: true}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- c.Run(ctx, in) }()
	defer func() { cancel(); <-done }()

	env := f.DM("U1", "hello", "10.1")
	chattest.Eventually(t, "three tries", func() bool { return in.count() >= 3 })
	acked := f.Acked(env)
	if acked {
		t.Fatal("acknowledged although the door refused it")
	}
	in.mu.Lock()
	in.refuse = false
	in.mu.Unlock()
	f.WaitAck(env)
	in.mu.Lock()
	defer in.mu.Unlock()
	for _, m := range in.got {
		if m.ID != "10.1" || m.Chat != "D1" || m.From != "U1" || m.Text != "hello" || !m.Direct {
			t.Fatalf("handed %+v, want the same message each time", m)
		}
	}
}

// TestText: Slack's markup undone for the model.
func TestText(t *testing.T) {
	c := &Connector{botID: "UBOT"}
	for _, tc := range []struct{ name, in, want string }{
		{"the bot's mention goes", "<@UBOT> hi", "hi"},
		{"a labelled mention of the bot goes", "hey <@UBOT|frontdesk>, look", "hey , look"},
		{"others' mentions stay", "ask <@U2> and <@U3|bo>", "ask @U2 and @bo"},
		{"channels", "in <#C1|general>", "in #general"},
		{"links", "see <https://a.example/x|the doc> or <https://b.example>", "see the doc (https://a.example/x) or https://b.example"},
		{"specials", "<!here> now", "@here now"},
		{"escapes", "1 &lt; 2 &amp;&amp; 3 &gt; 2", "1 < 2 && 3 > 2"},
		{"lines kept", "a\n\nb", "a\n\nb"},
	} {
		if got := c.clean(tc.in); got != tc.want {
			t.Errorf("%s: clean(%q) = %q, want %q", tc.name, tc.in, got, tc.want)
		}
	}
}

// BenchmarkRoundTrip: from a direct message sent on the fake to the first
// words posted in its thread and to the final text, through a real Door
// with Slack's limits (edits at most every second).
func BenchmarkRoundTrip(b *testing.B) {
	// The web door's BenchmarkRoundTrip (channels/ws) agent: the first
	// words at once, the rest 5 ms later.
	s := chattest.Start(b, "", hub.Config{}, testagent.Stream{First: "streamed ", Rest: "done", Pause: 5 * time.Millisecond})
	f := fakeslack.New(b)
	o := options(f)
	o.EditEvery = 0 // the default: Slack's real pace
	c, err := New(o)
	if err != nil {
		b.Fatal(err)
	}
	d, err := chat.New(s, c, chat.Options{Door: "slack", DataDir: s.Dir, Allow: []string{"U1"}})
	if err != nil {
		b.Fatal(err)
	}
	chattest.RunDoor(b, d)
	var first, final []time.Duration
	b.ResetTimer()
	for i := range b.N {
		t0 := time.Now()
		f.DM("U1", "ping", fmt.Sprintf("20.%06d", i))
		f.Wait("the first words", func() bool { return f.Text(i) != "" })
		first = append(first, time.Since(t0))
		f.Wait("the final text", func() bool { return f.Text(i) == "streamed done" })
		final = append(final, time.Since(t0))
	}
	for _, m := range []struct {
		name string
		d    []time.Duration
	}{{"first", first}, {"final", final}} {
		slices.Sort(m.d)
		b.ReportMetric(float64(m.d[len(m.d)/2])/1e6, m.name+"-p50-ms")
		b.ReportMetric(float64(m.d[len(m.d)*95/100])/1e6, m.name+"-p95-ms")
	}
}

// TestMapErr: the library's errors as the chat core knows them.
func TestMapErr(t *testing.T) {
	for _, tc := range []struct {
		name         string
		in           error
		retry        time.Duration // want a *chat.RetryError with this After
		unauthorized bool
	}{
		{"429", &slack.RateLimitedError{RetryAfter: 7 * time.Second}, 7 * time.Second, false},
		{"invalid_auth", slack.SlackErrorResponse{Err: "invalid_auth"}, 0, true},
		{"token_revoked", fmt.Errorf("auth.test: %w", slack.SlackErrorResponse{Err: "token_revoked"}), 0, true},
		{"account_inactive", slack.SlackErrorResponse{Err: "account_inactive"}, 0, true},
		{"channel_not_found", slack.SlackErrorResponse{Err: "channel_not_found"}, 0, false},
	} {
		err := mapErr(tc.in)
		var re *chat.RetryError
		if got := errors.As(err, &re); got != (tc.retry > 0) || (got && re.After != tc.retry) {
			t.Errorf("%s: mapErr = %v, want a RetryError after %s: %v", tc.name, err, tc.retry, got)
		}
		if got := errors.Is(err, chat.ErrUnauthorized); got != tc.unauthorized {
			t.Errorf("%s: mapErr = %v; wraps ErrUnauthorized %v, want %v", tc.name, err, got, tc.unauthorized)
		}
	}
}

// BenchmarkIdle: what one connected, idle connector holds — heap bytes
// and goroutines — beside the fake on loopback (the fake's share of both
// is counted too, so this is an upper bound).
func BenchmarkIdle(b *testing.B) {
	f := fakeslack.New(b)
	var heap, gor float64
	for range b.N {
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		g0 := runtime.NumGoroutine()
		c, err := New(options(f))
		if err != nil {
			b.Fatal(err)
		}
		in := &inbox{}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error)
		go func() { done <- c.Run(ctx, in) }()
		f.WaitAck(f.DM("U1", "hi", "30.1"))
		runtime.GC()
		runtime.ReadMemStats(&after)
		heap += float64(after.HeapAlloc) - float64(before.HeapAlloc)
		gor += float64(runtime.NumGoroutine() - g0)
		cancel()
		<-done
	}
	b.ReportMetric(heap/float64(b.N), "heap-B/door")
	b.ReportMetric(gor/float64(b.N), "goroutines/door")
}

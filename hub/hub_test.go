package hub

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/frontdesk-hq/frontdesk/agent"
	"github.com/frontdesk-hq/frontdesk/event"
	"github.com/frontdesk-hq/frontdesk/history"
	"github.com/frontdesk-hq/frontdesk/index"
	"github.com/frontdesk-hq/frontdesk/internal/testkit/testagent"
)

type testHub struct {
	*SessionManager
	dir  string
	log  *history.Log
	stop func()
}

func startHub(t *testing.T, cfg Config, a agent.Agent) *testHub {
	t.Helper()
	dir := cfg.DataDir
	if dir == "" {
		dir = t.TempDir()
		cfg.DataDir = dir
	}
	lg, err := history.Open(history.Options{Path: filepath.Join(dir, "chat_history.ndjson"), RotateMB: 5, Fsync: "never"})
	if err != nil {
		t.Fatal(err)
	}
	return startHubWithLog(t, cfg, a, lg)
}

// startIndex runs a search index following the chat log in dir until the
// test ends.
func startIndex(t *testing.T, dir string) *index.Follower {
	t.Helper()
	f, err := index.NewFollower(index.FollowerOptions{Path: filepath.Join(dir, index.FileName),
		Log: history.NewReader(filepath.Join(dir, "chat_history.ndjson")).Since, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); f.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	return f
}

func startHubWithLog(t *testing.T, cfg Config, a agent.Agent, lg Log) *testHub {
	t.Helper()
	m := New(cfg, lg, a)
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- m.Run(ctx) }()
	var once sync.Once
	th := &testHub{SessionManager: m, dir: cfg.DataDir}
	if l, ok := lg.(*history.Log); ok {
		th.log = l
	}
	th.stop = func() {
		once.Do(func() {
			cancel()
			if err := <-errc; err != nil {
				t.Errorf("Run: %v", err)
			}
			if th.log != nil {
				th.log.Close()
			}
		})
	}
	t.Cleanup(th.stop)
	return th
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func subscribe(t *testing.T, h *testHub, since int64) (*Subscription, Snapshot) {
	t.Helper()
	s, snap, err := h.Subscribe(ctxT(t), since)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s, snap
}

// next returns the next live event, failing after a deadline.
func next(t *testing.T, s *Subscription) event.Event {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	f, ok := s.Next(ctx)
	if !ok {
		t.Fatalf("no event within 5s (stream error: %v)", s.Err())
	}
	return f.Event
}

// until reads events until one of type typ arrives and returns all read.
func until(t *testing.T, s *Subscription, typ event.Type) []event.Event {
	t.Helper()
	var got []event.Event
	for {
		e := next(t, s)
		got = append(got, e)
		if e.Type == typ {
			return got
		}
	}
}

func submit(t *testing.T, h *testHub, content, id string) Result {
	t.Helper()
	r, err := h.Submit(ctxT(t), Input{Channel: event.ChannelWeb, Content: content, ClientMsgID: id})
	if err != nil {
		t.Fatalf("Submit(%q): %v", content, err)
	}
	return r
}

func data[T any](t *testing.T, e event.Event) T {
	t.Helper()
	var v T
	if err := json.Unmarshal(e.Data, &v); err != nil {
		t.Fatalf("decode %s data %s: %v", e.Type, e.Data, err)
	}
	return v
}

// persisted drops status and delta events (their timing against other
// submitters' events is the backend's).
func persisted(evs []event.Event) []event.Event {
	var out []event.Event
	for _, e := range evs {
		if e.Type.Persisted() {
			out = append(out, e)
		}
	}
	return out
}

func types(evs []event.Event) []event.Type {
	out := make([]event.Type, len(evs))
	for i, e := range evs {
		out[i] = e.Type
	}
	return out
}

func TestTurnSequenceAndEcho(t *testing.T) {
	g := testagent.NewGate()
	h := startHub(t, Config{}, g)
	s, snap := subscribe(t, h, 0)
	if snap.Connected.Resumed || snap.Connected.LastSeq != 0 || len(snap.Replay) != 0 || snap.Connected.BusyPolicy != PolicyReject {
		t.Fatalf("fresh session snapshot = %+v", snap)
	}
	r := submit(t, h, "hello", "c-1")
	if r.Outcome != Started || r.Turn != "t1" || r.Echo.Event.Seq != 1 {
		t.Fatalf("Submit = %+v, want Started t1 seq 1", r)
	}
	g.Release <- struct{}{}
	evs := until(t, s, event.TurnEnd)
	want := []event.Type{event.User, event.Status, event.Delta, event.Assistant, event.TurnEnd}
	if fmt.Sprint(types(evs)) != fmt.Sprint(want) {
		t.Fatalf("events = %v, want %v", types(evs), want)
	}
	// Seqs name persisted events only: status and delta carry none.
	wantSeq := []int64{1, 0, 0, 2, 3}
	for i, e := range evs {
		if e.Seq != wantSeq[i] {
			t.Errorf("event %d (%s) seq = %d, want %d", i, e.Type, e.Seq, wantSeq[i])
		}
		if e.Turn != "t1" {
			t.Errorf("event %s turn = %q, want t1", e.Type, e.Turn)
		}
	}
	u := data[event.UserData](t, evs[0])
	if u.Channel != "web" || u.Content != "hello" || u.ClientMsgID != "c-1" {
		t.Errorf("user data = %+v", u)
	}
	if a := data[event.AssistantData](t, evs[3]); a.Content != "reply to hello" || a.Partial {
		t.Errorf("assistant = %+v", a)
	}
	if te := data[event.TurnEndData](t, evs[4]); te.Status != event.StatusCompleted {
		t.Errorf("turn_end = %+v", te)
	}
	// The chat log holds the persisted events only, with v=1, in order.
	h.stop()
	logged := readLog(t, h.dir)
	wantLogged := []event.Type{event.User, event.Assistant, event.TurnEnd}
	if fmt.Sprint(types(logged)) != fmt.Sprint(wantLogged) {
		t.Fatalf("logged %v, want %v", types(logged), wantLogged)
	}
	if logged[0].V != 1 || logged[0].Seq != 1 || logged[2].Seq != 3 {
		t.Errorf("logged user v=%d seq=%d, turn_end seq=%d", logged[0].V, logged[0].Seq, logged[2].Seq)
	}
}

func readLog(t *testing.T, dir string) []event.Event {
	t.Helper()
	evs, skipped, err := history.ReadTail(filepath.Join(dir, "chat_history.ndjson"), 1000)
	if err != nil || skipped != 0 {
		t.Fatalf("ReadTail: %v (skipped %d)", err, skipped)
	}
	return evs
}

// failLog fails every append, as a full disk would.
type failLog struct{}

func (failLog) Append(event.Event) error { return errors.New("disk full") }
func (failLog) Sync() error              { return nil }

func TestInputNotLoggedIsNotEchoed(t *testing.T) {
	h := startHubWithLog(t, Config{DataDir: t.TempDir()}, testagent.NewGate(), failLog{})
	s, _ := subscribe(t, h, 0)
	_, err := h.Submit(ctxT(t), Input{Channel: "web", Content: "hi", ClientMsgID: "c-1"})
	if err == nil {
		t.Fatal("Submit succeeded with a failing chat log")
	}
	info, _ := h.Info(ctxT(t))
	if info.Busy || info.LastSeq != 0 {
		t.Fatalf("after failed append info = %+v, want idle with last_seq 0", info)
	}
	if frames, _ := s.Take(); len(frames) > 0 {
		t.Fatalf("subscriber got %s for an input that was not recorded", frames[0].Event.Type)
	}
}

func TestEmptyInputRejected(t *testing.T) {
	h := startHub(t, Config{}, testagent.NewGate())
	for _, content := range []string{"", "   \n\t"} {
		if _, err := h.Submit(ctxT(t), Input{Channel: "web", Content: content}); !errors.Is(err, ErrEmpty) {
			t.Errorf("Submit(%q) err = %v, want ErrEmpty", content, err)
		}
	}
}

func TestBusyPolicies(t *testing.T) {
	t.Run("reject", func(t *testing.T) {
		g := testagent.NewGate()
		h := startHub(t, Config{BusyPolicy: PolicyReject}, g)
		s, _ := subscribe(t, h, 0)
		submit(t, h, "first", "a")
		r := submit(t, h, "second", "b")
		if r.Outcome != Rejected || r.Busy.Turn != "t1" || r.Busy.Message == "" || r.Busy.ClientMsgID != "b" {
			t.Fatalf("second = %+v, want Rejected naming t1", r)
		}
		g.Release <- struct{}{}
		evs := until(t, s, event.TurnEnd)
		for _, e := range evs {
			if e.Type == event.User && data[event.UserData](t, e).Content != "first" {
				t.Errorf("rejected input was echoed: %s", e.Data)
			}
		}
		// Free again: the next input starts.
		if r := submit(t, h, "third", "c"); r.Outcome != Started {
			t.Fatalf("after turn end Submit = %+v, want Started", r)
		}
	})
	t.Run("queue", func(t *testing.T) {
		g := testagent.NewGate()
		h := startHub(t, Config{BusyPolicy: PolicyQueue}, g)
		s, _ := subscribe(t, h, 0)
		submit(t, h, "first", "a")
		told := make(chan event.Event, 1)
		r2, err := h.Submit(ctxT(t), Input{Channel: "web", Content: "second", ClientMsgID: "b",
			Notify: func(e event.Event) { told <- e }})
		if err != nil || r2.Outcome != Queued || !r2.Busy.Queued {
			t.Fatalf("second = %+v, %v; want Queued", r2, err)
		}
		// Recorded on arrival: a resend is a Duplicate of the queued echo.
		if r := submit(t, h, "second again", "b"); r.Outcome != Duplicate || r.Turn != r2.Turn || r.Echo != r2.Echo {
			t.Fatalf("resend of queued id = %+v, want Duplicate of %s", r, r2.Turn)
		}
		r3 := submit(t, h, "third", "c")
		if r3.Outcome != Queued {
			t.Fatalf("third = %+v, want Queued", r3)
		}
		select {
		case e := <-told:
			if d := data[event.BusyData](t, e); e.Type != event.Busy || d.Queued || d.ClientMsgID != "b" {
				t.Errorf("replaced submitter told %s %s", e.Type, e.Data)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("replaced submitter was not told")
		}
		// Everyone saw both queued echoes and the replacement of "second".
		evs := persisted(until(t, s, event.TurnEnd))
		if got := fmt.Sprint(types(evs)); got != "[user user user notice turn_end]" {
			t.Fatalf("events while busy: %v", got)
		}
		if d := data[event.UserData](t, evs[1]); !d.Queued || d.Content != "second" || evs[1].Turn != r2.Turn {
			t.Fatalf("queued echo = %s %s", evs[1].Turn, evs[1].Data)
		}
		if te := data[event.TurnEndData](t, evs[4]); evs[4].Turn != r2.Turn || te.Status != StatusReplaced {
			t.Fatalf("replaced input closed with %s %s, want turn_end replaced for %s", evs[4].Turn, evs[4].Data, r2.Turn)
		}
		g.Release <- struct{}{}
		evs = until(t, s, event.TurnEnd) // first turn
		evs = append(evs, until(t, s, event.TurnStart)...)
		last := evs[len(evs)-1]
		if last.Turn != r3.Turn || data[event.TurnStartData](t, last).InputSeq != r3.Echo.Event.Seq {
			t.Fatalf("queued input that ran = %s %s, want %s", last.Turn, last.Data, r3.Turn)
		}
		g.Release <- struct{}{}
		until(t, s, event.TurnEnd)
	})
	t.Run("interrupt", func(t *testing.T) {
		g := testagent.NewGate()
		h := startHub(t, Config{BusyPolicy: PolicyInterrupt}, g)
		s, _ := subscribe(t, h, 0)
		submit(t, h, "first", "a")
		until(t, s, event.Delta)
		r := submit(t, h, "second", "b")
		if r.Outcome != Started || r.Turn == "t1" {
			t.Fatalf("second = %+v, want Started as a new turn", r)
		}
		evs := until(t, s, event.User)
		want := []event.Type{event.Assistant, event.Notice, event.TurnEnd, event.User}
		if fmt.Sprint(types(evs)) != fmt.Sprint(want) {
			t.Fatalf("events = %v, want %v", types(evs), want)
		}
		if te := data[event.TurnEndData](t, evs[2]); te.Status != event.StatusCancelled || evs[2].Turn != "t1" {
			t.Errorf("first turn ended %+v (turn %s), want cancelled t1", te, evs[2].Turn)
		}
		if n := data[event.TextData](t, evs[1]); n.By != event.ChannelWeb || !strings.HasPrefix(n.Text, "Cancelled by a new message from the web after ") {
			t.Errorf("interrupt notice = %+v", n)
		}
		if a := data[event.AssistantData](t, evs[0]); !a.Partial || a.Content != "part " {
			t.Errorf("partial reply = %+v", a)
		}
		if got := <-g.Cancelled; got != "t1" {
			t.Errorf("cancelled ctx of %s, want t1", got)
		}
	})
}

func TestIdempotentResend(t *testing.T) {
	g := testagent.NewGate()
	h := startHub(t, Config{}, g)
	s, _ := subscribe(t, h, 0)
	r1 := submit(t, h, "hello", "c-1")
	g.Release <- struct{}{}
	until(t, s, event.TurnEnd)
	// After the turn ended, and while another runs, a resend is never re-run.
	submit(t, h, "other", "c-2")
	for _, busy := range []bool{true, false} {
		r := submit(t, h, "hello", "c-1")
		if r.Outcome != Duplicate || r.Echo != r1.Echo || r.Turn != r1.Turn {
			t.Fatalf("resend (busy=%v) = %+v, want Duplicate of %+v", busy, r, r1)
		}
		if busy {
			g.Release <- struct{}{}
			until(t, s, event.TurnEnd)
		}
	}
	info, _ := h.Info(ctxT(t))
	h.stop()
	users := 0
	for _, e := range readLog(t, h.dir) {
		if e.Type == event.User {
			users++
		}
	}
	if users != 2 {
		t.Fatalf("user events logged = %d, want 2 (last_seq %d)", users, info.LastSeq)
	}
}

func TestCancel(t *testing.T) {
	for _, ignore := range []bool{false, true} {
		t.Run(fmt.Sprintf("backend_ignores_cancel=%v", ignore), func(t *testing.T) {
			g := testagent.NewGate()
			g.Ignore = ignore
			h := startHub(t, Config{}, g)
			a, _ := subscribe(t, h, 0)
			b, _ := subscribe(t, h, 0)
			if ok, _ := h.Cancel(ctxT(t)); ok {
				t.Fatal("Cancel with no turn reported true")
			}
			submit(t, h, "long task", "c-1")
			until(t, a, event.Delta)
			start := time.Now()
			ok, err := h.CancelBy(ctxT(t), Actor{Door: event.ChannelWeb})
			if err != nil || !ok {
				t.Fatalf("Cancel = %v, %v", ok, err)
			}
			// Cancel answers after the turn is over: the session is free at once.
			if info, _ := h.Info(ctxT(t)); info.Busy {
				t.Fatal("session still busy right after Cancel returned")
			}
			for name, s := range map[string]*Subscription{"a": a, "b": b} {
				evs := until(t, s, event.TurnEnd)
				end := evs[len(evs)-1]
				if te := data[event.TurnEndData](t, end); te.Status != event.StatusCancelled {
					t.Errorf("client %s turn_end = %+v", name, te)
				}
				if evs[len(evs)-2].Type != event.Notice {
					t.Fatalf("client %s: no cancel notice before turn_end: %v", name, types(evs))
				}
				n := data[event.TextData](t, evs[len(evs)-2])
				if !strings.HasPrefix(n.Text, "Cancelled from the web after ") || !strings.HasSuffix(n.Text, " s.") || n.By != event.ChannelWeb {
					t.Errorf("client %s: cancel notice = %+v, want \"Cancelled from the web after N s.\" by web", name, n)
				}
			}
			if d := time.Since(start); d > time.Second {
				t.Errorf("cancel took %v, want < 1s", d)
			}
			if got := <-g.Cancelled; got != "t1" {
				t.Errorf("backend ctx cancelled for %q", got)
			}
			// A new turn works; a late backend's output never shows up.
			r := submit(t, h, "next", "c-2")
			if r.Outcome != Started {
				t.Fatalf("after cancel Submit = %+v", r)
			}
			if ignore {
				g.Release <- struct{}{} // the stale turn talks and returns
			}
			g.Release <- struct{}{}
			for _, e := range until(t, a, event.TurnEnd) {
				if e.Turn != r.Turn {
					t.Errorf("event %s of stale turn %s leaked into the stream", e.Type, e.Turn)
				}
			}
		})
	}
}

func TestReplay(t *testing.T) {
	h := startHub(t, Config{BufferEvents: 12}, &testagent.Count{N: 30})
	s, _ := subscribe(t, h, 0)
	var all []event.Event
	for i := range 3 {
		submit(t, h, fmt.Sprintf("message %d", i), fmt.Sprintf("c-%d", i))
		all = append(all, until(t, s, event.TurnEnd)...)
	}
	last := all[len(all)-1].Seq
	var lastUser int64
	for _, e := range all {
		if e.Type == event.User {
			lastUser = e.Seq
		}
	}
	// Transient events (status, delta) are compacted once a turn ends, so
	// the buffer holds 3 per turn: user, assistant, turn_end.
	tests := []struct {
		name      string
		since     int64
		gapless   bool
		firstSeq  int64
		replayLen int
	}{
		{"up to date", last, true, 0, 0},
		{"missed the last turn", lastUser - 1, true, lastUser, 3},
		{"missed everything, buffer still complete", 0, true, 1, 9},
		{"ahead of the server", last + 10, false, 1, 9},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, snap := subscribe(t, h, tc.since)
			if snap.Synced.Gapless != tc.gapless || len(snap.Replay) != tc.replayLen || snap.Synced.LastSeq != last {
				t.Fatalf("since %d: gapless %v, %d events, last_seq %d; want %v, %d, %d",
					tc.since, snap.Synced.Gapless, len(snap.Replay), snap.Synced.LastSeq, tc.gapless, tc.replayLen, last)
			}
			if tc.firstSeq > 0 && snap.Replay[0].Event.Seq != tc.firstSeq {
				t.Errorf("first replayed seq = %d, want %d", snap.Replay[0].Event.Seq, tc.firstSeq)
			}
			for i := 1; i < len(snap.Replay); i++ {
				if snap.Replay[i].Event.Seq <= snap.Replay[i-1].Event.Seq {
					t.Fatalf("replay out of order at %d", i)
				}
			}
		})
	}
	// Overflow the 12-event buffer: an old since now has a gap.
	submit(t, h, "message 3", "c-3")
	until(t, s, event.TurnEnd)
	submit(t, h, "message 4", "c-4")
	until(t, s, event.TurnEnd)
	_, snap := subscribe(t, h, 1)
	if snap.Synced.Gapless || !snap.Synced.Cut || len(snap.Replay) != 12 {
		t.Fatalf("since 1 after trim: gapless %v cut %v with %d events, want not gapless, cut, the whole buffer of 12", snap.Synced.Gapless, snap.Synced.Cut, len(snap.Replay))
	}
	if _, ahead := subscribe(t, h, snap.Synced.LastSeq+5); ahead.Synced.Cut {
		t.Error("a client ahead of the server is not a cut replay")
	}
	if !snap.Connected.Resumed {
		t.Error("connected.resumed = false with history present")
	}
}

func TestTurnRunsWithNoSubscribers(t *testing.T) {
	h := startHub(t, Config{}, &agent.Demo{})
	r := submit(t, h, "anyone there?", "c-1")
	// Wait for the turn to end by asking the hub, never by sleeping blind.
	deadline := time.Now().Add(5 * time.Second)
	for {
		info, err := h.Info(ctxT(t))
		if err != nil {
			t.Fatal(err)
		}
		if !info.Busy {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("turn did not finish without subscribers")
		}
		time.Sleep(5 * time.Millisecond)
	}
	_, snap := subscribe(t, h, 0)
	got := []event.Type{}
	for _, f := range snap.Replay {
		got = append(got, f.Event.Type)
	}
	want := []event.Type{event.User, event.Assistant, event.TurnEnd}
	if fmt.Sprint(got) != fmt.Sprint(want) || snap.Replay[0].Event.Turn != r.Turn {
		t.Fatalf("replay = %v, want %v", got, want)
	}
	a := data[event.AssistantData](t, snap.Replay[1].Event)
	if a.Content != agent.DemoReply("anyone there?", 0) {
		t.Errorf("reply = %q", a.Content)
	}
}

func TestSlowConsumerDropped(t *testing.T) {
	const deltas = 200
	// The backend waits for the fast client to read each delta, so only
	// the client that never reads can fall behind.
	paced := &testagent.Count{N: deltas, Ack: make(chan struct{})}
	h := startHub(t, Config{ClientQueue: 16}, paced)
	slow, _ := subscribe(t, h, 0)
	fast, _ := subscribe(t, h, 0)
	submit(t, h, "go", "c-1")
	var seqs []int64
	for {
		e := next(t, fast)
		seqs = append(seqs, e.Seq)
		if e.Type == event.Delta {
			paced.Ack <- struct{}{}
		}
		if e.Type == event.TurnEnd {
			break
		}
	}
	if len(seqs) != deltas+3 {
		t.Fatalf("fast client got %d events, want %d", len(seqs), deltas+3)
	}
	// user 1, the deltas without a seq, assistant 2, turn_end 3.
	for i := range seqs {
		want := int64(0)
		switch i {
		case 0:
			want = 1
		case deltas + 1:
			want = 2
		case deltas + 2:
			want = 3
		}
		if seqs[i] != want {
			t.Fatalf("fast client seq[%d] = %d, want %d", i, seqs[i], want)
		}
	}
	n := 0
	for {
		if _, ok := slow.Next(ctxT(t)); !ok {
			break
		}
		n++
	}
	if !errors.Is(slow.Err(), ErrSlowConsumer) || n != 16 {
		t.Fatalf("slow client: err %v after %d events, want ErrSlowConsumer after 16", slow.Err(), n)
	}
	if info, _ := h.Info(ctxT(t)); info.Subscribers != 1 {
		t.Errorf("subscribers = %d, want 1", info.Subscribers)
	}
}

func TestShutdownInterruptsTurn(t *testing.T) {
	g := testagent.NewGate()
	h := startHub(t, Config{}, g)
	s, _ := subscribe(t, h, 0)
	submit(t, h, "work", "c-1")
	until(t, s, event.Delta)
	h.stop()
	evs := until(t, s, event.TurnEnd)
	if te := data[event.TurnEndData](t, evs[len(evs)-1]); te.Status != event.StatusInterrupted {
		t.Fatalf("turn_end at shutdown = %+v, want interrupted", te)
	}
	if _, ok := s.Next(ctxT(t)); ok || !errors.Is(s.Err(), ErrClosed) {
		t.Fatalf("subscription after shutdown: err %v, want ErrClosed", s.Err())
	}
	if _, err := h.Submit(ctxT(t), Input{Channel: "web", Content: "late"}); !errors.Is(err, ErrClosed) {
		t.Fatalf("Submit after shutdown err = %v, want ErrClosed", err)
	}
	logged := readLog(t, h.dir)
	if last := logged[len(logged)-1]; last.Type != event.TurnEnd || data[event.TurnEndData](t, last).Status != event.StatusInterrupted {
		t.Fatalf("log ends with %s %s, want turn_end interrupted", last.Type, last.Data)
	}
}

func TestRestartContinuesSeqAndSession(t *testing.T) {
	dir := t.TempDir()
	h := startHub(t, Config{DataDir: dir}, &agent.Demo{})
	s, snap1 := subscribe(t, h, 0)
	submit(t, h, "before restart", "c-1")
	evs := until(t, s, event.TurnEnd)
	h.stop()

	st, err := os.Stat(filepath.Join(dir, "session.json"))
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("session.json: %v, mode %v; want 0600", err, st.Mode().Perm())
	}
	tail := readLog(t, dir)
	h2 := startHub(t, Config{DataDir: dir, Restore: tail}, &agent.Demo{})
	s2, snap2 := subscribe(t, h2, 0)
	if snap2.Connected.SessionID != snap1.Connected.SessionID || !snap2.Connected.Resumed {
		t.Fatalf("after restart connected = %+v, want same session %s resumed", snap2.Connected, snap1.Connected.SessionID)
	}
	lastBefore := evs[len(evs)-1].Seq
	if snap2.Connected.LastSeq != lastBefore {
		t.Fatalf("last_seq after restart = %d, want %d", snap2.Connected.LastSeq, lastBefore)
	}
	// The resent input is recognised after the restart too.
	if r := submit(t, h2, "before restart", "c-1"); r.Outcome != Duplicate {
		t.Fatalf("resend after restart = %+v, want Duplicate", r)
	}
	r := submit(t, h2, "after restart", "c-2")
	if r.Echo.Event.Seq != lastBefore+1 {
		t.Fatalf("first seq after restart = %d, want %d", r.Echo.Event.Seq, lastBefore+1)
	}
	until(t, s2, event.TurnEnd)
}

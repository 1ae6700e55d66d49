package hub

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/frontdesk-hq/frontdesk/agent"
	"github.com/frontdesk-hq/frontdesk/event"
	"github.com/frontdesk-hq/frontdesk/history"
	"github.com/frontdesk-hq/frontdesk/internal/testkit/fakeclock"
)

// recorder is an agent that reports every request it runs and answers
// when released (or at once with Free).
type recorder struct {
	runs    chan agent.Request
	release chan struct{}
	Free    bool
}

func newRecorder() *recorder {
	return &recorder{runs: make(chan agent.Request, 100), release: make(chan struct{})}
}

func (r *recorder) Run(ctx context.Context, req agent.Request, emit agent.Emitter) (agent.Reply, error) {
	r.runs <- req
	if !r.Free {
		select {
		case <-r.release:
		case <-ctx.Done():
			return agent.Reply{}, ctx.Err()
		}
	}
	return agent.Reply{Content: "reply to " + req.Content}, nil
}

// ran waits for the next request the recorder runs.
func (r *recorder) ran(t *testing.T) agent.Request {
	t.Helper()
	select {
	case req := <-r.runs:
		return req
	case <-time.After(5 * time.Second):
		t.Fatal("no turn ran")
		return agent.Request{}
	}
}

// Inputs that wait when the server stops stay queued on disk, run after
// the restart in their order (patient ones first, then the queue policy's
// one), each exactly once; a resend of one awaits it instead of running it
// again.
func TestQueuedInputsSurviveRestart(t *testing.T) {
	dir := t.TempDir()
	rec := newRecorder()
	h := startHub(t, Config{DataDir: dir, BusyPolicy: PolicyQueue}, rec)
	submit(t, h, "running", "w1")
	rec.ran(t)
	outcomes := map[string]chan TurnOutcome{}
	for _, in := range []Input{
		{Channel: event.ChannelWeb, Content: "web waits", ClientMsgID: "w2"},
		{Channel: event.ChannelEmail, From: "a@example.com", Content: "mail one", ClientMsgID: "m1", Patient: true},
		{Channel: event.ChannelSchedule, Content: "scheduled", ClientMsgID: "s1", Patient: true, ScheduleID: "sch-1"},
		{Channel: event.ChannelEmail, From: "b@example.com", Content: "mail two", ClientMsgID: "m2", Patient: true},
	} {
		done := make(chan TurnOutcome, 1)
		outcomes[in.ClientMsgID] = done
		in.Done = done
		if r, err := h.Submit(ctxT(t), in); err != nil || r.Outcome != Queued {
			t.Fatalf("submit %s = %+v, %v; want Queued", in.ClientMsgID, r, err)
		}
	}
	h.stop()
	for id, c := range outcomes {
		if o := <-c; o.Status != StatusStillQueued {
			t.Errorf("%s: outcome at shutdown %+v, want %s", id, o, StatusStillQueued)
		}
	}

	rec2 := newRecorder()
	h2 := startHub(t, Config{DataDir: dir, BusyPolicy: PolicyQueue, Restore: readLog(t, dir)}, rec2)
	s, snap := subscribe(t, h2, 0)
	if !snap.Connected.Busy {
		t.Fatal("the first waiting input did not start after the restart")
	}
	// A resend of a waiting input (email after a restart) awaits it.
	dup := make(chan TurnOutcome, 1)
	if r, err := h2.Submit(ctxT(t), Input{Channel: event.ChannelEmail, From: "b@example.com", Content: "mail two", ClientMsgID: "m2", Patient: true, Done: dup}); err != nil || r.Outcome != Duplicate {
		t.Fatalf("resend of a waiting input = %+v, %v; want Duplicate", r, err)
	}
	var order []string
	for range 4 {
		req := rec2.ran(t)
		order = append(order, req.Content)
		if req.Content == "scheduled" && req.Channel != event.ChannelSchedule {
			t.Errorf("restored schedule input ran as channel %q", req.Channel)
		}
		rec2.release <- struct{}{}
		until(t, s, event.TurnEnd)
	}
	if got, want := strings.Join(order, ","), "mail one,scheduled,mail two,web waits"; got != want {
		t.Fatalf("after restart ran %s, want %s", got, want)
	}
	if o := <-dup; o.Status != event.StatusCompleted || o.Reply != "reply to mail two" {
		t.Fatalf("resend's outcome %+v", o)
	}
	select {
	case req := <-rec2.runs:
		t.Fatalf("ran %q a second time", req.Content)
	default:
	}
	h2.stop()

	// Each ran once: one turn_start per queued input in the log; a third
	// start runs nothing.
	starts := map[string]int{}
	for _, e := range readLog(t, dir) {
		if e.Type == event.TurnStart {
			starts[e.Turn]++
		}
	}
	if len(starts) != 4 {
		t.Fatalf("turn_start events by turn %v, want 4 turns once each", starts)
	}
	for turn, n := range starts {
		if n != 1 {
			t.Errorf("turn %s started %d times", turn, n)
		}
	}
	rec3 := newRecorder()
	h3 := startHub(t, Config{DataDir: dir, BusyPolicy: PolicyQueue, Restore: readLog(t, dir)}, rec3)
	if info, _ := h3.Info(ctxT(t)); info.Busy {
		t.Fatalf("third start is busy: %+v", info)
	}
}

// A queued input is logged between the running turn's input and its reply;
// the agent's context still pairs each input with its own reply, in the
// order the turns ran, and never holds an input that has not started.
func TestQueuedInputContextPairsByTurn(t *testing.T) {
	rec := newRecorder()
	h := startHub(t, Config{}, rec)
	s, _ := subscribe(t, h, 0)
	submit(t, h, "first", "a")
	rec.ran(t)
	for _, id := range []string{"m1", "m2"} {
		if _, err := h.Submit(ctxT(t), Input{Channel: event.ChannelEmail, Content: "mail " + id, ClientMsgID: id, Patient: true}); err != nil {
			t.Fatal(err)
		}
	}
	rec.release <- struct{}{}
	req := rec.ran(t)
	if got := contextText(req.Context); req.Content != "mail m1" || got != "user:first assistant:reply to first" {
		t.Fatalf("%q ran with context %s", req.Content, got)
	}
	rec.release <- struct{}{}
	req = rec.ran(t)
	if got, want := contextText(req.Context), "user:first assistant:reply to first user:mail m1 assistant:reply to mail m1"; got != want {
		t.Fatalf("%q ran with context %s, want %s", req.Content, got, want)
	}
	rec.release <- struct{}{}
	until(t, s, event.TurnEnd)
	until(t, s, event.TurnEnd)
	until(t, s, event.TurnEnd)
	// The short-term transcript too pairs by turn.
	if got, want := contextText(conversation(h.bufferFrames(t), 0)), "user:first assistant:reply to first user:mail m1 assistant:reply to mail m1 user:mail m2 assistant:reply to mail m2"; got != want {
		t.Fatalf("conversation = %s, want %s", got, want)
	}
}

// bufferFrames returns the hub's replay buffer (through a subscription).
func (h *testHub) bufferFrames(t *testing.T) []*Frame {
	t.Helper()
	s, snap := subscribe(t, h, 0)
	s.Close()
	return snap.Replay
}

func contextText(evs []event.Event) string {
	var parts []string
	for _, e := range evs {
		var d struct{ Content string }
		_ = e.Decode(&d)
		parts = append(parts, fmt.Sprintf("%s:%s", e.Type, d.Content))
	}
	return strings.Join(parts, " ")
}

// The turn_end written at a restart for a turn the process died in counts
// up to the turn's last logged event, not the time the server was down.
func TestInterruptedDurationSkipsDowntime(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "chat_history.ndjson")
	lg, err := history.Open(history.Options{Path: path, RotateMB: 5})
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2026, 11, 1, 10, 0, 0, 0, time.UTC)
	for i, e := range []event.Event{
		event.New(event.User, "t1", t0, event.UserData{Channel: "web", Content: "hi"}),
		event.New(event.User, "t2", t0.Add(time.Second), event.UserData{Channel: "email", Content: "mail", Queued: true}),
		event.New(event.TurnEnd, "t1", t0.Add(2*time.Second), event.TurnEndData{Status: event.StatusCompleted}),
		event.New(event.TurnStart, "t2", t0.Add(3*time.Second), event.TurnStartData{InputSeq: 2, WaitedMS: 2000}),
		event.New(event.ToolCall, "t2", t0.Add(5500*time.Millisecond), event.ToolCallData{ID: "x", Name: "history_search", Args: []byte(`{}`)}),
	} {
		e.Seq = int64(i + 1)
		if err := lg.Append(e); err != nil {
			t.Fatal(err)
		}
	}
	lg.Close()
	now := t0.Add(time.Hour) // the server was down for an hour
	rec := newRecorder()
	h := startHub(t, Config{DataDir: dir, Restore: readLog(t, dir), Clock: fakeclock.New(now)}, rec)
	_, snap := subscribe(t, h, 0)
	last := snap.Replay[len(snap.Replay)-1].Event
	if te := data[event.TurnEndData](t, last); last.Turn != "t2" || te.Status != event.StatusInterrupted || te.DurationMS != 2500 {
		t.Fatalf("restart closed %s with %s, want t2 interrupted after 2500 ms", last.Turn, last.Data)
	}
	if snap.Connected.Busy {
		t.Fatal("an interrupted queued input ran again after the restart")
	}
}

// A queued input that a reset let start, cut by a stop: after a restart
// it is interrupted, not run again.
func TestStartedQueuedInputIsNotRunAgain(t *testing.T) {
	dir := t.TempDir()
	rec := newRecorder()
	h := startHub(t, Config{DataDir: dir}, rec)
	submit(t, h, "running", "w1")
	rec.ran(t)
	r, err := h.Submit(ctxT(t), Input{Channel: event.ChannelEmail, Content: "mail", ClientMsgID: "m1", Patient: true})
	if err != nil || r.Outcome != Queued {
		t.Fatalf("mail = %+v, %v", r, err)
	}
	if _, err := h.Reset(ctxT(t), ResetManual, Actor{}); err != nil { // cancels the running turn
		t.Fatal(err)
	}
	if req := rec.ran(t); req.Content != "mail" {
		t.Fatalf("after the reset ran %q", req.Content)
	}
	h.stop()
	rec2 := newRecorder()
	h2 := startHub(t, Config{DataDir: dir, Restore: readLog(t, dir)}, rec2)
	_, snap := subscribe(t, h2, 0)
	if snap.Connected.Busy {
		t.Fatal("a queued input that had started runs again after the restart")
	}
	var end event.Event
	for _, f := range snap.Replay {
		if f.Event.Type == event.TurnEnd && f.Event.Turn == r.Turn {
			end = f.Event
		}
	}
	if end.Seq == 0 || data[event.TurnEndData](t, end).Status != event.StatusInterrupted {
		t.Fatalf("the mail's turn_end = %s, want interrupted", end.Data)
	}
}

// An input still waiting at a reset stays in the replay; after a restart
// the rebuilt replay has it too (before the reset event), and it runs.
func TestWaitingEchoKeptInReplayAcrossRestart(t *testing.T) {
	dir := t.TempDir()
	rec := newRecorder()
	h := startHub(t, Config{DataDir: dir}, rec)
	submit(t, h, "running", "w1")
	rec.ran(t)
	var second Result
	for _, id := range []string{"m1", "m2"} {
		r, err := h.Submit(ctxT(t), Input{Channel: event.ChannelEmail, Content: "mail " + id, ClientMsgID: id, Patient: true})
		if err != nil || r.Outcome != Queued {
			t.Fatalf("%s = %+v, %v", id, r, err)
		}
		second = r
	}
	if _, err := h.Reset(ctxT(t), ResetManual, Actor{}); err != nil {
		t.Fatal(err)
	}
	rec.ran(t) // m1 runs in the new generation; m2 waits
	h.stop()

	rec2 := newRecorder()
	h2 := startHub(t, Config{DataDir: dir, Restore: readLog(t, dir)}, rec2)
	if req := rec2.ran(t); req.Content != "mail m2" {
		t.Fatalf("after restart ran %q, want mail m2", req.Content)
	}
	_, snap := subscribe(t, h2, 0)
	resetAt, echoAt := -1, -1
	for i, f := range snap.Replay {
		switch {
		case f.Event.Type == event.Reset:
			resetAt = i
		case f.Event.Seq == second.Echo.Event.Seq:
			echoAt = i
		}
	}
	if echoAt < 0 || resetAt < 0 || echoAt > resetAt {
		t.Fatalf("replay after restart: waiting echo at %d, reset at %d; want the echo kept before the reset", echoAt, resetAt)
	}
}

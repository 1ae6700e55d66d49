package hub

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/frontdesk-hq/frontdesk/agent"
	"github.com/frontdesk-hq/frontdesk/event"
	"github.com/frontdesk-hq/frontdesk/history"
	"github.com/frontdesk-hq/frontdesk/internal/testkit/fakeclock"
	"github.com/frontdesk-hq/frontdesk/internal/testkit/testagent"
	"github.com/frontdesk-hq/frontdesk/memory"
)

func withMemory(t *testing.T, cfg Config) (Config, *memory.Store) {
	t.Helper()
	if cfg.DataDir == "" {
		cfg.DataDir = t.TempDir()
	}
	mem, err := memory.Open(filepath.Join(cfg.DataDir, "memory"))
	if err != nil {
		t.Fatal(err)
	}
	cfg.Memory = mem
	return cfg, mem
}

// talk runs one complete turn and returns its events.
func talk(t *testing.T, h *testHub, s *Subscription, content string) []event.Event {
	t.Helper()
	submit(t, h, content, "id-"+content)
	return until(t, s, event.TurnEnd)
}

func TestManualReset(t *testing.T) {
	cfg, mem := withMemory(t, Config{RetainExchanges: 2})
	h := startHub(t, cfg, &testagent.Count{N: 3})
	s, snap0 := subscribe(t, h, 0)
	for _, c := range []string{"my cat is called Miso", "I live in Lisbon", "I like green tea"} {
		talk(t, h, s, c)
	}
	info, _ := h.Info(ctxT(t))
	d, err := h.Reset(ctxT(t), ResetManual, Actor{})
	if err != nil || d != (event.ResetData{Reason: "manual", Kept: 2}) {
		t.Fatalf("Reset = %+v, %v", d, err)
	}
	if e := next(t, s); e.Type != event.Reset || e.Seq != info.LastSeq+1 {
		t.Fatalf("subscriber got %s seq %d, want reset seq %d", e.Type, e.Seq, info.LastSeq+1)
	}
	after, _ := h.Info(ctxT(t))
	if after.Generation != snap0.Connected.Generation+1 || after.SessionID != snap0.Connected.SessionID {
		t.Fatalf("after reset %+v, want same session, generation %d", after, snap0.Connected.Generation+1)
	}

	// A fresh client sees the kept exchanges and the reset; a client that
	// was up to date sees just the reset, gaplessly.
	_, fresh := subscribe(t, h, 0)
	var got []string
	for _, f := range fresh.Replay {
		got = append(got, string(f.Event.Type))
	}
	if want := "user assistant user assistant reset"; strings.Join(got, " ") != want || fresh.Synced.Gapless {
		t.Fatalf("fresh replay %v gapless %v, want %s, not gapless", got, fresh.Synced.Gapless, want)
	}
	if !strings.Contains(string(fresh.Replay[0].Event.Data), "Lisbon") {
		t.Errorf("kept the wrong exchanges: %s", fresh.Replay[0].Event.Data)
	}
	_, upToDate := subscribe(t, h, info.LastSeq)
	if len(upToDate.Replay) != 1 || !upToDate.Synced.Gapless {
		t.Fatalf("up-to-date client replay %d events gapless %v, want the reset alone", len(upToDate.Replay), upToDate.Synced.Gapless)
	}

	// The next turn's context still has the kept exchanges.
	talk(t, h, s, "what is my cat called?")
	h.stop() // waits for the memory writers

	// The audit file holds the whole pre-reset buffer, 0600.
	audits, _ := filepath.Glob(filepath.Join(h.dir, "audit", "*.ndjson"))
	if len(audits) != 1 {
		t.Fatalf("audit files: %v", audits)
	}
	st, _ := os.Stat(audits[0])
	b, _ := os.ReadFile(audits[0])
	if st.Mode().Perm() != 0o600 || strings.Count(string(b), "\n") != 9 || !strings.Contains(string(b), "Miso") {
		t.Fatalf("audit file mode %v with %d lines:\n%s", st.Mode().Perm(), strings.Count(string(b), "\n"), b)
	}
	lt, _ := mem.LongTerm()
	if !strings.Contains(lt, "manual") || !strings.Contains(lt, "Miso") {
		t.Fatalf("long-term memory after reset:\n%s", lt)
	}
	short, _ := mem.ShortTerm()
	if !strings.Contains(short, "what is my cat called?") || strings.Contains(short, "Miso") {
		t.Fatalf("short-term memory should be the kept exchanges and what came since:\n%s", short)
	}
}

func TestResetCancelsRunningTurnAndQueuedInputLandsAfter(t *testing.T) {
	g := testagent.NewGate()
	h := startHub(t, Config{BusyPolicy: PolicyQueue}, g)
	s, _ := subscribe(t, h, 0)
	submit(t, h, "running", "a")
	until(t, s, event.Delta)
	done := make(chan TurnOutcome, 1)
	r, err := h.Submit(ctxT(t), Input{Channel: "web", Content: "queued", ClientMsgID: "b", Done: done})
	if err != nil || r.Outcome != Queued {
		t.Fatalf("queued submit = %+v, %v", r, err)
	}
	if _, err := h.Reset(ctxT(t), ResetManual, Actor{}); err != nil {
		t.Fatal(err)
	}
	// The queued input was recorded on arrival, survives the reset (it
	// is still to come) and starts in the new generation.
	evs := persisted(until(t, s, event.TurnStart))
	var kinds []string
	for _, e := range evs {
		kinds = append(kinds, string(e.Type))
	}
	if want := "user assistant notice turn_end reset turn_start"; strings.Join(kinds, " ") != want {
		t.Fatalf("events %v, want %s", kinds, want)
	}
	if d := data[event.UserData](t, evs[0]); d.Content != "queued" || !d.Queued || evs[5].Turn != evs[0].Turn {
		t.Fatalf("after reset started %s, want the queued input %s", evs[5].Turn, evs[0].Data)
	}
	if n := data[event.TextData](t, evs[2]); n.By != CancelByReset || !strings.HasPrefix(n.Text, "Cancelled by a reset after") {
		t.Errorf("cancel notice = %+v", n)
	}
	// A client joining after the reset still sees the waiting input.
	_, snap := subscribe(t, h, 0)
	if !slices.ContainsFunc(snap.Replay, func(f *Frame) bool { return f.Event.Seq == evs[0].Seq }) {
		t.Errorf("replay after reset lacks the queued input %d", evs[0].Seq)
	}
	g.Release <- struct{}{}
	until(t, s, event.TurnEnd)
	select {
	case o := <-done:
		if o.Status != event.StatusCompleted || o.Reply != "reply to queued" {
			t.Fatalf("outcome %+v", o)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no outcome for the queued input")
	}
	// Resending it is recognised, not run again.
	if r := submit(t, h, "queued", "b"); r.Outcome != Duplicate {
		t.Fatalf("resend = %+v", r)
	}
}

func TestIdleReset(t *testing.T) {
	clock := fakeclock.New(time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC))
	g := testagent.NewGate()
	h := startHub(t, Config{IdleTimeout: 30 * time.Minute, Clock: clock}, g)
	s, _ := subscribe(t, h, 0)
	ctx := ctxT(t)

	submit(t, h, "hello", "a")
	until(t, s, event.Delta)
	// A turn still running when the timer fires postpones the reset.
	clock.Advance(31 * time.Minute)
	g.Release <- struct{}{}
	until(t, s, event.TurnEnd)
	// The hub re-arms the timer right after publishing turn_end; a round
	// trip through its command loop orders the test after that.
	h.Info(ctx)
	// Quiet since the turn ended: 29 minutes are not enough…
	clock.Advance(29 * time.Minute)
	if info, _ := h.Info(ctx); info.Generation != 1 {
		t.Fatalf("reset after 29 quiet minutes: %+v", info)
	}
	// …an input restarts the countdown…
	submit(t, h, "still here", "b")
	g.Release <- struct{}{}
	until(t, s, event.TurnEnd)
	h.Info(ctx)
	clock.Advance(29 * time.Minute)
	if info, _ := h.Info(ctx); info.Generation != 1 {
		t.Fatalf("reset 29 minutes after the last input: %+v", info)
	}
	// …and 30 quiet minutes reset by themselves.
	clock.Advance(time.Minute)
	e := next(t, s)
	if e.Type != event.Reset || data[event.ResetData](t, e).Reason != ResetIdle {
		t.Fatalf("after 30 quiet minutes got %s %s", e.Type, e.Data)
	}
	// Once per quiet period: no further reset without activity.
	clock.Advance(2 * time.Hour)
	if info, _ := h.Info(ctx); info.Generation != 2 {
		t.Fatalf("generation %d after a second quiet period with no input, want 2", info.Generation)
	}
}

func TestIdleDisabled(t *testing.T) {
	clock := fakeclock.New(time.Now())
	h := startHub(t, Config{IdleTimeout: 0, Clock: clock}, &testagent.Count{N: 1})
	s, _ := subscribe(t, h, 0)
	talk(t, h, s, "hi")
	if n := clock.Waiters(); n != 0 {
		t.Fatalf("%d idle timers armed with idle_timeout_sec 0", n)
	}
}

func TestRestartMarksCutTurnInterrupted(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "chat_history.ndjson")
	lg, err := history.Open(history.Options{Path: path, RotateMB: 5, Fsync: "always"})
	if err != nil {
		t.Fatal(err)
	}
	// A turn that started and never ended: the process died.
	u := event.New(event.User, "t1", time.Now(), event.UserData{Channel: "web", Content: "cut short", ClientMsgID: "c-1"})
	u.Seq = 1
	if err := lg.Append(u); err != nil {
		t.Fatal(err)
	}
	tc := event.New(event.ToolCall, "t1", time.Now(), event.ToolCallData{ID: "x", Name: "history_search", Args: json.RawMessage(`{}`)})
	tc.Seq = 3
	lg.Append(tc)
	lg.Close()

	tail, _, err := history.ReadTail(path, 100)
	if err != nil {
		t.Fatal(err)
	}
	h := startHub(t, Config{DataDir: dir, Restore: tail}, &agent.Demo{})
	_, snap := subscribe(t, h, 0)
	last := snap.Replay[len(snap.Replay)-1].Event
	if last.Type != event.TurnEnd || last.Turn != "t1" || last.Seq != 4 || data[event.TurnEndData](t, last).Status != event.StatusInterrupted {
		t.Fatalf("last replayed event %s turn %s seq %d %s, want turn_end interrupted for t1 at seq 4", last.Type, last.Turn, last.Seq, last.Data)
	}
	if snap.Connected.Busy {
		t.Error("session busy after restart")
	}
	done := make(chan TurnOutcome, 1)
	r, _ := h.Submit(ctxT(t), Input{Channel: "web", Content: "cut short", ClientMsgID: "c-1", Done: done})
	if o := <-done; r.Outcome != Duplicate || o.Status != event.StatusInterrupted {
		t.Fatalf("resend of the cut input: %+v, outcome %+v", r, o)
	}
	h.stop()
	logged := readLog(t, dir)
	if logged[len(logged)-1].Type != event.TurnEnd {
		t.Fatalf("the interrupted marker was not written to the log")
	}
}

func TestRestartAfterResetRestoresKeptBuffer(t *testing.T) {
	dir := t.TempDir()
	h := startHub(t, Config{DataDir: dir, RetainExchanges: 1}, &testagent.Count{N: 2})
	s, _ := subscribe(t, h, 0)
	talk(t, h, s, "one")
	talk(t, h, s, "two")
	h.Reset(ctxT(t), ResetManual, Actor{})
	talk(t, h, s, "three")
	h.stop()

	h2 := startHub(t, Config{DataDir: dir, RetainExchanges: 1, Restore: readLog(t, dir)}, &testagent.Count{N: 2})
	_, snap := subscribe(t, h2, 0)
	var got []string
	for _, f := range snap.Replay {
		s := string(f.Event.Type)
		if f.Event.Type == event.User {
			s += ":" + data[event.UserData](t, f.Event).Content
		}
		got = append(got, s)
	}
	if want := "user:two assistant reset user:three assistant turn_end"; strings.Join(got, " ") != want {
		t.Fatalf("replay after restart %v, want %s", got, want)
	}
	if snap.Connected.Generation != 2 {
		t.Fatalf("generation after restart %d, want 2", snap.Connected.Generation)
	}
}

func TestOutcomeReachesSubmitter(t *testing.T) {
	g := testagent.NewGate()
	h := startHub(t, Config{BusyPolicy: PolicyQueue}, g)
	s, _ := subscribe(t, h, 0)
	first := make(chan TurnOutcome, 1)
	if _, err := h.Submit(ctxT(t), Input{Channel: "webhook", Content: "one", ClientMsgID: "1", Done: first}); err != nil {
		t.Fatal(err)
	}
	replaced := make(chan TurnOutcome, 1)
	h.Submit(ctxT(t), Input{Channel: "webhook", Content: "two", ClientMsgID: "2", Done: replaced})
	h.Submit(ctxT(t), Input{Channel: "webhook", Content: "three", ClientMsgID: "3"})
	if o := <-replaced; o.Status != StatusReplaced {
		t.Fatalf("replaced input outcome %+v", o)
	}
	// A duplicate of a running input waits for the same outcome.
	dup := make(chan TurnOutcome, 1)
	if r, _ := h.Submit(ctxT(t), Input{Channel: "webhook", Content: "one", ClientMsgID: "1", Done: dup}); r.Outcome != Duplicate {
		t.Fatalf("resend = %+v", r)
	}
	g.Release <- struct{}{}
	until(t, s, event.TurnEnd)
	for name, c := range map[string]chan TurnOutcome{"submitter": first, "resender": dup} {
		if o := <-c; o.Turn != "t1" || o.Status != event.StatusCompleted || o.Reply != "reply to one" {
			t.Fatalf("%s outcome %+v", name, o)
		}
	}
	g.Release <- struct{}{}
	until(t, s, event.TurnEnd)
}

func TestPatientInputsWaitInOrder(t *testing.T) {
	g := testagent.NewGate()
	h := startHub(t, Config{BusyPolicy: PolicyReject}, g)
	s, _ := subscribe(t, h, 0)
	submit(t, h, "web first", "w")
	queuedTurns := map[string]string{}
	for i := range 2 {
		r, err := h.Submit(ctxT(t), Input{Channel: "email", From: "ana@example.com", Content: fmt.Sprint("mail ", i), ClientMsgID: fmt.Sprint("m", i), Patient: true})
		if err != nil || r.Outcome != Queued || r.Echo == nil || r.Turn != r.Echo.Event.Turn {
			t.Fatalf("patient input %d = %+v, %v", i, r, err)
		}
		queuedTurns[fmt.Sprint("m", i)] = r.Turn
	}
	if r := submit(t, h, "web second", "w2"); r.Outcome != Rejected {
		t.Fatalf("impatient input while busy = %+v, want Rejected", r)
	}
	for i := range 3 {
		g.Release <- struct{}{}
		until(t, s, event.TurnEnd)
		if i == 2 {
			break
		}
		e := next(t, s)
		if want := fmt.Sprint("m", i); e.Type != event.TurnStart || e.Turn != queuedTurns[want] {
			t.Fatalf("turn %d started with %s %s, want %s's %s", i+2, e.Type, e.Data, want, queuedTurns[want])
		}
	}
}

func TestLongStringsAreTruncatedVisibly(t *testing.T) {
	h := startHub(t, Config{}, &testagent.Count{N: 1})
	s, _ := subscribe(t, h, 0)
	big := strings.Repeat("é", MaxStoredString) // 2 bytes each: twice the limit
	submit(t, h, big, "big")
	e := next(t, s)
	c := data[event.UserData](t, e).Content
	if len(c) > MaxStoredString+100 || !strings.Contains(c, "truncated") || !strings.HasPrefix(c, "éé") {
		t.Fatalf("stored %d bytes ending %q", len(c), c[len(c)-80:])
	}
	until(t, s, event.TurnEnd)
}

func TestDemoAgentAnswersFromHistorySearch(t *testing.T) {
	dir := t.TempDir()
	cfg := Config{DataDir: dir, RetainExchanges: 1,
		History: history.NewReader(filepath.Join(dir, "chat_history.ndjson"))}
	cfg.Index = startIndex(t, dir)
	h := startHub(t, cfg, &agent.Demo{})
	s, _ := subscribe(t, h, 0)
	talk(t, h, s, "my sister's birthday is on the 14th of March")
	talk(t, h, s, "something else entirely")
	// A reset: the fact is no longer in the context, only in the log.
	h.Reset(ctxT(t), ResetManual, Actor{})
	next(t, s)
	evs := talk(t, h, s, "what did I say about my sister's birthday?")
	var kinds []string
	var result event.ToolResultData
	var reply event.AssistantData
	for _, e := range evs {
		kinds = append(kinds, string(e.Type))
		switch e.Type {
		case event.ToolResult:
			result = data[event.ToolResultData](t, e)
		case event.Assistant:
			reply = data[event.AssistantData](t, e)
		}
	}
	if !strings.Contains(strings.Join(kinds, " "), "tool_call tool_result") {
		t.Fatalf("events %v: no history_search call", kinds)
	}
	if result.Error != "" || !strings.Contains(result.Output, "14th of March") {
		t.Fatalf("tool result %+v", result)
	}
	if !strings.Contains(reply.Content, "14th of March") {
		t.Fatalf("reply %q does not recall the fact", reply.Content)
	}
}

// promptAgent returns as soon as its context is cancelled, the way a
// well-behaved backend does; at shutdown its turn must still be recorded
// as interrupted, not cancelled.
type promptAgent struct{ started chan struct{} }

func (p promptAgent) Run(ctx context.Context, req agent.Request, emit agent.Emitter) (agent.Reply, error) {
	emit(event.Delta, event.TextData{Text: "working "})
	p.started <- struct{}{}
	<-ctx.Done()
	return agent.Reply{}, ctx.Err()
}

func TestShutdownRecordsInterruptedNotCancelled(t *testing.T) {
	for i := range 20 {
		dir := t.TempDir()
		a := promptAgent{started: make(chan struct{}, 1)}
		h := startHub(t, Config{DataDir: dir}, a)
		submit(t, h, fmt.Sprint("run ", i), "c")
		<-a.started
		h.stop()
		logged := readLog(t, dir)
		last := logged[len(logged)-1]
		if st := data[event.TurnEndData](t, last).Status; last.Type != event.TurnEnd || st != event.StatusInterrupted {
			t.Fatalf("round %d: log ends with %s %s, want turn_end interrupted", i, last.Type, last.Data)
		}
	}
}

// sloppyAgent emits a tool call whose arguments are not JSON, as a buggy
// backend might; the session must survive it.
type sloppyAgent struct{}

func (sloppyAgent) Run(ctx context.Context, req agent.Request, emit agent.Emitter) (agent.Reply, error) {
	emit(event.ToolCall, event.ToolCallData{ID: "x", Name: "history_search", Args: json.RawMessage(`{"query": "cats`)})
	return agent.Reply{Content: "ok"}, nil
}

func TestInvalidToolArgsDoNotBreakTheSession(t *testing.T) {
	h := startHub(t, Config{}, sloppyAgent{})
	s, _ := subscribe(t, h, 0)
	evs := talk(t, h, s, "go")
	if evs[1].Type != event.ToolCall || !json.Valid(evs[1].Data) {
		t.Fatalf("tool call event %s %s", evs[1].Type, evs[1].Data)
	}
	if d := data[event.ToolCallData](t, evs[1]); string(d.Args) != `"{\"query\": \"cats"` {
		t.Fatalf("args kept as %s, want the raw text as a JSON string", d.Args)
	}
}

func TestTrimAfterResetKeepsGaplessHonest(t *testing.T) {
	h := startHub(t, Config{RetainExchanges: 2, BufferEvents: 100}, &testagent.Count{N: 1})
	s, _ := subscribe(t, h, 0)
	for i := range 4 {
		talk(t, h, s, fmt.Sprint("before ", i))
	}
	h.Reset(ctxT(t), ResetManual, Actor{})
	reset := next(t, s).Seq
	// Buffer: 4 kept events + reset + 3 per turn. 33 turns make 104, so
	// the trim drops exactly the kept exchanges (older seqs) and nothing
	// after the reset.
	for i := range 33 {
		talk(t, h, s, fmt.Sprint("after ", i))
	}
	// A client that last saw an event from before the reset missed the
	// reset's trimming: it must not be told its replay is gapless.
	_, snap := subscribe(t, h, reset-2)
	if snap.Synced.Gapless {
		t.Fatalf("since %d (before the reset at %d) replayed as gapless", reset-2, reset)
	}
}

package hub

import (
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/frontdesk-hq/frontdesk/event"
	"github.com/frontdesk-hq/frontdesk/history"
	"github.com/frontdesk-hq/frontdesk/internal/testkit/testagent"
)

// switchLog is the real chat log with writes of the chosen types failing
// while on is set; err is what they fail with (default: an I/O error).
type switchLog struct {
	*history.Log
	types []event.Type
	on    *atomic.Bool
	err   error
}

func (l switchLog) Append(e event.Event) error {
	if l.on.Load() && slices.Contains(l.types, e.Type) {
		if l.err != nil {
			return l.err
		}
		return errors.New("injected write failure")
	}
	return l.Log.Append(e)
}

func openLog(t *testing.T, dir string) *history.Log {
	t.Helper()
	lg, err := history.Open(history.Options{Path: filepath.Join(dir, "chat_history.ndjson"), RotateMB: 5, Fsync: history.FsyncAlways})
	if err != nil {
		t.Fatal(err)
	}
	return lg
}

func seqsOf(frames []*Frame) string {
	var out []string
	for _, f := range frames {
		out = append(out, fmt.Sprintf("%s:%d", f.Event.Type, f.Event.Seq))
	}
	return fmt.Sprint(out)
}

// A client that saw the running turn's deltas and resumes with the last
// seq it has gets the status and deltas since that seq again (they carry
// no seq of their own), and once the turn has ended, its reply instead.
func TestResumeMidTurnReplaysWhatCameAfterSince(t *testing.T) {
	g := testagent.NewGate()
	h := startHub(t, Config{}, g)
	s, _ := subscribe(t, h, 0)
	submit(t, h, "hello", "c-1")
	until(t, s, event.Delta)

	for _, c := range []struct {
		since int64
		want  string
	}{
		{0, "[user:1 status:0 delta:0]"},
		{1, "[status:0 delta:0]"},
	} {
		_, snap := subscribe(t, h, c.since)
		if !snap.Connected.Busy {
			t.Errorf("since=%d: connected.busy = false during a turn", c.since)
		}
		if got := seqsOf(snap.Replay); got != c.want || !snap.Synced.Gapless || snap.Synced.LastSeq != 1 {
			t.Errorf("since=%d: replay %s (gapless %v, last_seq %d), want %s, gapless, last_seq 1",
				c.since, got, snap.Synced.Gapless, snap.Synced.LastSeq, c.want)
		}
	}
	g.Release <- struct{}{}
	until(t, s, event.TurnEnd)
	_, snap := subscribe(t, h, 1)
	if got, want := seqsOf(snap.Replay), "[assistant:2 turn_end:3]"; got != want {
		t.Errorf("since=1 after the turn: replay %s, want %s", got, want)
	}
}

// A reply the chat log refuses is not reported as done: the turn ends as
// an error with the storage code for the waiting caller and every client;
// the reply is in no replay, recent or ring; the turn_end that the log
// also refused is shown without a seq and written first once the log
// takes writes again, before the next input.
func TestReplyTheLogRefusesIsNotDone(t *testing.T) {
	dir := t.TempDir()
	lg := openLog(t, dir)
	on := &atomic.Bool{}
	fl := switchLog{Log: lg, types: []event.Type{event.Assistant, event.TurnEnd}, on: on}
	g := testagent.NewGate()
	h := startHubWithLog(t, Config{DataDir: dir, Logger: slog.New(slog.DiscardHandler)}, g, fl)
	s, _ := subscribe(t, h, 0)
	done := make(chan TurnOutcome, 1)
	r, err := h.Submit(ctxT(t), Input{Channel: "webhook", Content: "hello", Done: done})
	if err != nil {
		t.Fatal(err)
	}
	until(t, s, event.Delta)
	on.Store(true)
	g.Release <- struct{}{}

	evs := until(t, s, event.TurnEnd)
	te := evs[len(evs)-1]
	if d := data[event.TurnEndData](t, te); te.Seq != 0 || d.Status != event.StatusError || d.Code != StorageFailed || d.Error == "" {
		t.Fatalf("turn_end seq %d %s, want no seq, status error, code storage_error", te.Seq, te.Data)
	}
	for _, e := range evs {
		if e.Type == event.Assistant {
			t.Fatalf("a reply the log refused was delivered: %s", e.Data)
		}
	}
	o := <-done
	var se *StorageError
	if o.Turn != r.Turn || o.Status != event.StatusError || !errors.As(o.Err, &se) || se.Code != StorageFailed {
		t.Fatalf("outcome %+v, want error with a storage_error", o)
	}
	_, snap := subscribe(t, h, 0)
	if got, want := seqsOf(snap.Replay), "[user:1]"; got != want {
		t.Fatalf("replay after the refused reply %s, want %s", got, want)
	}
	if rec, _ := h.Recent(ctxT(t), 10); len(rec) != 1 {
		t.Fatalf("recent holds %d events, want the user event alone", len(rec))
	}

	// The owed turn_end cannot be written: the next input is refused.
	if _, err := h.Submit(ctxT(t), Input{Channel: "web", Content: "again"}); !errors.As(err, &se) {
		t.Fatalf("Submit while the log owes a turn_end = %v, want a *StorageError", err)
	}
	on.Store(false)
	r2 := submit(t, h, "again", "c-2")
	evs = until(t, s, event.User)
	if got, want := fmt.Sprint(types(evs)), "[turn_end user]"; got != want || evs[0].Seq != 2 || evs[1].Seq != 3 || r2.Turn != "t3" {
		t.Fatalf("after the disk healed: %s seqs %d,%d turn %s, want %s seqs 2,3 turn t3", got, evs[0].Seq, evs[1].Seq, r2.Turn, want)
	}
	g.Release <- struct{}{}
	until(t, s, event.TurnEnd)
	h.stop()
	lg.Close()
	logged := readLog(t, dir)
	if got, want := fmt.Sprint(types(logged)), "[user turn_end user assistant turn_end]"; got != want {
		t.Fatalf("logged %s, want %s", got, want)
	}
	if d := data[event.TurnEndData](t, logged[1]); d.Code != StorageFailed || logged[1].Turn != r.Turn {
		t.Fatalf("the owed turn_end in the log: %s %s", logged[1].Turn, logged[1].Data)
	}
}

// An approval request the log refuses ends the turn at once as an error:
// nobody was asked, so the call does not run.
func TestApprovalTheLogRefusesEndsTheTurn(t *testing.T) {
	dir := t.TempDir()
	lg := openLog(t, dir)
	on := &atomic.Bool{}
	on.Store(true)
	fl := switchLog{Log: lg, types: []event.Type{event.ApprovalRequest}, on: on}
	var runs atomic.Int32
	h := startHubWithLog(t, Config{DataDir: dir, Logger: slog.New(slog.DiscardHandler),
		Tools: testagent.Confirmed("probe", &runs)}, testagent.CallTool{Name: "probe", Args: `{}`}, fl)
	s, _ := subscribe(t, h, 0)
	submit(t, h, "use the tool", "c-1")
	evs := until(t, s, event.TurnEnd)
	te := evs[len(evs)-1]
	if d := data[event.TurnEndData](t, te); d.Status != event.StatusError || d.Code != StorageFailed || te.Seq != 2 {
		t.Fatalf("turn_end seq %d %s, want seq 2 status error code storage_error", te.Seq, te.Data)
	}
	if runs.Load() != 0 {
		t.Fatalf("the tool ran %d times after its call was refused by the log", runs.Load())
	}
}

// When the log cannot say whether a line reached the file (written, then
// the fsync failed), its seq is never given to another event.
func TestMaybeWrittenSpendsItsSeq(t *testing.T) {
	dir := t.TempDir()
	lg := openLog(t, dir)
	on := &atomic.Bool{}
	fl := switchLog{Log: lg, types: []event.Type{event.Assistant}, on: on,
		err: fmt.Errorf("append to chat log: %w: fsync: input/output error", history.ErrMaybeWritten)}
	g := testagent.NewGate()
	h := startHubWithLog(t, Config{DataDir: dir, Logger: slog.New(slog.DiscardHandler)}, g, fl)
	s, _ := subscribe(t, h, 0)
	submit(t, h, "hello", "c-1")
	until(t, s, event.Delta)
	on.Store(true)
	g.Release <- struct{}{}
	te := until(t, s, event.TurnEnd)
	if got := te[len(te)-1].Seq; got != 3 {
		t.Fatalf("turn_end seq %d, want 3 (seq 2 went to the reply that may be on disk)", got)
	}
}

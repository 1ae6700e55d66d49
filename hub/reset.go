package hub

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/frontdesk-hq/frontdesk/event"
	"github.com/frontdesk-hq/frontdesk/history"
	"github.com/frontdesk-hq/frontdesk/internal/atomicfile"
	"github.com/frontdesk-hq/frontdesk/memory"
)

// Reset reasons.
const (
	ResetManual = "manual"
	ResetIdle   = "idle-timeout"
)

// consolidateTimeout bounds one memory consolidation (a model call).
const consolidateTimeout = 2 * time.Minute

// restore resumes seq, buffer, ring, accepted ids and the waiting line
// from the chat log's tail, then marks a turn the process died in as
// interrupted. Run starts the first waiting input afterwards.
func (m *SessionManager) restore(tail []event.Event) {
	clean := make([]event.Event, 0, len(tail))
	for _, e := range tail {
		if e.Seq <= m.seq {
			continue // out of order or duplicate line: keep seq strictly increasing
		}
		e.V = 0
		m.seq = e.Seq
		clean = append(clean, e)
	}
	type ask struct{ id, turn string }
	var asked []ask // approval requests without a result
	turns := turnStates{}
	resetAt := -1
	var keptWaiting []event.Event // queued inputs not started at the last reset
	for i, e := range clean {
		m.ring.Add(e)
		turns.add(e)
		switch e.Type {
		case event.ApprovalRequest:
			var d event.ApprovalRequestData
			if e.Decode(&d) == nil {
				asked = append(asked, ask{d.ID, e.Turn})
			}
		case event.ApprovalResult:
			var d event.ApprovalResultData
			if e.Decode(&d) == nil {
				asked = slices.DeleteFunc(asked, func(a ask) bool { return a.id == d.ID })
			}
		case event.Reset:
			resetAt = i
			keptWaiting = m.ring.Waiting()
		}
	}
	// The buffer is what it was after the last reset: the exchanges that
	// reset kept and the inputs still waiting then, then everything since.
	keep := clean
	if resetAt >= 0 {
		var d event.ResetData
		_ = json.Unmarshal(clean[resetAt].Data, &d)
		kept := history.NewRing(d.Kept)
		for _, e := range clean[:resetAt] {
			kept.Add(e)
		}
		keep = append(bySeq(append(kept.Events(), keptWaiting...)), clean[resetAt:]...)
		m.lastReset = clean[resetAt].Seq
	}
	frames := make(map[int64]*Frame, len(clean))
	for _, e := range clean {
		f := newFrame(e)
		frames[e.Seq] = f
		m.remember(f) // ids from before the last reset are remembered too
	}
	for _, e := range keep {
		m.buf = append(m.buf, frames[e.Seq])
	}
	switch {
	case resetAt >= 0:
		m.bufFirst = m.lastReset
	case len(clean) > 0:
		m.bufFirst = clean[0].Seq
	}
	m.trimBuffer()

	for _, a := range asked {
		// It waited when the process died: nobody can answer it now.
		m.publish(event.New(event.ApprovalResult, a.turn, time.Time{}, event.ApprovalResultData{ID: a.id, Decision: event.Deny, By: ByRestart}))
	}
	for _, t := range turns.open() {
		// The process died mid-turn: close the turn for everyone. Its
		// duration runs to its last logged event, not across the downtime.
		const why = "the server stopped while this reply was running"
		m.publish(event.New(event.TurnEnd, t.id, time.Time{}, event.TurnEndData{
			Status: event.StatusInterrupted, Error: why,
			DurationMS: max(0, t.last.Sub(t.start).Milliseconds()),
		}))
		m.settle(TurnOutcome{Turn: t.id, Status: event.StatusInterrupted, Error: why})
	}
	m.restoreWaiting(turns.waiting(), frames)
}

// turnState is what the log says of one turn.
type turnState struct {
	id          string
	user        event.Event
	seq         int64 // its user event's, for the order
	queued      bool  // recorded as queued
	started     bool  // a turn_start, or not queued
	ended       bool  // a turn_end
	start, last time.Time
}

// turnStates follows the turns of a log tail (restore only).
type turnStates map[string]*turnState

func (ts turnStates) add(e event.Event) {
	if e.Turn == "" {
		return
	}
	t := ts[e.Turn]
	if e.Type == event.User {
		q := history.Queued(e)
		t = &turnState{id: e.Turn, user: e, seq: e.Seq, queued: q, started: !q, start: e.TS.Std()}
		ts[e.Turn] = t
	}
	if t == nil {
		return // its input is older than the tail
	}
	t.last = e.TS.Std()
	switch e.Type {
	case event.TurnStart:
		t.started, t.start = true, e.TS.Std()
	case event.TurnEnd:
		t.ended = true
	}
}

// open returns the turns that started and did not end, oldest first.
func (ts turnStates) open() []*turnState {
	return ts.sorted(func(t *turnState) bool { return t.started && !t.ended })
}

// waiting returns the queued inputs that neither started nor ended,
// oldest first.
func (ts turnStates) waiting() []event.Event {
	var out []event.Event
	for _, t := range ts.sorted(func(t *turnState) bool { return t.queued && !t.started && !t.ended }) {
		out = append(out, t.user)
	}
	return out
}

func (ts turnStates) sorted(keep func(*turnState) bool) []*turnState {
	var out []*turnState
	for _, t := range ts {
		if keep(t) {
			out = append(out, t)
		}
	}
	slices.SortFunc(out, func(a, b *turnState) int { return cmp.Compare(a.seq, b.seq) })
	return out
}

// bySeq sorts events by seq (the ring holds exchanges in the order their
// turns started, which a queued input can make differ from seq order).
func bySeq(evs []event.Event) []event.Event {
	slices.SortFunc(evs, func(a, b event.Event) int { return cmp.Compare(a.Seq, b.Seq) })
	return evs
}

// reset runs DESIGN.md rule 8: cancel the running turn; write the buffer
// to an audit file; trim the buffer to the chat ring; consolidate memory
// (on a goroutine: a model call must not stall the session); append and
// broadcast the reset event; bump the generation. Queued inputs then run
// in the new generation.
//
// It is all or nothing on disk: the audit file, session.json with the next
// generation and the reset event in the chat log are written before any
// state in memory changes. If one of them fails, what was written is
// undone (as far as the disk allows), nothing else changes, and the
// *StorageError says why; a turn it cancelled stays cancelled.
func (m *SessionManager) reset(ctx context.Context, reason string) (event.ResetData, error) {
	m.cancelTurn(CancelByReset)
	// Queued inputs run either way: in the new generation, or in the old
	// one if the reset failed.
	defer m.startPending(ctx)

	// A reset is rare and its failure changes nothing, so each one is
	// logged; it is not a lasting fault of its own (Info.Storage): the
	// files it writes sit next to the chat log, whose next write shows a
	// lasting fault, and the next reset tries them again.
	fail := func(err error) (event.ResetData, error) {
		se := storageErr("reset", err)
		m.cfg.Logger.Error("reset failed; nothing changed", "reason", reason, "code", se.Code, "err", err)
		return event.ResetData{}, se
	}
	audit, err := m.writeAudit()
	if err != nil {
		return fail(fmt.Errorf("write audit file: %w", err))
	}
	next := m.sess
	next.Generation++
	if err := saveSession(m.cfg.DataDir, next); err != nil {
		m.undoAudit(audit)
		return fail(fmt.Errorf("save session: %w", err))
	}
	d := event.ResetData{Reason: reason, Kept: m.ring.Len()}
	e := event.New(event.Reset, "", m.cfg.Now(), d)
	e.Seq = m.seq + 1
	err = m.appendLog(e)
	m.stored(partChatLog, err, "seq", e.Seq, "type", e.Type)
	if err != nil {
		if rerr := saveSession(m.cfg.DataDir, m.sess); rerr != nil {
			m.cfg.Logger.Error("session.json keeps the generation of a reset that failed", "generation", next.Generation, "err", rerr)
		}
		m.undoAudit(audit)
		return fail(err)
	}
	m.seq = e.Seq
	m.indexed(e.Seq)

	// On disk: now the session in memory follows.
	// This generation's conversation, for memory.
	outgoing := conversation(m.buf, m.lastReset)
	// The buffer keeps the ring's exchanges and the inputs still waiting
	// (they run in the new generation), in seq order.
	frames := make(map[int64]*Frame, len(m.buf))
	for _, f := range m.buf {
		frames[f.Event.Seq] = f
	}
	kept := m.ring.Events()
	for _, f := range m.waitingEchoes() {
		kept = append(kept, f.Event)
	}
	buf := make([]*Frame, 0, len(kept)+1)
	for _, k := range bySeq(kept) {
		f, ok := frames[k.Seq]
		if !ok {
			f = newFrame(k)
		}
		buf = append(buf, f)
	}
	m.buf, m.volatile = buf, 0
	m.sess = next
	bump(&m.counters.Resets, reason)
	m.deliver(e)
	m.lastReset = m.seq
	m.bufFirst = m.seq
	m.consolidate(ctx, outgoing, reason)
	m.saveShortTerm()
	return d, nil
}

// writeAudit writes the whole buffer to audit/<time>.ndjson (0600) and
// returns its path.
func (m *SessionManager) writeAudit() (string, error) {
	dir := filepath.Join(m.cfg.DataDir, "audit")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", err
	}
	var b bytes.Buffer
	for _, f := range m.buf {
		if !f.Event.Type.Persisted() {
			continue
		}
		e := f.Event
		e.V = event.LogVersion
		line, err := json.Marshal(e)
		if err != nil {
			return "", err
		}
		b.Write(line)
		b.WriteByte('\n')
	}
	// A new name, never an earlier reset's (within one millisecond): a
	// failed reset removes its audit file again.
	base := filepath.Join(dir, m.cfg.Now().UTC().Format("2006-01-02T15-04-05.000"))
	path := base + ".ndjson"
	for i := 2; ; i++ {
		if _, err := os.Lstat(path); err != nil {
			break // not there (or not to be known: the write will tell)
		}
		path = fmt.Sprintf("%s-%d.ndjson", base, i)
	}
	return path, atomicfile.Write(path, b.Bytes(), 0o600)
}

// undoAudit removes the audit file of a reset that did not happen.
func (m *SessionManager) undoAudit(path string) {
	if err := os.Remove(path); err != nil {
		m.cfg.Logger.Error("reset failed, and its audit file stays", "path", path, "err", err)
	}
}

// consolidate folds the outgoing conversation into long-term memory on a
// goroutine of its own; its Wait is part of shutdown. Sections land in the
// order of the resets that made them: each goroutine summarises at once
// but writes only after the previous one has finished.
func (m *SessionManager) consolidate(ctx context.Context, transcript []event.Event, reason string) {
	mem := m.cfg.Memory
	if mem == nil || len(transcript) == 0 {
		return
	}
	sum, _ := m.agent.(memory.Summarizer)
	now := m.cfg.Now()
	prev, done := m.consolidated, make(chan struct{})
	m.consolidated = done
	m.bg.Add(1)
	go func() {
		defer m.bg.Done()
		defer close(done)
		cctx, cancel := context.WithTimeout(ctx, consolidateTimeout)
		entry := memory.Summarize(cctx, sum, transcript, reason, now)
		cancel()
		if entry.Heading == "" {
			return
		}
		if prev != nil {
			<-prev // ends by shutdown at the latest
		}
		m.saveLongTerm(ctx, mem, entry)
	}()
}

// saveLongTerm appends entry to long_term.md, trying again after
// Config.ConsolidateRetry, doubling up to maxConsolidateRetry, until it is
// written or ctx ends; then it tries once more, and if that fails too it
// logs the section that was not saved. The hub hears of the first failure
// and of the success after it (see stored). Consolidation goroutine only.
func (m *SessionManager) saveLongTerm(ctx context.Context, mem *memory.Store, entry memory.Entry) {
	log := m.cfg.Logger
	wait := m.cfg.ConsolidateRetry
	failed := false
	for {
		err := mem.AppendLongTerm(entry)
		if err == nil {
			if failed {
				m.report(partLongTerm, nil)
			}
			attrs := []any{"heading", entry.Heading, "fallback", entry.Fallback}
			if entry.Err != nil {
				attrs = append(attrs, "summarizer_err", entry.Err) // why the fallback
			}
			log.Info("memory consolidated", attrs...)
			if m.cfg.Index != nil {
				m.cfg.Index.NotifyMemory()
			}
			return
		}
		if ctx.Err() != nil {
			log.Error("long-term memory not saved: the server stopped before long_term.md could be written; "+
				"this section is not in it (add it by hand to keep it)",
				"file", filepath.Join(mem.Dir(), memory.LongTermFile), "section", entry.Section(), "err", err)
			return
		}
		if !m.report(partLongTerm, err, "heading", entry.Heading, "retry_in", wait) {
			log.Error("write long-term memory", "err", err) // the hub is stopping
		}
		failed = true
		t := m.cfg.Clock.NewTimer(wait)
		select {
		case <-t.C():
		case <-ctx.Done(): // one last try
			t.Stop()
		}
		wait = min(2*wait, maxConsolidateRetry)
	}
}

// saveShortTerm hands the current context to the short-term writer,
// replacing an older snapshot it has not written yet.
func (m *SessionManager) saveShortTerm() {
	if m.cfg.Memory == nil {
		return
	}
	cur := conversation(m.buf, 0)
	select {
	case <-m.shortTerm: // drop the stale snapshot
	default:
	}
	m.shortTerm <- cur // the hub is the only sender and just made room
}

// writeShortTerm writes short_term.md whenever the hub hands it a new
// snapshot, until shutdown closes the channel (after its last snapshot).
// The hub hears of every failure and of the first success after one, and
// logs them (see stored): a disk that stays full is one line, not one per
// turn.
func (m *SessionManager) writeShortTerm() {
	failing := false
	for evs := range m.shortTerm {
		err := m.cfg.Memory.WriteShortTerm(evs)
		if (err != nil || failing) && !m.report(partShortTerm, err) && err != nil {
			m.cfg.Logger.Error("write short-term memory", "err", err) // the hub is stopping
		}
		failing = err != nil
	}
}

// recent returns up to n of the newest persisted events in the buffer.
func (m *SessionManager) recent(n int) []event.Event {
	var out []event.Event
	for i := len(m.buf) - 1; i >= 0 && len(out) < n; i-- {
		if e := m.buf[i].Event; e.Type.Persisted() {
			out = append(out, e)
		}
	}
	for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
		out[i], out[j] = out[j], out[i]
	}
	return out
}

// Recent returns the newest n persisted events, oldest first: from the
// buffer when it holds them all (no disk access), else from the chat log.
func (m *SessionManager) Recent(ctx context.Context, n int) ([]event.Event, error) {
	if n <= 0 {
		return nil, nil
	}
	reply := make(chan []event.Event, 1)
	evs, err := call(ctx, m, recentCmd{n: n, reply: reply}, reply)
	if err != nil || len(evs) == n || m.cfg.History == nil {
		return evs, err
	}
	disk, _, err := m.cfg.History.Recent(n)
	if err != nil {
		return nil, fmt.Errorf("read chat log: %w", err)
	}
	return disk, nil
}

package hub

import (
	"cmp"
	"slices"
	"time"

	"github.com/frontdesk-hq/frontdesk/event"
	"github.com/frontdesk-hq/frontdesk/history"
)

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
		_ = clean[resetAt].Decode(&d)
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
	m.showUnseen()

	if !m.leading.Load() {
		// A cluster follower: the holder closes what is open.
		for _, t := range turns.open() {
			m.remote = t.id
		}
		return
	}
	m.closeOpen(asked, turns)
	m.restoreWaiting(turns.waiting(), frames)
}

// closeOpen closes what the process (or the node that ran the session)
// left open when it stopped: approvals nobody can answer now, the turn
// that was running.
func (m *SessionManager) closeOpen(asked []ask, turns turnStates) {
	by, why := ByRestart, "the server stopped while this reply was running"
	if m.cfg.Cluster != nil {
		// A cluster node closes what is open only as it takes over from
		// the node that ran the session (at its own start it follows).
		by, why = ByFailover, "the node running this reply stopped or lost the lease; another node took over"
	}
	for _, a := range asked {
		// It waited when the process died: nobody can answer it now.
		m.closeAtStart(event.New(event.ApprovalResult, a.turn, time.Time{}, event.ApprovalResultData{ID: a.id, Decision: event.Deny, By: by}))
	}
	for _, t := range turns.open() {
		// The process died mid-turn: close the turn for everyone. Its
		// duration runs to its last logged event, not across the downtime.
		m.closeAtStart(event.New(event.TurnEnd, t.id, time.Time{}, event.TurnEndData{
			Status: event.StatusInterrupted, Error: why,
			DurationMS: max(0, t.last.Sub(t.start).Milliseconds()),
		}))
		m.settle(TurnOutcome{Turn: t.id, Status: event.StatusInterrupted, Error: why})
	}
}

// showUnseen shows clients already here (a cluster node taking over or
// stepping down) what of the buffer they have not seen, before anything
// is closed; at a start there are none.
func (m *SessionManager) showUnseen() {
	for _, f := range m.buf {
		if f.Event.Seq > m.shown {
			m.fanOut(f)
		}
	}
}

// ask is an approval request the log holds no result for.
type ask struct{ id, turn string }

// closeAtStart publishes e, which closes what the process left open when
// it died; on a disk that refuses it, e is owed (written before anything
// else once the disk takes writes).
func (m *SessionManager) closeAtStart(e event.Event) {
	if m.publish(e) != nil {
		m.owe(e)
	}
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

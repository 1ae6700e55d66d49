package hub

import (
	"github.com/frontdesk-hq/frontdesk/event"
)

// publish stamps e with the next seq and the time, logs it if persisted,
// and delivers it. A log failure is reported (see stored) but does not stop
// the stream: the event already happened.
func (m *SessionManager) publish(e event.Event) {
	m.seq++
	e.Seq = m.seq
	e.TS = event.Time(m.now())
	if e.Type.Persisted() {
		err := m.appendLog(e)
		m.stored(partChatLog, err, "seq", e.Seq, "type", e.Type)
		if err == nil {
			m.indexed(e.Seq)
		}
	}
	m.deliver(e)
}

// indexed tells the search index that the log holds seq now.
func (m *SessionManager) indexed(seq int64) {
	if m.cfg.Index != nil {
		m.cfg.Index.Notify(seq)
	}
}

// deliver adds e to the buffer and ring and fans it out without blocking:
// a subscriber whose queue is full is dropped.
func (m *SessionManager) deliver(e event.Event) *Frame {
	f := newFrame(e)
	m.buf = append(m.buf, f)
	if !e.Type.Persisted() {
		m.volatile++
	}
	m.trimBuffer()
	m.ring.Add(e)
	for s := range m.subs {
		if !s.push(f) {
			m.drop(s, ErrSlowConsumer)
			m.counters.SlowConsumers++
		}
	}
	return f
}

// maxVolatile caps a running turn's status and delta frames in the buffer,
// against a runaway backend.
const maxVolatile = 20000

// trimBuffer keeps at most BufferEvents persisted events. A running turn's
// status and delta frames do not count (they are compacted away when it
// ends, so a long reply does not push out history), up to maxVolatile.
func (m *SessionManager) trimBuffer() {
	n := len(m.buf) - m.volatile - m.cfg.BufferEvents
	if over := len(m.buf) - m.cfg.BufferEvents - maxVolatile; over > n {
		n = over
	}
	if n <= 0 {
		return
	}
	for _, f := range m.buf[:n] {
		if !f.Event.Type.Persisted() {
			m.volatile--
		}
	}
	// After a reset the kept exchanges sit before the reset event with
	// older seqs: trimming them must not move the covered range back.
	m.bufFirst = max(m.bufFirst, m.buf[n-1].Event.Seq+1)
	clear(m.buf[:n])
	m.buf = m.buf[n:]
}

// compact drops the turn's transient events (status, delta) from the
// buffer once the turn has ended: its assistant event supersedes them, so
// replay stays short and matches what the chat log holds.
func (m *SessionManager) compact(turn string) {
	out := m.buf[:0]
	m.volatile = 0
	for _, f := range m.buf {
		if !f.Event.Type.Persisted() {
			if f.Event.Turn == turn {
				continue
			}
			m.volatile++ // another turn's, e.g. one cut short by interrupt
		}
		out = append(out, f)
	}
	clear(m.buf[len(out):])
	m.buf = out
}

func (m *SessionManager) subscribe(since int64) (*Subscription, Snapshot) {
	s := newSubscription(m)
	m.subs[s] = struct{}{}
	snap := Snapshot{
		Connected: event.ConnectedData{
			SessionID: m.sess.SessionID, Generation: m.sess.Generation,
			Busy: m.turn != nil, LastSeq: m.seq, Resumed: m.seq > 0, BusyPolicy: m.cfg.BusyPolicy,
		},
		Synced: event.SyncedData{LastSeq: m.seq},
	}
	if m.cfg.Attachments != nil {
		snap.Connected.AttachmentsMaxPerMessage = m.cfg.MaxAttachments
	}
	// Gapless when every event after since is still covered by the buffer
	// (compacted deltas are covered: their assistant event replaces them).
	if since >= m.bufFirst-1 && since <= m.seq {
		snap.Synced.Gapless = true
		i := len(m.buf)
		for i > 0 && m.buf[i-1].Event.Seq > since {
			i--
		}
		snap.Replay = append([]*Frame(nil), m.buf[i:]...)
	} else {
		snap.Replay = append([]*Frame(nil), m.buf...)
		snap.Synced.Cut = since < m.bufFirst-1
	}
	return s, snap
}

// drop removes s and ends its stream; err says why (nil: unsubscribed).
func (m *SessionManager) drop(s *Subscription, err error) {
	if _, ok := m.subs[s]; !ok {
		return
	}
	delete(m.subs, s)
	s.end(err)
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

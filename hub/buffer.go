package hub

import (
	"errors"

	"github.com/frontdesk-hq/frontdesk/event"
	"github.com/frontdesk-hq/frontdesk/history"
)

// Seqs name persisted events only. An event of a persisted type gets the
// next seq when its line is in the chat log, and only then is it in the
// buffer, the ring or any client's stream: a seq a client has seen names
// that event for the life of the data directory, across kill -9, restarts
// and resets, and the events of a stream backed by a replicated log (one
// message, one seq) need no other numbering. A turn's status and delta
// frames carry no seq: they sit in the buffer after the last persisted
// event they followed, and a client resuming with since=N gets those that
// came after seq N again (docs/protocol.md says to drop what it streamed
// after N).

// publish stamps e with the time and, if its type is persisted, commits it
// to the chat log; then it delivers e. An event the log refused is not
// delivered, and the error says why (see commit).
func (m *SessionManager) publish(e event.Event) error {
	e.TS = event.Time(m.now())
	if !e.Type.Persisted() {
		e.Seq = 0
		m.deliver(e)
		m.shareLive(e)
		return nil
	}
	e, err := m.commit(e)
	if err != nil {
		return err
	}
	m.deliver(e)
	return nil
}

// commit writes e to the chat log with the next seq and returns it
// stamped; it does not deliver it. Events still owed to the log (see owe)
// are written, and delivered, first: the log keeps the order things
// happened in, and nothing new goes in while they cannot. The error is the
// log's (wrap it with storageErr for a caller).
func (m *SessionManager) commit(e event.Event) (event.Event, error) {
	if err := m.payOwed(); err != nil {
		return e, err
	}
	return m.write(e)
}

// write appends e with the next seq. When the log could not say whether
// the line reached the file (history.ErrMaybeWritten: written, then the
// fsync failed) the seq is spent anyway: it must never name another event
// after a restart, whatever the file turns out to hold.
func (m *SessionManager) write(e event.Event) (event.Event, error) {
	e.Seq = m.seq + 1
	if e.TS.Std().IsZero() {
		e.TS = event.Time(m.now())
	}
	err := m.appendLog(e)
	m.stored(partChatLog, err, "seq", e.Seq, "type", e.Type)
	if err != nil {
		if errors.Is(err, history.ErrMaybeWritten) {
			m.seq = e.Seq
		}
		return e, err
	}
	m.seq = e.Seq
	if e.Type != event.MemoryChanged {
		m.indexed(e.Seq) // a memory change once applied to the items (changeMemory)
	}
	return e, nil
}

// owe keeps e (a turn_end, or what closes a turn at a restart, that the
// log refused) to be written before anything else once the log takes
// writes again, and shows it now, without a seq, to every client: the
// turn has ended whether or not the disk knows yet. It is not in the
// buffer until it is written.
//
// A cluster node shows it to nobody: a holder whose writes are refused
// may be one that lost the lease (fenced, a duplicate), and then the turn
// is closed by the new holder in the log — every node shows that one
// ending, in the same words; a holder that still leads writes e before
// anything else, and every node shows it as it lands.
func (m *SessionManager) owe(e event.Event) {
	e.Seq = 0
	e.TS = event.Time(m.now())
	m.owed = append(m.owed, e)
	if m.cfg.Cluster == nil {
		m.fanOut(newFrame(e))
	}
}

// payOwed writes the owed events in order, delivering each as it lands.
func (m *SessionManager) payOwed() error {
	for len(m.owed) > 0 {
		e, err := m.write(m.owed[0])
		if err != nil {
			return err
		}
		m.owed = m.owed[1:]
		m.deliver(e)
	}
	return nil
}

// indexed tells the search index that the log holds seq now.
func (m *SessionManager) indexed(seq int64) {
	if m.cfg.Index != nil {
		m.cfg.Index.Notify(seq)
	}
}

// deliver adds e to the buffer and ring and fans it out.
func (m *SessionManager) deliver(e event.Event) *Frame {
	f := m.keep(e)
	m.fanOut(f)
	return f
}

// keep adds e to the buffer and ring.
func (m *SessionManager) keep(e event.Event) *Frame {
	f := newFrame(e)
	m.buf = append(m.buf, f)
	if !e.Type.Persisted() {
		m.volatile++
	}
	m.trimBuffer()
	m.ring.Add(e)
	return f
}

// fanOut pushes f to every subscriber without blocking: a subscriber whose
// queue is full is dropped.
func (m *SessionManager) fanOut(f *Frame) {
	for s := range m.subs {
		if s.floor > 0 && s.below(f, m.seq) {
			continue
		}
		if !s.push(f) {
			m.drop(s, ErrSlowConsumer)
			m.counters.SlowConsumers++
		}
	}
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
			continue
		}
		// After a reset the kept exchanges sit before the reset event with
		// older seqs: trimming them must not move the covered range back.
		m.bufFirst = max(m.bufFirst, f.Event.Seq+1)
	}
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
			Busy: m.busy(), LastSeq: m.seq, Resumed: m.seq > 0, BusyPolicy: m.cfg.BusyPolicy,
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
		// Everything after the last persisted event the client has: the
		// running turn's status and delta frames since then included.
		i := len(m.buf)
		for i > 0 && (m.buf[i-1].Event.Seq == 0 || m.buf[i-1].Event.Seq > since) {
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

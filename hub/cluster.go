package hub

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/frontdesk-hq/frontdesk/event"
	"github.com/frontdesk-hq/frontdesk/history"
	"github.com/frontdesk-hq/frontdesk/internal/ctxsleep"
)

// Several nodes, one session. With Config.Cluster set, a node's hub starts
// as a follower: the log (a replicated stream) is written by the node that
// holds the lease, and every node — the holder too — is handed each
// persisted event in seq order through Ingest, after its own copy of the
// chat log has it. A follower's hub runs no turns: it keeps the buffer,
// ring and subscribers as the holder's do, from what it is handed, and
// sends what changes the session (inputs, cancel, reset, decisions) to the
// holder through Cluster.Forward. The holder's hub serves those with Serve
// and shares what is not in the log (status, delta) through Cluster.PublishLive; followers get them through Live. Lead turns
// a follower into the holder: it rebuilds the session from the log as a
// restart does, closing what the previous holder left open.

// Cluster is what the hub needs from the nodes around it. It is nil on a
// single node: then none of this runs.
type Cluster interface {
	// Forward sends a command to the node holding the lease and returns
	// its answer; ErrNoLeader when no node takes it (nothing was done),
	// ErrNoAnswer when the holder took it and did not answer before ctx
	// ended. When ctx is cancelled it returns promptly.
	Forward(ctx context.Context, op string, req []byte) ([]byte, error)
	// Changed returns a channel closed the next time this node sees the
	// lease change hands (the holder's lease ended, or another node took
	// it).
	Changed() <-chan struct{}
	// PublishLive shares a frame that is not in the log (status, delta)
	// with every node. It must not block.
	PublishLive(frame []byte)
	// LastSeq returns the log's last seq, as its leader knows it: a
	// follower asks when a client says it has seen more than this node
	// has. Called off the hub's goroutine.
	LastSeq(ctx context.Context) (int64, error)
}

// logLastWait bounds a follower's question for the log's last seq; no
// answer in time: unknown (-1).
const logLastWait = 2 * time.Second

// logLast asks the log's last seq for Subscribe; -1 when it cannot be
// known now.
func (m *SessionManager) logLast(ctx context.Context) int64 {
	ctx, cancel := context.WithTimeout(ctx, logLastWait)
	defer cancel()
	last, err := m.cfg.Cluster.LastSeq(ctx)
	if err != nil {
		m.cfg.Logger.Debug("cluster: could not ask the log's last seq for a client ahead of this node", "err", err)
		return -1
	}
	return last
}

// ErrNoLeader refuses a change while no node holds the session's lease
// (an election is under way, or too few nodes are up): nothing was
// stored; try again in a few seconds.
var ErrNoLeader = errors.New("no node is running the assistant right now (an election is under way, or too few nodes are up); nothing was stored: try again in a few seconds")

// ErrNoAnswer: the node running the assistant took a forwarded change and
// did not answer in time (it may have died doing it). Whether it was done
// is unknown: the log will tell; an input resent with the same
// client_msg_id never runs twice.
var ErrNoAnswer = errors.New("the node running the assistant did not answer in time: this may or may not have been done; send it again with the same client_msg_id (it never runs twice)")

// ByFailover decides an approval that was waiting when the node running
// its turn stopped.
const ByFailover = "failover"

// Forwarded operations.
const (
	opSubmit = "submit"
	opCancel = "cancel"
	opReset  = "reset"
	opDecide = "decide"
)

// Commands of a cluster node.
type (
	ingestCmd struct {
		e    event.Event
		done chan struct{}
	}
	liveCmd struct{ l liveFrame }
	leadCmd struct {
		tail []event.Event
		done chan struct{}
	}
	awaitCmd struct {
		turn string
		done chan<- TurnOutcome
	}
	followCmd struct {
		tail []event.Event
		done chan struct{}
	}
	unparkCmd struct{}
)

// parkWait bounds how long a client that has seen more of the log than
// this node (it comes from another node) waits for this node to catch up
// before it is answered with what is here.
const parkWait = 3 * time.Second

// behind parks a subscription whose since is ahead of this follower: it
// comes from a node further on, and replaying from here would show it
// events again or skip some. It is answered once this node has caught up
// (unpark), or after parkWait with what is here. A since beyond the log
// itself (c.logLast, which the caller is first told to ask) is no client
// from further on: it is answered at once, as on a single node or the
// holder — the whole buffer, not gapless. Only when the log's last seq
// cannot be known is such a client parked as one from further on.
func (m *SessionManager) behind(c subscribeCmd) bool {
	if m.leading.Load() || c.since <= m.seq {
		return false
	}
	if !c.asked {
		c.reply <- subscribeReply{ask: true}
		return true
	}
	if c.logLast >= 0 && c.since > c.logLast {
		return false
	}
	if len(m.parked) == 0 {
		time.AfterFunc(parkWait, func() {
			select {
			case m.cmds <- unparkCmd{}:
			case <-m.done:
			}
		})
	}
	m.parked = append(m.parked, c)
	return true
}

// unpark answers the parked subscriptions this node has caught up with;
// all of them when all is set.
func (m *SessionManager) unpark(all bool) {
	keep := m.parked[:0]
	for _, c := range m.parked {
		if !all && c.since > m.seq {
			keep = append(keep, c)
			continue
		}
		sub, snap := m.subscribe(c.since)
		if c.since > m.seq {
			// Still behind after parkWait: the client keeps what it has,
			// and gets what comes after it as this node catches up.
			sub.floor = c.since
			snap.Connected.LastSeq, snap.Synced = c.since, event.SyncedData{LastSeq: c.since, Gapless: true}
			snap.Replay = nil
		}
		c.reply <- subscribeReply{sub: sub, snap: snap}
	}
	clear(m.parked[len(keep):])
	m.parked = keep
}

// liveFrame is a frame the holder shares that is not in the log: After is
// the seq of the last persisted event before it, so a follower shows it
// after that event, never before.
type liveFrame struct {
	After int64       `json:"after"`
	Event event.Event `json:"event"`
}

// following reports whether this hub forwards changes to another node.
func (m *SessionManager) following() bool {
	return m.cfg.Cluster != nil && !m.leading.Load()
}

// Leading reports whether this hub runs the session's turns: always on a
// single node; on a cluster node once Lead has run.
func (m *SessionManager) Leading() bool { return m.leading.Load() }

// Ingest hands the hub a persisted event of the log, in seq order, once
// this node's chat log has it. The holder's own events are already in its
// buffer and are skipped. It returns when the hub has taken it.
func (m *SessionManager) Ingest(ctx context.Context, e event.Event) error {
	done := make(chan struct{})
	_, err := call(ctx, m, ingestCmd{e: e, done: done}, done)
	return err
}

// Live hands the hub a frame the holder shared (PublishLive). It does not
// wait for the hub.
func (m *SessionManager) Live(frame []byte) {
	var l liveFrame
	if json.Unmarshal(frame, &l) != nil || l.Event.Type == "" {
		return
	}
	select {
	case m.cmds <- liveCmd{l}:
	case <-m.done:
	}
}

// Lead makes this hub the one that runs the session: tail is its chat
// log's tail (as Config.Restore at a start), which must hold every event
// the log had when this node won the lease. A turn that was running is
// closed as interrupted, approvals still waiting are denied (ByFailover)
// and inputs that were waiting run.
func (m *SessionManager) Lead(ctx context.Context, tail []event.Event) error {
	done := make(chan struct{})
	_, err := call(ctx, m, leadCmd{tail: tail, done: done}, done)
	return err
}

// Follow makes a hub that led a follower again: this node lost the lease
// (it could not renew it in time, or another node appended first). The
// running turn is cancelled without a word to the log — it is no longer
// this node's to write; the new holder closes it as interrupted — and the
// session is rebuilt from tail, this node's copy of the log, which the
// log's later events then continue. Inputs waiting here stay in the log
// for the new holder to run; doors waiting for an outcome keep waiting
// for it from the log.
func (m *SessionManager) Follow(ctx context.Context, tail []event.Event) error {
	done := make(chan struct{})
	_, err := call(ctx, m, followCmd{tail: tail, done: done}, done)
	return err
}

// handleCluster runs a cluster command; false if c is not one.
func (m *SessionManager) handleCluster(ctx context.Context, c any) bool {
	switch c := c.(type) {
	case ingestCmd:
		m.ingest(c.e)
		close(c.done)
	case liveCmd:
		m.live(c.l)
	case leadCmd:
		m.lead(ctx, c.tail)
		close(c.done)
	case awaitCmd:
		m.awaitRemote(c.turn, c.done)
	case followCmd:
		m.demote(c.tail)
		close(c.done)
	case unparkCmd:
		m.unpark(true)
	default:
		return false
	}
	return true
}

// ingest takes a persisted event from the log on a follower: it enters the
// buffer and ring and goes to every subscriber, as on the holder.
func (m *SessionManager) ingest(e event.Event) {
	if m.leading.Load() || e.Seq <= m.seq {
		return
	}
	e.V = 0
	m.seq = e.Seq
	if e.Type == event.Reset {
		m.followReset(e)
	}
	f := m.keep(e)
	if e.Seq > m.shown {
		m.fanOut(f)
	}
	m.remember(f)
	m.followTurn(e)
	m.followMemory(e)
	m.followErased(e)
	m.flushLive()
	if len(m.parked) > 0 {
		m.unpark(false)
	}
}

// followTurn keeps a follower's idea of the running turn (for busy) and
// the outcomes its doors wait for.
func (m *SessionManager) followTurn(e event.Event) {
	switch e.Type {
	case event.TurnStart:
		m.remote = e.Turn
	case event.User:
		if !history.Queued(e) {
			m.remote = e.Turn
		}
	case event.TurnEnd:
		if m.remote == e.Turn {
			m.remote = ""
		}
		m.compact(e.Turn)
		m.settle(m.outcomeFromBuffer(e.Turn))
	}
}

// followReset trims a follower's buffer as the holder's reset did: the
// exchanges it kept and the inputs still waiting, then the reset.
func (m *SessionManager) followReset(e event.Event) {
	kept := append(m.ring.Events(), m.ring.Waiting()...)
	buf := make([]*Frame, 0, len(kept)+1)
	seen := map[int64]bool{}
	frames := map[int64]*Frame{}
	for _, f := range m.buf {
		frames[f.Event.Seq] = f
	}
	for _, k := range bySeq(kept) {
		if seen[k.Seq] {
			continue
		}
		seen[k.Seq] = true
		f, ok := frames[k.Seq]
		if !ok {
			f = newFrame(k)
		}
		buf = append(buf, f)
	}
	m.buf, m.volatile = buf, 0
	m.lastReset, m.bufFirst = e.Seq, e.Seq
	m.sess.Generation++
	if err := saveSession(m.cfg.DataDir, m.sess); err != nil {
		m.cfg.Logger.Warn("session.json keeps the previous generation", "generation", m.sess.Generation, "err", err)
	}
}

// maxLive bounds the live frames a follower holds for events it has not
// been handed yet.
const maxLive = 20000

// live shows a frame the holder shared, once the event it followed is
// here. (An owed turn_end is not shared: a holder whose writes fail may be
// one that lost the lease, and the log is the judge.)
func (m *SessionManager) live(l liveFrame) {
	if m.leading.Load() {
		return
	}
	if l.After > m.seq {
		if len(m.early) < maxLive {
			m.early = append(m.early, l)
		}
		return
	}
	if l.Event.Type.Persisted() {
		return
	}
	if l.Event.Turn != "" && l.Event.Turn != m.remote {
		return // its turn has ended here already: the assistant event replaced it
	}
	m.deliver(l.Event)
}

// flushLive shows the held live frames whose event has arrived.
func (m *SessionManager) flushLive() {
	if len(m.early) == 0 || m.early[0].After > m.seq {
		return
	}
	held := m.early
	m.early = nil
	for _, l := range held {
		m.live(l)
	}
}

// below reports whether f is one a client ahead of this node (floor)
// must not get: an event it has, or a live frame while this node is still
// behind it (seq is the node's).
func (s *Subscription) below(f *Frame, seq int64) bool {
	if f.Event.Seq > 0 {
		return f.Event.Seq <= s.floor
	}
	return seq < s.floor
}

// shareLive gives the other nodes a frame that is not in the log.
func (m *SessionManager) shareLive(e event.Event) {
	if m.cfg.Cluster == nil {
		return
	}
	b, err := json.Marshal(liveFrame{After: m.seq, Event: e})
	if err == nil {
		m.cfg.Cluster.PublishLive(b)
	}
}

// lead rebuilds the session from tail as a restart does, now as the
// holder; subscribers stay.
func (m *SessionManager) lead(ctx context.Context, tail []event.Event) {
	if m.leading.Load() {
		return
	}
	m.leading.Store(true)
	// The tail may hold events this node had not been handed yet (read
	// from the stream as it won): restore shows them to its clients.
	m.shown = max(m.shown, m.lastDelivered())
	m.rebuild(tail)
	m.unpark(true)
	m.migrateLongTerm()
	m.startPending(ctx)
	m.watch.Touch()
	m.cfg.Logger.Info("this node runs the assistant now", "last_seq", m.seq)
}

// demote drops what only the holder has — the running turn, approvals,
// the waiting line, owed events — and rebuilds the session from tail as a
// follower.
func (m *SessionManager) demote(tail []event.Event) {
	if !m.leading.Load() {
		return
	}
	m.leading.Store(false)
	if m.turn != nil {
		m.turn.cancel() // its late output is ignored: no turn runs here now
		m.turn = nil
	}
	for id, a := range m.approvals {
		a.timer.Stop()
		a.reply <- event.ApprovalResultData{ID: id, Decision: event.Deny, By: ByFailover}
		delete(m.approvals, id)
	}
	m.pending, m.patient, m.owed = nil, nil, nil
	clear(m.faults) // the holder's writes: a follower writes nothing
	m.gaugeWaiting()
	// Its clients have seen everything it appended; its copy of the log
	// may not have all of it yet, and what the copy then hands in again
	// goes to the buffer, not to them twice.
	m.shown = max(m.shown, m.lastDelivered())
	m.rebuild(tail)
	m.cfg.Logger.Warn("this node lost the lease: it follows the log again", "last_seq", m.seq)
}

// lastDelivered is the seq of the last persisted event this node's clients
// were given: not m.seq, which counts seqs a failed append spent (they may
// name another node's events).
func (m *SessionManager) lastDelivered() int64 {
	for i := len(m.buf) - 1; i >= 0; i-- {
		if s := m.buf[i].Event.Seq; s > 0 {
			return s
		}
	}
	return 0
}

// rebuild replaces the session's state with what tail (this node's copy
// of the log) says, as at a start; subscribers stay.
func (m *SessionManager) rebuild(tail []event.Event) {
	m.buf, m.volatile, m.bufFirst, m.seq, m.lastReset = nil, 0, 1, 0, 0
	m.ring = history.NewRing(m.cfg.RetainExchanges)
	m.accepted, m.ids, m.early, m.remote = map[string]*Frame{}, nil, nil, ""
	m.restore(tail)
}

// awaitRemote registers done for a forwarded input's turn on a follower:
// the outcome comes when its turn_end arrives.
func (m *SessionManager) awaitRemote(turn string, done chan<- TurnOutcome) {
	if o, ok := m.outcomes[turn]; ok {
		sendOutcome(done, o)
		return
	}
	if m.leading.Load() {
		m.await(turn, done)
		return
	}
	m.waiters[turn] = append(m.waiters[turn], done)
}

// forwardWait bounds a forwarded command, its sends again included: the
// holder answers in milliseconds, and a failover takes about 1.5 s.
const forwardWait = 5 * time.Second

// forwardRetry is how soon a command nobody took is sent again, for up
// to noLeaderWait: a failover takes about 1.5 s; longer without a holder
// means too few nodes are up, and the client is told (no_leader).
const (
	forwardRetry = 100 * time.Millisecond
	noLeaderWait = 3 * time.Second
)

// errMoved: the lease changed hands while a forwarded command waited for
// its answer.
var errMoved = errors.New("the lease changed hands while waiting for the answer")

// resendable reports whether op may be sent again after a holder that may
// have taken it is gone: a forwarded input always carries a client_msg_id
// (forwardSubmit), so the new holder never runs it twice; a cancel or a
// decision done twice changes nothing more. A reset or a memory change
// could be done twice: those answer ErrNoAnswer instead.
func resendable(op string) bool {
	return op == opSubmit || op == opCancel || op == opDecide
}

// forward sends op to the holder and decodes its answer into out. A
// client sees a failover as a delay, not an error: while nobody takes the
// command (no holder yet, or one still taking over) it is sent again
// every forwardRetry, and when this node sees the lease change hands
// while it waits, it stops waiting for the old holder at once and sends
// it again to the new one — if op is resendable; otherwise it answers
// ErrNoAnswer then. All within forwardWait.
func (m *SessionManager) forward(ctx context.Context, op string, req, out any) error {
	b, err := json.Marshal(req)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, forwardWait)
	defer cancel()
	giveUp := time.Now().Add(noLeaderWait)
	unknown := false // a holder may have taken it and gone
	for {
		err := m.forwardOnce(ctx, op, b, out)
		switch {
		case err == nil:
			return nil
		case errors.Is(err, errMoved):
			unknown = true
			if !resendable(op) {
				return ErrNoAnswer
			}
		case errors.Is(err, ErrNoAnswer) && resendable(op):
			// A holder that took it and stopped leading before it could
			// say how it went: the next holder knows.
			unknown = true
		case errors.Is(err, ErrNoLeader) && resendable(op) && (unknown || time.Now().Before(giveUp)):
		default:
			return err
		}
		ctxsleep.Sleep(ctx, forwardRetry)
		if ctx.Err() != nil {
			if unknown {
				return ErrNoAnswer
			}
			return ErrNoLeader
		}
	}
}

// forwardOnce sends op once; errMoved when the lease changed hands before
// the answer came.
func (m *SessionManager) forwardOnce(ctx context.Context, op string, b []byte, out any) error {
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	changed := m.cfg.Cluster.Changed()
	go func() {
		select {
		case <-changed:
			cancel()
		case <-rctx.Done():
		}
	}()
	resp, err := m.cfg.Cluster.Forward(rctx, op, b)
	if err != nil {
		if rctx.Err() != nil && ctx.Err() == nil {
			return errMoved
		}
		return err
	}
	var w wireAnswer
	if err := json.Unmarshal(resp, &w); err != nil {
		return err
	}
	if w.Err != nil {
		return w.Err.err()
	}
	if out == nil || len(w.Value) == 0 {
		return nil
	}
	return json.Unmarshal(w.Value, out)
}

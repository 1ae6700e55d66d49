// Package hub holds the SessionManager: the one goroutine that owns the
// session — its history buffer, chat ring, busy flag, running turn,
// subscribers and sequence counter. Everyone else sends it commands.
package hub

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/frontdesk-hq/frontdesk/agent"
	"github.com/frontdesk-hq/frontdesk/event"
	"github.com/frontdesk-hq/frontdesk/history"
)

// Busy policies (session.busy_policy).
const (
	PolicyReject    = "reject"
	PolicyQueue     = "queue"
	PolicyInterrupt = "interrupt"
)

// CancelNotice is the notice text appended when a turn is cancelled.
const CancelNotice = "The current request was canceled."

// Errors returned to callers.
var (
	// ErrClosed means the hub has stopped (shutdown).
	ErrClosed = errors.New("session is shutting down")
	// ErrSlowConsumer is why a subscriber whose queue filled was dropped.
	ErrSlowConsumer = errors.New("slow consumer")
	// ErrEmpty rejects an input with no content.
	ErrEmpty = errors.New("content is empty")
)

// Log is where persisted events go. *history.Log implements it.
type Log interface {
	Append(e event.Event) error
	Sync() error
}

var _ Log = (*history.Log)(nil)

// Config configures a SessionManager. Zero values mean the defaults noted.
type Config struct {
	// DataDir holds session.json. Required.
	DataDir string
	// BusyPolicy is PolicyReject (default), PolicyQueue or PolicyInterrupt.
	BusyPolicy string
	// RetainExchanges sizes the chat ring. Default 20.
	RetainExchanges int
	// BufferEvents bounds the replay buffer. Default 5000.
	BufferEvents int
	// ClientQueue is each subscriber's queue length. Default 1024.
	ClientQueue int
	// Now is the clock. Default time.Now.
	Now func() time.Time
	// Logger receives operational messages. Default slog.Default().
	Logger *slog.Logger
	// Restore is the tail of the chat log to resume from, oldest first
	// (persisted events with seq). The seq counter continues after the last.
	Restore []event.Event
}

// Frame is an event with its wire encoding, made once and shared by every
// subscriber. Neither field may be modified.
type Frame struct {
	Event event.Event
	JSON  []byte
}

func newFrame(e event.Event) *Frame {
	b, err := json.Marshal(e)
	if err != nil {
		panic(fmt.Sprintf("hub: marshal event: %v", err)) // Data is always valid JSON
	}
	return &Frame{Event: e, JSON: b}
}

// Input is a user message from any channel.
type Input struct {
	Channel     string
	From        string
	Content     string
	ClientMsgID string
	// Notify receives per-submitter replies produced after Submit returned
	// (a queued input replaced by a newer one). It is called on the hub's
	// goroutine and must not block. May be nil.
	Notify func(event.Event)
}

// Outcome says what Submit did with an input.
type Outcome int

// Outcomes of Submit.
const (
	// Started: the input was logged, echoed and its turn began.
	Started Outcome = iota
	// Queued: the input waits for the running turn (busy_policy queue).
	Queued
	// Rejected: the session is busy (busy_policy reject).
	Rejected
	// Duplicate: the client_msg_id was accepted before; Echo is the original.
	Duplicate
)

// Result is Submit's answer.
type Result struct {
	Outcome Outcome
	// Turn is the input's turn (Started, Duplicate) or the running turn (Queued, Rejected).
	Turn string
	// Echo is the user event (Started, Duplicate).
	Echo *Frame
	// Busy is the reply for the submitter (Queued, Rejected).
	Busy event.BusyData
}

// Info is a snapshot of the session for /api/session.
type Info struct {
	SessionID   string `json:"session_id"`
	Generation  int64  `json:"generation"`
	Busy        bool   `json:"busy"`
	Turn        string `json:"turn,omitempty"`
	LastSeq     int64  `json:"last_seq"`
	Subscribers int    `json:"subscribers"`
}

// Snapshot is what a new subscriber gets, taken in the same step as the
// subscription so that no event falls between replay and live stream.
type Snapshot struct {
	Connected event.ConnectedData
	Replay    []*Frame
	Synced    event.SyncedData
}

// Subscription is one client's live stream.
type Subscription struct {
	c    chan *Frame
	m    *SessionManager
	err  error // set by the hub before closing c
	once sync.Once
}

// C delivers live events in seq order. It is closed when the hub drops the
// subscriber (Err says why) or after Close.
func (s *Subscription) C() <-chan *Frame { return s.c }

// Err tells why C was closed: ErrSlowConsumer, ErrClosed, or nil after
// Close. Call it only after C is closed.
func (s *Subscription) Err() error { return s.err }

// Close unsubscribes. It is idempotent and safe from any goroutine.
func (s *Subscription) Close() {
	s.once.Do(func() {
		select {
		case s.m.cmds <- unsubscribeCmd{s}:
		case <-s.m.done:
		}
	})
}

// SessionManager owns the session. Create it with New, run it with Run;
// all other methods may be called from any goroutine and block until the
// hub answers or ctx ends.
type SessionManager struct {
	cfg   Config
	log   Log
	agent agent.Agent
	cmds  chan any
	done  chan struct{} // closed when Run returns
	turns sync.WaitGroup

	// Everything below is owned by the Run goroutine.
	sess     sessionFile
	seq      int64
	buf      []*Frame // replay buffer, seq order
	volatile int      // status/delta frames in buf (dropped when their turn ends)
	bufFirst int64    // lowest seq the buffer covers; events before it were trimmed
	ring     *history.Ring
	subs     map[*Subscription]struct{}
	turn     *turn
	pending  *Input
	accepted map[string]*Frame // client_msg_id → echo
	ids      []string          // accepted ids, oldest first, to bound the map
}

type turn struct {
	id      string
	cancel  context.CancelFunc
	started time.Time
	text    strings.Builder // streamed deltas so far
}

const maxRememberedIDs = 10000

// New makes a SessionManager; nothing runs until Run.
func New(cfg Config, log Log, a agent.Agent) *SessionManager {
	if cfg.BusyPolicy == "" {
		cfg.BusyPolicy = PolicyReject
	}
	if cfg.RetainExchanges == 0 {
		cfg.RetainExchanges = 20
	}
	if cfg.BufferEvents <= 0 {
		cfg.BufferEvents = 5000
	}
	if cfg.ClientQueue <= 0 {
		cfg.ClientQueue = 1024
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return &SessionManager{
		cfg:      cfg,
		log:      log,
		agent:    a,
		cmds:     make(chan any, 64),
		done:     make(chan struct{}),
		ring:     history.NewRing(cfg.RetainExchanges),
		subs:     map[*Subscription]struct{}{},
		accepted: map[string]*Frame{},
		bufFirst: 1,
	}
}

// Commands sent to the Run goroutine.
type (
	submitCmd struct {
		in    Input
		reply chan submitReply
	}
	submitReply struct {
		res Result
		err error
	}
	cancelCmd    struct{ reply chan bool }
	infoCmd      struct{ reply chan Info }
	subscribeCmd struct {
		since int64
		reply chan subscribeReply
	}
	subscribeReply struct {
		sub  *Subscription
		snap Snapshot
	}
	unsubscribeCmd struct{ sub *Subscription }
	emitCmd        struct {
		turn string
		e    event.Event
		text string // a delta's text, so the hub need not decode it
	}
	turnDoneCmd struct {
		turn  string
		reply agent.Reply
		err   error
	}
)

// Run owns the session until ctx ends: then it cancels the running turn
// (which ends "interrupted"), syncs the log, closes every subscription with
// ErrClosed and returns. It returns an error only if the session cannot start.
func (m *SessionManager) Run(ctx context.Context) error {
	defer close(m.done)
	sess, err := loadSession(m.cfg.DataDir, m.cfg.Now())
	if err != nil {
		return err
	}
	m.sess = sess
	m.restore(m.cfg.Restore)
	m.cfg.Restore = nil

	for {
		select {
		case <-ctx.Done():
			m.shutdown()
			return nil
		case c := <-m.cmds:
			m.handle(ctx, c)
		}
	}
}

func (m *SessionManager) handle(ctx context.Context, c any) {
	switch c := c.(type) {
	case submitCmd:
		res, err := m.submit(ctx, c.in)
		c.reply <- submitReply{res, err}
	case cancelCmd:
		ok := m.cancelTurn()
		c.reply <- ok
		if ok {
			m.startPending(ctx)
		}
	case infoCmd:
		c.reply <- m.info()
	case subscribeCmd:
		sub, snap := m.subscribe(c.since)
		c.reply <- subscribeReply{sub, snap}
	case unsubscribeCmd:
		m.drop(c.sub, nil)
	case emitCmd:
		if m.turn == nil || m.turn.id != c.turn {
			return // a cancelled turn still talking: its output is discarded
		}
		m.turn.text.WriteString(c.text)
		m.publish(c.e)
	case turnDoneCmd:
		if m.turn == nil || m.turn.id != c.turn {
			return
		}
		switch {
		case c.err == nil:
			content := c.reply.Content
			if content == "" {
				content = m.turn.text.String()
			}
			m.endTurn(ctx, event.StatusCompleted, content, "", c.reply.Usage)
		case errors.Is(c.err, context.Canceled):
			// The backend gave up on its own context; treat as cancelled.
			m.endTurn(ctx, event.StatusCancelled, m.turn.text.String(), "", nil)
		default:
			m.endTurn(ctx, event.StatusError, m.turn.text.String(), c.err.Error(), c.reply.Usage)
		}
	default:
		panic(fmt.Sprintf("hub: unknown command %T", c))
	}
}

// restore resumes seq, buffer and ring from the chat log's tail.
func (m *SessionManager) restore(tail []event.Event) {
	for _, e := range tail {
		if e.Seq <= m.seq {
			continue // out of order or duplicate line: keep seq strictly increasing
		}
		e.V = 0
		m.seq = e.Seq
		if len(m.buf) == 0 {
			m.bufFirst = e.Seq
		}
		m.buf = append(m.buf, newFrame(e))
		m.ring.Add(e)
		m.remember(e)
	}
	if len(m.buf) == 0 && m.seq == 0 {
		m.bufFirst = 1
	}
	m.trimBuffer()
}

func (m *SessionManager) remember(e event.Event) {
	if e.Type != event.User {
		return
	}
	var d event.UserData
	if json.Unmarshal(e.Data, &d) != nil || d.ClientMsgID == "" {
		return
	}
	m.rememberID(d.ClientMsgID, m.buf[len(m.buf)-1])
}

func (m *SessionManager) rememberID(id string, f *Frame) {
	if _, ok := m.accepted[id]; ok {
		return
	}
	m.accepted[id] = f
	m.ids = append(m.ids, id)
	if len(m.ids) > maxRememberedIDs {
		delete(m.accepted, m.ids[0])
		m.ids = m.ids[1:]
	}
}

func (m *SessionManager) submit(ctx context.Context, in Input) (Result, error) {
	if strings.TrimSpace(in.Content) == "" {
		return Result{}, ErrEmpty
	}
	if in.ClientMsgID != "" {
		if f, ok := m.accepted[in.ClientMsgID]; ok {
			return Result{Outcome: Duplicate, Turn: f.Event.Turn, Echo: f}, nil
		}
		if m.pending != nil && m.pending.ClientMsgID == in.ClientMsgID {
			return Result{Outcome: Queued, Turn: m.turn.id, Busy: queuedBusy(m.turn.id, in.ClientMsgID)}, nil
		}
	}
	if m.turn == nil {
		return m.startTurn(ctx, in)
	}
	switch m.cfg.BusyPolicy {
	case PolicyQueue:
		if old := m.pending; old != nil && old.Notify != nil {
			old.Notify(event.New(event.Busy, "", m.cfg.Now(), event.BusyData{
				Turn:        m.turn.id,
				Message:     "A newer message replaced yours in the queue; yours was not sent.",
				ClientMsgID: old.ClientMsgID,
			}))
		}
		m.pending = &in
		return Result{Outcome: Queued, Turn: m.turn.id, Busy: queuedBusy(m.turn.id, in.ClientMsgID)}, nil
	case PolicyInterrupt:
		m.cancelTurn()
		return m.startTurn(ctx, in)
	default:
		return Result{Outcome: Rejected, Turn: m.turn.id, Busy: event.BusyData{
			Turn:        m.turn.id,
			Message:     "The assistant is still working on the previous message. Wait for it to finish or cancel it.",
			ClientMsgID: in.ClientMsgID,
		}}, nil
	}
}

func queuedBusy(turn, clientMsgID string) event.BusyData {
	return event.BusyData{Turn: turn, Queued: true, ClientMsgID: clientMsgID,
		Message: "The assistant is busy; your message is queued and runs when the current reply ends."}
}

// startTurn logs and echoes the input, then runs the agent on a goroutine
// of its own. The input is on disk (per session.fsync) before anyone sees it.
func (m *SessionManager) startTurn(ctx context.Context, in Input) (Result, error) {
	seq := m.seq + 1
	id := "t" + strconv.FormatInt(seq, 10)
	e := event.New(event.User, id, m.cfg.Now(), event.UserData{
		Channel: in.Channel, From: in.From, Content: in.Content, ClientMsgID: in.ClientMsgID,
	})
	e.Seq = seq
	if err := m.log.Append(e); err != nil {
		return Result{}, fmt.Errorf("record input: %w", err)
	}
	m.seq = seq
	f := m.deliver(e)
	if in.ClientMsgID != "" {
		m.rememberID(in.ClientMsgID, f)
	}

	tctx, cancel := context.WithCancel(ctx)
	t := &turn{id: id, cancel: cancel, started: m.cfg.Now()}
	m.turn = t
	req := agent.Request{
		Turn: id, Channel: in.Channel, From: in.From, Content: in.Content,
		Context: m.ringBefore(seq),
	}
	emit := func(typ event.Type, data any) {
		// Marshalling happens here, on the turn's goroutine, not the hub's.
		c := emitCmd{turn: id, e: event.New(typ, id, time.Time{}, data)}
		if d, ok := data.(event.TextData); ok && typ == event.Delta {
			c.text = d.Text
		}
		select {
		case m.cmds <- c:
		case <-tctx.Done():
		case <-m.done:
		}
	}
	m.turns.Add(1)
	go func() {
		defer m.turns.Done()
		defer cancel()
		reply, err := m.agent.Run(tctx, req, emit)
		select {
		case m.cmds <- turnDoneCmd{turn: id, reply: reply, err: err}:
		case <-m.done:
		}
	}()
	return Result{Outcome: Started, Turn: id, Echo: f}, nil
}

// ringBefore is the chat ring without the exchange starting at seq.
func (m *SessionManager) ringBefore(seq int64) []event.Event {
	evs := m.ring.Events()
	for i, e := range evs {
		if e.Seq >= seq {
			return evs[:i]
		}
	}
	return evs
}

// cancelTurn ends the running turn as cancelled, at once, whatever the
// backend does next. It reports whether a turn was running.
func (m *SessionManager) cancelTurn() bool {
	if m.turn == nil {
		return false
	}
	m.turn.cancel()
	m.finish(event.StatusCancelled, m.turn.text.String(), "", nil)
	return true
}

// endTurn finishes the turn and starts a queued input, if any.
func (m *SessionManager) endTurn(ctx context.Context, status, content, errMsg string, usage *event.Usage) {
	m.turn.cancel()
	m.finish(status, content, errMsg, usage)
	m.startPending(ctx)
}

// startPending starts the queued input, if any.
func (m *SessionManager) startPending(ctx context.Context) {
	if p := m.pending; p != nil {
		m.pending = nil
		if _, err := m.startTurn(ctx, *p); err != nil {
			m.cfg.Logger.Error("start queued input", "err", err)
			if p.Notify != nil {
				p.Notify(event.New(event.Error, "", m.cfg.Now(), event.ErrorData{Code: "internal", Message: err.Error(), ClientMsgID: p.ClientMsgID}))
			}
		}
	}
}

// finish appends the turn's closing events — the reply (partial unless
// completed), a notice when cancelled, then turn_end — and frees the session.
func (m *SessionManager) finish(status, content, errMsg string, usage *event.Usage) {
	t := m.turn
	m.turn = nil
	if content != "" {
		m.publish(event.New(event.Assistant, t.id, time.Time{},
			event.AssistantData{Content: content, Partial: status != event.StatusCompleted}))
	}
	if status == event.StatusCancelled {
		m.publish(event.New(event.Notice, t.id, time.Time{}, event.TextData{Text: CancelNotice}))
	}
	m.publish(event.New(event.TurnEnd, t.id, time.Time{}, event.TurnEndData{
		Status: status, Error: errMsg, DurationMS: m.cfg.Now().Sub(t.started).Milliseconds(), Usage: usage,
	}))
	m.compact(t.id)
}

// publish stamps e with the next seq and the time, logs it if persisted,
// and delivers it. A log failure is reported but does not stop the stream:
// the event already happened.
func (m *SessionManager) publish(e event.Event) {
	m.seq++
	e.Seq = m.seq
	e.TS = event.Time(m.cfg.Now())
	if e.Type.Persisted() {
		if err := m.log.Append(e); err != nil {
			m.cfg.Logger.Error("append to chat log", "seq", e.Seq, "type", e.Type, "err", err)
		}
	}
	m.deliver(e)
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
		select {
		case s.c <- f:
		default:
			m.drop(s, ErrSlowConsumer)
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
	m.bufFirst = m.buf[n-1].Event.Seq + 1
	clear(m.buf[:n])
	m.buf = m.buf[n:]
}

// compact drops the turn's transient events (status, delta) from the
// buffer once the turn has ended: its assistant event supersedes them, so
// replay stays short and matches what the chat log holds.
func (m *SessionManager) compact(turn string) {
	out := m.buf[:0]
	for _, f := range m.buf {
		if f.Event.Turn == turn && !f.Event.Type.Persisted() {
			continue
		}
		out = append(out, f)
	}
	clear(m.buf[len(out):])
	m.buf = out
	m.volatile = 0
	for _, f := range m.buf {
		if !f.Event.Type.Persisted() {
			m.volatile++ // another turn's, e.g. one cut short by interrupt
		}
	}
}

func (m *SessionManager) subscribe(since int64) (*Subscription, Snapshot) {
	s := &Subscription{c: make(chan *Frame, m.cfg.ClientQueue), m: m}
	m.subs[s] = struct{}{}
	snap := Snapshot{
		Connected: event.ConnectedData{
			SessionID: m.sess.SessionID, Generation: m.sess.Generation,
			Busy: m.turn != nil, LastSeq: m.seq, Resumed: m.seq > 0,
		},
		Synced: event.SyncedData{LastSeq: m.seq},
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
	}
	return s, snap
}

// drop removes s and closes its channel; err says why (nil: unsubscribed).
func (m *SessionManager) drop(s *Subscription, err error) {
	if _, ok := m.subs[s]; !ok {
		return
	}
	delete(m.subs, s)
	s.err = err
	close(s.c)
}

func (m *SessionManager) info() Info {
	i := Info{SessionID: m.sess.SessionID, Generation: m.sess.Generation,
		Busy: m.turn != nil, LastSeq: m.seq, Subscribers: len(m.subs)}
	if m.turn != nil {
		i.Turn = m.turn.id
	}
	return i
}

// shutdown ends the running turn as interrupted, makes the log durable and
// closes every subscription with ErrClosed.
func (m *SessionManager) shutdown() {
	if m.turn != nil {
		m.turn.cancel()
		m.finish(event.StatusInterrupted, m.turn.text.String(), "", nil)
	}
	m.pending = nil
	if err := m.log.Sync(); err != nil {
		m.cfg.Logger.Error("sync chat log", "err", err)
	}
	for s := range m.subs {
		m.drop(s, ErrClosed)
	}
	// Give backends a moment to notice their cancelled context, so no turn
	// goroutine outlives the hub; a backend that ignores cancel is left behind.
	waited := make(chan struct{})
	go func() { m.turns.Wait(); close(waited) }()
	select {
	case <-waited:
	case <-time.After(2 * time.Second):
		m.cfg.Logger.Warn("agent did not stop within 2s of cancel")
	}
}

// call sends c and waits for the hub's reply on reply.
func call[T any](ctx context.Context, m *SessionManager, c any, reply chan T) (T, error) {
	var zero T
	select {
	case m.cmds <- c:
	case <-ctx.Done():
		return zero, ctx.Err()
	case <-m.done:
		return zero, ErrClosed
	}
	select {
	case r := <-reply:
		return r, nil
	case <-ctx.Done():
		return zero, ctx.Err()
	case <-m.done:
		select {
		case r := <-reply: // answered just before stopping
			return r, nil
		default:
			return zero, ErrClosed
		}
	}
}

// Submit offers a user input to the session. See Outcome for the results;
// an error means the input was not accepted (ErrEmpty, ErrClosed, a chat
// log failure) and nothing was recorded.
func (m *SessionManager) Submit(ctx context.Context, in Input) (Result, error) {
	reply := make(chan submitReply, 1)
	r, err := call(ctx, m, submitCmd{in: in, reply: reply}, reply)
	if err != nil {
		return Result{}, err
	}
	return r.res, r.err
}

// Cancel cancels the running turn; it reports whether one was running.
func (m *SessionManager) Cancel(ctx context.Context) (bool, error) {
	reply := make(chan bool, 1)
	return call(ctx, m, cancelCmd{reply}, reply)
}

// Info returns a snapshot of the session.
func (m *SessionManager) Info(ctx context.Context) (Info, error) {
	reply := make(chan Info, 1)
	return call(ctx, m, infoCmd{reply}, reply)
}

// Subscribe joins the live stream. since is the last seq the client has
// (0: none); the snapshot holds the replay. The caller must Close the
// subscription when done.
func (m *SessionManager) Subscribe(ctx context.Context, since int64) (*Subscription, Snapshot, error) {
	reply := make(chan subscribeReply, 1)
	r, err := call(ctx, m, subscribeCmd{since: since, reply: reply}, reply)
	return r.sub, r.snap, err
}

// Done is closed when Run has returned.
func (m *SessionManager) Done() <-chan struct{} { return m.done }

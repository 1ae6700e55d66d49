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
	"maps"
	"strings"
	"sync"
	"time"

	"github.com/frontdesk-hq/frontdesk/agent"
	"github.com/frontdesk-hq/frontdesk/event"
	"github.com/frontdesk-hq/frontdesk/history"
	"github.com/frontdesk-hq/frontdesk/idle"
	"github.com/frontdesk-hq/frontdesk/index"
	"github.com/frontdesk-hq/frontdesk/memory"
)

// Busy policies (session.busy_policy).
const (
	PolicyReject    = "reject"
	PolicyQueue     = "queue"
	PolicyInterrupt = "interrupt"
)

// Who cancelled a turn, besides a channel name (CancelBy).
const (
	CancelByAPI   = "api"   // POST /api/cancel
	CancelByReset = "reset" // a reset cancels the running turn first
)

// Errors returned to callers.
var (
	// ErrClosed means the hub has stopped (shutdown).
	ErrClosed = errors.New("session is shutting down")
	// ErrSlowConsumer is why a subscriber whose queue filled was dropped.
	ErrSlowConsumer = errors.New("slow consumer")
	// ErrQueueFull rejects a patient input when too many already wait.
	ErrQueueFull = errors.New("too many messages are waiting; try again later")
)

// Outcome statuses besides the turn_end ones (event.Status*).
const (
	// StatusReplaced: a queued input was replaced by a newer one and never ran.
	StatusReplaced = "replaced"
	// StatusUnknown: the turn is too old for its outcome to be known.
	StatusUnknown = "unknown"
	// StatusNotRecorded: a waiting input could not be written to the chat
	// log when its turn came, so it never ran; TurnOutcome.Err says why
	// (a *StorageError). Offer it again later.
	StatusNotRecorded = "not_recorded"
)

// TurnOutcome is how a turn ended, for the channel its input came from.
type TurnOutcome struct {
	Turn   string `json:"turn"`
	Status string `json:"status"`
	Reply  string `json:"reply"`
	Error  string `json:"error,omitempty"`
	// Err is what kept a waiting input from running (a *StorageError with
	// StatusNotRecorded); nil once it ran.
	Err error `json:"-"`
}

// Log is where persisted events go. *history.Log implements it.
type Log interface {
	Append(e event.Event) error
	Sync() error
}

var _ Log = (*history.Log)(nil)

// Index is the full-text search over everything said. *index.Follower
// implements it. The hub only tells it what changed (never waiting for
// it: Notify and NotifyMemory do not block) and passes searches through.
type Index interface {
	Notify(seq int64)
	NotifyMemory()
	Search(ctx context.Context, query string, opts index.Options) (index.Result, error)
}

var _ Index = (*index.Follower)(nil)

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
	// IdleTimeout starts the reset sequence after this long without input
	// or turn activity; 0 disables it.
	IdleTimeout time.Duration
	// Clock drives the idle timer. Default idle.System().
	Clock idle.Clock
	// Memory holds short- and long-term memory; nil disables memory.
	Memory *memory.Store
	// History reads the chat log on disk for the agent's history tools and
	// the history API. Nil: the tools and API use the buffer only.
	History *history.Reader
	// Index serves history_search and Search. Nil: searching fails with
	// ErrNoIndex.
	Index Index
	// ApprovalTimeout denies a Confirm tool's call nobody answered within
	// it. Default DefaultApprovalTimeout (5 minutes).
	ApprovalTimeout time.Duration
	// Tools, if set, returns more tools for each turn besides the history
	// tools (the MCP servers' that are ready). It is called on the hub's
	// goroutine as a turn starts and must not block.
	Tools func() []agent.Tool
	// ConsolidateRetry is the first wait before a memory consolidation
	// whose long_term.md could not be written is tried again; each retry
	// doubles it, up to 5 minutes. Default 5 s. The waits run on Clock.
	ConsolidateRetry time.Duration

	// Attachments resolves the attachments inputs refer to; nil refuses
	// every input that has some (attachments_disabled).
	Attachments Attachments
	// MaxAttachments caps the attachments of one input. Default
	// DefaultMaxAttachments (10).
	MaxAttachments int
}

// maxConsolidateRetry caps the wait between attempts to write long_term.md.
const maxConsolidateRetry = 5 * time.Minute

// Frame is an event with its wire encoding, made once and shared by every
// subscriber. No field may be modified.
type Frame struct {
	Event event.Event
	JSON  []byte
	// Published is when the hub made the frame (for a restored one: when
	// it was read back), on the monotonic clock whatever Config.Now says:
	// writers measure the fan-out lag from it.
	Published time.Time
	// queued: a user event recorded as queued (decoded once, here).
	queued bool
}

func newFrame(e event.Event) *Frame {
	b, err := json.Marshal(e)
	if err != nil {
		panic(fmt.Sprintf("hub: marshal event: %v", err)) // Data is always valid JSON
	}
	return &Frame{Event: e, JSON: b, Published: time.Now(), queued: history.Queued(e)}
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
	// Done, if set, receives the outcome of this input's turn once (also for
	// a Duplicate, and StatusReplaced if a queued input never runs). It must
	// have room for one value: the hub never blocks on it.
	Done chan<- TurnOutcome
	// Patient inputs are never refused as busy: they wait in arrival order
	// until the session is free, whatever busy_policy says (email).
	Patient bool
	// Attachments are files the door stored (data_dir/attachments) and
	// checked; they go on the user event and to the agent.
	Attachments []event.Attachment
	// ScheduleID names the schedule that fired this input (channel schedule).
	ScheduleID string
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
	// Storage is "" while the session's writes succeed, else StorageFull
	// or StorageFailed: from a failed write of the chat log or a memory
	// file until the next write of that part succeeds. StorageError names
	// the part and its error.
	Storage      string `json:"storage,omitempty"`
	StorageError string `json:"storage_error,omitempty"`
	// Counters since the process started, for /metrics.
	Counters Counters `json:"-"`
}

// Counters count what the session did since the process started.
type Counters struct {
	Turns         map[string]int64 // by turn_end status
	SlowConsumers int64            // subscribers dropped for falling behind
	Resets        map[string]int64 // by reason
	Rejected      int64            // inputs answered busy
}

// Snapshot is what a new subscriber gets, taken in the same step as the
// subscription so that no event falls between replay and live stream.
type Snapshot struct {
	Connected event.ConnectedData
	Replay    []*Frame
	Synced    event.SyncedData
}

// Subscription is one client's live stream: a queue the hub appends to
// and one consumer drains. It grows on demand — an idle client holds no
// preallocated buffer — up to Config.ClientQueue frames, past which the hub
// drops the subscriber as a slow consumer.
type Subscription struct {
	m     *SessionManager
	limit int
	once  sync.Once

	mu    sync.Mutex
	queue []*Frame // waiting frames, oldest first
	ended bool
	err   error         // why it ended: ErrSlowConsumer, ErrClosed, or nil after Close
	ready chan struct{} // capacity 1: frames arrived or the stream ended

	// Consumer side only.
	spare   []*Frame // the slice the previous Take returned, reused
	pending []*Frame // Next's frames not yet returned
}

func newSubscription(m *SessionManager) *Subscription {
	return &Subscription{m: m, limit: m.cfg.ClientQueue, ready: make(chan struct{}, 1)}
}

// push queues f; it reports false when the queue is full. Hub only.
func (s *Subscription) push(f *Frame) bool {
	s.mu.Lock()
	if len(s.queue) >= s.limit {
		s.mu.Unlock()
		return false
	}
	s.queue = append(s.queue, f)
	first := len(s.queue) == 1
	s.mu.Unlock()
	if first {
		s.wake()
	}
	return true
}

// end marks the stream over. Hub only.
func (s *Subscription) end(err error) {
	s.mu.Lock()
	s.ended, s.err = true, err
	s.mu.Unlock()
	s.wake()
}

func (s *Subscription) wake() {
	select {
	case s.ready <- struct{}{}:
	default:
	}
}

// Ready receives when frames are waiting or the stream has ended; then
// call Take. One consumer goroutine only.
func (s *Subscription) Ready() <-chan struct{} { return s.ready }

// Take returns the waiting frames, oldest first (valid until the next
// Take), and whether the stream has ended: after the frames returned with
// ended true, nothing more will come and Err says why.
func (s *Subscription) Take() (frames []*Frame, ended bool) {
	spare := s.spare
	used := len(spare)
	clear(spare)
	if cap(spare) > 1024 && cap(spare) > 4*used {
		spare = nil // a big burst is over: let its buffer go
	}
	s.mu.Lock()
	frames, s.queue = s.queue, spare[:0]
	ended = s.ended
	s.mu.Unlock()
	s.spare = frames
	return frames, ended
}

// Next returns the next frame, waiting until one arrives, the stream ends
// (false) or ctx ends (false). A convenience over Ready and Take for
// consumers that wait on nothing else.
func (s *Subscription) Next(ctx context.Context) (*Frame, bool) {
	for len(s.pending) == 0 {
		frames, ended := s.Take()
		s.pending = append(s.pending, frames...)
		if len(s.pending) > 0 {
			break
		}
		if ended {
			return nil, false
		}
		select {
		case <-s.ready:
		case <-ctx.Done():
			return nil, false
		}
	}
	f := s.pending[0]
	s.pending = s.pending[1:]
	return f, true
}

// Err tells why the stream ended: ErrSlowConsumer, ErrClosed, or nil after
// Close. Call it once Take has reported the end.
func (s *Subscription) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

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
	sess      sessionFile
	seq       int64
	buf       []*Frame // replay buffer, seq order
	volatile  int      // status/delta frames in buf (dropped when their turn ends)
	bufFirst  int64    // lowest seq the buffer covers; events before it were trimmed
	ring      *history.Ring
	subs      map[*Subscription]struct{}
	turn      *turn
	approvals map[string]*approval // tool calls waiting for a yes or no, by id
	pending   *queued              // busy_policy queue: the one input waiting (recorded)
	patient   []*queued            // Patient inputs waiting (recorded), in order
	accepted  map[string]*Frame    // client_msg_id → echo
	ids       []string             // accepted ids, oldest first, to bound the map

	waiters      map[string][]chan<- TurnOutcome // running turn → who wants its outcome
	outcomes     map[string]TurnOutcome          // recent finished turns
	outcomeOrder []string
	lastReset    int64 // seq of the last reset event, 0 if none
	watch        *idle.Watch
	counters     Counters
	shortTerm    chan []event.Event // latest transcript for short_term.md (1 slot)
	bg           sync.WaitGroup     // memory writers
	consolidated chan struct{}      // closed when the latest consolidation has ended; nil before the first
	faults       map[string]*fault  // parts that cannot be written, by part

	// stopping is closed when shutdown begins: the memory writers then
	// stop reporting to the hub.
	stopping chan struct{}

	metrics metrics // safe from any goroutine
}

type turn struct {
	id      string
	cancel  context.CancelFunc
	started time.Time // Config.Now, for turn_end's duration_ms
	// begun is time.Now (monotonic, whatever Config.Now says) for the
	// metrics; streamed is set at the first delta.
	begun    time.Time
	streamed bool
	text     strings.Builder // streamed deltas so far
	by       string          // who cancelled it (CancelBy), for the notice
	// interrupted: cancelled by a new input (busy_policy interrupt) from
	// channel by.
	interrupted bool
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
	if cfg.Clock == nil {
		cfg.Clock = idle.System()
	}
	if cfg.ApprovalTimeout <= 0 {
		cfg.ApprovalTimeout = DefaultApprovalTimeout
	}
	if cfg.ConsolidateRetry <= 0 {
		cfg.ConsolidateRetry = 5 * time.Second
	}
	if cfg.MaxAttachments <= 0 {
		cfg.MaxAttachments = DefaultMaxAttachments
	}
	return &SessionManager{
		cfg:       cfg,
		log:       log,
		agent:     a,
		cmds:      make(chan any, 64),
		done:      make(chan struct{}),
		ring:      history.NewRing(cfg.RetainExchanges),
		subs:      map[*Subscription]struct{}{},
		accepted:  map[string]*Frame{},
		waiters:   map[string][]chan<- TurnOutcome{},
		outcomes:  map[string]TurnOutcome{},
		bufFirst:  1,
		watch:     idle.New(cfg.IdleTimeout, cfg.Clock),
		shortTerm: make(chan []event.Event, 1),
		metrics:   newMetrics(),
		approvals: map[string]*approval{},
		faults:    map[string]*fault{},
		stopping:  make(chan struct{}),
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
	cancelCmd struct {
		by    string
		reply chan bool
	}
	resetCmd struct {
		reason string
		reply  chan resetReply
	}
	resetReply struct {
		d   event.ResetData
		err error
	}
	recentCmd struct {
		n     int
		reply chan []event.Event
	}
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
	m.startPending(ctx) // inputs recorded as queued before a restart
	if m.cfg.Memory != nil {
		m.bg.Add(1)
		go func() { defer m.bg.Done(); m.writeShortTerm() }()
	}
	defer m.watch.Stop()
	for {
		select {
		case <-ctx.Done():
			m.shutdown()
			return nil
		case c := <-m.cmds:
			m.handle(ctx, c)
		case <-m.watch.C():
			if m.turn != nil || m.waitingCount() > 0 {
				m.watch.Touch() // work goes on: quiet means nobody and nothing active
				continue
			}
			if _, err := m.reset(ctx, ResetIdle); err != nil {
				// Nothing changed (reset logged why): try again after
				// another quiet period.
				m.watch.Touch()
			}
		}
	}
}

func (m *SessionManager) handle(ctx context.Context, c any) {
	switch c := c.(type) {
	case submitCmd:
		res, err := m.submit(ctx, c.in)
		c.reply <- submitReply{res, err}
	case resetCmd:
		d, err := m.reset(ctx, c.reason)
		c.reply <- resetReply{d, err}
	case storageCmd:
		m.stored(c.part, c.err, c.attrs...)
	case recentCmd:
		c.reply <- m.recent(c.n)
	case cancelCmd:
		ok := m.cancelTurn(c.by)
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
		if c.e.Type == event.Delta && !m.turn.streamed {
			m.turn.streamed = true
			m.metrics.firstToken.Observe(time.Since(m.turn.begun).Seconds())
		}
		m.publish(c.e)
	case approvalCmd:
		m.ask(c)
	case decideCmd:
		d, err := m.decide(c.id, c.decision, c.by)
		c.reply <- decideReply{d, err}
	case approvalTimeoutCmd:
		if a, ok := m.approvals[c.id]; ok {
			m.resolve(a, event.Deny, ByTimeout)
		}
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

func (m *SessionManager) info() Info {
	i := Info{SessionID: m.sess.SessionID, Generation: m.sess.Generation,
		Busy: m.turn != nil, LastSeq: m.seq, Subscribers: len(m.subs)}
	if m.turn != nil {
		i.Turn = m.turn.id
	}
	i.Storage, i.StorageError = m.storageState()
	// Copies: the caller reads them on another goroutine.
	i.Counters = Counters{Turns: maps.Clone(m.counters.Turns), Resets: maps.Clone(m.counters.Resets),
		SlowConsumers: m.counters.SlowConsumers, Rejected: m.counters.Rejected}
	return i
}

func bump(m *map[string]int64, key string) {
	if *m == nil {
		*m = map[string]int64{}
	}
	(*m)[key]++
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
// an error means the input was not accepted (an *InputError such as
// ErrEmpty, ErrClosed, a *StorageError when the chat log could not take
// it) and nothing was recorded, echoed or run. The
// input is cleaned first (see clean): what is echoed and run may differ
// from what the door passed in.
func (m *SessionManager) Submit(ctx context.Context, in Input) (Result, error) {
	in, err := clean(in)
	if err == nil {
		in, err = m.resolveAttachments(in)
	}
	if err != nil {
		return Result{}, err
	}
	reply := make(chan submitReply, 1)
	r, err := call(ctx, m, submitCmd{in: in, reply: reply}, reply)
	if err != nil {
		return Result{}, err
	}
	return r.res, r.err
}

// Cancel cancels the running turn; it reports whether one was running.
// Inputs waiting to run are not touched: the first of them starts next.
// The notice does not say who cancelled; doors use CancelBy.
func (m *SessionManager) Cancel(ctx context.Context) (bool, error) {
	return m.CancelBy(ctx, "")
}

// CancelBy is Cancel, naming who cancelled in the notice ("Cancelled from
// the web after 2.6 s.") and its data field by: a channel (web, console,
// email, webhook, schedule), CancelByAPI or CancelByReset.
func (m *SessionManager) CancelBy(ctx context.Context, by string) (bool, error) {
	reply := make(chan bool, 1)
	return call(ctx, m, cancelCmd{by: by, reply: reply}, reply)
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

// Reset runs the reset sequence now (reason ResetManual or ResetIdle) and
// returns the reset event's data. A *StorageError means the reset's files
// could not be written and nothing changed (a running turn was cancelled
// all the same).
func (m *SessionManager) Reset(ctx context.Context, reason string) (event.ResetData, error) {
	reply := make(chan resetReply, 1)
	r, err := call(ctx, m, resetCmd{reason: reason, reply: reply}, reply)
	if err != nil {
		return event.ResetData{}, err
	}
	return r.d, r.err
}

// Done is closed when Run has returned.
func (m *SessionManager) Done() <-chan struct{} { return m.done }

// shutdown ends the running turn as interrupted, tells waiting inputs they
// will not run, makes the log durable and closes every subscription with
// ErrClosed.
func (m *SessionManager) shutdown() {
	close(m.stopping)
	if m.turn != nil {
		m.turn.cancel()
		m.finish(event.StatusInterrupted, m.turn.text.String(), "", nil)
	}
	m.stillQueued()
	if err := m.log.Sync(); err != nil {
		m.metrics.storageErrors.WithLabelValues("sync").Inc()
		m.cfg.Logger.Error("sync chat log", "err", err)
	}
	for s := range m.subs {
		m.drop(s, ErrClosed)
	}
	if m.cfg.Memory != nil {
		close(m.shortTerm) // the writer saves the last snapshot and ends
	}
	// Give backends a moment to notice their cancelled context, so no turn
	// goroutine outlives the hub; a backend that ignores cancel is left behind.
	waited := make(chan struct{})
	go func() { m.turns.Wait(); m.bg.Wait(); close(waited) }()
	select {
	case <-waited:
	case <-time.After(2 * time.Second):
		m.cfg.Logger.Warn("agent or memory writer did not stop within 2s")
	}
	m.drainReports()
}

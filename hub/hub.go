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
	"sync/atomic"
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
	// Err is the *StorageError behind a turn that could not be recorded:
	// a waiting input that never ran (StatusNotRecorded), or a turn whose
	// events the chat log refused (event.StatusError: its reply is not on
	// disk, unless Reply is set: then only the turn's end was refused).
	// nil otherwise.
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
	// Gate decides what each Actor may do (people). nil allows everything.
	Gate Gate
	// ApprovalsNotSelf refuses an approval answer from the person whose
	// turn asked for the call (mcp.approvals.not_self).
	ApprovalsNotSelf bool
	// BusyPolicy is PolicyReject (default), PolicyQueue or PolicyInterrupt.
	BusyPolicy string
	// RetainExchanges sizes the chat ring. Default 20.
	RetainExchanges int
	// BufferEvents bounds the replay buffer. Default 5000.
	BufferEvents int
	// ClientQueue is each subscriber's queue length. Default 1024.
	ClientQueue int
	// Logger receives operational messages. Default slog.Default().
	Logger *slog.Logger
	// Restore is the tail of the chat log to resume from, oldest first
	// (persisted events with seq). The seq counter continues after the last.
	Restore []event.Event
	// IdleTimeout starts the reset sequence after this long without input
	// or turn activity; 0 disables it.
	IdleTimeout time.Duration
	// Clock is the session's one time source: event timestamps, durations,
	// the idle timer and its retries. Default idle.System().
	Clock idle.Clock
	// Memory holds short- and long-term memory; nil disables memory.
	Memory *memory.Store
	// Items is the long-term memory item store (items.json); nil disables
	// the memory API and tools (ErrNoMemory). Only the hub applies and
	// saves changes to it once Run has started.
	Items *memory.Items
	// MemoryContextTokens bounds the memory items put into each turn's
	// context (about 4 bytes a token). Default 2000 (0); negative: all
	// items.
	MemoryContextTokens int
	// MemorySaveApproval says when the agent's memory_save waits for a
	// person's approval: "untrusted" (default, ""): on a turn whose input
	// came from a door other than the web UI and the terminal; "always";
	// "never". memory_forget always asks on those doors.
	MemorySaveApproval string
	// MaxMemoryItems caps the memory items: a save when full is refused
	// with an *InputError coded MemoryFullCode. 0: no cap.
	MaxMemoryItems int
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
	// MaxMessageBytes caps an input's text (content and from, in bytes)
	// from every door but email, whose door caps whole mails
	// (channels.email.max_bytes): server.max_message_bytes, which the
	// HTTP and WebSocket doors also apply to what they read. 0: no cap.
	MaxMessageBytes int64

	// Cluster, if set, makes this one node of several (cluster.go): the
	// hub follows the log until Lead. Nil: a single node, as always.
	Cluster Cluster

	// Erased, if set, is called on the hub's goroutine after an erased
	// event was appended to a local log (Cluster nil), and at start for
	// each erased event in Restore (a crash may have come before the
	// files were rid of the text): it makes the node's files hold no
	// trace of the erased event (package erasure). It must not block:
	// run the work on another goroutine. On a cluster node the log's
	// copier does this instead.
	Erased func(event.ErasedData)
}

// maxConsolidateRetry caps the wait between attempts to write long_term.md.
const maxConsolidateRetry = 5 * time.Minute

// Frame is an event with its wire encoding, made once and shared by every
// subscriber. No field may be modified.
type Frame struct {
	Event event.Event
	JSON  []byte
	// Published is when the hub made the frame (for a restored one: when
	// it was read back), on the monotonic clock whatever Config.Clock says:
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
	// Person is who sent it (Actor.Person); SignedIn as Actor.SignedIn.
	// Submit asks the Gate for talk when Person is set.
	Person   string
	SignedIn bool
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

// Counters count what the session did since the process started.
type Counters struct {
	Turns         map[string]int64 // by turn_end status
	SlowConsumers int64            // subscribers dropped for falling behind
	Resets        map[string]int64 // by reason
	Rejected      int64            // inputs answered busy
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
	approvals map[string]*approval       // tool calls waiting for a yes or no, by id
	decided   []event.ApprovalResultData // the last maxDecided results, oldest first
	pending   *queued                    // busy_policy queue: the one input waiting (recorded)
	patient   []*queued                  // Patient inputs waiting (recorded), in order
	accepted  map[string]*Frame          // client_msg_id → echo
	ids       []string                   // accepted ids, oldest first, to bound the map

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
	owed         []event.Event      // turn_ends the log refused, written before anything else (owe)

	// Cluster mode (see cluster.go). leading is also read by doors'
	// goroutines (Submit forwards while it is false).
	leading atomic.Bool
	remote  string         // a follower: the turn the holder runs, "" if none
	early   []liveFrame    // a follower: live frames ahead of the log
	parked  []subscribeCmd // a follower: clients ahead of it, waiting
	shown   int64          // the last seq this node's clients were shown (cluster: see lead, demote)

	// erasedSeqs are the seqs erased since the start (and in the
	// restored tail): their files may still hold the text a while.
	erasedSeqs map[int64]bool

	// stopping is closed when shutdown begins: the memory writers then
	// stop reporting to the hub.
	stopping chan struct{}

	metrics metrics // safe from any goroutine
}

type turn struct {
	id      string
	cancel  context.CancelFunc
	started time.Time // Config.Clock, for turn_end's duration_ms
	// begun is time.Now (monotonic, whatever Config.Clock says) for the
	// metrics; streamed is set at the first delta.
	begun    time.Time
	streamed bool
	text     strings.Builder // streamed deltas so far
	by       string          // who cancelled it (CancelBy), for the notice
	byPerson string          // and the person behind that door
	// person is who sent the turn's input (UserData.Person): whose turn
	// it is, for mcp.approvals.not_self and the agent's memory saves.
	person string
	// interrupted: cancelled by a new input (busy_policy interrupt) from
	// channel by.
	interrupted bool
	// fault is the first of the turn's events the chat log refused: the
	// turn ends as an error with its code, whatever the backend says.
	fault *StorageError
}

const maxRememberedIDs = 10000

// now is the session's time (Config.Clock).
func (m *SessionManager) now() time.Time { return m.cfg.Clock.Now() }

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
	if cfg.MemoryContextTokens == 0 {
		cfg.MemoryContextTokens = defaultMemoryContextTokens
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
		by, person string
		reply      chan bool
	}
	resetCmd struct {
		reason, person string
		reply          chan resetReply
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
		// A follower's: whether the caller asked the log's last seq (for
		// a since ahead of this node), and what it is (-1 unknown).
		asked   bool
		logLast int64
	}
	subscribeReply struct {
		sub  *Subscription
		snap Snapshot
		ask  bool // ask the log's last seq and send the command again
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
	sess, err := loadSession(m.cfg.DataDir, m.now())
	if err != nil {
		return err
	}
	m.sess = sess
	m.leading.Store(m.cfg.Cluster == nil)
	restored, erasures := restoreErased(m.cfg.Restore)
	m.restore(restored)
	for _, d := range erasures {
		m.tombstone(d)
		if m.cfg.Cluster == nil && m.cfg.Erased != nil {
			m.cfg.Erased(d)
		}
	}
	m.catchUpItems(m.cfg.Restore)
	m.migrateLongTerm()
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
			if m.turn != nil || m.waitingCount() > 0 || !m.leading.Load() {
				m.watch.Touch() // work goes on: quiet means nobody and nothing active
				continue
			}
			if _, err := m.reset(ctx, ResetIdle, ""); err != nil {
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
		if m.following() {
			// Sent while this node led; it has stopped since: nothing was done.
			c.reply <- submitReply{err: ErrNoLeader}
			return
		}
		res, err := m.submit(ctx, c.in)
		c.reply <- submitReply{res, err}
	case resetCmd:
		if m.following() {
			c.reply <- resetReply{err: ErrNoLeader}
			return
		}
		d, err := m.reset(ctx, c.reason, c.person)
		c.reply <- resetReply{d, err}
	case storageCmd:
		m.stored(c.part, c.err, c.attrs...)
	case recentCmd:
		c.reply <- m.recent(c.n)
	case cancelCmd:
		ok := m.cancelTurn(c.by, c.person)
		c.reply <- ok
		if ok {
			m.startPending(ctx)
		}
	case infoCmd:
		c.reply <- m.info()
	case subscribeCmd:
		if m.behind(c) {
			return // answered when this node has caught up (cluster.go)
		}
		sub, snap := m.subscribe(c.since)
		c.reply <- subscribeReply{sub: sub, snap: snap}
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
		if err := m.publish(c.e); err != nil {
			m.failTurn(ctx, storageErr("record "+string(c.e.Type), err))
		}
	case approvalCmd:
		m.ask(ctx, c)
	case decideCmd:
		d, err := m.decide(c.id, c.decision, c.actor)
		c.reply <- decideReply{d, err}
	case approvalTimeoutCmd:
		if a, ok := m.approvals[c.id]; ok {
			m.resolve(a, event.Deny, ByTimeout, "")
		}
	case turnDoneCmd:
		m.turnDone(ctx, c)
	case memoryCmd:
		r := m.changeMemory(c)
		if c.reply != nil {
			c.reply <- r
		}
	case eraseCmd:
		c.reply <- m.erase(c)
	case auditCmd: // person_changed (audit.go)
		c.reply <- m.audit(c)
	default:
		if !m.handleCluster(ctx, c) {
			panic(fmt.Sprintf("hub: unknown command %T", c))
		}
	}
}

func (m *SessionManager) info() Info {
	i := Info{SessionID: m.sess.SessionID, Generation: m.sess.Generation,
		Busy: m.busy(), LastSeq: m.seq, Subscribers: len(m.subs)}
	if m.turn != nil {
		i.Turn = m.turn.id
	} else {
		i.Turn = m.remote
	}
	i.Storage, i.StorageError = m.storageState()
	// Copies: the caller reads them on another goroutine.
	i.Counters = Counters{Turns: maps.Clone(m.counters.Turns), Resets: maps.Clone(m.counters.Resets),
		SlowConsumers: m.counters.SlowConsumers, Rejected: m.counters.Rejected}
	return i
}

// busy reports whether a turn runs (on a follower: on the holder).
func (m *SessionManager) busy() bool { return m.turn != nil || m.remote != "" }

func bump(m *map[string]int64, key string) {
	if *m == nil {
		*m = map[string]int64{}
	}
	(*m)[key]++
}

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
	m.checkpointItems()
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
	timeout := time.After(2 * time.Second)
	for {
		select {
		case <-waited:
			m.drainReports()
			return
		case <-timeout:
			m.cfg.Logger.Warn("agent or memory writer did not stop within 2s")
			m.drainReports()
			return
		case c := <-m.cmds:
			m.whileStopping(c)
		}
	}
}

// whileStopping answers a command that arrives while shutdown waits for
// the turn and the memory writers: a consolidation's summary is still
// saved (it is written to the log like any memory change), storage reports
// are logged, and everything else is refused with ErrClosed where it
// waits for an answer.
func (m *SessionManager) whileStopping(c any) {
	switch c := c.(type) {
	case memoryCmd:
		switch {
		case c.reply == nil: // a use: dropped
		case c.action == event.MemoryConsolidated:
			c.reply <- m.changeMemory(c)
		default:
			c.reply <- memoryReply{err: ErrClosed}
		}
	case storageCmd:
		m.stored(c.part, c.err, c.attrs...)
	case eraseCmd:
		c.reply <- eraseReply{err: ErrClosed}
	}
}

// Package clusterhub runs this node's session hub as one node of a
// cluster (cluster.node set): the hub's log is the JetStream stream, its
// way to the lease holder is NATS request/reply, and this node's chat log
// is a copy of the stream that every reader (history, index, backup)
// uses as on a single node. It joins package cluster (NATS) and package
// hub (the session), which know nothing of each other.
package clusterhub

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/frontdesk-hq/frontdesk/cluster"
	"github.com/frontdesk-hq/frontdesk/event"
	"github.com/frontdesk-hq/frontdesk/history"
	"github.com/frontdesk-hq/frontdesk/hub"
)

// appendWait bounds one append to the stream: the stream answers in well
// under a millisecond when a quorum is up; longer means it is not.
const appendWait = 3 * time.Second

// Log is the hub's log on a cluster node: the stream. An append that was
// fenced (another writer appended first) means this node lost the lease.
//
// Its errors say what happened, never a disk fault: a fenced append, or
// one the stream had no leader for, wraps hub.ErrNoLeader (nothing was
// written); one whose outcome is unknown (it timed out) wraps
// hub.ErrNoAnswer and history.ErrMaybeWritten (the seq is spent).
type Log struct {
	Node *cluster.Node
	// Fenced is called when an append's outcome means this node must read
	// the log again before it writes: it was fenced (another node appended
	// first), or it may or may not have been written. The node then
	// follows and, while it still holds the lease, leads again from the
	// log, where an input that did get in is found like any other.
	Fenced func()
	// Metrics, if set, times each acknowledged append.
	Metrics *Metrics
}

// Append appends e to the stream; its seq is e.Seq or it fails.
func (l Log) Append(e event.Event) error {
	ctx, cancel := context.WithTimeout(context.Background(), appendWait)
	defer cancel()
	if !l.Node.Leased() {
		// Paused past its lease, or its renewal failed: another node may
		// hold it now. Nothing is written; the node reads the log again.
		l.fenced()
		return fmt.Errorf("%w: append seq %d: %w", hub.ErrNoLeader, e.Seq, cluster.ErrNotLeased)
	}
	start := time.Now()
	err := l.Node.Append(ctx, e)
	switch {
	case err == nil:
		l.Metrics.acked(start)
		return nil
	case errors.Is(err, cluster.ErrFenced):
		l.fenced()
		return fmt.Errorf("%w: %w", hub.ErrNoLeader, err)
	case errors.Is(err, history.ErrMaybeWritten):
		l.fenced()
		return fmt.Errorf("%w: %w", hub.ErrNoAnswer, err)
	}
	return fmt.Errorf("%w: %w", hub.ErrNoLeader, err)
}

func (l Log) fenced() {
	if l.Fenced != nil {
		l.Fenced()
	}
}

// Sync is a no-op: a stream append is acknowledged once a quorum has it.
func (Log) Sync() error { return nil }

// Link is the hub's way to the other nodes.
type Link struct{ Node *cluster.Node }

var _ hub.Cluster = Link{}

// Forward sends a hub command to the lease holder.
func (l Link) Forward(ctx context.Context, op string, req []byte) ([]byte, error) {
	b, err := l.Node.Request(ctx, rpcName(op), req)
	switch {
	case errors.Is(err, cluster.ErrNoLeader):
		return nil, hub.ErrNoLeader
	case errors.Is(err, cluster.ErrNoAnswer):
		return nil, hub.ErrNoAnswer
	}
	return b, err
}

// Changed returns a channel closed at this node's next role or holder
// change.
func (l Link) Changed() <-chan struct{} {
	_, ch := l.Node.Role()
	return ch
}

// PublishLive shares a status or delta frame with the other nodes.
func (l Link) PublishLive(b []byte) { _ = l.Node.PublishLive(b) }

func rpcName(op string) string { return "hub." + op }

// Options configure Run.
type Options struct {
	Node *cluster.Node
	// Hub was made with Config.Cluster = Link{Node} and the log Log{Node}.
	Hub *hub.SessionManager
	// ChatLog is this node's copy of the stream; After its last seq.
	ChatLog *history.Log
	After   int64
	// Tail reads the chat log's tail for Hub.Lead (history.ReadTail), of
	// at most TailEvents events (default 5000).
	Tail       func() ([]event.Event, error)
	TailEvents int
	// Indexed, if set, is told each seq this node's chat log holds.
	Indexed func(seq int64)
	// Copied, if set, is given each event once this node's chat log
	// holds it (Files.Prefetch). It must not block.
	Copied func(e event.Event)
	// Erased, if set, is called on every node (the holder too) for each
	// erased event its chat log copies, before the stream is made to
	// forget the erased message (Node.Forget): it rids this node's files of it
	// (erasure.Applier.Apply). It runs on the copier's goroutine and must
	// be idempotent (a restart copies the event again only if the copy
	// did not hold it yet). An error is logged; the copy goes on.
	Erased func(ctx context.Context, d event.ErasedData) error
	// Metrics, if set, count role changes and time deliveries.
	Metrics *Metrics
	// Lead runs the holder's work besides the hub (the email poller, the
	// scheduler's firing) from the moment this node leads until ctx ends.
	Lead func(ctx context.Context)
	// PublicURL is this node's cluster.public_url ("" unknown), announced
	// to the others for State's Nodes.
	PublicURL string
	Logger    *slog.Logger
}

// State is this node's view of the cluster, for /api/session.
type State struct {
	Node   string           `json:"node"`
	Leader string           `json:"leader"`
	Role   string           `json:"role"`
	Nodes  []cluster.Member `json:"nodes"`
}

// Runner runs a hub on a cluster node.
type Runner struct {
	o      Options
	copied atomic.Int64 // the last seq this node's chat log holds
	mu     sync.Mutex
	role   cluster.Role
	holder string
	// roles carries role changes (the latest wins) and fenced appends
	// (as a Follower) to Run.
	roles  chan cluster.Role
	roster *cluster.Roster
}

// New makes a Runner; Run starts it.
func New(o Options) *Runner {
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.TailEvents <= 0 {
		o.TailEvents = 5000
	}
	r := &Runner{o: o, roles: make(chan cluster.Role, 1), roster: cluster.NewRoster(o.Node, o.PublicURL)}
	r.copied.Store(o.After)
	return r
}

// State returns this node's view of the cluster.
// A node that holds the lease but whose hub has not taken over yet (it is
// still reading the log) says electing: nobody runs the session yet.
func (r *Runner) State() State {
	r.mu.Lock()
	defer r.mu.Unlock()
	role := r.role
	if role == cluster.Leader && !r.o.Hub.Leading() {
		role = cluster.Electing
	}
	return State{Node: r.o.Node.Name(), Leader: r.holder, Role: role.String(), Nodes: r.roster.Members()}
}

// holding reports whether this node holds the lease (whether or not its
// hub leads yet).
func (r *Runner) holding() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.role == cluster.Leader
}

// Fenced tells Run that an append was refused because another node
// appended first: whatever the lease says, this node no longer leads.
func (r *Runner) Fenced() { r.signal(cluster.Follower) }

func (r *Runner) signal(role cluster.Role) {
	for {
		select {
		case r.roles <- role:
			return
		default:
		}
		select {
		case <-r.roles: // replaced by the newer one
		default:
		}
	}
}

// Run copies the stream into the chat log and hands each event to the hub,
// shares live frames, and takes part in the lease election: when this
// node wins, its hub leads and the holder's work starts; when it loses
// the lease (or an append is fenced), the work stops and the hub follows
// again. It returns nil when ctx ends, or the error that stopped the copy.
func (r *Runner) Run(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if err := r.o.Node.SubscribeLive(ctx, r.o.Hub.Live); err != nil {
		return err
	}
	var wg sync.WaitGroup
	defer wg.Wait()
	copyErr := make(chan error, 1)
	wg.Add(3)
	go func() { defer wg.Done(); r.eraseAgain(ctx); copyErr <- r.copyLog(ctx) }()
	go func() {
		defer wg.Done()
		if err := r.roster.Run(ctx); err != nil {
			r.o.Logger.Warn("cluster: announce this node", "err", err)
		}
	}()
	go func() {
		defer wg.Done()
		r.o.Node.Campaign(ctx, r.changed)
	}()
	var stopLead context.CancelFunc // set while this node leads
	defer func() {
		if stopLead != nil {
			stopLead()
		}
	}()
	for {
		select {
		case <-ctx.Done():
			return nil
		case err := <-copyErr:
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("copy the cluster log into this node's chat log: %w", err)
		case role := <-r.roles:
			switch {
			case role == cluster.Leader && stopLead == nil:
				lctx, stop := context.WithCancel(ctx)
				if err := r.lead(lctx, &wg); err != nil {
					stop()
					if ctx.Err() != nil {
						return nil
					}
					// Still holding the lease: try again shortly (the log's
					// leader may be being elected), unless the role moves on.
					r.o.Logger.Error("cluster: could not take over; trying again", "err", err)
					r.leadAgain()
					continue
				}
				stopLead = stop
			case role != cluster.Leader && stopLead != nil:
				stopLead()
				stopLead = nil
				if err := r.follow(ctx); err != nil {
					return err
				}
				// A fenced append (or a failed one that spent its seq)
				// while the lease is still ours: lead again, from the log.
				r.leadAgain()
			}
		}
	}
}

// leadAgain tells Run to lead once more in a moment if this node still
// holds the lease.
func (r *Runner) leadAgain() {
	time.AfterFunc(250*time.Millisecond, func() {
		if r.holding() {
			r.signal(cluster.Leader)
		}
	})
}

// changed records a role change and passes it to Run.
func (r *Runner) changed(role cluster.Role, holder string) {
	r.mu.Lock()
	if role != r.role {
		r.o.Metrics.role(role.String())
	}
	r.role, r.holder = role, holder
	r.mu.Unlock()
	r.o.Logger.Info("cluster role", "role", role.String(), "leader", holder)
	r.signal(role)
}

// copyLog copies the stream into the chat log from the seq it holds and
// hands each event to the hub.
func (r *Runner) copyLog(ctx context.Context) error {
	last := r.copied.Load()
	return r.o.Node.Follow(ctx, last, func(e event.Event) error {
		if e.Seq <= last {
			return nil
		}
		if e.Seq != last+1 {
			return fmt.Errorf("seq %d follows %d", e.Seq, last)
		}
		if err := r.o.ChatLog.Append(e); err != nil {
			return fmt.Errorf("seq %d: %w", e.Seq, err)
		}
		last = e.Seq
		r.copied.Store(last)
		if r.o.Indexed != nil {
			r.o.Indexed(last)
		}
		if r.o.Copied != nil {
			r.o.Copied(e)
		}
		err := r.o.Hub.Ingest(ctx, e)
		if !r.o.Hub.Leading() {
			r.o.Metrics.delivered(e.TS.Std())
		}
		if err == nil && e.Type == event.Erased {
			r.erased(ctx, e)
		}
		return err
	})
}

// eraseAgain applies again the erased events this node's chat log already
// holds in its tail: a node stopped after it copied one and before its
// files were rid of the text would otherwise never be (the copy goes on
// after them). Both steps are idempotent.
func (r *Runner) eraseAgain(ctx context.Context) {
	if r.o.Tail == nil || r.o.Erased == nil {
		return
	}
	tail, err := r.o.Tail()
	if err != nil {
		r.o.Logger.Warn("erase: read the chat log's tail to apply its erasures again", "err", err)
		return
	}
	for _, e := range tail {
		if e.Type == event.Erased && ctx.Err() == nil {
			r.erased(ctx, e)
		}
	}
}

// forgetFor bounds the attempts to have the stream forget an erased
// message: long enough for an election of the stream's or the erasure
// bucket's Raft group (4-9 s, JetStream's floor) after a node died.
const (
	forgetFor  = 30 * time.Second
	forgetWait = 2 * time.Second
)

// erased rids this node's files of the message an erased event names,
// then makes the stream forget it (every node does it, idempotently, so a
// holder that died between the erased event and the delete is made good
// by the others), trying again for up to forgetFor. The copier's
// goroutine.
func (r *Runner) erased(ctx context.Context, e event.Event) {
	var d event.ErasedData
	if err := e.Decode(&d); err != nil || d.Seq < 1 {
		r.o.Logger.Error("cluster: an erased event that names no seq", "seq", e.Seq, "err", err)
		return
	}
	if r.o.Erased != nil {
		if err := r.o.Erased(ctx, d); err != nil && ctx.Err() == nil {
			r.o.Logger.Error("erase: this node's files still hold an erased message", "seq", d.Seq, "err", err)
		}
	}
	end := time.Now().Add(forgetFor)
	for try := 1; ctx.Err() == nil; try++ {
		fctx, cancel := context.WithTimeout(ctx, forgetWait)
		err := r.o.Node.Forget(fctx, d)
		cancel()
		if err == nil {
			return
		}
		if time.Now().After(end) {
			r.o.Logger.Error("cluster: the log stream still holds an erased message", "seq", d.Seq, "err", err)
			return
		}
		if try == 1 {
			r.o.Logger.Warn("cluster: the log stream did not forget an erased message yet; trying again", "seq", d.Seq, "err", err)
		}
		select {
		case <-ctx.Done():
		case <-time.After(min(time.Duration(try)*100*time.Millisecond, time.Second)):
		}
	}
}

// lead makes this node the holder: once its chat log holds everything the
// stream held when it won, the hub takes over from it, the forwarded
// commands are served and the holder's work starts, all until ctx ends.
func (r *Runner) lead(ctx context.Context, wg *sync.WaitGroup) error {
	last, err := r.o.Node.LastSeq(ctx)
	for err != nil {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
		last, err = r.o.Node.LastSeq(ctx)
	}
	tail, err := r.o.Tail()
	if err != nil {
		return fmt.Errorf("read the chat log to lead: %w", err)
	}
	// What this node's copy lacks yet is read straight from the stream:
	// the copy's consumer may have lived on the node that died, and
	// making a new one waits for a meta leader (4-9 s if that died too).
	have := int64(0)
	if len(tail) > 0 {
		have = tail[len(tail)-1].Seq
	}
	from := have + 1
	if keep := int64(r.o.TailEvents); last-have > keep {
		// Far behind (a new node that wins at once): the stream's own
		// tail is all the hub needs; the copy catches up behind it.
		tail, from = nil, last-keep+1
	}
	for seq := from; seq <= last; seq++ {
		e, err := r.o.Node.Interior(ctx, seq)
		if err != nil {
			return err
		}
		tail = append(tail, e)
	}
	fence, err := r.fence(ctx, last)
	if err != nil {
		return err
	}
	tail = append(tail, fence)
	for _, op := range hub.ForwardedOps {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := r.o.Node.Serve(ctx, rpcName(op), func(ctx context.Context, req []byte) ([]byte, error) {
				return r.o.Hub.Serve(ctx, op, req)
			}); err != nil {
				r.o.Logger.Error("serve forwarded commands", "op", op, "err", err)
			}
		}()
	}
	if err := r.o.Hub.Lead(ctx, tail); err != nil {
		return err
	}
	if r.o.Lead != nil {
		wg.Add(1)
		go func() { defer wg.Done(); r.o.Lead(ctx) }()
	}
	return nil
}

// fence is the new holder's first write: a notice at seq last+1, where
// last is the stream's last seq as this node won the lease. A holder that
// lost the lease without knowing it (a paused process, a partition) still
// appends with the expectation it had, seq last+1 after last; once the
// fence is in, that append is refused (ErrFenced) and that node follows.
// Without it, a takeover that wrote nothing (an idle desk) could not be
// told from no takeover: the old holder's input would land in the log
// while nobody ran it. A stream append expects only the last seq, so the
// fence must be in the log itself; the lease's revision cannot be checked
// by the stream. A failed fence fails the takeover (Run tries again).
func (r *Runner) fence(ctx context.Context, last int64) (event.Event, error) {
	e := event.New(event.Notice, "", time.Now(), event.TextData{
		Text: fmt.Sprintf("Node %s runs the assistant now.", r.o.Node.Name())})
	e.Seq = last + 1
	if !r.o.Node.Leased() {
		return e, fmt.Errorf("fence the log: %w", cluster.ErrNotLeased)
	}
	if err := r.o.Node.Append(ctx, e); err != nil {
		return e, fmt.Errorf("fence the log as the new lease holder: %w", err)
	}
	return e, nil
}

// follow makes the hub, which led, follow the log again from this node's
// copy of it.
func (r *Runner) follow(ctx context.Context) error {
	tail, err := r.o.Tail()
	if err != nil {
		return fmt.Errorf("read the chat log to follow: %w", err)
	}
	if err := r.o.Hub.Follow(ctx, tail); err != nil && ctx.Err() == nil {
		return err
	}
	return nil
}

package hub

import (
	"context"
	"fmt"

	"github.com/frontdesk-hq/frontdesk/event"
)

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
	in, err := m.check(in)
	if err != nil {
		return Result{}, err
	}
	if m.following() {
		return m.forwardSubmit(ctx, in)
	}
	return m.submitHere(ctx, in)
}

// check is clean and resolveAttachments: what Submit checks of every
// input, here and on the holder for a forwarded one.
func (m *SessionManager) check(in Input) (Input, error) {
	if in.Person != "" {
		if err := m.allow(Actor{Door: in.Channel, Person: in.Person, SignedIn: in.SignedIn}, event.PermTalk); err != nil {
			return in, err
		}
	}
	in, err := clean(in, m.cfg.MaxMessageBytes)
	if err != nil {
		return in, err
	}
	return m.resolveAttachments(in)
}

// submitHere hands a checked input to this node's hub.
func (m *SessionManager) submitHere(ctx context.Context, in Input) (Result, error) {
	reply := make(chan submitReply, 1)
	r, err := call(ctx, m, submitCmd{in: in, reply: reply}, reply)
	if err != nil {
		return Result{}, err
	}
	return r.res, r.err
}

// Cancel cancels the running turn; it reports whether one was running.
// Inputs waiting to run are not touched: the first of them starts next.
// The notice does not say who cancelled, and no Gate is asked: doors use
// CancelBy.
func (m *SessionManager) Cancel(ctx context.Context) (bool, error) {
	return m.cancel(ctx, Actor{})
}

// CancelBy is Cancel for a, named in the notice ("Cancelled from the web
// after 2.6 s.") and its data fields by (a.Door: a channel, CancelByAPI)
// and person. A *ForbiddenError when a may not cancel: nothing changed.
func (m *SessionManager) CancelBy(ctx context.Context, a Actor) (bool, error) {
	if err := m.allow(a, event.PermCancel); err != nil {
		return false, err
	}
	return m.cancel(ctx, a)
}

func (m *SessionManager) cancel(ctx context.Context, a Actor) (bool, error) {
	if m.following() {
		var ok bool
		err := m.forward(ctx, opCancel, a, &ok)
		return ok, err
	}
	reply := make(chan bool, 1)
	return call(ctx, m, cancelCmd{by: a.Door, person: a.Person, reply: reply}, reply)
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
	c := subscribeCmd{since: since, logLast: -1}
	for {
		c.reply = make(chan subscribeReply, 1)
		r, err := call(ctx, m, c, c.reply)
		if err != nil || !r.ask {
			return r.sub, r.snap, err
		}
		// A follower behind since: is the client ahead of this node, or
		// beyond the log? The log's leader knows; asked here, off the
		// hub's goroutine, and only then.
		c.asked, c.logLast = true, m.logLast(ctx)
	}
}

// Reset runs the reset sequence now (reason ResetManual or ResetIdle) for
// a and returns the reset event's data. A *StorageError means the reset's
// files could not be written and nothing changed (a running turn was
// cancelled all the same); a *ForbiddenError that a may not reset (a
// manual reset needs PermReset), and nothing changed at all.
func (m *SessionManager) Reset(ctx context.Context, reason string, a Actor) (event.ResetData, error) {
	if reason == ResetManual {
		if err := m.allow(a, event.PermReset); err != nil {
			return event.ResetData{}, err
		}
	}
	if m.following() {
		var d event.ResetData
		err := m.forward(ctx, opReset, wireReset{Reason: reason, Actor: a}, &d)
		return d, err
	}
	reply := make(chan resetReply, 1)
	r, err := call(ctx, m, resetCmd{reason: reason, person: a.Person, reply: reply}, reply)
	if err != nil {
		return event.ResetData{}, err
	}
	return r.d, r.err
}

// Done is closed when Run has returned.
func (m *SessionManager) Done() <-chan struct{} { return m.done }

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

package hub

import (
	"context"
	"sync"

	"github.com/frontdesk-hq/frontdesk/event"
)

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
	// floor, on a cluster follower, is the seq a client that came from a
	// node further on already had: events up to it are not sent again.
	// Hub goroutine only.
	floor int64

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

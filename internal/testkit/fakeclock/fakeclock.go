// Package fakeclock is a manual idle.Clock for tests whose code under test
// waits on real sockets as well as on timers (a hub watched by WebSocket
// clients, the scheduler with an IMAP server): testing/synctest cannot
// move time for those, since a goroutine blocked on the network is not
// durably blocked. Everything else uses synctest with idle.System().
package fakeclock

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/frontdesk-hq/frontdesk/idle"
)

// Clock is a manual clock for tests: time stands still until Advance moves
// it. Its timers behave like pre-Go 1.23 *time.Timer: a due timer sends the
// time on a channel with a buffer of one, and neither Stop nor Reset drains
// that buffer — so code that is correct on it is correct on both timer
// implementations. All methods are safe for concurrent use, so a test may
// Advance while the code under test arms timers on another goroutine.
type Clock struct {
	mu      sync.Mutex
	now     time.Time
	armed   []*fakeTimer
	changed chan struct{} // closed and replaced whenever armed changes
}

var _ idle.Clock = (*Clock)(nil)

// New returns a Clock that reads start until advanced.
func New(start time.Time) *Clock {
	return &Clock{now: start, changed: make(chan struct{})}
}

// Now returns the fake time.
func (f *Clock) Now() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.now
}

// NewTimer returns a timer that fires once Advance has moved the clock d
// past now. A d <= 0 fires at once, as time.NewTimer does.
func (f *Clock) NewTimer(d time.Duration) idle.Timer {
	t := &fakeTimer{f: f, c: make(chan time.Time, 1)}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.arm(t, d)
	return t
}

// Advance moves the clock forward by d, firing every timer that falls due,
// earliest first, each with its own deadline as the sent time. Advance(0)
// fires timers that are already due.
func (f *Clock) Advance(d time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	target := f.now.Add(d)
	for {
		i := -1
		for j, t := range f.armed {
			if !t.when.After(target) && (i < 0 || t.when.Before(f.armed[i].when)) {
				i = j
			}
		}
		if i < 0 {
			break
		}
		t := f.armed[i]
		if t.when.After(f.now) {
			f.now = t.when
		}
		f.fire(t)
	}
	f.now = target
}

// Waiters returns how many timers are armed (created or reset, and neither
// fired nor stopped).
func (f *Clock) Waiters() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.armed)
}

// BlockUntil waits until at least n timers are armed, or ctx is done. Tests
// use it to know that the code under test has armed its timer before they
// Advance past it.
func (f *Clock) BlockUntil(ctx context.Context, n int) error {
	for {
		f.mu.Lock()
		armed, changed := len(f.armed), f.changed
		f.mu.Unlock()
		if armed >= n {
			return nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// arm schedules t at now+d, firing it at once when d <= 0. f.mu is held.
func (f *Clock) arm(t *fakeTimer, d time.Duration) {
	t.when = f.now.Add(d)
	if d <= 0 {
		f.fire(t)
		return
	}
	if !slices.Contains(f.armed, t) {
		f.armed = append(f.armed, t)
		f.notify()
	}
}

// disarm removes t from the armed set and reports whether it was there.
// f.mu is held.
func (f *Clock) disarm(t *fakeTimer) bool {
	i := slices.Index(f.armed, t)
	if i < 0 {
		return false
	}
	f.armed = slices.Delete(f.armed, i, i+1)
	f.notify()
	return true
}

// fire disarms t and sends its deadline without blocking: if the previous
// value was never received, this one is dropped. f.mu is held.
func (f *Clock) fire(t *fakeTimer) {
	f.disarm(t)
	select {
	case t.c <- t.when:
	default:
	}
}

func (f *Clock) notify() {
	close(f.changed)
	f.changed = make(chan struct{})
}

type fakeTimer struct {
	f    *Clock
	c    chan time.Time
	when time.Time // guarded by f.mu
}

func (t *fakeTimer) C() <-chan time.Time { return t.c }

// Stop disarms t and reports whether it was armed. Like a pre-Go 1.23
// timer, it leaves a value already sent in the channel.
func (t *fakeTimer) Stop() bool {
	t.f.mu.Lock()
	defer t.f.mu.Unlock()
	return t.f.disarm(t)
}

// Reset re-arms t for d from now and reports whether it was armed. Like a
// pre-Go 1.23 timer, it leaves a value already sent in the channel.
func (t *fakeTimer) Reset(d time.Duration) bool {
	t.f.mu.Lock()
	defer t.f.mu.Unlock()
	was := slices.Contains(t.f.armed, t)
	t.f.arm(t, d)
	return was
}

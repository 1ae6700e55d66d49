package idle

import (
	"context"
	"slices"
	"sync"
	"time"
)

// Clock is where a Watch gets its time and timers. System is the real one;
// tests use a Fake.
type Clock interface {
	Now() time.Time
	NewTimer(d time.Duration) Timer
}

// Timer is the part of *time.Timer a Watch uses. C is a method so that a
// fake can implement it.
type Timer interface {
	C() <-chan time.Time
	Stop() bool
	Reset(d time.Duration) bool
}

// System returns the real clock, backed by time.Now and time.NewTimer.
func System() Clock { return systemClock{} }

type systemClock struct{}

func (systemClock) Now() time.Time { return time.Now() }

func (systemClock) NewTimer(d time.Duration) Timer { return systemTimer{time.NewTimer(d)} }

type systemTimer struct{ t *time.Timer }

func (s systemTimer) C() <-chan time.Time        { return s.t.C }
func (s systemTimer) Stop() bool                 { return s.t.Stop() }
func (s systemTimer) Reset(d time.Duration) bool { return s.t.Reset(d) }

// Fake is a manual clock for tests: time stands still until Advance moves
// it. Its timers behave like pre-Go 1.23 *time.Timer: a due timer sends the
// time on a channel with a buffer of one, and neither Stop nor Reset drains
// that buffer — so code that is correct on a Fake is correct on both timer
// implementations. All methods are safe for concurrent use, so a test may
// Advance while the code under test arms timers on another goroutine.
type Fake struct {
	mu      sync.Mutex
	now     time.Time
	armed   []*fakeTimer
	changed chan struct{} // closed and replaced whenever armed changes
}

var _ Clock = (*Fake)(nil)

// NewFake returns a Fake clock that reads start until advanced.
func NewFake(start time.Time) *Fake {
	return &Fake{now: start, changed: make(chan struct{})}
}

// Now returns the fake time.
func (f *Fake) Now() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.now
}

// NewTimer returns a timer that fires once Advance has moved the clock d
// past now. A d <= 0 fires at once, as time.NewTimer does.
func (f *Fake) NewTimer(d time.Duration) Timer {
	t := &fakeTimer{f: f, c: make(chan time.Time, 1)}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.arm(t, d)
	return t
}

// Advance moves the clock forward by d, firing every timer that falls due,
// earliest first, each with its own deadline as the sent time. Advance(0)
// fires timers that are already due.
func (f *Fake) Advance(d time.Duration) {
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
func (f *Fake) Waiters() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.armed)
}

// BlockUntil waits until at least n timers are armed, or ctx is done. Tests
// use it to know that the code under test has armed its timer before they
// Advance past it.
func (f *Fake) BlockUntil(ctx context.Context, n int) error {
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
func (f *Fake) arm(t *fakeTimer, d time.Duration) {
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
func (f *Fake) disarm(t *fakeTimer) bool {
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
func (f *Fake) fire(t *fakeTimer) {
	f.disarm(t)
	select {
	case t.c <- t.when:
	default:
	}
}

func (f *Fake) notify() {
	close(f.changed)
	f.changed = make(chan struct{})
}

type fakeTimer struct {
	f    *Fake
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

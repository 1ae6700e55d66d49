// Package idle is the session's idle timer: it tells the hub when nobody
// has sent anything for session.idle_timeout_sec, so the hub can run the
// reset sequence (DESIGN.md rule 8) by itself, not lazily on the next input.
// It imports nothing of ours.
package idle

import "time"

// Watch counts down from the last activity. It is not safe for concurrent
// use and needs no lock: only the hub's run goroutine calls it, the same
// goroutine that selects on C. The hub calls Touch on every user input,
// from any channel, and when a turn ends:
//
//	select {
//	case <-watch.C():
//		m.reset("idle-timeout")
//	…
//	}
//
// A new Watch is disarmed: the countdown starts with the first Touch.
type Watch struct {
	timeout time.Duration
	t       Timer // nil when disabled
}

// New returns a Watch that fires timeout after the last Touch, on clock c
// (nil means System()). A timeout <= 0 disables it (session.idle_timeout_sec:
// 0): C returns a nil channel, which never delivers, and Touch and Stop do
// nothing.
func New(timeout time.Duration, c Clock) *Watch {
	w := &Watch{timeout: timeout}
	if timeout <= 0 {
		return w
	}
	if c == nil {
		c = System()
	}
	// Create the timer now, stopped, so that C is one channel for the
	// Watch's whole life and the hub may read it once.
	w.t = c.NewTimer(timeout)
	w.stop()
	return w
}

// Touch records activity now: it (re)arms the countdown to fire timeout
// from now. A fire that was already due but not yet received is discarded,
// so C never delivers a fire older than the last Touch.
func (w *Watch) Touch() {
	if w.t == nil {
		return
	}
	w.stop()
	w.t.Reset(w.timeout)
}

// C delivers the time once when timeout has passed since the last Touch
// with no Touch since. After that the Watch stays disarmed until the next
// Touch. When the Watch is disabled C is nil and never delivers.
func (w *Watch) C() <-chan time.Time {
	if w.t == nil {
		return nil
	}
	return w.t.C()
}

// Stop disarms the Watch and discards a pending fire; a later Touch arms it
// again. The hub may call it after a manual reset, so that an idle reset
// does not follow one with nothing new to consolidate.
func (w *Watch) Stop() {
	if w.t != nil {
		w.stop()
	}
}

// stop disarms the timer and drains a value it sent that nobody received.
// Since Go 1.23 a stopped *time.Timer never delivers a stale value, but
// internal/testkit/fakeclock's timers (and older ones) keep it in the channel's
// buffer: only the owner
// of the Watch receives from C, so a non-blocking receive here empties it.
// If Stop returns true the timer had not fired and there is nothing to drain.
func (w *Watch) stop() {
	if !w.t.Stop() {
		select {
		case <-w.t.C():
		default:
		}
	}
}

package schedule

import (
	"time"

	"github.com/frontdesk-hq/frontdesk/idle"
)

// alarm is Run's timer and the time it is armed for. It is re-armed only
// when that time changes, and always before anyone outside Run can see
// the change (a reply to Create or Cancel, a step, a firing's goroutine):
// a delay computed as at minus Now() is stale once the clock has moved,
// and a test's fake clock moves as soon as it sees the change — arming
// after that wakes late by however far it moved.
type alarm struct {
	clock idle.Clock
	timer idle.Timer
	at    time.Time // zero: not armed
}

func newAlarm(clock idle.Clock) *alarm {
	a := &alarm{clock: clock, timer: clock.NewTimer(time.Hour)}
	a.timer.Stop()
	return a
}

// set arms the alarm for at, or disarms it when ok is false.
func (a *alarm) set(at time.Time, ok bool) {
	if !ok {
		at = time.Time{}
	}
	if at.Equal(a.at) {
		return
	}
	a.timer.Stop()
	a.at = at
	if ok {
		a.timer.Reset(at.Sub(a.clock.Now()))
	}
}

// rang is called once the timer's channel delivered: it is not armed.
func (a *alarm) rang() { a.at = time.Time{} }

package idle

import (
	"time"
)

// Clock is where a Watch (and the scheduler) gets its time and timers.
// System is the real one. Tests that can run in a testing/synctest bubble
// use System there (the bubble fakes time); tests whose goroutines wait on
// real sockets cannot (a bubble's clock only moves when every goroutine in
// it is durably blocked), nor can a hub on a real chat log (lumberjack's
// mill goroutine never exits, which a bubble refuses): those use
// internal/testkit/fakeclock.
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

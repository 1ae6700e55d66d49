package idle

import (
	"context"
	"testing"
	"testing/synctest"
	"time"
)

// The tests run in a testing/synctest bubble on the system clock: time
// stands still until every goroutine in the bubble is blocked, then jumps
// to the next timer. start is the bubble's start (2000-01-01 UTC).
var start = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)

// advance lets d pass in the bubble and waits until what it woke is blocked
// again.
func advance(d time.Duration) {
	time.Sleep(d)
	synctest.Wait()
}

// step is one action in a Watch scenario: advance the fake clock, touch,
// stop, or check what C holds right now.
type step struct {
	advance time.Duration
	touch   bool
	stop    bool
	// check: after the action, C must deliver exactly wantFire (zero time
	// means it must deliver nothing).
	check    bool
	wantFire time.Time
}

func adv(d time.Duration) step       { return step{advance: d} }
func touch() step                    { return step{touch: true} }
func stop() step                     { return step{stop: true} }
func none() step                     { return step{check: true} }
func fired(at time.Duration) step    { return step{check: true, wantFire: start.Add(at)} }
func advNone(d time.Duration) []step { return []step{adv(d), none()} }

func TestWatch(t *testing.T) {
	const to = 30 * time.Minute
	cat := func(parts ...any) []step {
		var s []step
		for _, p := range parts {
			switch p := p.(type) {
			case step:
				s = append(s, p)
			case []step:
				s = append(s, p...)
			}
		}
		return s
	}
	tests := []struct {
		name    string
		timeout time.Duration
		steps   []step
	}{
		{"not armed before first touch", to, cat(advNone(2 * to))},
		{"fires after exactly timeout", to, cat(touch(), advNone(to-time.Nanosecond), adv(time.Nanosecond), fired(to))},
		{"touch postpones", to, cat(touch(), advNone(20*time.Minute), touch(), advNone(29*time.Minute), adv(time.Minute), fired(50*time.Minute))},
		{"many touches postpone", to, cat(
			touch(), adv(10*time.Minute), touch(), adv(10*time.Minute), touch(), adv(10*time.Minute), touch(),
			advNone(to-time.Second), adv(time.Second), fired(30*time.Minute+to))},
		{"fires only once per quiet period", to, cat(touch(), adv(to), fired(to), advNone(10*to))},
		{"one fire even when advanced far past", to, cat(touch(), adv(5*to), fired(to), none())},
		{"touch after fire re-arms", to, cat(touch(), adv(to), fired(to), adv(time.Hour), touch(), advNone(to-1), adv(1), fired(to+time.Hour+to))},
		{"no stale fire after touch at the boundary", to, cat(
			touch(), adv(to), // fired: the value waits in C, not yet received
			touch(), none(), // the hub saw input first; the old fire is gone
			advNone(to-1), adv(1), fired(2*to))},
		{"no stale fire after touch past the boundary", to, cat(
			touch(), adv(to+time.Minute), touch(), none(), advNone(to-1), adv(1), fired(to+time.Minute+to))},
		{"stop disarms", to, cat(touch(), adv(to-1), stop(), advNone(10*to))},
		{"stop discards a pending fire", to, cat(touch(), adv(to), stop(), none())},
		{"touch after stop re-arms", to, cat(touch(), stop(), adv(time.Hour), touch(), advNone(to-1), adv(1), fired(time.Hour+to))},
		{"disabled by zero", 0, cat(touch(), advNone(10*to), touch(), stop(), advNone(10*to))},
		{"disabled by negative", -time.Second, cat(touch(), advNone(10*to))},
		{"short timeout", time.Nanosecond, cat(touch(), adv(1), fired(1), none())},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				w := New(tc.timeout, System())
				if tc.timeout <= 0 && w.C() != nil {
					t.Fatalf("disabled Watch: C() = %v, want nil", w.C())
				}
				for i, s := range tc.steps {
					switch {
					case s.advance != 0:
						advance(s.advance)
					case s.touch:
						w.Touch()
					case s.stop:
						w.Stop()
					}
					if !s.check {
						continue
					}
					select {
					case got := <-w.C():
						if s.wantFire.IsZero() {
							t.Fatalf("step %d (clock at +%v): C delivered %v, want nothing", i, time.Since(start), got.Sub(start))
						}
						if !got.Equal(s.wantFire) {
							t.Fatalf("step %d: C delivered +%v, want +%v", i, got.Sub(start), s.wantFire.Sub(start))
						}
					default:
						if !s.wantFire.IsZero() {
							t.Fatalf("step %d (clock at +%v): C delivered nothing, want a fire at +%v", i, time.Since(start), s.wantFire.Sub(start))
						}
					}
				}
			})
		})
	}
}

func TestWatchCIsStable(t *testing.T) {
	w := New(time.Minute, System())
	c := w.C()
	w.Touch()
	w.Stop()
	w.Touch()
	if w.C() != c {
		t.Fatal("C() changed across Touch and Stop; want one channel for the Watch's life")
	}
}

// TestWatchWithHubLoop drives a Watch the way the hub does: one goroutine
// owns it and selects on C and on inputs, while time passes outside.
func TestWatchWithHubLoop(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		inputs := make(chan chan struct{})
		resets := make(chan time.Time, 1)
		done := make(chan struct{})
		go func() {
			defer close(done)
			w := New(time.Minute, System())
			defer w.Stop()
			for {
				select {
				case ack := <-inputs:
					w.Touch()
					close(ack)
				case at := <-w.C():
					resets <- at
				case <-ctx.Done():
					return
				}
			}
		}()
		input := func() {
			ack := make(chan struct{})
			inputs <- ack
			<-ack
		}
		advance(time.Hour) // no input yet: nothing is armed
		select {
		case at := <-resets:
			t.Fatalf("reset at %v before any input", at)
		default:
		}
		t0 := time.Now()
		input()
		advance(59 * time.Second)
		input() // postpones to t0+1m59s
		advance(59 * time.Second)
		select {
		case at := <-resets:
			t.Fatalf("reset at +%v, want none before +1m59s", at.Sub(t0))
		default:
		}
		advance(time.Second)
		select {
		case at := <-resets:
			if want := t0.Add(119 * time.Second); !at.Equal(want) {
				t.Fatalf("reset fired at +%v, want +%v", at.Sub(t0), want.Sub(t0))
			}
		default:
			t.Fatal("no reset after the quiet period")
		}
		advance(time.Hour) // once per quiet period
		select {
		case at := <-resets:
			t.Fatalf("a second reset at +%v without input", at.Sub(t0))
		default:
		}
		cancel()
		<-done
	})
}

func TestWatchSystemClock(t *testing.T) {
	w := New(time.Millisecond, nil)
	defer w.Stop()
	w.Touch()
	select {
	case <-w.C():
	case <-time.After(10 * time.Second):
		t.Fatal("a 1ms Watch on the system clock did not fire within 10s")
	}
	w.Touch()
	w.Stop()
	select {
	case <-w.C():
		t.Fatal("C delivered after Stop")
	default:
	}
}

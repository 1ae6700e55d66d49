package idle

import (
	"context"
	"testing"
	"time"
)

var start = time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)

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
			clk := NewFake(start)
			w := New(tc.timeout, clk)
			if tc.timeout <= 0 && w.C() != nil {
				t.Fatalf("disabled Watch: C() = %v, want nil", w.C())
			}
			for i, s := range tc.steps {
				switch {
				case s.advance != 0:
					clk.Advance(s.advance)
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
						t.Fatalf("step %d (clock at +%v): C delivered %v, want nothing", i, clk.Now().Sub(start), got.Sub(start))
					}
					if !got.Equal(s.wantFire) {
						t.Fatalf("step %d: C delivered +%v, want +%v", i, got.Sub(start), s.wantFire.Sub(start))
					}
				default:
					if !s.wantFire.IsZero() {
						t.Fatalf("step %d (clock at +%v): C delivered nothing, want a fire at +%v", i, clk.Now().Sub(start), s.wantFire.Sub(start))
					}
				}
			}
		})
	}
}

func TestWatchCIsStable(t *testing.T) {
	w := New(time.Minute, NewFake(start))
	c := w.C()
	w.Touch()
	w.Stop()
	w.Touch()
	if w.C() != c {
		t.Fatal("C() changed across Touch and Stop; want one channel for the Watch's life")
	}
}

// TestWatchWithHubLoop drives a Watch the way the hub does: one goroutine
// owns it and selects on C and on inputs, while the test advances the clock
// from outside.
func TestWatchWithHubLoop(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	clk := NewFake(start)
	inputs := make(chan chan struct{})
	resets := make(chan time.Time)
	done := make(chan struct{})
	go func() {
		defer close(done)
		w := New(time.Minute, clk)
		defer w.Stop()
		for {
			select {
			case ack := <-inputs:
				w.Touch()
				close(ack)
			case at := <-w.C():
				select {
				case resets <- at:
				case <-ctx.Done():
					return
				}
			case <-ctx.Done():
				return
			}
		}
	}()
	input := func() {
		ack := make(chan struct{})
		select {
		case inputs <- ack:
		case <-ctx.Done():
			t.Fatal("hub loop did not take the input")
		}
		<-ack
	}
	if got := clk.Waiters(); got != 0 {
		t.Fatalf("Waiters before any input = %d, want 0", got)
	}
	input()
	if err := clk.BlockUntil(ctx, 1); err != nil {
		t.Fatalf("BlockUntil(1): %v", err)
	}
	clk.Advance(59 * time.Second)
	input() // postpones to +1m59s
	clk.Advance(59 * time.Second)
	select {
	case at := <-resets:
		t.Fatalf("reset at +%v, want none before +1m59s", at.Sub(start))
	default:
	}
	clk.Advance(time.Second)
	select {
	case at := <-resets:
		if want := start.Add(119 * time.Second); !at.Equal(want) {
			t.Fatalf("reset fired at +%v, want +%v", at.Sub(start), want.Sub(start))
		}
	case <-ctx.Done():
		t.Fatal("no reset after the quiet period")
	}
	if got := clk.Waiters(); got != 0 {
		t.Fatalf("Waiters after the fire = %d, want 0 (disarmed until the next Touch)", got)
	}
	cancel()
	<-done
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

func TestFake(t *testing.T) {
	clk := NewFake(start)
	a := clk.NewTimer(2 * time.Second)
	b := clk.NewTimer(time.Second)
	if got := clk.Waiters(); got != 2 {
		t.Fatalf("Waiters = %d, want 2", got)
	}
	clk.Advance(3 * time.Second)
	if got, want := <-b.C(), start.Add(time.Second); !got.Equal(want) {
		t.Fatalf("b fired with %v, want %v", got, want)
	}
	if got, want := <-a.C(), start.Add(2*time.Second); !got.Equal(want) {
		t.Fatalf("a fired with %v, want %v", got, want)
	}
	if got, want := clk.Now(), start.Add(3*time.Second); !got.Equal(want) {
		t.Fatalf("Now = %v, want %v", got, want)
	}
	if a.Stop() {
		t.Fatal("Stop of a fired timer = true, want false")
	}
	if a.Reset(time.Second) {
		t.Fatal("Reset of a fired timer = true, want false")
	}
	if !a.Reset(time.Second) {
		t.Fatal("Reset of an armed timer = false, want true")
	}
	if !a.Stop() {
		t.Fatal("Stop of an armed timer = false, want true")
	}
	clk.Advance(time.Hour)
	select {
	case v := <-a.C():
		t.Fatalf("stopped timer fired with %v", v)
	default:
	}
	z := clk.NewTimer(0)
	select {
	case <-z.C():
	default:
		t.Fatal("NewTimer(0) did not fire at once")
	}

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := clk.BlockUntil(ctx, 1); err == nil {
		t.Fatal("BlockUntil with no armed timer and a cancelled ctx returned nil")
	}
}

func TestFakeConcurrent(t *testing.T) {
	// Run under -race: Advance on one goroutine, Touch and BlockUntil on others.
	clk := NewFake(start)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	w := New(time.Second, clk)
	done := make(chan int)
	go func() {
		n := 0
		for range 1000 {
			w.Touch()
			select {
			case <-w.C():
				n++
			default:
			}
		}
		done <- n
	}()
	for range 1000 {
		clk.Advance(time.Second / 3)
	}
	select {
	case <-done:
	case <-ctx.Done():
		t.Fatal("toucher did not finish")
	}
	// The toucher has handed the Watch back; it must still work.
	w.Touch()
	at := clk.Now().Add(time.Second)
	clk.Advance(time.Second)
	select {
	case got := <-w.C():
		if !got.Equal(at) {
			t.Fatalf("fire at %v, want %v", got, at)
		}
	default:
		t.Fatal("no fire one timeout after the last Touch")
	}
}

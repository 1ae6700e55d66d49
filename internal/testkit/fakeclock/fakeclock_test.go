package fakeclock

import (
	"context"
	"testing"
	"time"

	"github.com/frontdesk-hq/frontdesk/idle"
)

var start = time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)

func TestFake(t *testing.T) {
	clk := New(start)
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
	clk := New(start)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	w := idle.New(time.Second, clk)
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

package ratelimit

import (
	"testing"
	"time"
)

func TestBucket(t *testing.T) {
	t0 := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	b := New(2, 3) // 3 at once, then one every 500 ms
	for i := range 3 {
		if ok, _ := b.Take(t0); !ok {
			t.Fatalf("take %d of the burst refused", i+1)
		}
	}
	ok, wait := b.Take(t0)
	if ok || wait != 500*time.Millisecond {
		t.Fatalf("take past the burst = %v, wait %v; want refused, wait 500ms", ok, wait)
	}
	if ok, wait := b.Take(t0.Add(200 * time.Millisecond)); ok || wait != 300*time.Millisecond {
		t.Fatalf("take after 200ms = %v, wait %v; want refused, wait 300ms", ok, wait)
	}
	if ok, _ := b.Take(t0.Add(500 * time.Millisecond)); !ok {
		t.Fatal("take after 500ms refused; want the refilled token")
	}
	// A long pause refills up to the burst, never beyond it.
	later := t0.Add(time.Hour)
	for i := range 3 {
		if ok, _ := b.Take(later); !ok {
			t.Fatalf("take %d after an hour refused", i+1)
		}
	}
	if ok, _ := b.Take(later); ok {
		t.Fatal("an hour's pause gave more than the burst")
	}
	// A clock that steps back gives nothing and takes nothing away.
	if ok, _ := b.Take(later.Add(-time.Minute)); ok {
		t.Fatal("a step back in time gave a token")
	}
}

func TestBucketDisabled(t *testing.T) {
	for name, b := range map[string]*Bucket{"rate 0": New(0, 1), "nil": nil} {
		for i := range 1000 {
			if ok, _ := b.Take(time.Time{}); !ok {
				t.Fatalf("%s: take %d refused; want no limit", name, i)
			}
		}
	}
}

func TestGiveReturnsATokenUpToTheBurst(t *testing.T) {
	t0 := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	b := New(1, 2)
	b.Take(t0)
	b.Take(t0)
	if ok, _ := b.Take(t0); ok {
		t.Fatal("a third take within the burst of 2")
	}
	b.Give()
	if ok, _ := b.Take(t0); !ok {
		t.Fatal("the token given back was not there")
	}
	b.Give()
	b.Give()
	b.Give()
	for i := range 2 {
		if ok, _ := b.Take(t0); !ok {
			t.Fatalf("take %d after giving back: refused", i+1)
		}
	}
	if ok, _ := b.Take(t0); ok {
		t.Fatal("giving back filled the bucket past its burst")
	}
}

package backoff

import (
	"testing"
	"time"
)

// TestNext: each wait lies in (cur/2, cur], cur doubling from Min and
// staying at Max; Reset starts again at Min.
func TestNext(t *testing.T) {
	b := Backoff{Min: 10 * time.Millisecond, Max: 70 * time.Millisecond}
	for i, cur := range []time.Duration{10, 20, 40, 70, 70} {
		cur *= time.Millisecond
		if d := b.Next(); d <= cur/2 || d > cur {
			t.Fatalf("wait %d = %v, want in (%v, %v]", i, d, cur/2, cur)
		}
	}
	b.Reset()
	if d := b.Next(); d > 10*time.Millisecond {
		t.Fatalf("after Reset: %v, want at most Min", d)
	}
}

// Package backoff is the wait between tries that every door uses after a
// failure: doubling from Min up to Max, each wait with up to half of it
// taken off at random, so that many clients do not retry in step.
package backoff

import (
	"math/rand/v2"
	"time"
)

// Backoff yields the waits of one run of failures. A new Backoff starts
// at Min; Reset after a success. Not safe for concurrent use.
type Backoff struct {
	Min, Max time.Duration
	cur      time.Duration
}

// Next returns the wait after one more failure.
func (b *Backoff) Next() time.Duration {
	switch {
	case b.cur == 0:
		b.cur = b.Min
	case b.cur < b.Max:
		b.cur *= 2
	}
	if b.cur > b.Max {
		b.cur = b.Max
	}
	half := int64(b.cur / 2)
	if half <= 0 {
		return b.cur
	}
	return b.cur - time.Duration(rand.Int64N(half))
}

// Reset starts a new run of failures at Min.
func (b *Backoff) Reset() { b.cur = 0 }

// Package ratelimit is a token bucket: the per-connection frame limit of
// the WebSocket channel and the webhook's process-wide request limit.
package ratelimit

import (
	"math"
	"time"
)

// Bucket holds up to Burst tokens and gains Rate tokens a second; each
// request takes one. The zero Bucket and one with Rate 0 allow everything.
// A Bucket is not safe for concurrent use: the WebSocket reader owns its
// connection's bucket, the webhook guards its one with a mutex.
type Bucket struct {
	rate   float64 // tokens per second; 0 means no limit
	burst  float64
	tokens float64
	last   time.Time
}

// New returns a full bucket. rate <= 0 disables the limit; burst < 1 is
// taken as 1.
func New(rate float64, burst int) *Bucket {
	b := &Bucket{rate: rate, burst: max(float64(burst), 1)}
	b.tokens = b.burst
	return b
}

// Take takes a token at now. When none is left it reports false and how
// long until one is: the wait a client should be told (Retry-After).
func (b *Bucket) Take(now time.Time) (ok bool, wait time.Duration) {
	if b == nil || b.rate <= 0 {
		return true, 0
	}
	if !b.last.IsZero() {
		if d := now.Sub(b.last); d > 0 {
			b.tokens = math.Min(b.burst, b.tokens+d.Seconds()*b.rate)
		}
	}
	if now.After(b.last) {
		b.last = now
	}
	if b.tokens >= 1 {
		b.tokens--
		return true, 0
	}
	return false, time.Duration(math.Ceil((1 - b.tokens) / b.rate * float64(time.Second)))
}

// Give returns a token taken for a request that did not count after all
// (the webhook's refusal while no node holds the lease), up to Burst.
func (b *Bucket) Give() {
	if b == nil || b.rate <= 0 {
		return
	}
	b.tokens = math.Min(b.burst, b.tokens+1)
}

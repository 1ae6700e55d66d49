//go:build goolm

package matrix

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/frontdesk-hq/frontdesk/hub"
	"github.com/frontdesk-hq/frontdesk/internal/testkit/testagent"
)

// BenchmarkRoundTrip: ann's message in an encrypted DM on a real
// Dendrite → the bot's first streamed words as ann's client reads them
// (first_ms), and → the final edit read by ann (final_ms; the agent
// finishes as soon as the first words are seen).
func BenchmarkRoundTrip(b *testing.B) {
	gate := testagent.NewGate()
	w := newWorld(b, hub.Config{}, gate)
	w.startDoor()
	ann := w.person("ann")
	room := ann.Room(w.bot, true)
	var first, final []float64
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		start := time.Now()
		text := fmt.Sprint("m", i)
		msg := ann.Say(room, text)
		wait(b, func() bool { _, ok := ann.ReplyTo(w.bot, msg); return ok })
		first = append(first, ms(time.Since(start)))
		gate.Release <- struct{}{}
		wait(b, func() bool { r, _ := ann.ReplyTo(w.bot, msg); return r.Last == "reply to "+text })
		final = append(final, ms(time.Since(start)))
		wait(b, func() bool { return turnEnds(w) == i+1 })
	}
	b.StopTimer()
	b.ReportMetric(pct(first, 50), "first_p50_ms")
	b.ReportMetric(pct(first, 95), "first_p95_ms")
	b.ReportMetric(pct(final, 50), "final_p50_ms")
	b.ReportMetric(pct(final, 95), "final_p95_ms")
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func pct(xs []float64, p int) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[(len(s)-1)*p/100]
}

// wait polls cond every millisecond, for up to 30 s.
func wait(b *testing.B, cond func() bool) {
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			b.Fatal("timed out")
		}
		time.Sleep(time.Millisecond)
	}
}

package ws_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/frontdesk-hq/frontdesk/event"
	"github.com/frontdesk-hq/frontdesk/internal/testkit/testagent"
)

// BenchmarkRoundTrip is the web door's round trip, the figure the chat
// doors' BenchmarkRoundTrip stand beside: a message written on a
// WebSocket → its first streamed words (first-ms) and → the complete reply
// (final-ms), with testagent.Stream (the first words at once, the rest
// after 5 ms).
func BenchmarkRoundTrip(b *testing.B) {
	s := startBenchFrontdesk(b, 1024, testagent.Stream{First: "Hello", Rest: " there.", Pause: 5 * time.Millisecond})
	defer s.close(b)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	c, _, err := websocket.Dial(ctx, s.url, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer c.CloseNow()
	next := func(want event.Type) {
		for {
			_, msg, err := c.Read(ctx)
			if err != nil {
				b.Fatal(err)
			}
			var e event.Event
			if json.Unmarshal(msg, &e) == nil && e.Type == want {
				return
			}
		}
	}
	next(event.Synced)
	var first, final []time.Duration
	i := 0
	for b.Loop() {
		i++
		start := time.Now()
		frame := fmt.Sprintf(`{"type":"message","content":"hi %d","client_msg_id":"rt-%d"}`, i, i)
		if err := c.Write(ctx, websocket.MessageText, []byte(frame)); err != nil {
			b.Fatal(err)
		}
		next(event.Delta)
		first = append(first, time.Since(start))
		next(event.Assistant)
		final = append(final, time.Since(start))
		next(event.TurnEnd)
	}
	reportRoundTrip(b, first, final)
}

func reportRoundTrip(b *testing.B, first, final []time.Duration) {
	for _, m := range []struct {
		name string
		d    []time.Duration
	}{{"first", first}, {"final", final}} {
		slices.Sort(m.d)
		b.ReportMetric(float64(m.d[len(m.d)/2])/1e6, m.name+"-p50-ms")
		b.ReportMetric(float64(m.d[len(m.d)*99/100])/1e6, m.name+"-p99-ms")
	}
}

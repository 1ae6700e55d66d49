package hub

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/frontdesk-hq/frontdesk/event"
	"github.com/frontdesk-hq/frontdesk/internal/testkit/testagent"
)

// BenchmarkRecentFromBuffer measures history_get_recent(20) when the
// buffer holds the events: a round trip through the hub's command loop,
// no disk. Reported as latency percentiles over 10,000 calls.
func BenchmarkRecentFromBuffer(b *testing.B) {
	var tail []event.Event
	ts := time.Now()
	for i := int64(1); i <= 5000; i++ {
		typ := []event.Type{event.User, event.Assistant, event.TurnEnd}[i%3]
		e := event.New(typ, fmt.Sprint("t", i), ts, event.TextData{Text: "x"})
		e.Seq = i
		tail = append(tail, e)
	}
	dir := b.TempDir()
	m := New(Config{DataDir: dir, Restore: tail}, failLog{}, testagent.NewGate())
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); m.Run(ctx) }()
	defer func() { cancel(); <-done }()

	const calls = 10000
	lat := make([]time.Duration, 0, calls)
	b.ResetTimer()
	for range b.N {
		lat = lat[:0]
		for range calls {
			t0 := time.Now()
			evs, err := m.Recent(ctx, 20)
			lat = append(lat, time.Since(t0))
			if err != nil || len(evs) != 20 {
				b.Fatalf("Recent(20) = %d events, %v", len(evs), err)
			}
		}
	}
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Nanoseconds())/1000, "p50-µs")
	b.ReportMetric(float64(lat[len(lat)*99/100].Nanoseconds())/1000, "p99-µs")
}

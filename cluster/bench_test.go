package cluster

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/frontdesk-hq/frontdesk/event"
	"github.com/frontdesk-hq/frontdesk/history"
)

// appendsPerRun is how many appends one run of BenchmarkAppendAck times.
const appendsPerRun = 2000

// BenchmarkAppendAck times one append until it is acknowledged, one at a
// time (as the hub appends), for the three ways a log can be durable:
// fsync is a single node's chat log with session.fsync: always; R1 is one
// embedded NATS node (every write synced, SyncAlways); R3 is three
// embedded nodes in this process on loopback, the ack meaning two of
// three have it (appended from n1, whichever node leads the stream).
// It reports the p50 and p99 in microseconds.
func BenchmarkAppendAck(b *testing.B) {
	e := event.New(event.User, "t1", time.Date(2026, 11, 25, 3, 0, 0, 0, time.UTC), event.UserData{Channel: event.ChannelWeb,
		Content: "What did I say about the quarterly report last Tuesday? " + strings.Repeat("word ", 20)})
	b.Run("fsync", func(b *testing.B) {
		l, err := history.Open(history.Options{Path: filepath.Join(b.TempDir(), "log.ndjson"), RotateMB: 64, Fsync: history.FsyncAlways})
		if err != nil {
			b.Fatal(err)
		}
		defer l.Close()
		timeAppends(b, e, func(e event.Event) error { return l.Append(e) })
	})
	b.Run("R1", func(b *testing.B) {
		n := startSingle(b)
		timeAppends(b, e, func(e event.Event) error { return n.Append(context.Background(), e) })
	})
	b.Run("R3", func(b *testing.B) {
		n := startCluster(b, 3, 1500*time.Millisecond)[0]
		timeAppends(b, e, func(e event.Event) error { return n.Append(context.Background(), e) })
	})
}

// timeAppends appends appendsPerRun events per iteration, seqs going on
// from run to run, and reports the latencies' p50 and p99.
func timeAppends(b *testing.B, e event.Event, appendOne func(event.Event) error) {
	var seq int64
	var lat []time.Duration
	for b.Loop() {
		for range appendsPerRun {
			seq++
			e.Seq = seq
			start := time.Now()
			if err := appendOne(e); err != nil {
				b.Fatal(err)
			}
			lat = append(lat, time.Since(start))
		}
	}
	slices.Sort(lat)
	pct := func(p float64) float64 { return float64(lat[int(p*float64(len(lat)-1))].Nanoseconds()) / 1e3 }
	b.ReportMetric(pct(0.50), "p50-µs")
	b.ReportMetric(pct(0.99), "p99-µs")
	b.ReportMetric(0, "ns/op")
}

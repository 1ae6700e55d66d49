package cluster

import (
	"context"
	"encoding/json"
	"runtime"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/frontdesk-hq/frontdesk/event"
)

// Benchmarks for `make bench` (-benchtime=1x): each iteration measures a
// whole run and reports the figures with b.ReportMetric.

const benchAppends = 2000

// appendLatencies appends benchAppends events through n one after another
// and reports the ack latency's percentiles.
func appendLatencies(b *testing.B, n *Node) {
	ctx := context.Background()
	next, err := n.LastSeq(ctx)
	if err != nil {
		b.Fatal(err)
	}
	ds := make([]time.Duration, 0, benchAppends*b.N)
	b.ResetTimer()
	for range b.N {
		for range benchAppends {
			next++
			e := ev(next, "a chat line of ordinary length, about as long as a short reply")
			start := time.Now()
			if err := n.Append(ctx, e); err != nil {
				b.Fatal(err)
			}
			ds = append(ds, time.Since(start))
		}
	}
	b.StopTimer()
	reportPercentiles(b, ds)
}

func reportPercentiles(b *testing.B, ds []time.Duration) {
	slices.Sort(ds)
	us := func(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }
	b.ReportMetric(us(ds[len(ds)/2]), "p50-µs")
	b.ReportMetric(us(ds[len(ds)*99/100]), "p99-µs")
	b.ReportMetric(us(ds[len(ds)-1]), "max-µs")
	var sum time.Duration
	for _, d := range ds {
		sum += d
	}
	b.ReportMetric(us(sum/time.Duration(len(ds))), "mean-µs")
}

// BenchmarkAppendR1 is the append ack on a single NATS node (R1, every
// write synced: SyncAlways).
func BenchmarkAppendR1(b *testing.B) {
	appendLatencies(b, startSingle(b))
}

// BenchmarkAppendR3 is the append ack on three embedded nodes in this
// process, through a node that does not lead the stream (the lease holder
// hands that leadership away), so each append crosses a route.
func BenchmarkAppendR3(b *testing.B) {
	nodes := startCluster(b, 3, 1500*time.Millisecond)
	appendLatencies(b, notStreamLeader(b, nodes))
}

func notStreamLeader(b *testing.B, nodes []*Node) *Node {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	info, err := nodes[0].stream.Info(ctx)
	if err != nil {
		b.Fatal(err)
	}
	for _, n := range nodes {
		if info.Cluster == nil || n.Name() != info.Cluster.Leader {
			return n
		}
	}
	return nodes[0]
}

const catchUpEvents = 100_000

// BenchmarkCatchUp100k is the time a node needs to read 100,000 events it
// missed (three nodes; the events are written with async publishes, then
// another node follows the log from the start).
func BenchmarkCatchUp100k(b *testing.B) {
	nodes := startCluster(b, 3, 1500*time.Millisecond)
	fillLog(b, nodes[0], catchUpEvents)
	b.ResetTimer()
	var took, cpu time.Duration
	for range b.N {
		cpu0 := cpuTime()
		ctx, cancel := context.WithCancel(context.Background())
		start := time.Now()
		var got int64
		err := nodes[2].Follow(ctx, 0, func(e event.Event) error {
			got++
			if e.Seq == catchUpEvents {
				cancel()
			}
			return nil
		})
		took += time.Since(start)
		cpu += cpuTime() - cpu0
		cancel()
		if err != nil || got != catchUpEvents {
			b.Fatalf("follow: %d events, %v", got, err)
		}
	}
	b.ReportMetric(float64(took.Milliseconds())/float64(b.N), "ms/100k")
	b.ReportMetric(float64(catchUpEvents*b.N)/took.Seconds(), "events/s")
	// CPU of the whole process (the three servers and the follower): on a
	// shared machine the wall time above mostly measures the others' load.
	b.ReportMetric(float64(cpu.Milliseconds())/float64(b.N), "cpu-ms/100k")
}

// cpuTime is this process's user + system CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// fillLog writes count events to the log with async publishes (the
// expectation is left out: this is set-up, not the append path).
func fillLog(b *testing.B, n *Node, count int) {
	ctx := context.Background()
	for seq := int64(1); seq <= int64(count); seq++ {
		e := ev(seq, "a chat line of ordinary length, about as long as a short reply")
		e.V = event.LogVersion
		data, _ := json.Marshal(e)
		if _, err := n.js.PublishAsync(LogSubject, data); err != nil {
			b.Fatal(err)
		}
		if seq%1000 == 0 {
			<-n.js.PublishAsyncComplete()
		}
	}
	<-n.js.PublishAsyncComplete()
	if last, err := n.LastSeq(ctx); err != nil || last != int64(count) {
		b.Fatalf("filled the log to %d, %v; want %d", last, err, count)
	}
}

// BenchmarkIdleNodeHeap is the Go heap an idle embedded cluster node
// holds: three nodes started in this process, campaigning, measured after
// a GC against the heap before them, divided by three. It is heap only
// (not RSS: goroutine stacks, the binary and the page cache are not in it).
func BenchmarkIdleNodeHeap(b *testing.B) {
	for range b.N {
		before := heapInUse()
		nodes := startCluster(b, 3, 1500*time.Millisecond)
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{}, len(nodes))
		for _, n := range nodes {
			go func() { n.Campaign(ctx, nil); done <- struct{}{} }()
		}
		waitFor(b, 10*time.Second, "a lease holder", func() bool {
			for _, n := range nodes {
				if n.Holder() == "" {
					return false
				}
			}
			return true
		})
		after := heapInUse()
		b.ReportMetric(float64(after-before)/3/1e6, "MB-heap/node")
		b.ReportMetric(float64(runtime.NumGoroutine())/3, "goroutines/node")
		cancel()
		for range nodes {
			<-done
		}
		for _, n := range nodes {
			n.Close()
		}
	}
}

func heapInUse() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapInuse
}

package agent

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"
)

// BenchmarkOpenAICancel measures how promptly cancelling a turn aborts its
// HTTP request. The in-process server streams one chunk and holds the
// stream open; once the first delta has arrived the turn's context is
// cancelled, and the handler notes when r.Context().Done() fires. Each
// iteration runs cancelSamples turns and reports, in microseconds:
//
//	server-p50-µs, server-p99-µs, server-max-µs  cancel → the server sees the request end
//	return-p50-µs, return-p99-µs                 cancel → Run has returned context.Canceled
//
// It runs quickly with -benchtime=1x (make bench).
func BenchmarkOpenAICancel(b *testing.B) {
	const cancelSamples = 200
	f := newFakeOpenAI(b)
	o, _ := newTestOpenAI(b, f.URL(), nil)
	var seen, returned []time.Duration
	for b.Loop() {
		for range cancelSamples {
			f.push(fakeReply{sse: "openai_slow.sse", hold: true})
			rec := newRecorder()
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() {
				_, err := o.Run(ctx, Request{Turn: "t1", Content: "x"}, rec.emit)
				done <- err
			}()
			select {
			case <-rec.deltas:
			case <-time.After(5 * time.Second):
				b.Fatal("no delta")
			}
			start := time.Now()
			cancel()
			var ret time.Duration
			select {
			case err := <-done:
				ret = time.Since(start)
				if !errors.Is(err, context.Canceled) {
					b.Fatalf("Run returned %v, want context.Canceled", err)
				}
			case <-time.After(5 * time.Second):
				b.Fatal("Run did not return after cancel")
			}
			select {
			case at := <-f.gone:
				seen = append(seen, at.Sub(start))
			case <-time.After(5 * time.Second):
				b.Fatal("the server never saw the request end")
			}
			returned = append(returned, ret)
		}
	}
	pct := func(d []time.Duration, p float64) float64 {
		s := slices.Clone(d)
		slices.Sort(s)
		return float64(s[int(p*float64(len(s)-1))]) / float64(time.Microsecond)
	}
	b.ReportMetric(pct(seen, 0.50), "server-p50-µs")
	b.ReportMetric(pct(seen, 0.99), "server-p99-µs")
	b.ReportMetric(pct(seen, 1), "server-max-µs")
	b.ReportMetric(pct(returned, 0.50), "return-p50-µs")
	b.ReportMetric(pct(returned, 0.99), "return-p99-µs")
}

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/frontdesk-hq/frontdesk/event"
)

// BenchmarkClusterFanout: 1,000 WebSocket watchers spread over the three
// nodes of a cluster (three frontdesk processes), five turns sent through
// the webhook; for every persisted event each watcher gets, the lag from
// the event's time on the holder (all on one machine: one clock) to the
// watcher reading it. Reports p50, p99 and max over all deliveries.
func BenchmarkClusterFanout(b *testing.B) {
	const watchers, turns = 1000, 5
	// The demo's default pace (30 ms a word, as a model streams).
	c := newTestCluster(b, clusterOpts{extra: "agent: {demo: {delay_ms: 30}}\nserver: {max_clients: 1000}\nchannels: {webhook: {rate_per_sec: 1000, rate_burst: 1000}}\n"})
	h := c.holder()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	var (
		mu   sync.Mutex
		lags []time.Duration
		wg   sync.WaitGroup
	)
	ready := make(chan struct{}, watchers)
	for i := range watchers {
		url := "ws" + strings.TrimPrefix(c.nodes[i%3].p.url, "http") + "/ws"
		conn, _, err := websocket.Dial(ctx, url, nil)
		if err != nil {
			b.Fatalf("watcher %d: %v", i, err)
		}
		conn.SetReadLimit(1 << 20)
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer conn.CloseNow()
			var mine []time.Duration
			ends := 0
			for {
				_, data, err := conn.Read(ctx)
				if err != nil {
					return
				}
				var e event.Event
				if json.Unmarshal(data, &e) != nil {
					continue
				}
				if e.Type == event.Synced {
					ready <- struct{}{}
					continue
				}
				if e.Seq == 0 {
					continue
				}
				mine = append(mine, time.Since(e.TS.Std()))
				if e.Type == event.TurnEnd {
					ends++
				}
				if ends == turns {
					mu.Lock()
					lags = append(lags, mine...)
					mu.Unlock()
					return
				}
			}
		}()
	}
	for range watchers {
		<-ready
	}
	b.ResetTimer()
	for k := range turns {
		code, body, err := c.postInput(h, fmt.Sprint("fan-out turn ", k), fmt.Sprint("fan-", k), true)
		if err != nil || code != 200 {
			b.Fatalf("turn %d: %d %s %v", k, code, body, err)
		}
	}
	wg.Wait()
	b.StopTimer()
	slices.Sort(lags)
	q := func(p float64) float64 { return lags[min(len(lags)-1, int(p*float64(len(lags))))].Seconds() * 1000 }
	b.ReportMetric(float64(len(lags)), "deliveries")
	b.ReportMetric(q(0.5), "p50_ms")
	b.ReportMetric(q(0.99), "p99_ms")
	b.ReportMetric(lags[len(lags)-1].Seconds()*1000, "max_ms")
}

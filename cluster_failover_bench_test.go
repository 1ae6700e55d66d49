package main

import (
	"os"
	"slices"
	"strconv"
	"testing"
	"time"
)

// BenchmarkClusterFailover kills the lease holder of three frontdesk
// processes with SIGKILL FRONTDESK_CLUSTER_KILLS times (default 20) and
// measures, each time, from the kill to a new input answered by a node
// (a webhook POST to a surviving node, tried every few milliseconds, each
// try bounded to 1 s). The killed node is restarted and caught up before
// the next kill (README "Run on several machines": what fails over).
func BenchmarkClusterFailover(b *testing.B) {
	kills := 20
	if v, err := strconv.Atoi(os.Getenv("FRONTDESK_CLUSTER_KILLS")); err == nil && v > 0 {
		kills = v
	}
	c := newTestCluster(b, "channels: {webhook: {rate_per_sec: 1000, rate_burst: 1000}}\n")
	in := newInputs(c)
	var took []time.Duration
	for b.Loop() {
		for range kills {
			h := c.holder()
			in.setUp(h, false)
			t0 := time.Now()
			c.kill(h)
			took = append(took, in.probe(b).Sub(t0))
			c.start(h)
			in.setUp(h, true)
			c.settled(h)
		}
	}
	slices.Sort(took)
	q := func(p float64) float64 { return took[min(len(took)-1, int(p*float64(len(took))))].Seconds() }
	b.ReportMetric(q(0.5), "p50_s")
	b.ReportMetric(q(0.9), "p90_s")
	b.ReportMetric(q(0.99), "p99_s")
	b.ReportMetric(took[len(took)-1].Seconds(), "max_s")
	b.Logf("kill → a new input answered, %d kills: %v", len(took), took)
}

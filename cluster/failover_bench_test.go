package cluster

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"
)

// BenchmarkFailover kills the lease holder of a three-node embedded cluster
// again and again (its server shut down without letting go of the lease,
// then restarted on its store directory), and measures from the kill to
// the new holder's first successful append. FRONTDESK_FAILOVER_KILLS sets
// the kills per iteration (default 20).
func BenchmarkFailover(b *testing.B) {
	kills := 20
	if v, err := strconv.Atoi(os.Getenv("FRONTDESK_FAILOVER_KILLS")); err == nil && v > 0 {
		kills = v
	}
	cfgs := clusterConfigs(b, 3, 1500*time.Millisecond)
	fc := &failoverCluster{cfgs: cfgs, nodes: startNodes(b, cfgs), stops: make([]context.CancelFunc, 3)}
	for i := range fc.nodes {
		fc.campaign(i)
	}
	b.Cleanup(fc.stopAll)
	var ds []time.Duration
	leading := 0 // kills where the holder still led a Raft group
	b.ResetTimer()
	for range b.N * kills {
		d, led := fc.killHolder(b)
		ds = append(ds, d)
		if led {
			leading++
		}
	}
	b.StopTimer()
	reportFailover(b, ds)
	b.ReportMetric(float64(leading), "kills-holder-led-a-group")
}

type failoverCluster struct {
	cfgs  []Config
	nodes []*Node
	stops []context.CancelFunc
	wg    sync.WaitGroup
}

func (fc *failoverCluster) campaign(i int) {
	ctx, cancel := context.WithCancel(context.Background())
	fc.stops[i] = cancel
	n := fc.nodes[i]
	fc.wg.Go(func() { n.Campaign(ctx, nil) })
}

func (fc *failoverCluster) stopAll() {
	for _, s := range fc.stops {
		s()
	}
	fc.wg.Wait()
	for _, n := range fc.nodes {
		n.Close()
	}
}

// killHolder waits for a holder whose peers follow it and for its Raft
// hand-off (at most 10 s), kills it, waits for the first append through a
// new holder, and restarts the killed node. It returns the time from the
// kill to that append and whether the holder still led a group.
func (fc *failoverCluster) killHolder(b *testing.B) (time.Duration, bool) {
	holder := -1
	waitFor(b, 20*time.Second, "a holder the others follow", func() bool {
		holder = -1
		for i, n := range fc.nodes {
			if r, _ := n.Role(); r == Leader {
				holder = i
			}
		}
		if holder < 0 {
			return false
		}
		for i, n := range fc.nodes {
			if i != holder && n.Holder() != fc.nodes[holder].Name() {
				return false
			}
		}
		return true
	})
	h := fc.nodes[holder]
	led := !handedOff(h, 10*time.Second)

	killed := time.Now()
	h.Close()
	fc.stops[holder]()
	var took time.Duration
	waitFor(b, 30*time.Second, "an append through a new holder", func() bool {
		for i, n := range fc.nodes {
			if r, _ := n.Role(); i == holder || r != Leader {
				continue
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			last, err := n.LastSeq(ctx)
			if err == nil {
				err = n.Append(ctx, ev(last+1, "after a kill"))
			}
			cancel()
			if err == nil {
				took = time.Since(killed)
				return true
			}
		}
		return false
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	n, err := Start(ctx, fc.cfgs[holder], testLogger)
	if err != nil {
		b.Fatalf("restart %s: %v", fc.cfgs[holder].Node, err)
	}
	fc.nodes[holder] = n
	fc.campaign(holder)
	return took, led
}

// handedOff waits up to d until h leads neither the log stream nor the
// lease bucket.
func handedOff(h *Node, d time.Duration) bool {
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		ok := true
		for _, s := range []string{LogStream, "KV_" + LeaseBucket} {
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			st, err := h.js.Stream(ctx, s)
			cancel()
			if err != nil || st.CachedInfo().Cluster == nil || st.CachedInfo().Cluster.Leader == h.Name() ||
				st.CachedInfo().Cluster.Leader == "" {
				ok = false
			}
		}
		if ok {
			return true
		}
		time.Sleep(50 * time.Millisecond)
	}
	return false
}

func reportFailover(b *testing.B, ds []time.Duration) {
	sorted := append([]time.Duration(nil), ds...)
	slices.Sort(sorted)
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	b.ReportMetric(ms(sorted[len(sorted)/2]), "p50-ms")
	b.ReportMetric(ms(sorted[len(sorted)*9/10]), "p90-ms")
	b.ReportMetric(ms(sorted[len(sorted)-1]), "max-ms")
	b.Logf("kill → first append by the new holder, %d kills: %v", len(ds), fmt.Sprint(ds))
}

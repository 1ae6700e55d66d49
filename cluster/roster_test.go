package cluster

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// TestRosterAlive: three nodes list each other with their URLs, alive; a
// node that dies without a word (its connection and server closed) is
// listed not alive within aliveFor, one that stops says so at once.
func TestRosterAlive(t *testing.T) {
	nodes := startCluster(t, 3, 1500*time.Millisecond)
	rosters := make([]*Roster, len(nodes))
	stops := make([]context.CancelFunc, len(nodes))
	for i, n := range nodes {
		ctx, cancel := context.WithCancel(context.Background())
		stops[i] = cancel
		rosters[i] = NewRoster(n, fmt.Sprintf("http://127.0.0.1:%d", 8081+i))
		done := make(chan struct{})
		go func() { defer close(done); rosters[i].Run(ctx) }()
		t.Cleanup(func() { cancel(); <-done })
	}
	state := func(r *Roster) string {
		s := ""
		for _, m := range r.Members() {
			s += fmt.Sprintf("%s=%s,%v ", m.Name, m.URL, m.Alive)
		}
		return s
	}
	all := ""
	for i, n := range nodes {
		all += fmt.Sprintf("%s=http://127.0.0.1:%d,true ", n.Name(), 8081+i)
	}
	waitFor(t, 5*time.Second, "every node alive with its URL", func() bool { return state(rosters[0]) == all })

	// A dead node (no goodbye): not alive once its announcements stop.
	start := time.Now()
	nodes[2].Close()
	want := fmt.Sprintf("%s=http://127.0.0.1:8081,true %s=http://127.0.0.1:8082,true %s=http://127.0.0.1:8083,false ",
		nodes[0].Name(), nodes[1].Name(), nodes[2].Name())
	waitFor(t, 2*aliveFor, "the killed node listed not alive, its URL kept", func() bool { return state(rosters[0]) == want })
	if d := time.Since(start); d < aliveFor-announceEvery {
		t.Errorf("the killed node was not alive after %v, before three announcements could be missed", d)
	}

	// A node that stops says so: not alive at once.
	start = time.Now()
	stops[1]()
	waitFor(t, time.Second, "the stopped node listed not alive", func() bool {
		m := rosters[0].Members()
		return len(m) == 3 && !m[1].Alive
	})
	if d := time.Since(start); d > 900*time.Millisecond {
		t.Errorf("a stopping node was listed alive for %v", d)
	}
}

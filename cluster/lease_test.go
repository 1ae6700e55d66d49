package cluster

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"
)

// campaigns runs Campaign on each node until the test ends (or its stop
// func is called) and records what each node saw.
type campaigns struct {
	mu    sync.Mutex
	seen  map[string][]string // node → "role holder" changes
	stops map[string]context.CancelFunc
	wg    sync.WaitGroup
}

func campaign(t *testing.T, nodes []*Node) *campaigns {
	c := &campaigns{seen: map[string][]string{}, stops: map[string]context.CancelFunc{}}
	for _, n := range nodes {
		ctx, cancel := context.WithCancel(context.Background())
		c.stops[n.Name()] = cancel
		c.wg.Go(func() {
			n.Campaign(ctx, func(r Role, holder string) {
				c.mu.Lock()
				c.seen[n.Name()] = append(c.seen[n.Name()], r.String()+" "+holder)
				c.mu.Unlock()
			})
		})
	}
	t.Cleanup(func() {
		for _, stop := range c.stops {
			stop()
		}
		c.wg.Wait()
	})
	return c
}

// agreed waits until exactly one of nodes is Leader and the others follow
// it, and returns the holder.
func agreed(t *testing.T, nodes []*Node, d time.Duration) *Node {
	t.Helper()
	var holder *Node
	waitFor(t, d, "one holder that the others follow", func() bool {
		holder = nil
		for _, n := range nodes {
			if r, _ := n.Role(); r == Leader {
				if holder != nil {
					return false
				}
				holder = n
			}
		}
		if holder == nil {
			return false
		}
		for _, n := range nodes {
			if r, _ := n.Role(); n != holder && (r != Follower || n.Holder() != holder.Name()) {
				return false
			}
		}
		return true
	})
	return holder
}

// Requests from every node are answered by the holder alone; when the
// holder lets go, another node takes over and answers, and the old one
// stops serving at once.
func testForwarding(t *testing.T, nodes []*Node) {
	c := campaign(t, nodes)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	for _, n := range nodes {
		go func() { _ = n.Serve(ctx, "input", echo(n)) }()
	}
	holder := agreed(t, nodes, 10*time.Second)
	for _, n := range nodes {
		if got := n.Nodes(); len(got) != 3 {
			waitFor(t, 3*time.Second, "three known nodes", func() bool { return len(n.Nodes()) == 3 })
		}
	}
	ask := func(from *Node, what string) (string, error) {
		rctx, rcancel := context.WithTimeout(ctx, 2*time.Second)
		defer rcancel()
		b, err := from.Request(rctx, "input", []byte(what))
		return string(b), err
	}
	for _, n := range nodes {
		var got string
		// The holder's subscription reaches the other servers' routes
		// asynchronously; a request before that finds no responder.
		waitFor(t, 3*time.Second, "an answer via "+n.Name(), func() bool {
			var err error
			got, err = ask(n, "hi")
			return err == nil
		})
		if want := holder.Name() + ":hi"; got != want {
			t.Errorf("request via %s: got %q, want %q", n.Name(), got, want)
		}
	}
	var re *RemoteError
	if _, err := ask(nodes[0], "fail"); !errors.As(err, &re) || re.Msg != "handler failed" {
		t.Errorf("failing handler: got %v, want RemoteError \"handler failed\"", err)
	}

	// The holder lets go (a planned stop releases the lease).
	c.stops[holder.Name()]()
	var rest []*Node
	for _, n := range nodes {
		if n != holder {
			rest = append(rest, n)
		}
	}
	start := time.Now()
	next := agreed(t, rest, 5*time.Second)
	t.Logf("takeover after a release: %v", time.Since(start))
	if r, _ := holder.Role(); r == Leader {
		t.Error("the old holder still says Leader")
	}
	waitFor(t, 3*time.Second, "an answer from the new holder", func() bool {
		got, err := ask(holder, "again")
		return err == nil && got == next.Name()+":again"
	})
}

// When the holder dies without letting go, the lease expires and another
// node takes over; the holder had handed the Raft leadership of the lease
// bucket and the log away, so the new holder appends at once.
func TestLeaseFailover(t *testing.T) {
	nodes := startCluster(t, 3, 1500*time.Millisecond)
	campaign(t, nodes)
	holder := agreed(t, nodes, 10*time.Second)
	// Wait for the hand-off of both groups' leadership.
	waitFor(t, 10*time.Second, "log and lease leaders away from the holder", func() bool {
		for _, s := range []string{LogStream, "KV_" + LeaseBucket} {
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			st, err := holder.js.Stream(ctx, s)
			cancel()
			if err != nil {
				return false
			}
			ci := st.CachedInfo().Cluster
			if ci == nil || ci.Leader == "" || ci.Leader == holder.Name() {
				return false
			}
		}
		return true
	})
	ctx := context.Background()
	last, err := holder.LastSeq(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := holder.Append(ctx, ev(last+1, "before")); err != nil {
		t.Fatal(err)
	}

	killed := time.Now()
	holder.Close() // the server goes; its Campaign can no longer renew
	var rest []*Node
	for _, n := range nodes {
		if n != holder {
			rest = append(rest, n)
		}
	}
	var took time.Duration
	var next *Node
	waitFor(t, 8*time.Second, "a new holder", func() bool {
		for _, n := range rest {
			if r, _ := n.Role(); r == Leader {
				took, next = time.Since(killed), n
				return true
			}
		}
		return false
	})
	if err := next.Append(ctx, ev(last+2, "after")); err != nil {
		t.Fatalf("the new holder's first append: %v", err)
	}
	appended := time.Since(killed)
	if got := agreed(t, rest, 8*time.Second); got != next {
		t.Fatalf("the holder changed again: %s, then %s", next.Name(), got.Name())
	}
	t.Logf("failover: new holder %v, its first append %v, the others follow it %v", took, appended, time.Since(killed))
	if took > 4*time.Second {
		t.Errorf("failover took %v, want about the lease TTL (1.5 s)", took)
	}
	if r, _ := holder.Role(); r == Leader {
		t.Error("the dead holder still says Leader")
	}
	if h := holder.Holder(); strings.Contains(h, holder.Name()) {
		t.Errorf("the dead holder still names itself holder: %q", h)
	}
}

// Leased is true for the holder while its last renewal is recent, false
// for the followers, and false for a holder whose renewals stopped longer
// ago than the lease (a paused process, by its monotonic clock) — even
// while its role still says Leader.
func TestLeasedByTheHoldersOwnClock(t *testing.T) {
	nodes := startCluster(t, 3, 600*time.Millisecond)
	campaign(t, nodes)
	h := agreed(t, nodes, 20*time.Second)
	waitFor(t, 5*time.Second, "the holder to say it is leased", h.Leased)
	for _, n := range nodes {
		if n != h && n.Leased() {
			t.Fatalf("follower %s says it holds the lease", n.Name())
		}
	}
	// As after a pause: the last renewal was sent a lease time ago. (A
	// renewal landing between the two steps sets it anew: try again.)
	for try := 0; ; try++ {
		old := time.Now().Add(-h.cfg.LeaseTTL)
		h.mu.Lock()
		h.leasedAt = old
		h.mu.Unlock()
		leased := h.Leased()
		h.mu.Lock()
		renewed := !h.leasedAt.Equal(old)
		h.mu.Unlock()
		if !leased {
			return
		}
		if !renewed || try == 20 {
			t.Fatal("a holder whose last renewal is a lease time old says it is leased")
		}
	}
}

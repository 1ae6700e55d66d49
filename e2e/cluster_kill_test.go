package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/frontdesk-hq/frontdesk/event"
)

// inputs sends a stream of inputs through the webhooks of the running
// nodes, at random, and records what each answer said.
type inputs struct {
	c       *testCluster
	mu      sync.Mutex
	up      []bool
	acked   map[string]int64 // id → the seq its 202 named
	refused map[string]int   // id → status (busy, no_leader): must not be stored
	unknown map[string]bool  // no answer (the node died): stored at most once
	n       int
}

func newInputs(c *testCluster) *inputs {
	return &inputs{c: c, up: []bool{true, true, true}, acked: map[string]int64{}, refused: map[string]int{}, unknown: map[string]bool{}}
}

func (in *inputs) setUp(i int, up bool) {
	in.mu.Lock()
	defer in.mu.Unlock()
	in.up[i] = up
}

// run sends until ctx ends.
func (in *inputs) run(ctx context.Context, rng *rand.Rand) {
	for ctx.Err() == nil {
		in.mu.Lock()
		var live []int
		for i, u := range in.up {
			if u {
				live = append(live, i)
			}
		}
		in.n++
		id := fmt.Sprint("k-", in.n)
		in.mu.Unlock()
		if len(live) > 0 {
			in.send(live[rng.IntN(len(live))], id)
		}
		select {
		case <-ctx.Done():
		case <-time.After(20 * time.Millisecond):
		}
	}
}

func (in *inputs) send(node int, id string) {
	in.mu.Lock()
	p := in.c.nodes[node].p
	in.mu.Unlock()
	if p == nil {
		return
	}
	code, body, err := in.c.postInputTo(p.url, "input "+id, id)
	in.record(id, code, body, err)
}

// record files an answer: acknowledged (202, with its seq), refused (not
// stored: busy, no leader, rate-limited) or unknown (no answer, or
// no_answer: the holder may have taken it as it died).
func (in *inputs) record(id string, code int, body []byte, err error) {
	in.mu.Lock()
	defer in.mu.Unlock()
	switch {
	case err != nil:
		in.unknown[id] = true
	case code == http.StatusAccepted:
		var r struct{ Seq int64 }
		_ = json.Unmarshal(body, &r)
		in.acked[id] = r.Seq
	case code == http.StatusServiceUnavailable && strings.Contains(string(body), `"no_answer"`):
		in.unknown[id] = true
	case code == http.StatusConflict || code == http.StatusServiceUnavailable || code == http.StatusTooManyRequests:
		in.refused[id] = code
	default:
		in.unknown[id] = true
	}
}

// probe sends fresh inputs through the running nodes, one after another,
// until one is answered by a holder (accepted, or refused as busy: either
// way a node runs the session), and returns when. Each try waits at most
// a second, so one sent to a holder as it dies does not hold it up.
func (in *inputs) probe(t testing.TB) time.Time {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for i := 0; time.Now().Before(deadline); i++ {
		in.mu.Lock()
		in.n++
		id := fmt.Sprint("probe-", in.n)
		var urls []string
		for j, u := range in.up {
			if p := in.c.nodes[j].p; u && p != nil {
				urls = append(urls, p.url)
			}
		}
		in.mu.Unlock()
		if len(urls) == 0 {
			t.Fatal("no node is up")
		}
		code, body, err := in.c.postInputTimeout(urls[i%len(urls)], "input "+id, id, time.Second)
		in.record(id, code, body, err)
		if err == nil && (code == http.StatusAccepted || code == http.StatusConflict) {
			return time.Now()
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatal("no input was answered within 30 s of the kill")
	return time.Time{}
}

// watcher follows the stream over WebSocket from seq 0, moving to another
// node with since=<its last seq> when its node dies; it counts the
// persisted events it is shown.
type watcher struct {
	c     *testCluster
	mu    sync.Mutex
	last  int64
	seen  map[int64]int
	moves int
	url   string
	trail []string // each connection: node, since, first and last seq seen
}

func (w *watcher) run(ctx context.Context, start int) {
	node := start
	for ctx.Err() == nil {
		w.c.nodesMu.Lock()
		p := w.c.nodes[node].p
		w.c.nodesMu.Unlock()
		if p != nil {
			w.follow(ctx, p.url)
		}
		node = (node + 1) % len(w.c.nodes)
		select {
		case <-ctx.Done():
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func (w *watcher) follow(ctx context.Context, url string) {
	w.mu.Lock()
	since := w.last
	w.moves++
	w.url = url
	w.mu.Unlock()
	c, _, err := websocket.Dial(ctx, fmt.Sprintf("ws%s/ws?since=%d", url[len("http"):], since), nil)
	if err != nil {
		return
	}
	var first int64
	defer func() {
		w.mu.Lock()
		w.trail = append(w.trail, fmt.Sprintf("%s since=%d first=%d last=%d", url, since, first, w.last))
		w.mu.Unlock()
	}()
	defer c.CloseNow()
	c.SetReadLimit(1 << 20)
	for {
		_, b, err := c.Read(ctx)
		if err != nil {
			return
		}
		var e event.Event
		if json.Unmarshal(b, &e) != nil || e.Seq == 0 {
			continue
		}
		w.mu.Lock()
		if first == 0 {
			first = e.Seq
		}
		w.seen[e.Seq]++
		w.last = max(w.last, e.Seq)
		w.mu.Unlock()
	}
}

func (w *watcher) reached(t *testing.T, seq int64) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		w.mu.Lock()
		last := w.last
		w.mu.Unlock()
		if last >= seq {
			return
		}
		if time.Now().After(deadline) {
			var at []string
			for i := range w.c.nodes {
				s, err := w.c.session(i)
				at = append(at, fmt.Sprintf("%s: last_seq %d, %d clients (%v)", w.c.nodes[i].name, s.LastSeq, s.Subscribers, err))
			}
			t.Fatalf("the watcher (on %s) reached seq %d, not %d, within 30 s; nodes: %v", w.url, last, seq, at)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestClusterKill9OfTheHolder kills the lease holder with SIGKILL again
// and again (and a follower once) while inputs arrive on random nodes,
// restarting each killed node. Every acknowledged input is in every
// node's log exactly once, the logs are the same, each cut turn is closed
// interrupted, no refused input is stored, and a watcher that moves to
// another node with since sees every event once.
func TestClusterKill9OfTheHolder(t *testing.T) {
	if testing.Short() {
		t.Skip("kills and restarts three processes")
	}
	rounds := 4
	if v, err := strconv.Atoi(os.Getenv("FRONTDESK_CLUSTER_KILLS")); err == nil && v > 0 {
		rounds = v
	}
	c := newTestCluster(t, clusterOpts{extra: "channels: {webhook: {rate_per_sec: 1000, rate_burst: 1000}}\n"})
	c.holder()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	in := newInputs(c)
	rng := rand.New(rand.NewPCG(2, uint64(time.Now().UnixNano())))
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	w := &watcher{c: c, seen: map[int64]int{}}
	// Several senders: one whose request the dying holder took with it
	// waits out its deadline while the others go on.
	for k := range 4 {
		wg.Add(1)
		go func() { defer wg.Done(); in.run(ctx, rand.New(rand.NewPCG(3, uint64(k)))) }()
	}
	wg.Add(1)
	wctx, stopWatcher := context.WithCancel(context.Background())
	defer stopWatcher()
	go func() { defer wg.Done(); w.run(wctx, 0) }()

	var failovers []time.Duration
	for r := range rounds + 1 {
		h := c.holder()
		victim := h
		if r == rounds {
			victim = (h + 1) % 3 // a follower, last
		}
		time.Sleep(time.Duration(200+rng.IntN(500)) * time.Millisecond)
		in.setUp(victim, false)
		t0 := time.Now()
		c.nodesMu.Lock()
		c.kill(victim)
		c.nodesMu.Unlock()
		if victim == h {
			failovers = append(failovers, in.probe(t).Sub(t0))
		}
		c.nodesMu.Lock()
		c.start(victim)
		c.nodesMu.Unlock()
		in.setUp(victim, true)
		c.settled(victim)
	}
	cancel() // the senders stop; the watcher goes on to the end
	s := c.idle()
	c.caughtUp(s.LastSeq)
	log := c.sameLogs()
	w.reached(t, s.LastSeq)
	stopWatcher()
	wg.Wait()
	sort.Slice(failovers, func(i, j int) bool { return failovers[i] < failovers[j] })
	t.Logf("kill of the holder to the next acknowledged input: %v", failovers)
	checkKilledLog(t, log, in)
	bad := 0
	for seq := int64(1); seq <= s.LastSeq; seq++ {
		if n := w.seen[seq]; n != 1 {
			bad++
			if bad <= 5 {
				t.Errorf("the watcher saw seq %d %d times (it moved %d times)", seq, n, w.moves)
			}
		}
	}
	if bad > 0 {
		t.Errorf("%d seqs seen other than once; the watcher's connections: %v", bad, w.trail)
	}
}

// checkKilledLog: acknowledged inputs once at their seq, refused ones
// never, unknown ones at most once; every turn ends once.
func checkKilledLog(t *testing.T, log []event.Event, in *inputs) {
	t.Helper()
	byID := map[string][]int64{}
	ends := map[string]int{}
	started := map[string]bool{}
	for _, e := range log {
		switch e.Type {
		case event.User:
			byID[userData(e).ClientMsgID] = append(byID[userData(e).ClientMsgID], e.Seq)
			started[e.Turn] = true
		case event.TurnEnd:
			ends[e.Turn]++
			if d := turnEnd(e); d.Status == event.StatusInterrupted && d.Error != "the node running this reply stopped or lost the lease; another node took over" {
				t.Errorf("turn %s interrupted: %q", e.Turn, d.Error)
			}
		}
	}
	for id, seq := range in.acked {
		if got := byID[id]; len(got) != 1 || got[0] != seq {
			t.Errorf("acknowledged %s (seq %d) is in the log at %v", id, seq, got)
		}
	}
	for id, code := range in.refused {
		if got := byID[id]; len(got) != 0 {
			t.Errorf("%s was refused (%d) but is in the log at %v", id, code, got)
		}
	}
	for id := range in.unknown {
		if got := byID[id]; len(got) > 1 {
			t.Errorf("%s is in the log %d times", id, len(got))
		}
	}
	for turn := range started {
		if ends[turn] != 1 {
			t.Errorf("turn %s has %d turn_ends", turn, ends[turn])
		}
	}
	t.Logf("%d inputs acknowledged, %d refused, %d unanswered; %d events", len(in.acked), len(in.refused), len(in.unknown), len(log))
}

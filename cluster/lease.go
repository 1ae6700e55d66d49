package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// Role is what this node does in the cluster.
type Role int

// Roles. The zero value is Electing: nobody is known to hold the lease.
const (
	// Electing: no node is known to hold the lease (it expired, or this
	// node cannot reach the lease bucket).
	Electing Role = iota
	// Leader: this node holds the lease and runs the turns.
	Leader
	// Follower: another node holds the lease; this one forwards to it.
	Follower
)

// String returns "electing", "leader" or "follower", as in /api/session.
func (r Role) String() string {
	switch r {
	case Leader:
		return "leader"
	case Follower:
		return "follower"
	}
	return "electing"
}

// Health gates for handing a Raft leadership to another peer: a stepdown
// towards a peer that just died left the group leaderless for seconds.
// PeerInfo.Current flickers after each refresh, so it is not used.
const (
	healthyActive = time.Second
	healthyLag    = 5
	handoffEvery  = 500 * time.Millisecond
)

// Campaign takes part in the lease election until ctx ends. It tries to
// create the lease key with this node's name; the holder renews it by
// compare-and-swap every LeaseTTL/3, and the others read it as often, so
// they learn the holder and take over within about LeaseTTL of the
// holder's last renewal. A renewal that fails (another holder, a timeout)
// makes this node Electing at once, before the lease could expire.
//
// fn is called on Campaign's goroutine whenever the role or the holder
// changes (holder "" while electing); it must return quickly. While it
// holds the lease, the node also moves the Raft leadership of the lease
// bucket and the log stream to a healthy other peer, so that killing the
// holder does not also kill those groups' leaders (their re-election takes
// 4–9 s). When ctx ends a holder releases the lease so another node takes
// over at once. Call Campaign once per Node.
func (n *Node) Campaign(ctx context.Context, fn func(role Role, holder string)) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		n.steward(ctx)
	}()
	defer func() { <-done }()

	every := n.cfg.LeaseTTL / 3
	t := time.NewTimer(0)
	defer t.Stop()
	var rev uint64 // our lease entry's revision while we hold it
	for {
		select {
		case <-ctx.Done():
			if rev != 0 {
				n.release(rev)
			}
			n.set(Electing, "", fn)
			return
		case <-t.C:
		}
		var next time.Duration
		rev, next = n.leaseTick(ctx, rev, every, fn)
		t.Reset(next)
	}
}

// leaseTick renews (rev != 0) or reads and tries to take the lease; it
// returns the revision held after (0 if none) and when to look again:
// every/3 in general, but a follower looks again just after the holder's
// entry would expire (by the server's timestamp; at least 50 ms on), so a
// dead holder is replaced soon after its lease ends and not up to a
// polling interval later. Clock skew only moves that look; the lease is
// still taken only once the server has expired the entry.
func (n *Node) leaseTick(ctx context.Context, rev uint64, every time.Duration, fn func(Role, string)) (uint64, time.Duration) {
	ctx, cancel := context.WithTimeout(ctx, every)
	defer cancel()
	me := []byte(n.cfg.Node)
	sent := time.Now() // the lease runs at least until sent + LeaseTTL
	if rev != 0 {
		r, err := n.kv.Update(ctx, LeaseKey, me, rev)
		if err == nil {
			n.renewed(sent)
			return r, every
		}
		n.log.Warn("cluster: lease renewal failed", "err", err)
		n.set(Electing, "", fn)
		return 0, every
	}
	e, err := n.kv.Get(ctx, LeaseKey)
	if err != nil && !errors.Is(err, jetstream.ErrKeyNotFound) && time.Now().Before(n.holderUntil) {
		// A read that failed says nothing of the holder: a route to a
		// paused or cut-off replica swallows requests until NATS drops
		// it. The holder it last saw renewing still holds the lease until
		// then: stay its follower (flipping to electing on every lost read
		// made a majority-side node flap during a partition).
		return 0, minLook
	}
	switch {
	case errors.Is(err, jetstream.ErrKeyNotFound):
		r, err := n.kv.Create(ctx, LeaseKey, me)
		if err != nil {
			n.set(Electing, "", fn)
			return 0, minLook
		}
		n.renewed(sent)
		n.set(Leader, n.cfg.Node, fn)
		return r, every
	case err != nil:
		n.set(Electing, "", fn)
		return 0, every
	case string(e.Value()) == n.cfg.Node:
		// Ours from before a restart: take it back by CAS, or lose it.
		r, err := n.kv.Update(ctx, LeaseKey, me, e.Revision())
		if err != nil {
			n.set(Electing, "", fn)
			return 0, every
		}
		n.renewed(sent)
		n.set(Leader, n.cfg.Node, fn)
		return r, every
	case time.Since(e.Created()) > 2*n.cfg.LeaseTTL:
		// Not renewed for two lease times, and still there: the bucket
		// could not expire it (no majority to do so) or is about to. No
		// one holds the lease, whatever the entry says (a replica answers
		// reads even without a majority).
		n.set(Electing, "", fn)
		return 0, minLook
	default:
		n.set(Follower, string(e.Value()), fn)
		n.holderUntil = time.Now().Add(min(time.Until(e.Created().Add(n.cfg.LeaseTTL)), n.cfg.LeaseTTL))
		next := time.Until(e.Created().Add(n.cfg.LeaseTTL)) + minLook
		return 0, min(max(next, minLook), every)
	}
}

// renewed records that this node's lease was written by a request sent at
// sent: the bucket expires it no sooner than LeaseTTL after that.
func (n *Node) renewed(sent time.Time) {
	n.mu.Lock()
	n.leasedAt = sent
	n.mu.Unlock()
}

// leaseMargin is how much of the lease's time this node does not count
// on, for the request that wrote it and the servers' clocks.
func (n *Node) leaseMargin() time.Duration { return n.cfg.LeaseTTL / 5 }

// Leased reports whether this node holds the lease by its own clock now:
// its last successful write of the lease was sent less than LeaseTTL (less
// a margin) ago, so no other node can have taken it yet. The holder checks
// it before each append: a process paused past its lease (SIGSTOP, a
// stalled VM) learns it on waking, by the monotonic clock, before it
// writes — before its first look at the lease and before the new holder's
// fence is in the log. It cannot cover a pause between this check and the
// publish itself (microseconds); the new holder's fence covers what comes
// after that.
func (n *Node) Leased() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.role == Leader && !n.leasedAt.IsZero() && time.Since(n.leasedAt) < n.cfg.LeaseTTL-n.leaseMargin()
}

// minLook is the shortest wait between two looks at the lease.
const minLook = 50 * time.Millisecond

// release deletes the lease key if it is still ours.
func (n *Node) release(rev uint64) {
	ctx, cancel := context.WithTimeout(context.Background(), appendAttempt)
	defer cancel()
	if err := n.kv.Delete(ctx, LeaseKey, jetstream.LastRevision(rev)); err != nil {
		n.log.Warn("cluster: release the lease", "err", err)
	}
}

// set records the role and holder and calls fn if either changed.
func (n *Node) set(role Role, holder string, fn func(Role, string)) {
	n.mu.Lock()
	if n.role == role && n.holder == holder {
		n.mu.Unlock()
		return
	}
	n.role, n.holder = role, holder
	close(n.changed)
	n.changed = make(chan struct{})
	n.mu.Unlock()
	n.log.Info("cluster: lease", "role", role.String(), "holder", holder)
	if fn != nil {
		fn(role, holder)
	}
}

// Role returns this node's current role and a channel closed at the next
// change.
func (n *Node) Role() (Role, <-chan struct{}) {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.role, n.changed
}

// Holder returns the lease holder's name as this node last saw it, "" when
// none is known.
func (n *Node) Holder() string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.holder
}

// Nodes returns the names of the cluster's nodes that hold a copy of the
// log, sorted, as last seen (refreshed every half second while Campaign
// runs); before that, only this node.
func (n *Node) Nodes() []string {
	n.mu.Lock()
	defer n.mu.Unlock()
	if len(n.nodes) == 0 {
		return []string{n.cfg.Node}
	}
	return slices.Clone(n.nodes)
}

// steward refreshes Nodes and, while this node holds the lease, hands the
// Raft leadership of the log stream, the lease, state and erasure buckets
// to a healthy other peer. It runs until ctx ends.
func (n *Node) steward(ctx context.Context) {
	t := time.NewTicker(handoffEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		role, _ := n.Role()
		n.tend(ctx, LogStream, role == Leader, true)
		n.tend(ctx, "KV_"+LeaseBucket, role == Leader, false)
		n.tend(ctx, "KV_"+StateBucket, role == Leader, false)
		n.tend(ctx, "KV_"+ErasedBucket, role == Leader, false)
	}
}

// tend looks at one stream's Raft group: it records the peers (when
// record) and, when handoff is set and this node leads the group, asks it
// to step down to a healthy peer.
func (n *Node) tend(ctx context.Context, stream string, handoff, record bool) {
	ctx, cancel := context.WithTimeout(ctx, handoffEvery)
	defer cancel()
	s, err := n.js.Stream(ctx, stream)
	if err != nil {
		return
	}
	ci := s.CachedInfo().Cluster
	if ci == nil {
		return
	}
	if record {
		names := []string{n.cfg.Node}
		if ci.Leader != "" && ci.Leader != n.cfg.Node {
			names = append(names, ci.Leader)
		}
		for _, p := range ci.Replicas {
			if p.Name != n.cfg.Node && p.Name != ci.Leader {
				names = append(names, p.Name)
			}
		}
		slices.Sort(names)
		n.mu.Lock()
		n.nodes = names
		n.mu.Unlock()
	}
	if !handoff || ci.Leader != n.cfg.Node {
		return
	}
	for _, p := range ci.Replicas {
		if p.Offline || p.Active > healthyActive || p.Lag > healthyLag {
			continue
		}
		n.stepDown(ctx, stream, p.Name)
		return
	}
}

// stepDown asks stream's Raft leader to hand over to peer.
func (n *Node) stepDown(ctx context.Context, stream, peer string) {
	req, _ := json.Marshal(map[string]any{"placement": map[string]string{"preferred": peer}})
	m, err := n.nc.RequestWithContext(ctx, "$JS.API.STREAM.LEADER.STEPDOWN."+stream, req)
	if err != nil {
		n.log.Warn("cluster: hand over leadership", "stream", stream, "to", peer, "err", err)
		return
	}
	var resp struct {
		Success bool `json:"success"`
		Error   *struct {
			Description string `json:"description"`
		} `json:"error"`
	}
	if json.Unmarshal(m.Data, &resp) == nil && resp.Success {
		n.log.Info("cluster: handed over leadership", "stream", stream, "to", peer)
		return
	}
	n.log.Warn("cluster: hand over leadership refused", "stream", stream, "to", peer, "reply", string(m.Data))
}

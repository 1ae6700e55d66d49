package hub

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/frontdesk-hq/frontdesk/event"
	"github.com/frontdesk-hq/frontdesk/internal/testkit/testagent"
)

// memStream is a replicated log stand-in: one sequence, an append names
// the seq it expects (a stale writer is refused), and every node is handed
// each event in order.
type memStream struct {
	mu     sync.Mutex
	cond   *sync.Cond
	events []event.Event
}

var errStale = errors.New("wrong last sequence")

func newMemStream() *memStream {
	s := &memStream{}
	s.cond = sync.NewCond(&s.mu)
	return s
}

func (s *memStream) Append(e event.Event) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if e.Seq != int64(len(s.events))+1 {
		return errStale
	}
	s.events = append(s.events, e)
	s.cond.Broadcast()
	return nil
}

func (s *memStream) Sync() error { return nil }

func (s *memStream) all() []event.Event {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]event.Event(nil), s.events...)
}

// feed hands m every event of the stream in order until ctx ends.
func (s *memStream) feed(ctx context.Context, m *SessionManager) {
	stop := context.AfterFunc(ctx, func() { s.mu.Lock(); s.cond.Broadcast(); s.mu.Unlock() })
	defer stop()
	for next := 0; ; next++ {
		s.mu.Lock()
		for next >= len(s.events) && ctx.Err() == nil {
			s.cond.Wait()
		}
		if ctx.Err() != nil {
			s.mu.Unlock()
			return
		}
		e := s.events[next]
		s.mu.Unlock()
		if m.Ingest(ctx, e) != nil {
			return
		}
	}
}

// memCluster forwards to whichever node leads and shares live frames with
// the others.
type memCluster struct {
	mu      sync.Mutex
	leader  *SessionManager
	nodes   []*SessionManager
	changed chan struct{} // closed and replaced by setLeader
	hang    atomic.Bool   // the holder takes requests and never answers (it died with them)
}

// setLeader makes l the holder (nil: none) and tells the nodes.
func (c *memCluster) setLeader(l *SessionManager) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.leader = l
	if c.changed != nil {
		close(c.changed)
	}
	c.changed = make(chan struct{})
}

type memNode struct {
	c    *memCluster
	self func() *SessionManager
	log  *deadLog
}

func (n memNode) Forward(ctx context.Context, op string, req []byte) ([]byte, error) {
	n.c.mu.Lock()
	l := n.c.leader
	n.c.mu.Unlock()
	if l == nil {
		return nil, ErrNoLeader
	}
	if n.c.hang.Load() {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	return l.Serve(ctx, op, req)
}

func (n memNode) Changed() <-chan struct{} {
	n.c.mu.Lock()
	defer n.c.mu.Unlock()
	if n.c.changed == nil {
		n.c.changed = make(chan struct{})
	}
	return n.c.changed
}

func (n memNode) LastSeq(context.Context) (int64, error) {
	return int64(len(n.log.all())), nil
}

func (n memNode) PublishLive(b []byte) {
	if n.log.dead.Load() {
		return
	}
	n.c.mu.Lock()
	nodes := append([]*SessionManager(nil), n.c.nodes...)
	n.c.mu.Unlock()
	for _, m := range nodes {
		if m != n.self() {
			go m.Live(b)
		}
	}
}

// startNode starts a cluster node's hub on the stream, following it.
func startNode(t *testing.T, s *memStream, c *memCluster, g *testagent.Gate) (*testHub, *deadLog) {
	t.Helper()
	return joinNode(t, s, c, Config{DataDir: t.TempDir(), BusyPolicy: PolicyReject}, g)
}

// joinNode starts a cluster node's hub made with cfg (its Cluster set
// here) on the stream, following it.
func joinNode(t *testing.T, s *memStream, c *memCluster, cfg Config, g *testagent.Gate) (*testHub, *deadLog) {
	t.Helper()
	var h *testHub
	lg := &deadLog{memStream: s}
	cfg.Cluster = memNode{c: c, self: func() *SessionManager { return h.SessionManager }, log: lg}
	h = startHubWithLog(t, cfg, g, lg)
	c.mu.Lock()
	c.nodes = append(c.nodes, h.SessionManager)
	c.mu.Unlock()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); s.feed(ctx, h.SessionManager) }()
	t.Cleanup(func() { cancel(); <-done })
	return h, lg
}

// deadLog is a node's way to the stream; dead cuts it, as kill -9 would
// (nothing the node does afterwards reaches the stream or the others).
type deadLog struct {
	*memStream
	dead atomic.Bool
}

func (l *deadLog) Append(e event.Event) error {
	if l.dead.Load() {
		return errors.New("process gone")
	}
	return l.memStream.Append(e)
}

func (c *memCluster) lead(t *testing.T, h *testHub, s *memStream) {
	t.Helper()
	if err := h.Lead(ctxT(t), s.all()); err != nil {
		t.Fatal(err)
	}
	c.setLeader(h.SessionManager)
}

func TestFollowerForwardsAndShowsTheHoldersStream(t *testing.T) {
	s, c, g := newMemStream(), &memCluster{}, testagent.NewGate()
	a, _ := startNode(t, s, c, g)
	b, _ := startNode(t, s, c, g)

	// Nobody leads yet: a change is refused, nothing stored.
	if _, err := b.Submit(ctxT(t), Input{Channel: event.ChannelWeb, Content: "early"}); !errors.Is(err, ErrNoLeader) {
		t.Fatalf("no leader: got %v", err)
	}
	c.lead(t, a, s)
	if !a.Leading() || b.Leading() {
		t.Fatalf("leading: a %v b %v", a.Leading(), b.Leading())
	}
	subA, _ := subscribe(t, a, 0)
	subB, _ := subscribe(t, b, 0)

	done := make(chan TurnOutcome, 1)
	r, err := b.Submit(ctxT(t), Input{Channel: event.ChannelWebhook, Content: "hi", ClientMsgID: "c1", Done: done})
	if err != nil || r.Outcome != Started || r.Echo == nil || r.Echo.Event.Seq == 0 {
		t.Fatalf("forwarded submit: %+v %v", r, err)
	}
	// Both watchers see the turn as it streams: status and delta too.
	gotB := until(t, subB, event.Delta)
	until(t, subA, event.Delta)
	if gotB[0].Type != event.User || gotB[0].Seq != r.Echo.Event.Seq {
		t.Fatalf("follower's first event %+v, want the echo at seq %d", gotB[0], r.Echo.Event.Seq)
	}
	// Busy on the follower too; a second input is refused by the holder.
	if res, err := b.Submit(ctxT(t), Input{Channel: event.ChannelWeb, Content: "again"}); err != nil || res.Outcome != Rejected {
		t.Fatalf("busy: %+v %v", res, err)
	}
	if info, _ := b.Info(ctxT(t)); !info.Busy || info.Turn != r.Turn {
		t.Fatalf("follower info %+v, want busy with %s", info, r.Turn)
	}
	// A resend of the same client_msg_id through the follower is the same input.
	if dup, err := b.Submit(ctxT(t), Input{Channel: event.ChannelWebhook, Content: "hi", ClientMsgID: "c1"}); err != nil || dup.Outcome != Duplicate || dup.Turn != r.Turn {
		t.Fatalf("duplicate: %+v %v", dup, err)
	}
	g.Release <- struct{}{}
	endA := persisted(until(t, subA, event.TurnEnd))
	endB := persisted(until(t, subB, event.TurnEnd))
	if seqsOfEvents(endA) != seqsOfEvents(endB) {
		t.Fatalf("holder %s, follower %s", seqsOfEvents(endA), seqsOfEvents(endB))
	}
	if o := <-done; o.Status != event.StatusCompleted || o.Reply != "reply to hi" {
		t.Fatalf("outcome on the follower: %+v", o)
	}
	// The follower's replay matches the stream, compacted as the holder's.
	_, snap := subscribe(t, b, 0)
	var replay []event.Event
	for _, f := range snap.Replay {
		replay = append(replay, f.Event)
	}
	if seqsOfEvents(replay) != seqsOfEvents(s.all()) {
		t.Fatalf("follower replay %s, stream %s", seqsOfEvents(replay), seqsOfEvents(s.all()))
	}
}

func TestFailoverClosesTheTurnAndGoesOn(t *testing.T) {
	s, c, g := newMemStream(), &memCluster{}, testagent.NewGate()
	a, aLog := startNode(t, s, c, g)
	b, _ := startNode(t, s, c, g)
	c.lead(t, a, s)
	subB, _ := subscribe(t, b, 0)
	r := submit(t, a, "long", "c1")
	until(t, subB, event.Delta)

	// The holder dies: its hub stops, the follower wins the lease.
	c.setLeader(nil)
	aLog.dead.Store(true)
	a.stop()
	c.lead(t, b, s)

	got := until(t, subB, event.TurnEnd)
	end := got[len(got)-1]
	if d := data[event.TurnEndData](t, end); end.Turn != r.Turn || d.Status != event.StatusInterrupted || d.Error != "the node running this reply stopped or lost the lease; another node took over" {
		t.Fatalf("turn_end after failover: %+v %+v", end, d)
	}
	if end.Seq != r.Echo.Event.Seq+1 {
		t.Fatalf("turn_end seq %d, want %d", end.Seq, r.Echo.Event.Seq+1)
	}
	// The new holder runs turns; the old one cannot append any more.
	r2 := submit(t, b, "next", "c2")
	g.Release <- struct{}{}
	until(t, subB, event.TurnEnd)
	if err := s.Append(event.Event{Seq: r2.Echo.Event.Seq, Type: event.Notice}); !errors.Is(err, errStale) {
		t.Fatalf("stale append: %v", err)
	}
	for i, e := range s.all() {
		if e.Seq != int64(i+1) {
			t.Fatalf("stream seq %d at %d", e.Seq, i)
		}
	}
}

func seqsOfEvents(evs []event.Event) string {
	frames := make([]*Frame, len(evs))
	for i, e := range evs {
		frames[i] = &Frame{Event: e}
	}
	return seqsOf(frames)
}

// A holder that loses the lease follows again: its turn is no longer its
// to end (the new holder closes it), and its doors forward from then on.
func TestHolderThatLosesTheLeaseFollows(t *testing.T) {
	s, c, g := newMemStream(), &memCluster{}, testagent.NewGate()
	a, _ := startNode(t, s, c, g)
	b, _ := startNode(t, s, c, g)
	c.lead(t, a, s)
	subA, _ := subscribe(t, a, 0)
	done := make(chan TurnOutcome, 1)
	r, err := a.Submit(ctxT(t), Input{Channel: event.ChannelWebhook, Content: "cut", Done: done})
	if err != nil {
		t.Fatal(err)
	}
	until(t, subA, event.Delta)

	if err := a.Follow(ctxT(t), s.all()); err != nil {
		t.Fatal(err)
	}
	if a.Leading() {
		t.Fatal("a still leads")
	}
	if info, _ := a.Info(ctxT(t)); !info.Busy || info.Turn != r.Turn {
		t.Fatalf("a after losing the lease: %+v, want the cut turn still running (for the log to close)", info)
	}
	c.lead(t, b, s)
	got := until(t, subA, event.TurnEnd)
	if d := data[event.TurnEndData](t, got[len(got)-1]); d.Status != event.StatusInterrupted {
		t.Fatalf("a saw %+v", d)
	}
	if o := <-done; o.Status != event.StatusInterrupted {
		t.Fatalf("the door waiting on a got %+v", o)
	}
	// a forwards now: b runs the next input.
	r2, err := a.Submit(ctxT(t), Input{Channel: event.ChannelWeb, Content: "next"})
	if err != nil || r2.Outcome != Started {
		t.Fatalf("forwarded: %+v %v", r2, err)
	}
	if info, _ := b.Info(ctxT(t)); info.Turn != r2.Turn {
		t.Fatalf("b runs %q, want %q", info.Turn, r2.Turn)
	}
	g.Release <- struct{}{}
	until(t, subA, event.TurnEnd)
	ends := 0
	for _, e := range s.all() {
		if e.Type == event.TurnEnd {
			ends++
		}
	}
	if ends != 2 {
		t.Fatalf("%d turn_ends in the log, want 2: %s", ends, seqsOfEvents(s.all()))
	}
}

// A client that comes from a node further on (since ahead of this one)
// waits until this node has caught up, then gets a gapless replay: no
// event twice, none skipped.
func TestClientAheadOfTheFollowerWaitsForIt(t *testing.T) {
	s := logOf(t, 5) // the log has 5 events; this node has been handed 3
	b := startHubWithLog(t, Config{DataDir: t.TempDir(), Cluster: memNode{c: &memCluster{}, self: func() *SessionManager { return nil }, log: &deadLog{memStream: s}}}, testagent.NewGate(), s)
	for i := 1; i <= 3; i++ {
		if err := b.Ingest(ctxT(t), noticeAt(int64(i))); err != nil {
			t.Fatal(err)
		}
	}
	type answer struct {
		sub  *Subscription
		snap Snapshot
	}
	got := make(chan answer, 1)
	go func() {
		sub, snap, err := b.Subscribe(ctxT(t), 4)
		if err == nil {
			got <- answer{sub, snap}
		}
	}()
	select {
	case <-got:
		t.Fatal("answered before the node had seq 4")
	case <-time.After(100 * time.Millisecond):
	}
	for i := 4; i <= 5; i++ {
		if err := b.Ingest(ctxT(t), noticeAt(int64(i))); err != nil {
			t.Fatal(err)
		}
	}
	a := <-got
	defer a.sub.Close()
	var seqs []int64
	for _, f := range a.snap.Replay {
		seqs = append(seqs, f.Event.Seq)
	}
	if !a.snap.Synced.Gapless || a.snap.Synced.LastSeq < 4 {
		t.Fatalf("snapshot %+v", a.snap.Synced)
	}
	if a.snap.Synced.LastSeq == 4 {
		seqs = append(seqs, next(t, a.sub).Seq) // 5 came live
	}
	if fmt.Sprint(seqs) != "[5]" {
		t.Fatalf("after since=4 the client got %v, want [5]", seqs)
	}
}

// logOf is a stream holding n notices (seq 1 to n), which the tests hand
// their follower (Ingest) one by one.
func logOf(t *testing.T, n int64) *memStream {
	s := newMemStream()
	for i := int64(1); i <= n; i++ {
		if err := s.Append(noticeAt(i)); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

func noticeAt(seq int64) event.Event {
	e := event.New(event.Notice, "", time.Now(), event.TextData{Text: "n"})
	e.Seq = seq
	return e
}

// A client further ahead than this node catches up within parkWait gets
// a gapless answer at its own seq, and then only the events after it.
func TestClientFarAheadGetsOnlyWhatIsNew(t *testing.T) {
	s := logOf(t, 7)
	b := startHubWithLog(t, Config{DataDir: t.TempDir(), Cluster: memNode{c: &memCluster{}, self: func() *SessionManager { return nil }, log: &deadLog{memStream: s}}}, testagent.NewGate(), s)
	for i := int64(1); i <= 3; i++ {
		if err := b.Ingest(ctxT(t), noticeAt(i)); err != nil {
			t.Fatal(err)
		}
	}
	sub, snap, err := b.Subscribe(ctxT(t), 6) // answered after parkWait
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	if !snap.Synced.Gapless || snap.Synced.LastSeq != 6 || snap.Connected.LastSeq != 6 || len(snap.Replay) != 0 {
		t.Fatalf("snapshot %+v %+v replay %s", snap.Connected, snap.Synced, seqsOf(snap.Replay))
	}
	for i := int64(4); i <= 7; i++ {
		if err := b.Ingest(ctxT(t), noticeAt(i)); err != nil {
			t.Fatal(err)
		}
	}
	if e := next(t, sub); e.Seq != 7 {
		t.Fatalf("first event after since=6: seq %d", e.Seq)
	}
}

// A since beyond the log itself is no client from further on: a follower
// answers it at once as a single node does — the whole buffer, not
// gapless — instead of parking it and then calling it gapless.
func TestSinceBeyondTheLogIsNotGapless(t *testing.T) {
	s := logOf(t, 3)
	b := startHubWithLog(t, Config{DataDir: t.TempDir(), Cluster: memNode{c: &memCluster{}, self: func() *SessionManager { return nil }, log: &deadLog{memStream: s}}}, testagent.NewGate(), s)
	for i := int64(1); i <= 3; i++ {
		if err := b.Ingest(ctxT(t), noticeAt(i)); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), parkWait/2)
	defer cancel()
	sub, snap, err := b.Subscribe(ctx, 999999)
	if err != nil {
		t.Fatalf("since=999999 on a follower: %v (parked?)", err)
	}
	defer sub.Close()
	if snap.Synced.Gapless || snap.Synced.LastSeq != 3 || seqsOf(snap.Replay) != "[notice:1 notice:2 notice:3]" {
		t.Fatalf("since=999999: synced %+v, replay %s; want the buffer (seqs 1-3), last_seq 3, not gapless",
			snap.Synced, seqsOf(snap.Replay))
	}
}

// An input forwarded to a holder that dies with it is sent again to the
// new holder as soon as the follower sees the lease change hands: the
// client sees a delay, not no_answer after the full forwardWait, and the
// input is in the log once.
func TestForwardSentAgainWhenTheLeaseMoves(t *testing.T) {
	s, c, g := newMemStream(), &memCluster{}, testagent.NewGate()
	a, aLog := startNode(t, s, c, g)
	b, _ := startNode(t, s, c, g)
	d, _ := startNode(t, s, c, g)
	c.lead(t, a, s)
	c.hang.Store(true)
	type answer struct {
		r   Result
		err error
		at  time.Time
	}
	got := make(chan answer, 1)
	go func() {
		r, err := b.Submit(ctxT(t), Input{Channel: event.ChannelWebhook, Content: "in flight", ClientMsgID: "f1"})
		got <- answer{r, err, time.Now()}
	}()
	time.Sleep(300 * time.Millisecond) // the request waits on the dying holder
	aLog.dead.Store(true)
	a.stop()
	c.hang.Store(false)
	moved := time.Now()
	c.lead(t, d, s)
	ans := <-got
	if ans.err != nil || ans.r.Outcome != Started {
		t.Fatalf("forwarded across the failover: %+v %v", ans.r, ans.err)
	}
	if wait := ans.at.Sub(moved); wait > time.Second {
		t.Fatalf("answered %v after the lease moved: the follower waited for the dead holder", wait)
	}
	n := 0
	for _, e := range s.all() {
		var u event.UserData
		if e.Type == event.User && e.Decode(&u) == nil && u.ClientMsgID == "f1" {
			n++
		}
	}
	if n != 1 {
		t.Fatalf("input f1 is in the stream %d times", n)
	}
	g.Release <- struct{}{}
}

// An input forwarded without a client_msg_id is given one, so that a
// send again can be told from a new input.
func TestForwardedInputGetsAnID(t *testing.T) {
	s, c, g := newMemStream(), &memCluster{}, testagent.NewGate()
	a, _ := startNode(t, s, c, g)
	b, _ := startNode(t, s, c, g)
	c.lead(t, a, s)
	r, err := b.Submit(ctxT(t), Input{Channel: event.ChannelWebhook, Content: "no id"})
	if err != nil || r.Echo == nil {
		t.Fatalf("%+v %v", r, err)
	}
	if u := data[event.UserData](t, r.Echo.Event); !strings.HasPrefix(u.ClientMsgID, "fwd-") {
		t.Fatalf("forwarded input's client_msg_id %q, want one given by the follower", u.ClientMsgID)
	}
	g.Release <- struct{}{}
}

// A holder whose appends are refused because another node wrote (it lost
// the lease) does not end the turn in its own words ("could not write to
// its disk"): its clients see the ending the new holder puts in the log,
// the same as every other node's clients.
func TestFencedHolderShowsTheLogsEnding(t *testing.T) {
	s, c, g := newMemStream(), &memCluster{}, testagent.NewGate()
	a, _ := startNode(t, s, c, g)
	b, _ := startNode(t, s, c, g)
	c.lead(t, a, s)
	subA, _ := subscribe(t, a, 0)
	r := submit(t, a, "long", "c1")
	until(t, subA, event.Delta)

	// Another node took the lease and wrote: a's next appends are fenced.
	c.setLeader(nil)
	if err := s.Append(noticeAt(int64(len(s.all())) + 1)); err != nil {
		t.Fatal(err)
	}
	g.Release <- struct{}{} // a's turn ends; its reply and turn_end are refused
	for deadline := time.Now().Add(5 * time.Second); ; {
		if info, err := a.Info(ctxT(t)); err == nil && !info.Busy {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the holder's turn did not end")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if err := a.Follow(ctxT(t), s.all()); err != nil {
		t.Fatal(err)
	}
	c.lead(t, b, s)

	got := until(t, subA, event.TurnEnd)
	end := got[len(got)-1]
	if d := data[event.TurnEndData](t, end); end.Seq == 0 || end.Turn != r.Turn || d.Status != event.StatusInterrupted ||
		d.Error != "the node running this reply stopped or lost the lease; another node took over" {
		t.Fatalf("the old holder's client saw the turn end as %s seq %d: %s; want the new holder's interrupted turn_end from the log",
			end.Turn, end.Seq, end.Data)
	}
}

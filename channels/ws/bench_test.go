//go:build unix

package ws_test

// Benchmarks for the fan-out goal: 1,000 real coder/websocket clients on
// loopback, a ~100-byte delta every 20 ms. They report, with b.ReportMetric:
//
//   - BenchmarkBroadcastPaced: publish→receive latency (p50-ms, p99-ms,
//     max-ms) and deliveries/s at the paced rate, for frontdesk and for a
//     bare coder/websocket broadcast loop.
//   - BenchmarkBroadcastSaturated: deliveries/s when deltas are published
//     as fast as possible, frontdesk and the bare loop in the same run, and
//     ratio-vs-bare = frontdesk/bare (goal ≥ 0.8).
//   - BenchmarkHubPublishAllocs: allocs/broadcast of the hub's publish path
//     with 10, 100 and 1,000 in-process subscribers (goal: flat in N).
//   - BenchmarkIdleClients: heap+stack bytes and goroutines per idle client
//     on the server (goal ≤ 16 KiB, ≤ 2), with the clients in a separate
//     process so that only the server side is counted; also the growth of
//     the process's RSS per client (meaningful in a fresh process only:
//     run it alone, -bench 'IdleClients/frontdesk$' -count 1).
//
// No benchmark passes or fails on a figure; compare runs with benchstat:
//
//	go test -run '^$' -bench . -benchtime=1x -count 6 ./channels/ws/ > new.txt
//	benchstat old.txt new.txt
//
// Latency is measured on one clock: the publisher writes the time since
// benchBase (monotonic) as the first token of the delta's text, and each
// client subtracts it from its own time since benchBase on receipt. The
// broadcast benchmarks run their clients in the same process, so the
// clients' reading shares the CPUs with the server: the figures are
// pessimistic next to remote browsers, equally for frontdesk and the bare
// loop.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/frontdesk-hq/frontdesk/agent"
	"github.com/frontdesk-hq/frontdesk/channels/ws"
	"github.com/frontdesk-hq/frontdesk/event"
	"github.com/frontdesk-hq/frontdesk/history"
	"github.com/frontdesk-hq/frontdesk/hub"
	"github.com/frontdesk-hq/frontdesk/index"
)

const (
	benchClients = 1000
	// benchDeltaBytes is the length of a delta's text (the frame is ~170
	// bytes with the event envelope).
	benchDeltaBytes = 100
	benchPacedEvery = 20 * time.Millisecond
	// benchPacedDeltas makes a paced round last 5 s.
	benchPacedDeltas     = 250
	benchSaturatedDeltas = 200
	// benchAllocDeltas deltas plus the turn's user, assistant and turn_end
	// events fit in a subscriber queue of 1024, so no drainer can be
	// dropped however far behind it falls.
	benchAllocDeltas = 1000
	benchAllocQueue  = 1024
	// benchTimeout bounds every wait; hitting it fails the benchmark (a
	// lost frame or a dropped client), it is not a performance limit.
	benchTimeout = 2 * time.Minute
)

// benchBase is the epoch of the latency stamps.
var benchBase = time.Now()

func benchNow() int64 { return int64(time.Since(benchBase)) }

var benchLogger = slog.New(slog.DiscardHandler)

// benchDeltaText is a benchDeltaBytes-long text starting with stamp (or
// with 0 when stamp < 0, for publishers that need no latency).
func benchDeltaText(buf []byte, stamp int64) string {
	b := strconv.AppendInt(buf[:0], max(stamp, 0), 10)
	b = append(b, ' ')
	for len(b) < benchDeltaBytes {
		b = append(b, "lorem ipsum dolor sit amet "...)
	}
	return string(b[:benchDeltaBytes])
}

// raiseFileLimit makes room for n descriptors. Go already raises the soft
// limit to the hard one at start-up; this only helps where it could not.
func raiseFileLimit(tb testing.TB, n uint64) {
	tb.Helper()
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
		tb.Fatalf("getrlimit: %v", err)
	}
	if rl.Cur >= n {
		return
	}
	if rl.Max < n {
		tb.Fatalf("need %d file descriptors, hard limit is %d: raise it (ulimit -Hn)", n, rl.Max)
	}
	rl.Cur = n
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
		tb.Fatalf("setrlimit: %v", err)
	}
}

// benchAgent streams count deltas per turn, every apart (0: as fast as
// emit returns). With stamp set each text starts with the publish time and
// first records the first one's, for deliveries/s.
type benchAgent struct {
	count int
	every time.Duration
	stamp bool
	first atomic.Int64
}

var _ agent.Agent = (*benchAgent)(nil)

func (a *benchAgent) Run(ctx context.Context, _ agent.Request, emit agent.Emitter) (agent.Reply, error) {
	var tick <-chan time.Time
	if a.every > 0 {
		t := time.NewTicker(a.every)
		defer t.Stop()
		tick = t.C
	}
	fixed := benchDeltaText(nil, -1)
	var buf [2 * benchDeltaBytes]byte
	for i := range a.count {
		if tick != nil {
			select {
			case <-tick:
			case <-ctx.Done():
				return agent.Reply{}, ctx.Err()
			}
		} else if err := ctx.Err(); err != nil {
			return agent.Reply{}, err
		}
		text := fixed
		if a.stamp {
			now := benchNow()
			if i == 0 {
				a.first.Store(now)
			}
			text = benchDeltaText(buf[:0], now)
		}
		emit(event.Delta, event.TextData{Text: text})
	}
	// A short reply, so that the assistant frame costs nothing next to
	// the deltas.
	return agent.Reply{Content: "done"}, nil
}

// benchClient is one coder/websocket client with a reader goroutine that
// looks only at what it needs: the type of each frame and, in a delta, the
// stamp at the start of the text.
type benchClient struct {
	c    *websocket.Conn
	sig  chan struct{} // a value per synced and per turn_end frame
	done chan struct{} // closed when the reader returns

	mu   sync.Mutex
	lat  []int64 // publish→receive latency of each delta since the last collect, ns
	last int64   // receipt time of the latest delta, benchNow units
	bad  int     // deltas without a readable stamp
}

var (
	benchTagDelta   = []byte(`"type":"delta"`)
	benchTagTurnEnd = []byte(`"type":"turn_end"`)
	benchTagSynced  = []byte(`"type":"synced"`)
	benchTagText    = []byte(`"text":"`)
)

// benchDial connects n clients to url one after another; latCap sizes each
// client's latency slice so that recording never allocates.
func benchDial(tb testing.TB, url string, n, latCap int) []*benchClient {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), benchTimeout)
	defer cancel()
	cls := make([]*benchClient, 0, n)
	for i := range n {
		c, _, err := websocket.Dial(ctx, url, nil)
		if err != nil {
			benchCloseClients(cls)
			tb.Fatalf("dial client %d: %v", i, err)
		}
		cl := &benchClient{c: c, sig: make(chan struct{}, 16), done: make(chan struct{}),
			lat: make([]int64, 0, latCap)}
		go cl.read()
		cls = append(cls, cl)
	}
	return cls
}

func (cl *benchClient) read() {
	defer close(cl.done)
	// Only the head of a frame matters; the rest is discarded. A
	// background context: a cancellable one would cost coder/websocket an
	// AfterFunc per message. CloseNow ends the loop.
	buf := make([]byte, 256)
	for {
		_, r, err := cl.c.Reader(context.Background())
		if err != nil {
			return
		}
		n, err := io.ReadFull(r, buf)
		switch err {
		case nil:
			if _, err := io.Copy(io.Discard, r); err != nil {
				return
			}
		case io.EOF, io.ErrUnexpectedEOF:
		default:
			return
		}
		cl.frame(buf[:n])
	}
}

func (cl *benchClient) frame(b []byte) {
	switch {
	case bytes.Contains(b, benchTagDelta):
		now := benchNow()
		stamp, ok := int64(0), false
		if i := bytes.Index(b, benchTagText); i >= 0 {
			for _, d := range b[i+len(benchTagText):] {
				if d < '0' || d > '9' {
					break
				}
				stamp, ok = stamp*10+int64(d-'0'), true
			}
		}
		cl.mu.Lock()
		if ok {
			cl.lat = append(cl.lat, now-stamp)
		} else {
			cl.bad++
		}
		cl.last = now
		cl.mu.Unlock()
	case bytes.Contains(b, benchTagTurnEnd), bytes.Contains(b, benchTagSynced):
		cl.sig <- struct{}{}
	}
}

// benchWait waits until every client got one more synced or turn_end frame.
func benchWait(tb testing.TB, cls []*benchClient, what string) {
	tb.Helper()
	deadline := time.NewTimer(benchTimeout)
	defer deadline.Stop()
	for i, cl := range cls {
		select {
		case <-cl.sig:
		case <-cl.done:
			tb.Fatalf("client %d disconnected while waiting for %s", i, what)
		case <-deadline.C:
			tb.Fatalf("client %d: no %s within %v", i, what, benchTimeout)
		}
	}
}

// benchRound is what the clients saw of one round of k deltas.
type benchRound struct {
	lat        []int64 // every latency, all clients, ns
	deliveries int
	first      int64 // publish time of the first delta
	last       int64 // receipt of the last delta by the last client
}

// benchCollect takes and resets what the clients recorded; want is the
// number of deltas each should have received.
func benchCollect(tb testing.TB, cls []*benchClient, want int, first int64, into []int64) benchRound {
	tb.Helper()
	r := benchRound{lat: into, first: first}
	for i, cl := range cls {
		cl.mu.Lock()
		n, bad := len(cl.lat), cl.bad
		r.lat = append(r.lat, cl.lat...)
		r.last = max(r.last, cl.last)
		cl.lat, cl.bad = cl.lat[:0], 0
		cl.mu.Unlock()
		if n != want || bad != 0 {
			tb.Fatalf("client %d got %d deltas (%d without stamp), want %d", i, n+bad, bad, want)
		}
		r.deliveries += n
	}
	return r
}

func benchCloseClients(cls []*benchClient) {
	for _, cl := range cls {
		cl.c.CloseNow()
	}
	for _, cl := range cls {
		<-cl.done
	}
}

// benchReportLatency reports nearest-rank percentiles of lat (ns) in ms.
func benchReportLatency(b *testing.B, lat []int64, prefix string) {
	if len(lat) == 0 {
		return
	}
	slices.Sort(lat)
	pct := func(q float64) float64 {
		i := int(q*float64(len(lat))+0.999999) - 1
		return float64(lat[min(max(i, 0), len(lat)-1)]) / 1e6
	}
	b.ReportMetric(pct(0.50), prefix+"p50-ms")
	b.ReportMetric(pct(0.99), prefix+"p99-ms")
	b.ReportMetric(float64(lat[len(lat)-1])/1e6, prefix+"max-ms")
}

// benchFrontdesk is the real thing: a hub with a real chat log, served by
// ws.Handler on an httptest server at /ws.
type benchFrontdesk struct {
	m      *hub.SessionManager
	h      *ws.Handler
	srv    *httptest.Server
	log    *history.Log
	cancel context.CancelFunc
	url    string
}

func startBenchFrontdesk(tb testing.TB, queue int, a agent.Agent) *benchFrontdesk {
	tb.Helper()
	dir := tb.TempDir()
	lg, err := history.Open(history.Options{
		Path: filepath.Join(dir, "chat_history.ndjson"), RotateMB: 5, Fsync: history.FsyncNever,
	})
	if err != nil {
		tb.Fatal(err)
	}
	// The search index follows the log as in the server, so its work is
	// part of what the figures measure.
	ix, err := index.NewFollower(index.FollowerOptions{Path: filepath.Join(dir, index.FileName),
		Log: history.NewReader(filepath.Join(dir, "chat_history.ndjson")).Since, Logger: benchLogger})
	if err != nil {
		tb.Fatal(err)
	}
	m := hub.New(hub.Config{DataDir: dir, ClientQueue: queue, Logger: benchLogger, Index: ix}, lg, a)
	ctx, cancel := context.WithCancel(context.Background())
	go ix.Run(ctx)
	go m.Run(ctx)
	h := ws.New(m, ws.Options{Logger: benchLogger})
	mux := http.NewServeMux()
	mux.Handle("/ws", h)
	srv := httptest.NewServer(mux)
	return &benchFrontdesk{m: m, h: h, srv: srv, log: lg, cancel: cancel,
		url: "ws" + strings.TrimPrefix(srv.URL, "http") + "/ws"}
}

// round runs one turn and waits until every client has its turn_end.
func (s *benchFrontdesk) round(tb testing.TB, a *benchAgent, cls []*benchClient, into []int64) benchRound {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), benchTimeout)
	defer cancel()
	res, err := s.m.Submit(ctx, hub.Input{Channel: event.ChannelWeb, Content: "go"})
	if err != nil || res.Outcome != hub.Started {
		tb.Fatalf("submit: outcome %v, err %v; want started", res.Outcome, err)
	}
	benchWait(tb, cls, "turn_end")
	return benchCollect(tb, cls, a.count, a.first.Load(), into)
}

// close stops the hub (its connections close with 1001), waits for every
// connection handler and closes the log.
func (s *benchFrontdesk) close(tb testing.TB) {
	tb.Helper()
	s.cancel()
	<-s.m.Done()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.h.Wait(ctx); err != nil {
		tb.Errorf("websocket handlers still running: %v", err)
	}
	s.srv.Close()
	if err := s.log.Close(); err != nil {
		tb.Error(err)
	}
}

// benchBare is the baseline: the simplest broadcast loop coder/websocket
// allows, as in its chat example but without per-subscriber queues. Each
// message is encoded once and written to every connection in turn, from
// one goroutine.
type benchBare struct {
	srv      *httptest.Server
	ctx      context.Context
	cancel   context.CancelFunc
	handlers sync.WaitGroup

	mu    sync.Mutex
	conns map[*websocket.Conn]struct{}

	seq   int64 // owned by the broadcasting goroutine
	first int64
	url   string
}

func startBenchBare() *benchBare {
	s := &benchBare{conns: map[*websocket.Conn]struct{}{}}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	mux := http.NewServeMux()
	mux.Handle("/ws", s)
	s.srv = httptest.NewServer(mux)
	s.url = "ws" + strings.TrimPrefix(s.srv.URL, "http") + "/ws"
	return s
}

// ServeHTTP registers the connection, tells the client with a synced frame
// (so it is handled like a frontdesk client), then reads until it closes,
// which answers control frames: one goroutine per connection.
func (s *benchBare) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.handlers.Add(1)
	defer s.handlers.Done()
	c, err := websocket.Accept(w, r, nil)
	if err != nil {
		return
	}
	defer c.CloseNow()
	s.mu.Lock()
	s.conns[c] = struct{}{}
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.conns, c)
		s.mu.Unlock()
	}()
	synced, _ := json.Marshal(event.New(event.Synced, "", time.Now(), event.SyncedData{Gapless: true}))
	if c.Write(s.ctx, websocket.MessageText, synced) != nil {
		return
	}
	for {
		if _, _, err := c.Read(s.ctx); err != nil {
			return
		}
	}
}

// broadcast encodes e once and writes it to every connection.
func (s *benchBare) broadcast(e event.Event) {
	s.seq++
	e.Seq = s.seq
	e.TS = event.Time(time.Now())
	b, err := json.Marshal(e)
	if err != nil {
		panic(err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for c := range s.conns {
		// An error leaves that client short of a delta, which
		// benchCollect reports.
		_ = c.Write(s.ctx, websocket.MessageText, b)
	}
}

// round broadcasts k deltas, every apart (0: back to back), then a
// turn_end, and waits until every client has it.
func (s *benchBare) round(tb testing.TB, k int, every time.Duration, cls []*benchClient, into []int64) benchRound {
	tb.Helper()
	var tick <-chan time.Time
	if every > 0 {
		t := time.NewTicker(every)
		defer t.Stop()
		tick = t.C
	}
	var buf [2 * benchDeltaBytes]byte
	for i := range k {
		if tick != nil {
			<-tick
		}
		now := benchNow()
		if i == 0 {
			s.first = now
		}
		s.broadcast(event.New(event.Delta, "t1", time.Time{}, event.TextData{Text: benchDeltaText(buf[:0], now)}))
	}
	s.broadcast(event.New(event.TurnEnd, "t1", time.Time{}, event.TurnEndData{Status: event.StatusCompleted}))
	benchWait(tb, cls, "turn_end")
	return benchCollect(tb, cls, k, s.first, into)
}

func (s *benchBare) close() {
	s.cancel()
	s.mu.Lock()
	for c := range s.conns {
		c.CloseNow()
	}
	s.mu.Unlock()
	s.handlers.Wait()
	s.srv.Close()
}

// BenchmarkBroadcastPaced is the goal's load: 1,000 clients, a 100-byte
// delta every 20 ms, 250 deltas a round. It reports the publish→receive
// latency over every delivery (goal: p99 ≤ 15 ms) and deliveries/s, which
// at this rate is bounded by the pacing (≈ 50,000/s).
func BenchmarkBroadcastPaced(b *testing.B) {
	raiseFileLimit(b, 2*benchClients+256)
	b.Run("frontdesk", func(b *testing.B) {
		a := &benchAgent{count: benchPacedDeltas, every: benchPacedEvery, stamp: true}
		s := startBenchFrontdesk(b, 1024, a)
		defer s.close(b)
		cls := benchDial(b, s.url, benchClients, benchPacedDeltas)
		defer benchCloseClients(cls)
		benchWait(b, cls, "synced")
		var lat []int64
		var deliveries int
		var elapsed time.Duration
		for b.Loop() {
			r := s.round(b, a, cls, lat)
			lat, deliveries, elapsed = r.lat, deliveries+r.deliveries, elapsed+time.Duration(r.last-r.first)
		}
		benchReportLatency(b, lat, "")
		b.ReportMetric(float64(deliveries)/elapsed.Seconds(), "deliveries/s")
	})
	b.Run("bare", func(b *testing.B) {
		s := startBenchBare()
		defer s.close()
		cls := benchDial(b, s.url, benchClients, benchPacedDeltas)
		defer benchCloseClients(cls)
		benchWait(b, cls, "synced")
		var lat []int64
		var deliveries int
		var elapsed time.Duration
		for b.Loop() {
			r := s.round(b, benchPacedDeltas, benchPacedEvery, cls, lat)
			lat, deliveries, elapsed = r.lat, deliveries+r.deliveries, elapsed+time.Duration(r.last-r.first)
		}
		benchReportLatency(b, lat, "")
		b.ReportMetric(float64(deliveries)/elapsed.Seconds(), "deliveries/s")
	})
}

// BenchmarkBroadcastSaturated publishes 200 deltas back to back to 1,000
// clients, through frontdesk and through the bare loop, alternately in the
// same run with both sets of clients connected throughout. deliveries/s is
// deltas received by all clients over the time from the first publish to
// the last receipt; ratio-vs-bare is frontdesk's over the bare loop's (goal
// ≥ 0.8). allocs/delivery counts every allocation in the process during a
// round (server and clients; the client side is the same code in both) over
// the deliveries.
func BenchmarkBroadcastSaturated(b *testing.B) {
	raiseFileLimit(b, 4*benchClients+256)
	a := &benchAgent{count: benchSaturatedDeltas, stamp: true}
	fd := startBenchFrontdesk(b, 1024, a)
	defer fd.close(b)
	fdClients := benchDial(b, fd.url, benchClients, benchSaturatedDeltas)
	defer benchCloseClients(fdClients)
	benchWait(b, fdClients, "synced")

	bare := startBenchBare()
	defer bare.close()
	bareClients := benchDial(b, bare.url, benchClients, benchSaturatedDeltas)
	defer benchCloseClients(bareClients)
	benchWait(b, bareClients, "synced")

	var fdDeliveries, bareDeliveries int
	var fdTime, bareTime time.Duration
	var fdMallocs, bareMallocs uint64
	var lat []int64
	var ms0, ms1 runtime.MemStats
	for b.Loop() {
		runtime.GC()
		runtime.ReadMemStats(&ms0)
		r := fd.round(b, a, fdClients, lat[:0])
		runtime.ReadMemStats(&ms1)
		lat = r.lat
		fdDeliveries += r.deliveries
		fdTime += time.Duration(r.last - r.first)
		fdMallocs += ms1.Mallocs - ms0.Mallocs

		runtime.GC()
		runtime.ReadMemStats(&ms0)
		r = bare.round(b, benchSaturatedDeltas, 0, bareClients, lat[:0])
		runtime.ReadMemStats(&ms1)
		lat = r.lat
		bareDeliveries += r.deliveries
		bareTime += time.Duration(r.last - r.first)
		bareMallocs += ms1.Mallocs - ms0.Mallocs
	}
	fdRate := float64(fdDeliveries) / fdTime.Seconds()
	bareRate := float64(bareDeliveries) / bareTime.Seconds()
	b.ReportMetric(fdRate, "deliveries/s")
	b.ReportMetric(bareRate, "bare-deliveries/s")
	b.ReportMetric(fdRate/bareRate, "ratio-vs-bare")
	b.ReportMetric(float64(fdMallocs)/float64(fdDeliveries), "allocs/delivery")
	b.ReportMetric(float64(bareMallocs)/float64(bareDeliveries), "bare-allocs/delivery")
}

// BenchmarkHubPublishAllocs counts the allocations of the hub's publish
// path — the agent's emit, the hub's encode and the fan-out to every
// subscriber's queue — with N in-process subscribers (no network) whose
// drainers allocate nothing. A round is one turn of 1,000 deltas, emitted
// back to back; allocs/broadcast divides all the process's allocations
// during the round by its broadcasts (the deltas plus user, assistant and
// turn_end). It must not grow with N: the event is encoded once.
func BenchmarkHubPublishAllocs(b *testing.B) {
	for _, n := range []int{10, 100, 1000} {
		b.Run("subs="+strconv.Itoa(n), func(b *testing.B) {
			a := &benchAgent{count: benchAllocDeltas}
			dir := b.TempDir()
			lg, err := history.Open(history.Options{
				Path: filepath.Join(dir, "chat_history.ndjson"), RotateMB: 5, Fsync: history.FsyncNever,
			})
			if err != nil {
				b.Fatal(err)
			}
			defer lg.Close()
			m := hub.New(hub.Config{DataDir: dir, ClientQueue: benchAllocQueue, Logger: benchLogger}, lg, a)
			ctx, cancel := context.WithCancel(context.Background())
			go m.Run(ctx)
			defer func() { cancel(); <-m.Done() }()

			ends := make(chan struct{}, n)
			var drainers sync.WaitGroup
			subs := make([]*hub.Subscription, n)
			for i := range subs {
				sub, _, err := m.Subscribe(ctx, 0)
				if err != nil {
					b.Fatal(err)
				}
				subs[i] = sub
				drainers.Add(1)
				go func() {
					defer drainers.Done()
					for range sub.Ready() {
						frames, ended := sub.Take()
						for _, f := range frames {
							if f.Event.Type == event.TurnEnd {
								ends <- struct{}{}
							}
						}
						if ended {
							return
						}
					}
				}()
			}
			defer func() {
				for _, sub := range subs {
					sub.Close()
				}
				drainers.Wait()
			}()

			// One unmeasured turn first: each subscriber's queue grows on
			// demand (an idle client holds no buffer), and that one-time
			// growth — log2 of the deepest backlog — is not per broadcast.
			if _, err := m.Submit(ctx, hub.Input{Channel: event.ChannelWeb, Content: "warm up"}); err != nil {
				b.Fatal(err)
			}
			for range n {
				<-ends
			}

			// Garbage and finalizers (coder/websocket sets one per
			// Conn) of the benchmarks before must not run in a round.
			runtime.GC()
			runtime.GC()

			const broadcasts = benchAllocDeltas + 3
			var rounds int
			var mallocs, allocated uint64
			var elapsed time.Duration
			var ms0, ms1 runtime.MemStats
			deadline := time.NewTimer(benchTimeout)
			defer deadline.Stop()
			for b.Loop() {
				runtime.ReadMemStats(&ms0)
				start := time.Now()
				res, err := m.Submit(ctx, hub.Input{Channel: event.ChannelWeb, Content: "go"})
				if err != nil || res.Outcome != hub.Started {
					b.Fatalf("submit: outcome %v, err %v; want started", res.Outcome, err)
				}
				for range n {
					select {
					case <-ends:
					case <-deadline.C:
						b.Fatalf("subscribers did not all get turn_end within %v", benchTimeout)
					}
				}
				elapsed += time.Since(start)
				runtime.ReadMemStats(&ms1)
				mallocs += ms1.Mallocs - ms0.Mallocs
				allocated += ms1.TotalAlloc - ms0.TotalAlloc
				rounds++
			}
			for i, sub := range subs {
				if err := sub.Err(); err != nil {
					b.Fatalf("subscriber %d was dropped: %v", i, err)
				}
			}
			b.ReportMetric(float64(mallocs)/float64(rounds*broadcasts), "allocs/broadcast")
			b.ReportMetric(float64(allocated)/float64(rounds*broadcasts), "B/broadcast")
			b.ReportMetric(float64(elapsed.Nanoseconds())/float64(rounds*broadcasts), "ns/broadcast")
		})
	}
}

// Idle cost is measured with the clients in a child process — this test
// binary re-run as TestBenchIdleClientsProcess — so that the server's
// live heap, stacks and goroutine count hold the server side alone
// (measured in one process, each client's own conn, buffers and reader
// goroutine would be counted too, and subtracting a bare server's total
// would still leave that server's share in). The child measures its side
// the same way and reports it, as client-bytes/idle-client and
// client-goroutines/idle-client.
const (
	benchEnvURL     = "FRONTDESK_BENCH_IDLE_URL"
	benchEnvClients = "FRONTDESK_BENCH_IDLE_CLIENTS"
)

// benchMem is what the process holds. The heap is HeapAlloc after a full
// GC — the live objects, rounded to their size classes — rather than
// HeapInuse: new objects first fill the free slots of spans that earlier
// benchmarks left partly used, so a HeapInuse delta depends on what ran
// before (measured: 20 KB per frontdesk client after the other benchmarks,
// 28 KB in a fresh process), while HeapAlloc's does not.
type benchMem struct {
	heap, stack uint64 // HeapAlloc, StackInuse
	goroutines  int
}

// benchSettle collects garbage twice (the second pass frees what the
// first one's finalizers released) and reads the live heap and stacks.
func benchSettle() benchMem {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return benchMem{heap: ms.HeapAlloc, stack: ms.StackInuse, goroutines: runtime.NumGoroutine()}
}

// perClient is the growth since before, per client: heap, stack and
// goroutines.
func (m benchMem) perClient(before benchMem, n int) (heap, stack, goroutines float64) {
	return (float64(m.heap) - float64(before.heap)) / float64(n),
		(float64(m.stack) - float64(before.stack)) / float64(n),
		float64(m.goroutines-before.goroutines) / float64(n)
}

// BenchmarkIdleClients connects 1,000 clients (from a child process), waits
// until all are synced, and reports the server's heap+stack bytes and
// goroutines per idle client (goal ≤ 16 KiB and ≤ 2 for frontdesk), and the
// same for the bare loop's server as the floor coder/websocket and net/http
// set.
func BenchmarkIdleClients(b *testing.B) {
	raiseFileLimit(b, 2*benchClients+256)
	b.Run("frontdesk", func(b *testing.B) {
		s := startBenchFrontdesk(b, 1024, &benchAgent{})
		defer s.close(b)
		for b.Loop() {
			benchIdle(b, s.url, func() { waitBenchHandlers(b, s.h) })
		}
	})
	b.Run("bare", func(b *testing.B) {
		s := startBenchBare()
		defer s.close()
		for b.Loop() {
			benchIdle(b, s.url, s.handlers.Wait)
		}
	})
}

// waitBenchHandlers waits until every frontdesk connection handler has
// returned, so that the next round starts from the same state.
func waitBenchHandlers(tb testing.TB, h *ws.Handler) {
	ctx, cancel := context.WithTimeout(context.Background(), benchTimeout)
	defer cancel()
	if err := h.Wait(ctx); err != nil {
		tb.Fatalf("connections still open after the clients left: %v", err)
	}
}

// benchRSS is the process's resident set in bytes (Linux; 0 elsewhere).
// Unlike the live heap it counts what the runtime holds from the OS: the
// figure an operator sees, if a noisier one (the heap it grows is not
// given back at once).
func benchRSS() float64 {
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) < 2 {
		return 0
	}
	pages, _ := strconv.ParseFloat(f[1], 64)
	return pages * float64(os.Getpagesize())
}

func benchIdle(b *testing.B, url string, settled func()) {
	before := benchSettle()
	rssBefore := benchRSS()
	cmd := exec.Command(os.Args[0], "-test.run=^TestBenchIdleClientsProcess$", "-test.count=1")
	cmd.Env = append(os.Environ(), benchEnvURL+"="+url, benchEnvClients+"="+strconv.Itoa(benchClients))
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	defer func() {
		stdin.Close() // the child closes its clients and exits
		io.Copy(io.Discard, stdout)
		if err := cmd.Wait(); err != nil {
			b.Errorf("client process: %v", err)
		}
	}()
	var clientBytes, clientGoroutines float64
	var output []string // the child's test output, if it fails
	found := false
	sc := bufio.NewScanner(stdout)
	for !found && sc.Scan() {
		_, err := fmt.Sscanf(sc.Text(), "idle-clients %g %g", &clientBytes, &clientGoroutines)
		found = err == nil
		output = append(output, sc.Text())
	}
	if !found {
		b.Fatalf("the client process did not report its clients connected:\n%s", strings.Join(output, "\n"))
	}
	after := benchSettle()
	rss := (benchRSS() - rssBefore) / benchClients
	heap, stack, goroutines := after.perClient(before, benchClients)
	b.ReportMetric(rss, "rss-bytes/idle-client")
	b.ReportMetric(heap+stack, "bytes/idle-client")
	b.ReportMetric(heap, "heap-bytes/idle-client")
	b.ReportMetric(stack, "stack-bytes/idle-client")
	b.ReportMetric(goroutines, "goroutines/idle-client")
	b.ReportMetric(clientBytes, "client-bytes/idle-client")
	b.ReportMetric(clientGoroutines, "client-goroutines/idle-client")
	stdin.Close()
	settled() // every server-side connection has ended before the next round
}

// TestBenchIdleClientsProcess is BenchmarkIdleClients's client process;
// run on its own it does nothing. It connects the clients, waits until all
// are synced, prints its own cost per client, and closes them all when its
// stdin closes.
func TestBenchIdleClientsProcess(t *testing.T) {
	url := os.Getenv(benchEnvURL)
	if url == "" {
		t.Skip("client process of BenchmarkIdleClients")
	}
	n, err := strconv.Atoi(os.Getenv(benchEnvClients))
	if err != nil {
		t.Fatal(err)
	}
	raiseFileLimit(t, uint64(n)+256)
	before := benchSettle()
	cls := benchDial(t, url, n, 0)
	defer benchCloseClients(cls)
	benchWait(t, cls, "synced")
	heap, stack, goroutines := benchSettle().perClient(before, n)
	fmt.Printf("idle-clients %g %g\n", heap+stack, goroutines)
	if _, err := io.Copy(io.Discard, os.Stdin); err != nil {
		t.Error(err)
	}
}

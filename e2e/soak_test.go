//go:build soak

package e2e

// The soak: `make soak` (never part of `make test` or CI). For
// SOAK_DURATION (default 10m) it runs the real binary with SOAK_CLIENTS
// (default 200) WebSocket clients that come and go at random — half of
// their departures rude: the TCP connection closed (or reset) without a
// close frame — turns every few seconds through the WebSocket and the
// webhook, and a kill -9 and restart of the server every SOAK_KILL_EVERY
// (default 30s). At the end every acknowledged input (a user echo seen by
// a client, a 202 from the webhook) must be in the chat log exactly once,
// and the server's RSS, goroutines and open fds are printed at the start
// and the end, with clients connected and without.
//
// Waits here are a client's think time and back-off, and polls of the
// server's own figures with a deadline: this is a load generator, not a
// unit test.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/frontdesk-hq/frontdesk/event"
	"github.com/frontdesk-hq/frontdesk/history"
	"github.com/frontdesk-hq/frontdesk/internal/testkit/testmetrics"
)

func soakEnv(t *testing.T, name string, def time.Duration) time.Duration {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		t.Fatalf("%s=%q: %v", name, v, err)
	}
	return d
}

// soakStats counts what the clients and the webhook saw.
type soakStats struct {
	dials, dialErrors, rude, polite, dropped atomic.Int64
	sent, busy, rateLimited, otherErrors     atomic.Int64
	hookSent, hookAcked, hookBusy, hook429   atomic.Int64
	hookFailed                               atomic.Int64
}

// soakAcks records acknowledged inputs: client_msg_id → seq of its echo.
type soakAcks struct {
	mu   sync.Mutex
	seqs map[string]int64
	errs []string
}

func (a *soakAcks) ack(id string, seq int64) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if old, ok := a.seqs[id]; ok && old != seq {
		a.errs = append(a.errs, fmt.Sprintf("%s acknowledged with seq %d and %d: run twice", id, old, seq))
		return
	}
	a.seqs[id] = seq
}

// soakServer is the binary under test, restarted on the same address.
type soakServer struct {
	t    *testing.T
	dir  string
	args []string

	mu sync.Mutex
	p  *proc
}

func (s *soakServer) start() {
	p := startBinary(s.t, s.dir, nil, s.args...)
	s.mu.Lock()
	s.p = p
	s.mu.Unlock()
}

func (s *soakServer) kill() {
	s.mu.Lock()
	p := s.p
	s.mu.Unlock()
	p.cmd.Process.Kill()
	err := <-p.exited
	p.exited <- err
}

func (s *soakServer) pid() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.p.cmd.Process.Pid
}

// sample is what the server holds at one moment.
type sample struct {
	label                 string
	rss                   int64 // bytes, /proc/PID/status VmRSS
	goroutines, fds, subs float64
	uptime                time.Duration
}

func (s *soakServer) sample(label, url string) sample {
	s.t.Helper()
	pid := s.pid()
	sm := sample{label: label}
	if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid)); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
				kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
				sm.rss = kb << 10
			}
		}
	}
	if ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid)); err == nil {
		sm.fds = float64(len(ents))
	}
	text := scrapeMetrics(s.t, url)
	sm.goroutines = testmetrics.Must(s.t, text, "go_goroutines")
	sm.subs = testmetrics.Must(s.t, text, "frontdesk_subscribers")
	if st, ok := testmetrics.Value(text, "process_start_time_seconds"); ok {
		sm.uptime = time.Since(time.Unix(int64(st), 0)).Round(time.Second)
	}
	return sm
}

func (sm sample) String() string {
	return fmt.Sprintf("%-34s RSS %6.1f MiB  goroutines %5.0f  fds %4.0f  clients %4.0f  uptime %v",
		sm.label, float64(sm.rss)/(1<<20), sm.goroutines, sm.fds, sm.subs, sm.uptime)
}

// scrapeClient keeps no connection open between scrapes: an idle
// keep-alive connection would count as a server goroutine and fd.
var scrapeClient = &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 10 * time.Second}

func scrapeMetrics(t *testing.T, url string) string {
	t.Helper()
	resp, err := scrapeClient.Get(url + "/metrics")
	if err != nil {
		t.Fatalf("scrape: %v", err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

// waitSubscribers polls the server until it counts want subscribers.
func waitSubscribers(t *testing.T, url string, want float64, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		got := testmetrics.Must(t, scrapeMetrics(t, url), "frontdesk_subscribers")
		if got == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%g subscribers after %v, want %g", got, within, want)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// soakClient is one WebSocket user: connect (with since), stay a while,
// send a message now and then, leave politely or rudely, come back.
func soakClient(ctx context.Context, id int, wsURL string, acks *soakAcks, st *soakStats, firstSynced func()) {
	rng := rand.New(rand.NewPCG(uint64(id), uint64(time.Now().UnixNano())))
	var since int64
	var n int
	first := true
	// About one message per client every 400 s (0.5 a second from 200
	// clients), kept across reconnections: one due while away goes out
	// on the next connection.
	sendAt := time.Now().Add(time.Duration(rng.IntN(400000)) * time.Millisecond)
	for ctx.Err() == nil {
		var raw net.Conn
		tr := &http.Transport{DisableKeepAlives: true, DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
			raw = c
			return c, err
		}}
		dctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		c, _, err := websocket.Dial(dctx, wsURL+"?since="+strconv.FormatInt(since, 10), &websocket.DialOptions{HTTPClient: &http.Client{Transport: tr}})
		cancel()
		st.dials.Add(1)
		if err != nil {
			st.dialErrors.Add(1)
			sleepCtx(ctx, time.Duration(100+rng.IntN(900))*time.Millisecond) // the server is restarting
			continue
		}
		c.SetReadLimit(1 << 20)
		readerDone := make(chan struct{})
		synced := make(chan struct{})
		go func() {
			defer close(readerDone)
			var f struct {
				Seq  int64      `json:"seq"`
				Type event.Type `json:"type"`
				Data struct {
					ClientMsgID string `json:"client_msg_id"`
					Code        string `json:"code"`
				} `json:"data"`
			}
			for {
				_, b, err := c.Read(ctx)
				if err != nil {
					return
				}
				f.Data.ClientMsgID, f.Data.Code = "", ""
				if json.Unmarshal(b, &f) != nil {
					continue
				}
				if f.Seq > since {
					since = f.Seq
				}
				switch f.Type {
				case event.Synced:
					select {
					case <-synced:
					default:
						close(synced)
					}
				case event.User:
					if strings.HasPrefix(f.Data.ClientMsgID, "soak-") {
						acks.ack(f.Data.ClientMsgID, f.Seq)
					}
				case event.Busy:
					st.busy.Add(1)
				case event.Error:
					if f.Data.Code == "rate_limited" {
						st.rateLimited.Add(1)
					} else {
						st.otherErrors.Add(1)
					}
				}
			}
		}()
		stay := time.NewTimer(time.Duration(2000+rng.IntN(18000)) * time.Millisecond)
		nextSend := time.NewTimer(time.Until(sendAt))
		select {
		case <-synced:
			if first {
				first = false
				firstSynced()
			}
		case <-readerDone:
		}
	loop:
		for {
			select {
			case <-nextSend.C:
				n++
				msg, _ := json.Marshal(map[string]string{"type": "message",
					"content": fmt.Sprintf("soak message %d from client %d", n, id), "client_msg_id": fmt.Sprintf("soak-ws-%d-%d", id, n)})
				wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
				if c.Write(wctx, websocket.MessageText, msg) == nil {
					st.sent.Add(1)
				}
				cancel()
				sendAt = time.Now().Add(time.Duration(200000+rng.IntN(400000)) * time.Millisecond)
				nextSend.Reset(time.Until(sendAt))
			case <-stay.C:
				if rng.IntN(2) == 0 {
					st.rude.Add(1)
					if rng.IntN(2) == 0 {
						raw.(*net.TCPConn).SetLinger(0) // a reset rather than a FIN
					}
					raw.Close()
				} else {
					st.polite.Add(1)
					c.Close(websocket.StatusNormalClosure, "bye")
				}
				break loop
			case <-readerDone: // the server went away (kill -9) or dropped us
				st.dropped.Add(1)
				break loop
			case <-ctx.Done():
				if rng.IntN(2) == 0 {
					raw.Close()
				} else {
					c.Close(websocket.StatusNormalClosure, "bye")
				}
				break loop
			}
		}
		stay.Stop()
		nextSend.Stop()
		c.CloseNow()
		<-readerDone
		sleepCtx(ctx, time.Duration(rng.IntN(2000))*time.Millisecond)
	}
}

func sleepCtx(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}

// soakWebhook posts a message every 1–5 s.
func soakWebhook(ctx context.Context, url string, acks *soakAcks, st *soakStats) {
	rng := rand.New(rand.NewPCG(7, uint64(time.Now().UnixNano())))
	client := &http.Client{Timeout: 10 * time.Second}
	defer client.CloseIdleConnections() // before the final figures
	for n := 1; ; n++ {
		sleepCtx(ctx, time.Duration(1000+rng.IntN(4000))*time.Millisecond)
		if ctx.Err() != nil {
			return
		}
		id := fmt.Sprintf("soak-hook-%d", n)
		body, _ := json.Marshal(map[string]string{"content": "soak webhook " + id, "client_msg_id": id, "channel": "cron"})
		st.hookSent.Add(1)
		resp, err := client.Post(url+"/api/messages", "application/json", bytes.NewReader(body))
		if err != nil {
			st.hookFailed.Add(1) // down for a restart
			continue
		}
		var r struct {
			Seq int64 `json:"seq"`
		}
		json.NewDecoder(resp.Body).Decode(&r)
		resp.Body.Close()
		switch resp.StatusCode {
		case http.StatusAccepted:
			st.hookAcked.Add(1)
			acks.ack(id, r.Seq)
		case http.StatusConflict:
			st.hookBusy.Add(1)
		case http.StatusTooManyRequests:
			st.hook429.Add(1)
		default:
			st.hookFailed.Add(1)
		}
	}
}

func TestSoak(t *testing.T) {
	duration := soakEnv(t, "SOAK_DURATION", 10*time.Minute)
	killEvery := soakEnv(t, "SOAK_KILL_EVERY", 30*time.Second)
	clients := 200
	if v := os.Getenv("SOAK_CLIENTS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			t.Fatalf("SOAK_CLIENTS=%q", v)
		}
		clients = n
	}

	// A fixed address, so that clients find the server again after each
	// restart. The listener is closed at once; the server binds it again.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	url, wsURL := "http://"+addr, "ws://"+addr+"/ws"

	dir := t.TempDir()
	cfg := filepath.Join(dir, "soak.yaml")
	// fsync always: an acknowledged input is on disk. A small rotation
	// size, so kills also land around rotations.
	os.WriteFile(cfg, []byte("session:\n  fsync: always\n  log_rotate_mb: 1\nagent:\n  demo:\n    delay_ms: 20\n"), 0o600)
	srv := &soakServer{t: t, dir: dir, args: []string{"-addr", addr, "-data", "state", "-config", cfg}}
	srv.start()

	var samples []sample
	samples = append(samples, srv.sample("start, no clients", url))

	acks := &soakAcks{seqs: map[string]int64{}}
	st := &soakStats{}
	ctx, stopClients := context.WithCancel(context.Background())
	defer stopClients()
	var wg sync.WaitGroup
	var allSynced sync.WaitGroup
	allSynced.Add(clients)
	for i := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			soakClient(ctx, i, wsURL, acks, st, allSynced.Done)
		}()
	}
	allSynced.Wait()
	samples = append(samples, srv.sample(fmt.Sprintf("start, %d clients joined", clients), url))
	wg.Add(1)
	go func() { defer wg.Done(); soakWebhook(ctx, url, acks, st) }()

	began := time.Now()
	end := began.Add(duration)
	kills := 0
	for {
		wait := min(killEvery, time.Until(end))
		if wait <= 0 {
			break
		}
		time.Sleep(wait)
		if time.Now().Before(end) {
			samples = append(samples, srv.sample(fmt.Sprintf("before kill %d (%v)", kills+1, time.Since(began).Round(time.Second)), url))
			srv.kill()
			kills++
			srv.start()
		}
	}
	samples = append(samples, srv.sample("end, clients connected", url))
	stopClients()
	wg.Wait()
	waitSubscribers(t, url, 0, 30*time.Second)
	samples = append(samples, srv.sample("end, all clients gone", url))

	// A clean stop, so the last cut turn gets its marker; then the log.
	srv.mu.Lock()
	p := srv.p
	srv.mu.Unlock()
	if _, err := p.stop(t, syscall.SIGTERM); err != nil {
		t.Fatalf("final stop: %v\n%s", err, p.stderr)
	}
	r := history.NewReader(filepath.Join(dir, "state", "chat_history.ndjson"))
	evs, truncated, rst, err := r.Range(context.Background(), history.Bound{}, history.Bound{}, 0)
	if err != nil || truncated {
		t.Fatalf("read log: %v (truncated %v)", err, truncated)
	}
	logged := map[string][]int64{}
	var prev int64
	for _, e := range evs {
		if e.Seq <= prev {
			t.Errorf("seq %d after %d in the log", e.Seq, prev)
		}
		prev = e.Seq
		if e.Type == event.User {
			var d event.UserData
			json.Unmarshal(e.Data, &d)
			if d.ClientMsgID != "" {
				logged[d.ClientMsgID] = append(logged[d.ClientMsgID], e.Seq)
			}
		}
	}
	for _, e := range acks.errs {
		t.Error(e)
	}
	missing, twice := 0, 0
	for id, seq := range acks.seqs {
		switch s := logged[id]; {
		case len(s) == 0:
			missing++
			t.Errorf("acknowledged %s (seq %d) is not in the chat log", id, seq)
		case len(s) > 1:
			twice++
			t.Errorf("acknowledged %s is in the chat log %d times (seqs %v)", id, len(s), s)
		case s[0] != seq:
			t.Errorf("acknowledged %s with seq %d, logged with seq %d", id, seq, s[0])
		}
	}
	for id, s := range logged {
		if len(s) > 1 && acks.seqs[id] == 0 {
			t.Errorf("%s is in the chat log %d times (seqs %v)", id, len(s), s)
		}
	}

	parts, _ := filepath.Glob(filepath.Join(dir, "state", "chat_history*.ndjson*"))
	var out strings.Builder
	fmt.Fprintf(&out, "soak: %v, %d clients, kill -9 every %v (%d kills)\n", duration, clients, killEvery, kills)
	fmt.Fprintf(&out, "  websocket: %d dials (%d failed while the server was down), %d rude and %d polite departures, %d dropped by kills\n",
		st.dials.Load(), st.dialErrors.Load(), st.rude.Load(), st.polite.Load(), st.dropped.Load())
	fmt.Fprintf(&out, "  messages:  %d sent by websocket (%d answered busy, %d rate_limited, %d other errors); webhook %d sent, %d accepted, %d busy, %d 429, %d failed\n",
		st.sent.Load(), st.busy.Load(), st.rateLimited.Load(), st.otherErrors.Load(),
		st.hookSent.Load(), st.hookAcked.Load(), st.hookBusy.Load(), st.hook429.Load(), st.hookFailed.Load())
	fmt.Fprintf(&out, "  chat log:  %d events in %d files, %d malformed lines skipped (kills mid-append); %d inputs acknowledged: %d missing, %d logged twice\n",
		len(evs), len(parts), rst.Skipped, len(acks.seqs), missing, twice)
	for _, sm := range samples {
		fmt.Fprintf(&out, "  %s\n", sm)
	}
	t.Log("\n" + out.String())

	// Leaks show as an idle server that holds more than a fresh one.
	first, last := samples[0], samples[len(samples)-1]
	if last.goroutines > first.goroutines+10 {
		t.Errorf("goroutines with no clients: %g at the end, %g at the start", last.goroutines, first.goroutines)
	}
	if last.fds > first.fds+10 {
		t.Errorf("open fds with no clients: %g at the end, %g at the start", last.fds, first.fds)
	}
	if len(acks.seqs) < 10 {
		t.Errorf("only %d inputs acknowledged: the soak did not exercise much", len(acks.seqs))
	}
}

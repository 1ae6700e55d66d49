package webhook_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/frontdesk-hq/frontdesk/channels/webhook"
	"github.com/frontdesk-hq/frontdesk/channels/ws"
	"github.com/frontdesk-hq/frontdesk/history"
	"github.com/frontdesk-hq/frontdesk/hub"
	"github.com/frontdesk-hq/frontdesk/internal/testkit/testagent"
	"github.com/frontdesk-hq/frontdesk/internal/testkit/testmetrics"
)

type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// TestRateLimit: past the burst POST /api/messages answers 429 with
// Retry-After, whatever the session would have said, and takes messages
// again once the bucket refilled.
func TestRateLimit(t *testing.T) {
	dir := t.TempDir()
	lg, err := history.Open(history.Options{Path: filepath.Join(dir, "chat_history.ndjson"), RotateMB: 5, Fsync: "never"})
	if err != nil {
		t.Fatal(err)
	}
	gate := testagent.NewGate() // the first turn runs on: later messages are answered busy
	m := hub.New(hub.Config{DataDir: dir}, lg, gate)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); m.Run(ctx) }()
	clk := &clock{t: time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)}
	h := webhook.New(m, webhook.Options{RatePerSec: 0.5, RateBurst: 3, Now: clk.Now})
	srv := httptest.NewServer(h)
	t.Cleanup(func() {
		gate.Release <- struct{}{}
		cancel()
		<-done
		srv.Close()
		lg.Close()
	})

	post := func() (int, http.Header, map[string]any) {
		t.Helper()
		resp, err := http.Post(srv.URL, "application/json", strings.NewReader(`{"content":"ping"}`))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		var body map[string]any
		json.Unmarshal(b, &body)
		return resp.StatusCode, resp.Header, body
	}
	for i, want := range []int{http.StatusAccepted, http.StatusConflict, http.StatusConflict} {
		if got, _, body := post(); got != want {
			t.Fatalf("request %d of the burst: %d %v, want %d", i+1, got, body, want)
		}
	}
	status, hdr, body := post()
	if status != http.StatusTooManyRequests || hdr.Get("Retry-After") != "2" || body["code"] != "rate_limited" {
		t.Fatalf("request past the burst: %d, Retry-After %q, %v; want 429, Retry-After 2 (a token every 2 s), code rate_limited",
			status, hdr.Get("Retry-After"), body)
	}
	clk.Add(1500 * time.Millisecond)
	if status, hdr, _ := post(); status != http.StatusTooManyRequests || hdr.Get("Retry-After") != "1" {
		t.Fatalf("1.5 s later: %d, Retry-After %q; want 429, Retry-After 1", status, hdr.Get("Retry-After"))
	}
	clk.Add(500 * time.Millisecond)
	if status, _, body := post(); status != http.StatusConflict {
		t.Fatalf("after the refill: %d %v, want 409 busy (the session answers again)", status, body)
	}

	// The family is shared with the WebSocket channel: both must register
	// side by side in one registry.
	text := testmetrics.Scrape(t, append(h.Collectors(), ws.New(m, ws.Options{}).Collectors()...)...)
	if got := testmetrics.Must(t, text, `frontdesk_limit_hits_total{limit="webhook_rate"}`); got != 2 {
		t.Fatalf("webhook_rate hits = %g, want 2", got)
	}
	testmetrics.Must(t, text, `frontdesk_limit_hits_total{limit="max_clients"}`)
}

// TestQueuedAnswers: under busy_policy queue a message sent while a turn
// runs is recorded at once — the 202 names its own turn and seq — and
// ?wait=1 waits through the queue for its reply.
func TestQueuedAnswers(t *testing.T) {
	dir := t.TempDir()
	lg, err := history.Open(history.Options{Path: filepath.Join(dir, "chat_history.ndjson"), RotateMB: 5, Fsync: "never"})
	if err != nil {
		t.Fatal(err)
	}
	gate := testagent.NewGate()
	m := hub.New(hub.Config{DataDir: dir, BusyPolicy: hub.PolicyQueue}, lg, gate)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); m.Run(ctx) }()
	srv := httptest.NewServer(webhook.New(m, webhook.Options{}))
	t.Cleanup(func() { cancel(); <-done; srv.Close(); lg.Close() })

	post := func(query, body string) (int, map[string]any) {
		t.Helper()
		resp, err := http.Post(srv.URL+query, "application/json", strings.NewReader(body))
		if err != nil {
			t.Error(err)
			return 0, nil
		}
		defer resp.Body.Close()
		var v map[string]any
		json.NewDecoder(resp.Body).Decode(&v)
		return resp.StatusCode, v
	}
	if code, body := post("", `{"content":"first"}`); code != http.StatusAccepted || body["turn"] != "t1" {
		t.Fatalf("first: %d %v", code, body)
	}
	code, body := post("", `{"content":"second","client_msg_id":"q-2"}`)
	seq, _ := body["seq"].(float64)
	turn := fmt.Sprintf("t%d", int(seq))
	if code != http.StatusAccepted || seq < 2 || body["turn"] != turn || body["queued"] != true {
		t.Fatalf("queued: %d %v, want 202 {turn t<seq>, seq, queued}", code, body)
	}
	type answer struct {
		code int
		body map[string]any
	}
	waited := make(chan answer, 1)
	go func() {
		// The resend of the queued message waits for its reply.
		c, b := post("?wait=1&timeout=10", `{"content":"second","client_msg_id":"q-2"}`)
		waited <- answer{c, b}
	}()
	gate.Release <- struct{}{} // t1 ends; the queued one starts
	gate.Release <- struct{}{} // and ends
	a := <-waited
	if a.code != http.StatusOK || a.body["turn"] != turn || a.body["status"] != "completed" || a.body["reply"] != "reply to second" {
		t.Fatalf("wait for the queued message: %d %v", a.code, a.body)
	}
}

// noHolder is a cluster in which no node holds the lease: every forwarded
// input is refused with no_leader.
type noHolder struct{}

func (noHolder) Forward(context.Context, string, []byte) ([]byte, error) { return nil, hub.ErrNoLeader }
func (noHolder) PublishLive([]byte)                                      {}
func (noHolder) LastSeq(context.Context) (int64, error)                  { return 0, hub.ErrNoLeader }
func (noHolder) Changed() <-chan struct{}                                { return nil }

// TestNoLeaderDoesNotUseUpTheRateLimit: a client polling while no node
// holds the lease is answered 503 no_leader each time — never 429 — so it
// gets in as soon as a holder is ready.
func TestNoLeaderDoesNotUseUpTheRateLimit(t *testing.T) {
	dir := t.TempDir()
	lg, err := history.Open(history.Options{Path: filepath.Join(dir, "chat_history.ndjson"), RotateMB: 5, Fsync: "never"})
	if err != nil {
		t.Fatal(err)
	}
	m := hub.New(hub.Config{DataDir: dir, Cluster: noHolder{}}, lg, testagent.NewGate())
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); m.Run(ctx) }()
	clk := &clock{t: time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)}
	h := webhook.New(m, webhook.Options{RatePerSec: 0.5, RateBurst: 2, Now: clk.Now})
	srv := httptest.NewServer(h)
	t.Cleanup(func() { cancel(); <-done; srv.Close(); lg.Close() })

	for i := range 10 {
		resp, err := http.Post(srv.URL, "application/json", strings.NewReader(`{"content":"ping","client_msg_id":"p1"}`))
		if err != nil {
			t.Fatal(err)
		}
		var body map[string]any
		json.NewDecoder(resp.Body).Decode(&body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusServiceUnavailable || body["code"] != "no_leader" || resp.Header.Get("Retry-After") != "1" {
			t.Fatalf("poll %d with no holder: %d %v (Retry-After %q), want 503 no_leader, Retry-After 1",
				i+1, resp.StatusCode, body, resp.Header.Get("Retry-After"))
		}
	}
}

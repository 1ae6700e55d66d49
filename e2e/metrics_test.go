package e2e

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/frontdesk-hq/frontdesk/event"
	"github.com/frontdesk-hq/frontdesk/internal/testkit/testmetrics"
)

// TestMetricsAnswerIsItSlow drives the real binary through a plain turn, a
// turn whose demo agent searches, an API search and each limit, then
// scrapes /metrics: every histogram has observations and every limit
// counter moved. (The email histogram needs mail servers: the email
// channel's own tests cover it.)
func TestMetricsAnswerIsItSlow(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "limits.yaml")
	os.WriteFile(cfg, []byte(`server:
  max_clients: 1
  frame_rate_per_sec: 0.1
  frame_rate_burst: 3
agent:
  demo:
    delay_ms: 1
channels:
  webhook:
    rate_per_sec: 0.1
    rate_burst: 1
`), 0o600)
	p := startBinary(t, dir, nil, "-addr", "127.0.0.1:0", "-data", "state", "-config", cfg)
	wsURL := "ws" + strings.TrimPrefix(p.url, "http") + "/ws"
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c, _, err := websocket.Dial(ctx, wsURL, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseNow()
	c.SetReadLimit(1 << 20)
	// until reads up to a frame of type want and returns its data.
	until := func(want event.Type) json.RawMessage {
		t.Helper()
		for {
			_, b, err := c.Read(ctx)
			if err != nil {
				t.Fatalf("waiting for %s: %v", want, err)
			}
			var e event.Event
			json.Unmarshal(b, &e)
			if e.Type == want {
				return e.Data
			}
		}
	}
	say := func(content, id string) {
		t.Helper()
		b, _ := json.Marshal(map[string]string{"type": "message", "content": content, "client_msg_id": id})
		if err := c.Write(ctx, websocket.MessageText, b); err != nil {
			t.Fatal(err)
		}
	}
	until(event.Synced)
	say("my boat is moored at pier seven", "m-1") // token 1 of 3
	until(event.TurnEnd)
	say("what did I say about the boat", "m-2") // token 2: the demo agent calls history_search
	until(event.TurnEnd)

	// The API search.
	if resp, err := http.Get(p.url + "/api/history/search?q=boat"); err != nil || resp.StatusCode != 200 {
		t.Fatalf("search: %v %v", resp, err)
	} else {
		resp.Body.Close()
	}
	// A second client is one too many (max_clients 1).
	c2, _, err := websocket.Dial(ctx, wsURL, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := c2.Read(ctx); websocket.CloseStatus(err) != websocket.StatusTryAgainLater {
		t.Fatalf("second client: %v, want close 1013", err)
	}
	// Token 3, then the bucket is empty: the next frame is refused.
	for range 2 {
		c.Write(ctx, websocket.MessageText, []byte(`{"type":"command","action":"cancel"}`))
	}
	var refused event.ErrorData
	for refused.Code != "rate_limited" {
		json.Unmarshal(until(event.Error), &refused)
	}
	// The webhook: one message, then 429.
	post := func() *http.Response {
		resp, err := http.Post(p.url+"/api/messages", "application/json", strings.NewReader(`{"content":"from cron"}`))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	if r := post(); r.StatusCode != http.StatusAccepted {
		t.Fatalf("first webhook message: %d, want 202", r.StatusCode)
	}
	if r := post(); r.StatusCode != http.StatusTooManyRequests || r.Header.Get("Retry-After") == "" {
		t.Fatalf("second webhook message: %d Retry-After %q, want 429 with Retry-After", r.StatusCode, r.Header.Get("Retry-After"))
	}

	resp, err := http.Get(p.url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	text := string(b)
	for _, series := range []string{
		`frontdesk_turn_duration_seconds_count{status="completed"}`,
		`frontdesk_turn_first_token_seconds_count`,
		`frontdesk_fanout_lag_seconds_count`,
		`frontdesk_chat_log_append_duration_seconds_count`,
		`frontdesk_search_duration_seconds_count{caller="client"}`,
		`frontdesk_search_duration_seconds_count{caller="tool"}`,
		`frontdesk_limit_hits_total{limit="max_clients"}`,
		`frontdesk_limit_hits_total{limit="frame_rate"}`,
		`frontdesk_limit_hits_total{limit="webhook_rate"}`,
		`go_goroutines`,
		`process_resident_memory_bytes`,
		`process_open_fds`,
	} {
		if v := testmetrics.Must(t, text, series); v <= 0 {
			t.Errorf("%s = %g, want > 0", series, v)
		}
	}
	if v := testmetrics.Must(t, text, `frontdesk_storage_errors_total{op="append"}`); v != 0 {
		t.Errorf("storage errors = %g on a healthy disk", v)
	}

	// Every frontdesk metric is documented in docs/running.md's Metrics
	// section, and the Grafana dashboard asks only for metrics that exist.
	readme, err := os.ReadFile(filepath.Join(repoRoot, "docs", "running.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, section, _ := strings.Cut(string(readme), "\n## Metrics\n")
	section, _, _ = strings.Cut(section, "\n## ")
	exposed := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^# HELP (frontdesk_\w+)`).FindAllStringSubmatch(text, -1) {
		exposed[m[1]] = true
		if !strings.Contains(section, "`"+m[1]) && !strings.Contains(section, m[1]+"`") && !strings.Contains(section, m[1]+",") {
			t.Errorf("%s is on /metrics but not in docs/running.md's Metrics section", m[1])
		}
	}
	dash, err := os.ReadFile(filepath.Join(repoRoot, "contrib", "grafana-frontdesk.json"))
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range regexp.MustCompile(`frontdesk_[a-z_]+`).FindAllString(string(dash), -1) {
		base := strings.TrimSuffix(m, "_bucket")
		if !exposed[base] && !strings.HasPrefix(base, "frontdesk_email_") {
			t.Errorf("the Grafana dashboard asks for %s, which /metrics does not have", m)
		}
	}
}

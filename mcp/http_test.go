package mcp_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/frontdesk-hq/frontdesk/internal/limithits"
	"github.com/frontdesk-hq/frontdesk/internal/testkit/testmetrics"

	"github.com/frontdesk-hq/frontdesk/agent"
	"github.com/frontdesk-hq/frontdesk/event"
	"github.com/frontdesk-hq/frontdesk/hub"
	"github.com/frontdesk-hq/frontdesk/mcp"
)

// post sends one raw JSON-RPC body to /mcp as an MCP client would.
func post(t *testing.T, url, body string) (int, http.Header, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url+"/mcp", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, res.Header, string(b)
}

func toolCall(id int, name, args string) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":%q,"arguments":%s}}`, id, name, args)
}

// rpcErrorCode is the error code of a JSON-RPC error answer, or 0.
func rpcErrorCode(t *testing.T, body string) int {
	t.Helper()
	var m struct {
		Error struct{ Code int } `json:"error"`
	}
	if err := json.Unmarshal([]byte(body), &m); err != nil {
		t.Fatalf("not a JSON-RPC answer: %q", body)
	}
	return m.Error.Code
}

// TestMCPRefusesBatchesAndLargeBodies: a batch of tool calls ran in full
// before (20,000 of them: 38 s of CPU, RSS +480 MB); now it is refused
// unread, as is a body over server.max_message_bytes, and a single call
// still works.
func TestMCPRefusesBatchesAndLargeBodies(t *testing.T) {
	_, url := serverWith(t, false, mcp.SendOptions{}, mcp.HTTPOptions{MaxBodyBytes: 64 << 10})
	var calls []string
	for i := range 200 {
		calls = append(calls, toolCall(i+1, "history_search", `{"query":"anything"}`))
	}
	status, _, body := post(t, url, " \n["+strings.Join(calls, ",")+"]")
	if status != http.StatusBadRequest || rpcErrorCode(t, body) != -32600 || !strings.Contains(body, "batches are not supported") {
		t.Errorf("batch: %d %.300s", status, body)
	}
	status, _, body = post(t, url, toolCall(1, "history_search", `{"query":"`+strings.Repeat("x", 70<<10)+`"}`))
	if status != http.StatusRequestEntityTooLarge || rpcErrorCode(t, body) != -32600 || !strings.Contains(body, "server.max_message_bytes") {
		t.Errorf("large body: %d %.200s", status, body)
	}
	status, _, body = post(t, url, toolCall(1, "history_search", `{"query":"anything"}`))
	if status != http.StatusOK || !strings.Contains(body, `"result"`) || !strings.Contains(body, `\"hits\":[]`) {
		t.Errorf("single call: %d %s", status, body)
	}
}

// blocker is a tool that waits until the test lets it go.
func blocker(entered chan<- struct{}, release <-chan struct{}) agent.Tool {
	return agent.Tool{Name: "block", Parameters: json.RawMessage(`{"type":"object"}`),
		Call: func(ctx context.Context, _ json.RawMessage) (string, error) {
			entered <- struct{}{}
			select {
			case <-release:
				return "released", nil
			case <-ctx.Done():
				return "", ctx.Err()
			}
		}}
}

// TestMCPBoundsConcurrentRequests: with every slot taken, one more request
// waits QueueWait and is answered 429 with Retry-After; once a slot is
// free it runs.
func TestMCPBoundsConcurrentRequests(t *testing.T) {
	entered, release := make(chan struct{}), make(chan struct{})
	srv := httptest.NewServer(mcp.Handler(mcp.NewServer("test", []agent.Tool{blocker(entered, release)}),
		mcp.HTTPOptions{MaxConcurrent: 2, QueueWait: 50 * time.Millisecond}))
	defer srv.Close()
	answers := make(chan string, 2)
	for i := range 2 {
		go func() { _, _, body := post(t, srv.URL, toolCall(i+1, "block", `{}`)); answers <- body }()
		<-entered
	}
	status, hdr, body := post(t, srv.URL, toolCall(3, "block", `{}`))
	if status != http.StatusTooManyRequests || hdr.Get("Retry-After") != "1" || !strings.Contains(body, "too many /mcp requests") {
		t.Errorf("third request while two run: %d %q %s", status, hdr.Get("Retry-After"), body)
	}
	close(release)
	for range 2 {
		if body := <-answers; !strings.Contains(body, "released") {
			t.Errorf("a held request answered %s", body)
		}
	}
	go func() { <-entered }()
	if status, _, body := post(t, srv.URL, toolCall(4, "block", `{}`)); status != http.StatusOK || !strings.Contains(body, "released") {
		t.Errorf("after the slots freed: %d %s", status, body)
	}
}

// pendingSubmitter accepts every input and never finishes the turn.
type pendingSubmitter struct{ submitted chan hub.Input }

func (p pendingSubmitter) Submit(_ context.Context, in hub.Input) (hub.Result, error) {
	p.submitted <- in
	return hub.Result{Turn: "t1"}, nil
}

// TestSendMessageGivesItsSlotBack: a send_message waiting for a long reply
// does not hold one of the few /mcp slots.
func TestSendMessageGivesItsSlotBack(t *testing.T) {
	sub := pendingSubmitter{submitted: make(chan hub.Input, 1)}
	srv := httptest.NewServer(mcp.Handler(mcp.NewServer("test", []agent.Tool{mcp.SendTool(sub, mcp.SendOptions{})}),
		mcp.HTTPOptions{MaxConcurrent: 1, QueueWait: 50 * time.Millisecond}))
	defer srv.Close()
	go func() {
		req, _ := http.NewRequest(http.MethodPost, srv.URL+"/mcp", strings.NewReader(toolCall(1, "send_message", `{"content":"hi"}`)))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if res, err := http.DefaultClient.Do(req); err == nil {
			res.Body.Close()
		}
	}()
	in := <-sub.submitted
	// The SDK does not cancel a stateless call when its request ends: the
	// turn ending ends it (and lets srv.Close return).
	defer func() { in.Done <- hub.TurnOutcome{Turn: "t1", Status: event.StatusCompleted} }()
	// The slot is given back just after Submit returns: wait for it.
	deadline := time.Now().Add(10 * time.Second)
	for {
		status, _, body := post(t, srv.URL, `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)
		if status == http.StatusOK && strings.Contains(body, "send_message") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("tools/list while send_message waits for its reply: %d %s", status, body)
		}
	}
}

// TestSendMessageLimits: send_message refuses content over
// server.max_message_bytes and calls over the webhook's rate limit, with
// a tool error the caller can read, and nothing refused reaches the
// conversation (before: 3 MB were taken and 40 calls in 0.4 s passed).
func TestSendMessageLimits(t *testing.T) {
	t0 := time.Date(2026, 11, 24, 10, 0, 0, 0, time.UTC)
	var elapsed atomic.Int64 // the tool reads the clock on the server's goroutines
	now := func() time.Time { return t0.Add(time.Duration(elapsed.Load())) }
	limited := limithits.Counter("mcp_send_rate")
	h, url := serverWith(t, true, mcp.SendOptions{MaxBytes: 2048, RatePerSec: 1, RateBurst: 3, Now: now, Limited: limited},
		mcp.HTTPOptions{MaxBodyBytes: 1 << 20})
	cs, err := connect(t, url, token)
	if err != nil {
		t.Fatal(err)
	}
	big := strings.Repeat("é", 1100) // 2200 bytes
	if out, isErr := call(t, cs, "send_message", map[string]any{"content": big}); !isErr || !strings.Contains(out, "too_large") || !strings.Contains(out, "2200 bytes") {
		t.Errorf("large content: %v %s", isErr, out)
	}
	for i := range 2 {
		if out, isErr := call(t, cs, "send_message", map[string]any{"content": fmt.Sprintf("hello %d", i)}); isErr {
			t.Fatalf("call %d within the burst: %s", i, out)
		}
	}
	out, isErr := call(t, cs, "send_message", map[string]any{"content": "one too many"})
	if !isErr || !strings.Contains(out, "rate_limited") || !strings.Contains(out, "try again in 1 s") {
		t.Errorf("call over the burst: %v %s", isErr, out)
	}
	if n, _ := testmetrics.Value(testmetrics.Scrape(t, limited), `frontdesk_limit_hits_total{limit="mcp_send_rate"}`); n != 1 {
		t.Errorf("frontdesk_limit_hits_total{limit=\"mcp_send_rate\"} = %v, want 1", n)
	}
	elapsed.Add(int64(time.Second)) // one more token
	if out, isErr := call(t, cs, "send_message", map[string]any{"content": "later"}); isErr {
		t.Errorf("call after a second: %s", out)
	}
	evs, err := h.Recent(context.Background(), 100)
	if err != nil {
		t.Fatal(err)
	}
	var inputs []string
	for _, e := range evs {
		if m, ok := e.Message(); ok && e.Type == event.User {
			inputs = append(inputs, m.Content)
		}
	}
	if got := strings.Join(inputs, "|"); got != "hello 0|hello 1|later" {
		t.Errorf("inputs in the conversation: %q", got)
	}
}

// TestMCPArgsRefuseDuplicateKeys: tool arguments naming a key twice, or
// in two cases, are refused as on every other door — before, the last
// one won ({"content":"a","Content":"b"} sent "b") — and nothing reaches
// the conversation.
func TestMCPArgsRefuseDuplicateKeys(t *testing.T) {
	h, url := serverWith(t, true, mcp.SendOptions{}, mcp.HTTPOptions{})
	tests := []struct{ tool, args, key string }{
		{"send_message", `{"content":"a","Content":"b"}`, `\"Content\"`},
		{"send_message", `{"content":"a","content":"b"}`, `\"content\" appears twice`},
		{"history_search", `{"query":"a","Query":"b"}`, `\"Query\"`},
	}
	for _, tc := range tests {
		status, _, body := post(t, url, toolCall(1, tc.tool, tc.args))
		if status != http.StatusOK || !strings.Contains(body, `"isError":true`) || !strings.Contains(body, tc.key) {
			t.Errorf("%s %s: %d %.300s, want a tool error naming %s", tc.tool, tc.args, status, body, tc.key)
		}
	}
	if evs, err := h.Recent(context.Background(), 10); err != nil || len(evs) != 0 {
		t.Fatalf("the refused calls left %d events (%v)", len(evs), err)
	}
}

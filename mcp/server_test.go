package mcp_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/frontdesk-hq/frontdesk/agent"
	"github.com/frontdesk-hq/frontdesk/channels/ws"
	"github.com/frontdesk-hq/frontdesk/event"
	"github.com/frontdesk-hq/frontdesk/history"
	"github.com/frontdesk-hq/frontdesk/hub"
	"github.com/frontdesk-hq/frontdesk/index"
	"github.com/frontdesk-hq/frontdesk/mcp"
	"github.com/frontdesk-hq/frontdesk/web"
)

const token = "a-test-token-0123456789"

// server runs the hub, its index and the web handler with /mcp mounted,
// as main wires them.
func server(t *testing.T, send bool) (*hub.SessionManager, string) {
	t.Helper()
	return serverWith(t, send, mcp.SendOptions{}, mcp.HTTPOptions{})
}

// serverWith is server with send_message's and /mcp's bounds.
func serverWith(t *testing.T, send bool, so mcp.SendOptions, ho mcp.HTTPOptions) (*hub.SessionManager, string) {
	t.Helper()
	dir := t.TempDir()
	path := filepath.Join(dir, "chat_history.ndjson")
	lg, err := history.Open(history.Options{Path: path, RotateMB: 5, Fsync: history.FsyncNever})
	if err != nil {
		t.Fatal(err)
	}
	ix, err := index.NewFollower(index.FollowerOptions{Path: filepath.Join(dir, index.FileName),
		Log: history.NewReader(path).Since, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	h := hub.New(hub.Config{DataDir: dir, History: history.NewReader(path), Index: ix}, lg, &agent.Demo{})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); go ix.Run(ctx); h.Run(ctx) }()
	tools := hub.HistoryTools(h, "")
	if send {
		tools = append(tools, mcp.SendTool(h, so))
	}
	wsh := ws.New(h, ws.Options{})
	srv := httptest.NewServer(web.Handler(h, web.Options{Addr: "127.0.0.1:0", Token: token, WS: wsh,
		MCP: mcp.Handler(mcp.NewServer("test", tools), ho)}))
	t.Cleanup(func() {
		cancel()
		<-done
		srv.Close()
		wsh.Wait(context.Background())
		lg.Close()
	})
	return h, srv.URL
}

// bearer adds the token to every request.
type bearer struct{ token string }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}

func connect(t *testing.T, url, tok string) (*sdk.ClientSession, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c := sdk.NewClient(&sdk.Implementation{Name: "test-client", Version: "1"}, nil)
	cs, err := c.Connect(ctx, &sdk.StreamableClientTransport{Endpoint: url + "/mcp", MaxRetries: -1,
		DisableStandaloneSSE: true, HTTPClient: &http.Client{Transport: bearer{tok}}}, nil)
	if err == nil {
		t.Cleanup(func() { cs.Close() })
	}
	return cs, err
}

func call(t *testing.T, cs *sdk.ClientSession, name string, args map[string]any) (string, bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if len(res.Content) != 1 {
		t.Fatalf("%s: %d content parts", name, len(res.Content))
	}
	return res.Content[0].(*sdk.TextContent).Text, res.IsError
}

func TestHistoryToolsOverHTTP(t *testing.T) {
	h, url := server(t, false)
	done := make(chan hub.TurnOutcome, 1)
	if _, err := h.Submit(context.Background(), hub.Input{Channel: event.ChannelWeb, Content: "My sister's birthday is on the 14th of March", Done: done}); err != nil {
		t.Fatal(err)
	}
	<-done

	if _, err := connect(t, url, "wrong-token"); err == nil {
		t.Fatal("connected with a wrong token")
	}
	cs, err := connect(t, url, token)
	if err != nil {
		t.Fatal(err)
	}
	lt, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range lt.Tools {
		names = append(names, tool.Name)
		if tool.Description == "" || tool.InputSchema == nil {
			t.Errorf("tool %s lacks a description or schema", tool.Name)
		}
	}
	slices.Sort(names)
	if want := []string{"history_range", "history_recent", "history_search"}; !slices.Equal(names, want) {
		t.Errorf("tools %v, want %v", names, want)
	}

	out, isErr := call(t, cs, "history_search", map[string]any{"query": "birthdays sister"})
	var res index.Result
	if err := json.Unmarshal([]byte(out), &res); err != nil || isErr {
		t.Fatalf("search: %s (%v)", out, err)
	}
	if len(res.Hits) == 0 || res.Hits[0].Seq != 1 || res.Mode != "and" || !strings.Contains(res.Hits[0].Snippet, "«birthday»") {
		t.Errorf("search result %s", out)
	}
	out, isErr = call(t, cs, "history_recent", map[string]any{"n": 2})
	if isErr || !strings.Contains(out, `"type":"assistant"`) || !strings.Contains(out, "14th of March") {
		t.Errorf("recent: %s", out)
	}
	out, isErr = call(t, cs, "history_range", map[string]any{"from": "1", "to": "1"})
	if isErr || strings.Count(out, `"seq":`) != 1 || !strings.Contains(out, `"truncated":false`) {
		t.Errorf("range: %s", out)
	}
	// A tool's error is a result the model can read, not a protocol error.
	if out, isErr := call(t, cs, "history_range", map[string]any{"from": "yesterday", "to": "2"}); !isErr || !strings.Contains(out, "from:") {
		t.Errorf("bad range: %v %s", isErr, out)
	}
	if out, isErr := call(t, cs, "history_search", map[string]any{"query": "type:robot"}); !isErr || !strings.Contains(out, "type:user") {
		t.Errorf("bad query: %v %s", isErr, out)
	}
	if _, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "send_message", Arguments: map[string]any{"content": "x"}}); err == nil {
		t.Error("send_message offered without mcp.serve_send")
	}
}

func TestSendMessageOverHTTP(t *testing.T) {
	h, url := server(t, true)
	sub, _, err := h.Subscribe(context.Background(), 0)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	cs, err := connect(t, url, token)
	if err != nil {
		t.Fatal(err)
	}
	out, isErr := call(t, cs, "send_message", map[string]any{"content": "hello from another agent"})
	var o hub.TurnOutcome
	if err := json.Unmarshal([]byte(out), &o); err != nil || isErr || o.Status != event.StatusCompleted || !strings.Contains(o.Reply, "hello from another agent") {
		t.Fatalf("send_message: %s (%v)", out, err)
	}
	// Every client saw it, labelled as coming over MCP.
	deadline := time.After(5 * time.Second)
	for {
		select {
		case <-sub.Ready():
		case <-deadline:
			t.Fatal("no user event with channel mcp reached the subscriber")
		}
		frames, _ := sub.Take()
		for _, f := range frames {
			if m, ok := f.Event.Message(); ok && f.Event.Type == event.User {
				if m.Channel != mcp.Channel || m.Content != "hello from another agent" {
					t.Fatalf("user event %+v", m)
				}
				return
			}
		}
	}
}

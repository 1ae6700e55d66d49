package mcp_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/frontdesk-hq/frontdesk/agent"
	"github.com/frontdesk-hq/frontdesk/mcp"
)

var fake struct {
	once sync.Once
	path string
	err  error
}

// fakeServer builds testdata/fakeserver (an MCP server made with the SDK)
// once per test binary.
func fakeServer(t testing.TB) string {
	t.Helper()
	fake.once.Do(func() {
		dir, err := os.MkdirTemp("", "frontdesk-mcp-fake-")
		if err != nil {
			fake.err = err
			return
		}
		fake.path = filepath.Join(dir, "fakeserver")
		out, err := exec.Command("go", "build", "-o", fake.path, "./testdata/fakeserver").CombinedOutput()
		if err != nil {
			fake.err = errors.New(string(out))
		}
	})
	if fake.err != nil {
		t.Fatalf("build the fake MCP server: %v", fake.err)
	}
	return fake.path
}

// manager runs a Manager until the test ends.
func manager(t *testing.T, servers ...mcp.ServerConfig) *mcp.Manager {
	t.Helper()
	m := mcp.NewManager("test", servers, slog.New(slog.DiscardHandler))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); m.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	return m
}

// waitFor polls cond until it holds, failing after 20 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func tool(m *mcp.Manager, name string) *agent.Tool {
	for _, t := range m.Tools() {
		if t.Name == name {
			return &t
		}
	}
	return nil
}

func ready(m *mcp.Manager, server string) bool { return readyAfter(m, server, 0) }

// readyAfter reports whether server is ready after at least n restarts.
func readyAfter(m *mcp.Manager, server string, n int) bool {
	for _, s := range m.States() {
		if s.Name == server && s.State == "ready" && s.Restarts >= n {
			return true
		}
	}
	return false
}

func callTool(t *testing.T, m *mcp.Manager, name, args string, timeout time.Duration) (string, error) {
	t.Helper()
	tl := tool(m, name)
	if tl == nil {
		t.Fatalf("no tool %s among %v", name, m.States())
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	return tl.Call(ctx, json.RawMessage(args))
}

func stdio(t *testing.T, name string, args ...string) mcp.ServerConfig {
	return mcp.ServerConfig{Name: name, Command: fakeServer(t), Args: args, Env: []string{"PATH=" + os.Getenv("PATH")}, Timeout: 30 * time.Second}
}

func TestClientStdio(t *testing.T) {
	m := manager(t, stdio(t, "fake"))
	waitFor(t, "the server to be ready", func() bool { return ready(m, "fake") })
	echo := tool(m, "fake__echo")
	if echo == nil || echo.Server != "fake" || echo.Description != "Echo the text back." || !strings.Contains(string(echo.Parameters), `"text"`) {
		t.Fatalf("echo tool %+v", echo)
	}
	if out, err := callTool(t, m, "fake__echo", `{"text":"hi"}`, 10*time.Second); err != nil || out != "echo: hi" {
		t.Errorf("echo: %q %v", out, err)
	}
	if _, err := callTool(t, m, "fake__fail", `{}`, 10*time.Second); err == nil || !strings.Contains(err.Error(), "always fails") {
		t.Errorf("fail: %v", err)
	}
	if out, err := callTool(t, m, "fake__image", `{}`, 10*time.Second); err != nil || !strings.HasPrefix(out, "[image: image/png,") {
		t.Errorf("image: %q %v", out, err)
	}

	// Cancel ends the call at once.
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(100*time.Millisecond, cancel)
	start := time.Now()
	_, err := tool(m, "fake__slow").Call(ctx, json.RawMessage(`{}`))
	if !errors.Is(err, context.Canceled) || time.Since(start) > time.Second {
		t.Errorf("cancelled slow call: %v after %v", err, time.Since(start))
	}
	if out, err := callTool(t, m, "fake__echo", `{"text":"still here"}`, 10*time.Second); err != nil || out != "echo: still here" {
		t.Errorf("after cancel: %q %v", out, err)
	}

	// tools/list_changed: a new tool shows up.
	if _, err := callTool(t, m, "fake__add_tool", `{}`, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the new tool", func() bool { return tool(m, "fake__extra") != nil })
}

func TestClientRestartsCrashedAndHungServers(t *testing.T) {
	m := manager(t, stdio(t, "fake"))
	waitFor(t, "ready", func() bool { return ready(m, "fake") })
	// The server dies mid-call: an error for the call, then it is back.
	if _, err := callTool(t, m, "fake__crash", `{}`, 10*time.Second); err == nil {
		t.Error("a crashed call returned no error")
	}
	waitFor(t, "the restart after the crash", func() bool { return readyAfter(m, "fake", 1) })
	if out, err := callTool(t, m, "fake__echo", `{"text":"back"}`, 10*time.Second); err != nil || out != "echo: back" {
		t.Errorf("after the crash: %q %v", out, err)
	}
	// The server hangs on a call and ignores its cancellation: the call
	// ends at once, and the stuck server is killed and restarted.
	states := func() string { b, _ := json.Marshal(m.States()); return string(b) }
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(100*time.Millisecond, cancel)
	start := time.Now()
	if _, err := tool(m, "fake__freeze").Call(ctx, json.RawMessage(`{}`)); !errors.Is(err, context.Canceled) || time.Since(start) > time.Second {
		t.Errorf("cancelled frozen call: %v after %v", err, time.Since(start))
	}
	waitFor(t, "the restart after the freeze: "+states(), func() bool { return readyAfter(m, "fake", 2) })
	if out, err := callTool(t, m, "fake__echo", `{"text":"again"}`, 10*time.Second); err != nil || out != "echo: again" {
		t.Errorf("after the freeze: %q %v", out, err)
	}
}

func TestClientServerThatFailsToStart(t *testing.T) {
	m := manager(t, mcp.ServerConfig{Name: "broken", Command: "/nonexistent/mcp-server"}, stdio(t, "fake"))
	waitFor(t, "the good server", func() bool { return ready(m, "fake") })
	waitFor(t, "the broken server to be reported", func() bool {
		for _, s := range m.States() {
			if s.Name == "broken" && s.State == "failed" && strings.Contains(s.Error, "/nonexistent/mcp-server") {
				return true
			}
		}
		return false
	})
	for _, tl := range m.Tools() {
		if tl.Server == "broken" {
			t.Errorf("a failed server's tool is offered: %s", tl.Name)
		}
	}
}

func TestClientGarbageOnStdoutIsIsolated(t *testing.T) {
	m := manager(t, stdio(t, "noisy", "-garbage"), stdio(t, "fake"))
	waitFor(t, "the good server", func() bool { return ready(m, "fake") })
	if out, err := callTool(t, m, "fake__echo", `{"text":"fine"}`, 10*time.Second); err != nil || out != "echo: fine" {
		t.Errorf("the other server: %q %v", out, err)
	}
	// The noisy one either copes (the SDK skips the line) or is failed and
	// retried; either way the session and the other server are unharmed.
	for _, s := range m.States() {
		if s.Name == "noisy" && s.State == "ready" {
			if out, err := callTool(t, m, "noisy__echo", `{"text":"x"}`, 10*time.Second); err != nil || out != "echo: x" {
				t.Errorf("noisy server ready but broken: %q %v", out, err)
			}
		}
	}
}

func TestClientHTTPWithHeadersAndAllowlist(t *testing.T) {
	s := sdk.NewServer(&sdk.Implementation{Name: "intranet", Version: "1"}, nil)
	for _, name := range []string{"search", "delete_everything"} {
		sdk.AddTool(s, &sdk.Tool{Name: name, Description: name},
			func(ctx context.Context, _ *sdk.CallToolRequest, in struct {
				Q string `json:"q"`
			}) (*sdk.CallToolResult, any, error) {
				return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: name + ": " + in.Q}}}, nil, nil
			})
	}
	h := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return s }, nil)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer intranet-secret" {
			http.Error(w, "no", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close) // after the manager's cleanup, which closes its streams

	m := manager(t,
		mcp.ServerConfig{Name: "intranet", URL: srv.URL, Headers: map[string]string{"Authorization": "Bearer intranet-secret"}, Tools: []string{"search"}},
		mcp.ServerConfig{Name: "nokey", URL: srv.URL})
	waitFor(t, "ready", func() bool { return ready(m, "intranet") })
	var names []string
	for _, tl := range m.Tools() {
		names = append(names, tl.Name)
	}
	if !slices.Equal(names, []string{"intranet__search"}) {
		t.Errorf("tools %v: want only the allowed one of the server with the key", names)
	}
	if out, err := callTool(t, m, "intranet__search", `{"q":"budget"}`, 10*time.Second); err != nil || out != "search: budget" {
		t.Errorf("search: %q %v", out, err)
	}
	lines, err := mcp.NewManager("test", []mcp.ServerConfig{{Name: "intranet", URL: srv.URL,
		Headers: map[string]string{"Authorization": "Bearer intranet-secret"}}}, nil).Check(context.Background())
	if err != nil || len(lines) != 1 || !strings.Contains(lines[0], "search, delete_everything") && !strings.Contains(lines[0], "delete_everything, search") {
		t.Errorf("check: %v %v", lines, err)
	}
}

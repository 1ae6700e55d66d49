package mcp_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/frontdesk-hq/frontdesk/agent"
	"github.com/frontdesk-hq/frontdesk/channels/ws"
	"github.com/frontdesk-hq/frontdesk/event"
	"github.com/frontdesk-hq/frontdesk/history"
	"github.com/frontdesk-hq/frontdesk/hub"
	"github.com/frontdesk-hq/frontdesk/internal/testkit/testnpm"
	"github.com/frontdesk-hq/frontdesk/mcp"
)

// model is an OpenAI-compatible chat completions server that streams
// (SSE, the real wire format) one tool call for each user message it has
// not answered yet, then a reply quoting the tool's output.
type model struct {
	mu    sync.Mutex
	calls map[string]string // user message → tool name + " " + JSON args
}

func (m *model) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Messages []struct {
			Role    string `json:"role"`
			Content any    `json:"content"`
		} `json:"messages"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	chunk := func(delta string, finish string) {
		fin := "null"
		if finish != "" {
			fin = `"` + finish + `"`
		}
		fmt.Fprintf(w, "data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"fake\",\"choices\":[{\"index\":0,\"delta\":%s,\"finish_reason\":%s}]}\n\n", delta, fin)
		w.(http.Flusher).Flush()
	}
	last := req.Messages[len(req.Messages)-1]
	if last.Role == "tool" {
		text, _ := last.Content.(string)
		b, _ := json.Marshal("The tool said: " + text)
		chunk(`{"role":"assistant","content":`+string(b)+`}`, "")
		chunk(`{}`, "stop")
	} else {
		user, _ := last.Content.(string)
		m.mu.Lock()
		call := m.calls[user]
		m.mu.Unlock()
		name, args, _ := strings.Cut(call, " ")
		a, _ := json.Marshal(args)
		chunk(`{"role":"assistant","tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"`+name+`","arguments":`+string(a)+`}}]}`, "")
		chunk(`{}`, "tool_calls")
	}
	io.WriteString(w, "data: [DONE]\n\n")
}

type session struct {
	hub *hub.SessionManager
	url string
	dir string
}

// start runs a hub with the openai backend on model and the tools of m,
// behind the WebSocket channel.
func start(t *testing.T, mod *model, m *mcp.Manager) session {
	t.Helper()
	ms := httptest.NewServer(mod)
	t.Cleanup(ms.Close)
	ag, err := agent.NewOpenAI(agent.OpenAIOptions{BaseURL: ms.URL + "/v1", APIKey: "k", Model: "fake", MaxToolSteps: 4,
		Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "chat_history.ndjson")
	lg, err := history.Open(history.Options{Path: path, RotateMB: 5, Fsync: history.FsyncNever})
	if err != nil {
		t.Fatal(err)
	}
	h := hub.New(hub.Config{DataDir: dir, History: history.NewReader(path), Tools: m.Tools, Logger: slog.New(slog.DiscardHandler)}, lg, ag)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); h.Run(ctx) }()
	wsh := ws.New(h, ws.Options{})
	srv := httptest.NewServer(wsh)
	t.Cleanup(func() {
		cancel()
		<-done
		srv.Close()
		wsh.Wait(context.Background())
		lg.Close()
	})
	return session{hub: h, url: "ws" + strings.TrimPrefix(srv.URL, "http"), dir: dir}
}

type wsClient struct {
	t *testing.T
	c *websocket.Conn
}

func dialWS(t *testing.T, url string) *wsClient {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, _, err := websocket.Dial(ctx, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	c.SetReadLimit(1 << 20)
	t.Cleanup(func() { c.CloseNow() })
	cl := &wsClient{t: t, c: c}
	cl.until(event.Synced)
	return cl
}

// until reads frames up to the first of type typ and returns them.
func (cl *wsClient) until(typ event.Type) []event.Event {
	cl.t.Helper()
	var out []event.Event
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		_, b, err := cl.c.Read(ctx)
		cancel()
		if err != nil {
			cl.t.Fatalf("read (waiting for %s): %v", typ, err)
		}
		var e event.Event
		if err := json.Unmarshal(b, &e); err != nil {
			cl.t.Fatal(err)
		}
		out = append(out, e)
		if e.Type == typ {
			return out
		}
	}
}

func (cl *wsClient) send(v any) {
	cl.t.Helper()
	b, _ := json.Marshal(v)
	if err := cl.c.Write(context.Background(), websocket.MessageText, b); err != nil {
		cl.t.Fatal(err)
	}
}

func toolEvents(t *testing.T, evs []event.Event) (call event.ToolCallData, res event.ToolResultData, reply string, end event.TurnEndData) {
	t.Helper()
	for _, e := range evs {
		switch e.Type {
		case event.ToolCall:
			e.Decode(&call)
		case event.ToolResult:
			e.Decode(&res)
		case event.Assistant:
			m, _ := e.Message()
			reply = m.Content
		case event.TurnEnd:
			e.Decode(&end)
		}
	}
	return
}

// The model calls an MCP tool through the openai backend: the call and its
// result stream to two WebSocket clients, labelled with the server, and
// land in the chat log.
func TestModelCallsAnMCPToolSeenByEveryClient(t *testing.T) {
	mgr := manager(t, stdio(t, "fake"))
	waitFor(t, "ready", func() bool { return ready(mgr, "fake") })
	mod := &model{calls: map[string]string{"use the tool": `fake__echo {"text":"from the model"}`}}
	s := start(t, mod, mgr)
	a, b := dialWS(t, s.url), dialWS(t, s.url)
	a.send(map[string]string{"type": "message", "content": "use the tool", "client_msg_id": "c1"})
	for name, cl := range map[string]*wsClient{"a": a, "b": b} {
		call, res, reply, end := toolEvents(t, cl.until(event.TurnEnd))
		if call.Name != "fake__echo" || call.Server != "fake" || string(call.Args) != `{"text":"from the model"}` {
			t.Errorf("%s: tool_call %+v", name, call)
		}
		if res.Output != "echo: from the model" || res.Server != "fake" || res.Error != "" {
			t.Errorf("%s: tool_result %+v", name, res)
		}
		if reply != "The tool said: echo: from the model" || end.Status != event.StatusCompleted {
			t.Errorf("%s: reply %q, %s", name, reply, end.Status)
		}
	}
	log, err := os.ReadFile(filepath.Join(s.dir, "chat_history.ndjson"))
	if err != nil || !strings.Contains(string(log), `"type":"tool_call","turn":"t1","data":{"id":"call_1","name":"fake__echo","args":{"text":"from the model"},"server":"fake"}`) {
		t.Errorf("chat log lacks the tool call with its server:\n%s", log)
	}
}

// The reference servers from npm: the filesystem server reads a file for
// the model; server-everything's long-running operation is cancelled from
// a client and the turn ends cancelled within a second.
func TestReferenceServers(t *testing.T) {
	files := testnpm.Server(t, "mcp-server-filesystem")
	everything := testnpm.Server(t, "mcp-server-everything")
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "notes.txt"), []byte("the spare key is under the blue flowerpot"), 0o600); err != nil {
		t.Fatal(err)
	}
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME")}
	mgr := manager(t,
		mcp.ServerConfig{Name: "files", Command: files, Args: []string{root}, Env: env, Timeout: 30 * time.Second},
		mcp.ServerConfig{Name: "everything", Command: everything, Env: env, Timeout: 60 * time.Second})
	waitFor(t, "both servers", func() bool { return ready(mgr, "files") && ready(mgr, "everything") })
	args, _ := json.Marshal(map[string]string{"path": filepath.Join(root, "notes.txt")})
	mod := &model{calls: map[string]string{
		"read my notes":  "files__read_text_file " + string(args),
		"take your time": `everything__trigger-long-running-operation {"duration":30,"steps":30}`,
	}}
	s := start(t, mod, mgr)
	a, b := dialWS(t, s.url), dialWS(t, s.url)

	a.send(map[string]string{"type": "message", "content": "read my notes", "client_msg_id": "c1"})
	_, res, reply, _ := toolEvents(t, b.until(event.TurnEnd))
	if res.Server != "files" || !strings.Contains(res.Output, "blue flowerpot") || !strings.Contains(reply, "blue flowerpot") {
		t.Errorf("read_text_file: %+v, reply %q", res, reply)
	}
	a.until(event.TurnEnd)

	a.send(map[string]string{"type": "message", "content": "take your time", "client_msg_id": "c2"})
	b.until(event.ToolCall)
	start := time.Now()
	b.send(map[string]string{"type": "command", "action": "cancel"})
	_, _, _, end := toolEvents(t, a.until(event.TurnEnd))
	if end.Status != event.StatusCancelled || time.Since(start) > time.Second {
		t.Errorf("cancel during the long-running tool: %s after %v", end.Status, time.Since(start))
	}
	// The server is still usable afterwards.
	if out, err := callTool(t, mgr, "everything__echo", `{"message":"still here"}`, 10*time.Second); err != nil || !strings.Contains(out, "still here") {
		t.Errorf("after the cancel: %q %v", out, err)
	}
}

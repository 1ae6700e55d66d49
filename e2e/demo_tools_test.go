package e2e

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/frontdesk-hq/frontdesk/event"
	"github.com/frontdesk-hq/frontdesk/internal/testkit/testio"
	"github.com/frontdesk-hq/frontdesk/internal/testkit/testnpm"
)

// The README's "Try an approval offline", with the real binary: the demo
// agent, the MCP reference server under confirm: ["*"], and a plain
// "use everything__echo {…}". The approval request reaches a WebSocket
// client, the HTTP door approves it, the tool runs and the demo replies
// with its answer; a second call, denied, is not run and the reply says so.
func TestDemoCallsAnMCPToolAfterApproval(t *testing.T) {
	everything := testnpm.Server(t, "mcp-server-everything")
	dir := t.TempDir()
	cfg := filepath.Join(dir, "config.yaml")
	conf := "mcp:\n  servers:\n    - name: everything\n      command: " + strconv.Quote(everything) + "\n      confirm: [\"*\"]\n"
	if err := os.WriteFile(cfg, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	p := startBinary(t, dir, nil, "-addr", "127.0.0.1:0", "-data", "state", "-config", cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for {
		var s struct {
			MCPServers []struct{ State string } `json:"mcp_servers"`
		}
		if testio.GetJSON(t, p.url+"/api/session", &s) == 200 && len(s.MCPServers) == 1 && s.MCPServers[0].State == "ready" {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("the reference server did not get ready\n%s", p.stderr)
		case <-time.After(100 * time.Millisecond):
		}
	}
	ws := dialWS(ctx, t, p.url, 0)

	for i, decision := range []string{"approve", "deny"} {
		ws.send(ctx, t, `use everything__echo {"message": "hello from the demo"}`, fmt.Sprint("m-", i))
		evs := ws.until(ctx, t, func(e event.Event) bool { return e.Type == event.ApprovalRequest })
		var ask event.ApprovalRequestData
		if err := evs[len(evs)-1].Decode(&ask); err != nil || ask.Tool != "everything__echo" || ask.Server != "everything" ||
			string(ask.Args) != `{"message":"hello from the demo"}` {
			t.Fatalf("approval request %+v (%v)", ask, err)
		}
		res, err := http.Post(p.url+"/api/approvals/"+ask.ID, "application/json", strings.NewReader(`{"decision":"`+decision+`"}`))
		if err != nil || res.StatusCode != http.StatusOK {
			t.Fatalf("POST /api/approvals/%s: %v %v", ask.ID, res, err)
		}
		res.Body.Close()
		var result event.ToolResultData
		var reply event.AssistantData
		for _, e := range ws.until(ctx, t, func(e event.Event) bool { return e.Type == event.TurnEnd }) {
			switch e.Type {
			case event.ToolResult:
				_ = e.Decode(&result)
			case event.Assistant:
				_ = e.Decode(&reply)
			}
		}
		switch decision {
		case "approve":
			if result.Output != "Echo: hello from the demo" || result.Server != "everything" ||
				!strings.HasSuffix(reply.Content, "It answered: Echo: hello from the demo") {
				t.Errorf("approved: tool_result %+v, reply %q", result, reply.Content)
			}
		case "deny":
			if result.Output != "" || !strings.Contains(result.Error, "denied") ||
				!strings.Contains(reply.Content, "it failed: the user denied this call of everything__echo") {
				t.Errorf("denied: tool_result %+v, reply %q", result, reply.Content)
			}
		}
	}
}

package main

import (
	"context"
	"io"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestMCPStdio drives `frontdesk mcp` as a desktop MCP client would: over
// its stdin and stdout, with no server running.
func TestMCPStdio(t *testing.T) {
	_, cfg, _ := historyData(t)
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	var stderr strings.Builder
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"frontdesk", "mcp", "-config", cfg}, func(string) string { return "" }, inR, outW, &stderr)
		outW.Close()
	}()
	c := sdk.NewClient(&sdk.Implementation{Name: "desktop", Version: "1"}, nil)
	cs, err := c.Connect(ctx, &sdk.IOTransport{Reader: outR, Writer: inW}, nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "history_search", Arguments: map[string]any{"query": "ecole"}})
	if err != nil || res.IsError {
		t.Fatalf("search: %+v %v", res, err)
	}
	if out := res.Content[0].(*sdk.TextContent).Text; !strings.Contains(out, `"seq":4`) || !strings.Contains(out, "«école»") {
		t.Errorf("search: %s", out)
	}
	res, err = cs.CallTool(ctx, &sdk.CallToolParams{Name: "history_recent", Arguments: map[string]any{"n": 10}})
	if err != nil || res.IsError || !strings.Contains(res.Content[0].(*sdk.TextContent).Text, "long words here") {
		t.Errorf("recent: %+v %v", res, err)
	}
	cs.Close() // the client goes away: frontdesk mcp ends cleanly
	inW.Close()
	if err := <-done; err != nil {
		t.Errorf("frontdesk mcp: %v", err)
	}
	if !strings.Contains(stderr.String(), "scanning the chat log") {
		t.Errorf("stderr %q does not say how it searched", stderr.String())
	}
}

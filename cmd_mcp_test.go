package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
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

// TestMCPStdioAnswersEverythingReadAtEndOfInput pipes requests into
// `frontdesk mcp` without waiting for answers, as `printf … | frontdesk
// mcp` does: every request read is answered before it exits (before, the
// end of input dropped 1 or 2 of the 2 answers), a garbage line and a
// batch are answered with JSON-RPC errors and the lines after them still
// run, and a search without hits says "hits":[] as the HTTP API does.
func TestMCPStdioAnswersEverythingReadAtEndOfInput(t *testing.T) {
	_, cfg, _ := historyData(t)
	input := strings.Join([]string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"sh","version":"1"}}}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"history_search","arguments":{"query":"zzzunfound"}}}`,
		`this is not json`,
		`[{"jsonrpc":"2.0","id":9,"method":"ping"}]`,
		`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"history_search","arguments":{"query":"ecole"}}}`,
	}, "\n") + "\n"
	for i := range 20 {
		var stdout, stderr strings.Builder
		pr, pw, err := os.Pipe() // as a shell's printf | frontdesk mcp
		if err != nil {
			t.Fatal(err)
		}
		go func() { _, _ = pw.WriteString(input); pw.Close() }()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		err = run(ctx, []string{"frontdesk", "mcp", "-config", cfg}, func(string) string { return "" }, pr, &stdout, &stderr)
		cancel()
		pr.Close()
		if err != nil {
			t.Fatalf("run %d: %v\n%s", i, err, stderr.String())
		}
		byID := map[string]string{}
		for line := range strings.Lines(stdout.String()) {
			var m struct {
				ID    json.RawMessage `json:"id"`
				Error *struct {
					Code int `json:"code"`
				} `json:"error"`
			}
			if err := json.Unmarshal([]byte(line), &m); err != nil {
				t.Fatalf("run %d: stdout line %q: %v", i, line, err)
			}
			key := string(m.ID)
			if m.Error != nil {
				key += fmt.Sprintf("/%d", m.Error.Code)
			}
			byID[key] = line
		}
		for _, want := range []string{"1", "2", "3", "null/-32700", "null/-32600"} {
			if byID[want] == "" {
				t.Fatalf("run %d: no answer %s among %d lines:\n%s", i, want, len(byID), stdout.String())
			}
		}
		if !strings.Contains(byID["2"], `\"hits\":[]`) {
			t.Errorf("run %d: an empty search answered %s, want \"hits\":[]", i, byID["2"])
		}
		if !strings.Contains(byID["3"], `\"seq\":4`) {
			t.Errorf("run %d: the search after the bad lines answered %s", i, byID["3"])
		}
	}
}

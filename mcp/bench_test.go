package mcp_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/frontdesk-hq/frontdesk/mcp"
)

// BenchmarkToolCall times one MCP tool call as a turn makes it (the
// agent.Tool the model's call runs), over stdio to a child process and
// over streamable HTTP on loopback: what MCP adds to a turn per call.
func BenchmarkToolCall(b *testing.B) {
	echo := sdk.NewServer(&sdk.Implementation{Name: "bench", Version: "1"}, nil)
	sdk.AddTool(echo, &sdk.Tool{Name: "echo"}, func(ctx context.Context, _ *sdk.CallToolRequest, in struct {
		Text string `json:"text"`
	}) (*sdk.CallToolResult, any, error) {
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "echo: " + in.Text}}}, nil, nil
	})
	srv := httptest.NewServer(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return echo }, nil))
	defer srv.Close()
	for _, tc := range []struct {
		name string
		cfg  mcp.ServerConfig
	}{
		{"stdio", mcp.ServerConfig{Name: "fake", Command: fakeServer(b), Timeout: 30 * time.Second}},
		{"http", mcp.ServerConfig{Name: "fake", URL: srv.URL, Timeout: 30 * time.Second}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			m := mcp.NewManager("bench", []mcp.ServerConfig{tc.cfg}, nil)
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan struct{})
			go func() { defer close(done); m.Run(ctx) }()
			defer func() { cancel(); <-done }()
			deadline := time.Now().Add(20 * time.Second)
			for !ready(m, "fake") {
				if time.Now().After(deadline) {
					b.Fatal("server not ready")
				}
				time.Sleep(10 * time.Millisecond)
			}
			tl := tool(m, "fake__echo")
			args := json.RawMessage(`{"text":"hello"}`)
			var ds []time.Duration
			for b.Loop() {
				t0 := time.Now()
				if _, err := tl.Call(context.Background(), args); err != nil {
					b.Fatal(err)
				}
				ds = append(ds, time.Since(t0))
			}
			for range 500 {
				t0 := time.Now()
				if _, err := tl.Call(context.Background(), args); err != nil {
					b.Fatal(err)
				}
				ds = append(ds, time.Since(t0))
			}
			slices.Sort(ds)
			us := func(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }
			b.ReportMetric(us(ds[len(ds)/2]), "p50-µs")
			b.ReportMetric(us(ds[len(ds)*99/100]), "p99-µs")
		})
	}
}

package mcp_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/frontdesk-hq/frontdesk/mcp"
)

// TestToolsABackendRefusesAreLeftOut: a server offering 300 tools plus
// names no backend takes ("bad name!", 80 characters, "$(id)") gets only
// well-named tools into a request, at most mcp.max_tools of them with the
// built-in ones counted, and /api/session's mcp_servers says which were
// left out and why.
func TestToolsABackendRefusesAreLeftOut(t *testing.T) {
	s := sdk.NewServer(&sdk.Implementation{Name: "hostile", Version: "1"}, nil)
	add := func(name string) {
		s.AddTool(&sdk.Tool{Name: name, Description: "d", InputSchema: json.RawMessage(`{"type":"object"}`)},
			func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
				return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "ok"}}}, nil
			})
	}
	long := strings.Repeat("a", 80)
	fits := strings.Repeat("b", 64-len("many__")) // exactly 64 with the prefix
	for _, name := range []string{"bad name!", long, "$(id)", fits, strings.Repeat("c", 64-len("many__")+1)} {
		add(name)
	}
	for i := range 300 {
		add(fmt.Sprintf("t%03d", i))
	}
	srv := httptest.NewServer(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return s }, nil))
	t.Cleanup(srv.Close)

	m := mcp.NewManager("test", []mcp.ServerConfig{{Name: "many", URL: srv.URL}}, slog.New(slog.DiscardHandler))
	m.MaxTools, m.Builtin = 128, 6
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); m.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	waitFor(t, "ready", func() bool { return ready(m, "many") })

	tools := m.Tools()
	if len(tools) != 128-6 {
		t.Errorf("%d tools offered, want 122 (128 less the 6 built-in)", len(tools))
	}
	valid := regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)
	offered := map[string]bool{}
	for _, tl := range tools {
		if !valid.MatchString(tl.Name) {
			t.Errorf("tool %q offered", tl.Name)
		}
		offered[tl.Name] = true
	}
	if !offered["many__"+fits] {
		t.Errorf("the 64-character name was left out")
	}
	st := m.States()[0]
	b, _ := json.Marshal(st)
	if st.SkippedCount != 4+(301-122) || len(st.Skipped) != 20 {
		t.Fatalf("skipped %d (listed %d), want 4 bad names and %d over the limit: %s", st.SkippedCount, len(st.Skipped), 301-122, b)
	}
	reasons := map[string]string{}
	for _, sk := range st.Skipped {
		reasons[sk.Name] = sk.Reason
	}
	for _, name := range []string{"bad name!", "$(id)", long, strings.Repeat("c", 59)} {
		if !strings.Contains(reasons[name], "does not match") {
			t.Errorf("%q: reason %q", name, reasons[name])
		}
	}
	if !strings.Contains(string(b), `over mcp.max_tools (128 tools a request`) {
		t.Errorf("no tool is said to be over mcp.max_tools: %s", b)
	}
}

// TestDeafServersStopWithinTheBudget: five stdio servers that ignore the
// end of their stdin and SIGTERM are all killed, in parallel, two
// StopGrace after the stop begins (before, each took the SDK's 2 s + 2 s,
// and shutdown took 6.0–7.4 s).
func TestDeafServersStopWithinTheBudget(t *testing.T) {
	dir := t.TempDir()
	var servers []mcp.ServerConfig
	for i := range 5 {
		servers = append(servers, stdio(t, fmt.Sprintf("deaf%d", i), "-deaf", "-pidfile", filepath.Join(dir, strconv.Itoa(i))))
	}
	m := mcp.NewManager("test", servers, slog.New(slog.DiscardHandler))
	m.StopGrace = 200 * time.Millisecond
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); m.Run(ctx) }()
	defer func() { cancel(); <-done }()
	waitFor(t, "five ready servers", func() bool {
		for i := range 5 {
			if !ready(m, fmt.Sprintf("deaf%d", i)) {
				return false
			}
		}
		return true
	})
	var pids []int
	for i := range 5 {
		b, err := os.ReadFile(filepath.Join(dir, strconv.Itoa(i)))
		if err != nil {
			t.Fatal(err)
		}
		pid, _ := strconv.Atoi(string(b))
		pids = append(pids, pid)
	}
	start := time.Now()
	cancel()
	<-done
	took := time.Since(start)
	// TERM at one grace, KILL at two: 400 ms. The bound leaves a loaded
	// machine room and is still well under the SDK's own 4 s.
	if took > 2*time.Second {
		t.Errorf("stopping five deaf servers took %v, want about 2 × StopGrace (400 ms)", took)
	}
	for _, pid := range pids {
		if err := syscall.Kill(pid, 0); err == nil {
			t.Errorf("server process %d is still there after Run returned", pid)
		}
	}
}

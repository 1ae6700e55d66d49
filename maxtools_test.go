package main

import (
	"log/slog"
	"testing"

	"github.com/frontdesk-hq/frontdesk/config"
)

// mcp.max_tools counts every built-in tool a turn gets — the history
// tools, memory_save and memory_forget, the schedule tools — before the
// MCP servers share the rest: a request never carries more than the cap
// (it carried 130 with the cap at 128 when the memory tools were left
// out).
func TestMaxToolsCountsEveryBuiltinTool(t *testing.T) {
	cfg := config.Defaults()
	cfg.DataDir = t.TempDir()
	cfg.MCP.Servers = []config.MCPServer{{Name: "x", Command: "true"}}
	cfg.Resolve()
	quiet := slog.New(slog.DiscardHandler)
	getenv := func(string) string { return "" }
	st, err := openStores(cfg, getenv, quiet)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.close)
	a, err := wire(cfg, "", getenv, quiet, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	// history_get_recent, history_get_range, history_search, memory_save,
	// memory_forget, and the scheduler's.
	if want := 5 + len(a.sched.Tools()); a.tools.Builtin != want {
		t.Fatalf("mcp.max_tools reserves %d tools for the built-in ones; a turn gets %d", a.tools.Builtin, want)
	}
}

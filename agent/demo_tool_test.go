package agent

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/frontdesk-hq/frontdesk/event"
)

func TestParseUse(t *testing.T) {
	tests := []struct {
		in, name, args string
		ok             bool
	}{
		{`use everything__echo {"message":"hi"}`, "everything__echo", `{"message":"hi"}`, true},
		{"Use fs__list_directory {\n  \"path\": \"/tmp\"\n}", "fs__list_directory", "{\n  \"path\": \"/tmp\"\n}", true},
		{"call the tool history_search", "history_search", "", true},
		{"please run files__delete {}", "files__delete", "{}", true},
		{"use your judgement about the garden", "", "", false},
		{"I use fs__read {}", "", "", false},
	}
	for _, tc := range tests {
		u, ok := parseUse(tc.in)
		if ok != tc.ok || u.name != tc.name || u.args != tc.args {
			t.Errorf("parseUse(%q) = %+v, %v; want %q %q %v", tc.in, u, ok, tc.name, tc.args, tc.ok)
		}
	}
}

// TestDemoUsesNamedTool: "use <server>__<tool> {args}" makes the demo call
// that tool with those arguments, as a model would (tool_call, the call,
// tool_result), and reply with what came back.
func TestDemoUsesNamedTool(t *testing.T) {
	var calls []string
	echo := Tool{Name: "everything__echo", Server: "everything", Confirm: true, Call: func(ctx context.Context, args json.RawMessage) (string, error) {
		calls = append(calls, string(args))
		return "Echo: hi there", nil
	}}
	other := Tool{Name: "history_search", Call: func(context.Context, json.RawMessage) (string, error) {
		t.Error("the other tool was called")
		return "", nil
	}}
	reply, evs := runDemo(t, Request{Turn: "t1", Content: `use everything__echo {"message": "hi there"}`, Tools: []Tool{other, echo}})
	if len(calls) != 1 || calls[0] != `{"message": "hi there"}` {
		t.Fatalf("calls %q, want one with the given arguments", calls)
	}
	if len(evs) < 3 || evs[1].typ != event.ToolCall || evs[2].typ != event.ToolResult {
		t.Fatalf("emitted %v, want status, tool_call, tool_result, …", evs)
	}
	if c := evs[1].data.(event.ToolCallData); c.Name != "everything__echo" || c.Server != "everything" || string(c.Args) != `{"message": "hi there"}` {
		t.Errorf("tool_call %+v", c)
	}
	if !strings.Contains(reply, "It answered: Echo: hi there") {
		t.Errorf("reply %q", reply)
	}

	// No arguments: {}. A failure (a denied approval, say) is told.
	deny := Tool{Name: "files__delete", Call: func(_ context.Context, args json.RawMessage) (string, error) {
		calls = append(calls, string(args))
		return "", errors.New("the user denied this call of files__delete")
	}}
	reply, _ = runDemo(t, Request{Turn: "t2", Content: "use files__delete", Tools: []Tool{deny}})
	if calls[len(calls)-1] != "{}" || !strings.Contains(reply, "it failed: the user denied this call") {
		t.Errorf("denied: calls %q, reply %q", calls, reply)
	}
}

// Bad input gets a sentence and no call: an unknown tool (the reply lists
// the ones there are), arguments that are not one JSON object, no tools.
func TestDemoUseRefusals(t *testing.T) {
	called := false
	echo := Tool{Name: "everything__echo", Call: func(context.Context, json.RawMessage) (string, error) { called = true; return "", nil }}
	reply, _ := runDemo(t, Request{Content: "use everything__ech {}", Tools: []Tool{echo}})
	if !strings.Contains(reply, "There is no tool everything__ech. The tools I have: everything__echo.") {
		t.Errorf("unknown tool: %q", reply)
	}
	reply, _ = runDemo(t, Request{Content: `use everything__echo {"message": }`, Tools: []Tool{echo}})
	if !strings.Contains(reply, "I did not call everything__echo: its arguments must be one JSON object") {
		t.Errorf("bad JSON: %q", reply)
	}
	reply, _ = runDemo(t, Request{Content: "use everything__echo {}"})
	if !strings.Contains(reply, "no tools are configured") {
		t.Errorf("no tools: %q", reply)
	}
	if called {
		t.Error("a refused use called the tool")
	}
}

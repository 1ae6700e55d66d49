package agent

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/frontdesk-hq/frontdesk/event"
)

func TestRememberText(t *testing.T) {
	tests := []struct {
		in, want string
		ok       bool
	}{
		{"remember that my cat is called Miso", "my cat is called Miso", true},
		{"Please remember that I take my coffee black.", "I take my coffee black.", true},
		{"remember: the wifi password is on the fridge", "the wifi password is on the fridge", true},
		{"Note that Ann is my sister", "", false},
		{"remember that", "", false},
		{"remember that …", "", false},
		{"do you remember that film?", "", false},
		{"what do you remember about me?", "", false},
		{"remind me in 5 minutes to stretch", "", false},
		{"I remember that day", "", false},
	}
	for _, tc := range tests {
		got, ok := rememberText(tc.in)
		if got != tc.want || ok != tc.ok {
			t.Errorf("rememberText(%q) = %q, %v; want %q, %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
	for _, q := range []string{"what do you remember about me?", "What do you know about me", "what do you remember?",
		"What's in your memory?", "show me your memory", "so what do you remember about me?"} {
		if !rememberedPattern.MatchString(q) {
			t.Errorf("%q is not taken for a question about memory", q)
		}
	}
	for _, q := range []string{"what do you remember about Lisbon's trams?", "remember that I like tea", "what did I say about me"} {
		if rememberedPattern.MatchString(q) {
			t.Errorf("%q is taken for a question about memory", q)
		}
	}
}

// TestDemoRememberCallsMemorySave: "remember that X" is a memory_save
// call with {"text": X}, like a model's (tool_call, tool_result), and the
// reply names the item the tool made.
func TestDemoRememberCallsMemorySave(t *testing.T) {
	var got map[string]any
	save := Tool{Name: "memory_save", Call: func(_ context.Context, args json.RawMessage) (string, error) {
		if err := json.Unmarshal(args, &got); err != nil {
			t.Errorf("args %s: %v", args, err)
		}
		return `{"id":"m42","text":"my cat is called Miso","source":"agent","created":"2026-11-25T02:00:00Z","updated":"2026-11-25T02:00:00Z"}`, nil
	}}
	other := Tool{Name: "history_search", Call: func(context.Context, json.RawMessage) (string, error) {
		t.Error("history_search was called")
		return "", nil
	}}
	reply, evs := runDemo(t, Request{Turn: "t1", Content: "Remember that my cat is called Miso", Tools: []Tool{other, save}})
	if len(got) != 1 || got["text"] != "my cat is called Miso" {
		t.Fatalf("memory_save args %v, want only the text", got)
	}
	if len(evs) < 3 || evs[1].typ != event.ToolCall || evs[2].typ != event.ToolResult ||
		evs[1].data.(event.ToolCallData).Name != "memory_save" {
		t.Fatalf("emitted %v, want status, tool_call memory_save, tool_result, …", evs)
	}
	if !strings.Contains(reply, "I will remember: “my cat is called Miso” (memory m42)") {
		t.Errorf("reply %q", reply)
	}

	failing := Tool{Name: "memory_save", Call: func(context.Context, json.RawMessage) (string, error) {
		return "", errors.New("the disk is full")
	}}
	if reply, _ := runDemo(t, Request{Turn: "t2", Content: "remember that x", Tools: []Tool{failing}}); !strings.Contains(reply, "it failed: the disk is full") {
		t.Errorf("failing tool: %q", reply)
	}
	if reply, _ := runDemo(t, Request{Turn: "t3", Content: "remember that x"}); !strings.Contains(reply, "cannot save anything") {
		t.Errorf("no tool: %q", reply)
	}
}

// TestDemoListsWhatItRemembers: "what do you remember about me?" lists
// the items the turn's context carries, with their ids, and calls no tool.
func TestDemoListsWhatItRemembers(t *testing.T) {
	search := Tool{Name: "history_search", Call: func(context.Context, json.RawMessage) (string, error) {
		t.Error("a tool was called")
		return "", nil
	}}
	lt := "Long-term memory:\n- [m3] my cat is called Miso\n- [m7] I take my coffee black\n"
	reply, evs := runDemo(t, Request{Turn: "t1", Content: "What do you remember about me?", LongTermMemory: lt, Tools: []Tool{search}})
	for _, e := range evs {
		if e.typ == event.ToolCall {
			t.Fatalf("a tool call: %v", e.data)
		}
	}
	if !strings.Contains(reply, "I remember 2 things: “my cat is called Miso” (m3); “I take my coffee black” (m7).") {
		t.Errorf("reply %q", reply)
	}
	if reply, _ := runDemo(t, Request{Content: "what do you remember about me?"}); !strings.Contains(reply, "I do not remember anything about you yet") {
		t.Errorf("nothing remembered: %q", reply)
	}
	if reply, _ := runDemo(t, Request{Content: "what do you know about me", LongTermMemory: "## 2026-11-20\nLikes tea."}); !strings.Contains(reply, "Likes tea.") {
		t.Errorf("memory of another form: %q", reply)
	}
}

// TestDemoForgetCallsMemoryForget: "forget m12" is a memory_forget call
// with that id; a failure (an unknown id, a denied approval) is told.
func TestDemoForgetCallsMemoryForget(t *testing.T) {
	var got []string
	forget := Tool{Name: "memory_forget", Call: func(_ context.Context, args json.RawMessage) (string, error) {
		got = append(got, string(args))
		if strings.Contains(string(args), "m404") {
			return "", errors.New("no memory item has that id")
		}
		return `{"forgotten":"m12"}`, nil
	}}
	reply, evs := runDemo(t, Request{Turn: "t1", Content: "please forget item m12", Tools: []Tool{forget}})
	if len(got) != 1 || got[0] != `{"id":"m12"}` || len(evs) < 3 || evs[1].typ != event.ToolCall {
		t.Fatalf("calls %q, events %v", got, evs)
	}
	if reply != "Done: I have forgotten m12." {
		t.Errorf("reply %q", reply)
	}
	if reply, _ := runDemo(t, Request{Turn: "t2", Content: "forget m404", Tools: []Tool{forget}}); !strings.Contains(reply, "I could not forget m404: no memory item has that id") {
		t.Errorf("unknown id: %q", reply)
	}
	if _, ok := rememberText("forget the milk"); ok || forgetPattern.MatchString("forget the milk") || forgetPattern.MatchString("don't forget m12 is mine") {
		t.Error("a sentence with forget in it is taken for an id to forget")
	}
}

// The hub's context (hub.memoryContext) says how many items it had no
// room for: the demo says so too.
func TestDemoSaysWhatItHadNoRoomFor(t *testing.T) {
	lt := "Long-term memory, one item a line as [id] text (newest and most used first). Save …\n- [m9] the car is a blue Volvo\n" +
		"(3 older or less used items are not shown here for space: find them with history_search and type:memory in the query.)\n"
	reply, _ := runDemo(t, Request{Content: "what do you remember about me?", LongTermMemory: lt})
	if !strings.Contains(reply, "I remember 1 thing: “the car is a blue Volvo” (m9). There are 3 more, older or less used") {
		t.Errorf("reply %q", reply)
	}
}

package agent_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/frontdesk-hq/frontdesk/agent"
	"github.com/frontdesk-hq/frontdesk/event"
	"github.com/frontdesk-hq/frontdesk/history"
	"github.com/frontdesk-hq/frontdesk/hub"
	"github.com/frontdesk-hq/frontdesk/memory"
)

// TestOpenAISavesMemoryThroughHub drives the openai backend with the fake
// chat server inside a real hub: the model calls memory_save, the item is
// saved and every subscriber sees memory_changed; the model gets the item
// with its id as the tool's result, and the next turn's system prompt
// carries it.
func TestOpenAISavesMemoryThroughHub(t *testing.T) {
	f := agent.NewFakeChat(t, "openai_tool_memory_save.sse", "openai_after_tool.sse", "openai_plain.sse")
	o, err := agent.NewOpenAI(agent.OpenAIOptions{BaseURL: f.URL, Model: "gpt-4o-mini", MaxToolSteps: 8, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	lg, err := history.Open(history.Options{Path: filepath.Join(dir, "chat_history.ndjson"), RotateMB: 5, Fsync: "never"})
	if err != nil {
		t.Fatal(err)
	}
	defer lg.Close()
	if err := os.MkdirAll(filepath.Join(dir, "memory"), 0o700); err != nil {
		t.Fatal(err)
	}
	items, err := memory.OpenItems(filepath.Join(dir, "memory"))
	if err != nil {
		t.Fatal(err)
	}
	h := hub.New(hub.Config{DataDir: dir, Items: items, Logger: slog.New(slog.DiscardHandler)}, lg, o)
	hctx, stop := context.WithCancel(context.Background())
	hubDone := make(chan error, 1)
	go func() { hubDone <- h.Run(hctx) }()
	defer func() { stop(); <-hubDone }()

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	sub, _, err := h.Subscribe(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	turn := func(content string) []event.Event {
		t.Helper()
		if _, err := h.Submit(ctx, hub.Input{Channel: event.ChannelWeb, Content: content}); err != nil {
			t.Fatal(err)
		}
		var evs []event.Event
		for {
			fr, ok := sub.Next(ctx)
			if !ok {
				t.Fatalf("stream ended: %v", sub.Err())
			}
			evs = append(evs, fr.Event)
			if fr.Event.Type == event.TurnEnd {
				return evs
			}
		}
	}
	var saved event.MemoryChangedData
	evs := turn("remember that my car is a blue Volvo")
	for _, e := range evs {
		if e.Type == event.MemoryChanged {
			if err := e.Decode(&saved); err != nil {
				t.Fatal(err)
			}
		}
	}
	if saved.Action != event.MemorySaved || saved.By != "agent" || saved.Source != memory.SourceAgent || saved.Text != "The user's car is a blue Volvo." {
		t.Fatalf("memory_changed = %+v; the turn: %v", saved, evs)
	}
	list, err := h.MemoryList(ctx)
	if err != nil || len(list) != 1 || list[0].ID != saved.ID {
		t.Fatalf("items = %+v, %v", list, err)
	}
	// The tool's result went back to the model with the item's id.
	if b, _ := json.Marshal(f.Request(1)["messages"]); !strings.Contains(string(b), `\"id\":\"`+saved.ID+`\"`) {
		t.Fatalf("second request's messages do not carry the saved item: %s", b)
	}
	// memory_save and memory_forget are offered to the model.
	if b, _ := json.Marshal(f.Request(0)["tools"]); !strings.Contains(string(b), `"memory_save"`) || !strings.Contains(string(b), `"memory_forget"`) {
		t.Fatalf("tools offered: %s", b)
	}
	turn("what is my car?")
	msgs, _ := f.Request(2)["messages"].([]any)
	sys, _ := msgs[0].(map[string]any)
	if s, _ := sys["content"].(string); sys["role"] != "system" || !strings.Contains(s, "["+saved.ID+"] The user's car is a blue Volvo.") {
		t.Fatalf("next turn's system message does not carry the item: %v", msgs[0])
	}
}

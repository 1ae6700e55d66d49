package hub

import (
	"context"
	"encoding/json"

	"github.com/frontdesk-hq/frontdesk/agent"
	"github.com/frontdesk-hq/frontdesk/event"
	"github.com/frontdesk-hq/frontdesk/memory"
)

// ByAgent is the by of a memory change the agent made with its tools.
const ByAgent = memory.SourceAgent

// forgetNeedsApproval reports whether memory_forget must be approved by a
// person on a turn whose input came from channel: on every channel but
// the web UI and the server's terminal, where a person typed the request.
// Email, the webhook (and the channels its callers name), MCP's
// send_message and fired schedules carry text that anyone with the
// address, the token or an old schedule could have written.
func forgetNeedsApproval(channel string) bool {
	return channel != event.ChannelWeb && channel != event.ChannelConsole
}

// memoryTools are memory_save and memory_forget for the turn turn, whose
// input came from channel. They run on the turn's goroutine and change
// memory through the hub like every door.
func (m *SessionManager) memoryTools(turn, channel string) []agent.Tool {
	forget := agent.Tool{
		Name: "memory_forget",
		Description: "Delete one long-term memory item by its id (the [id] in front of it in your context or in a type:memory search hit), " +
			"when the user asks you to forget it or it is wrong. It is gone from memory at once.",
		Parameters: json.RawMessage(`{"type":"object","properties":{"id":{"type":"string","description":"the item's id, e.g. m42"}},"required":["id"],"additionalProperties":false}`),
		Call: func(ctx context.Context, args json.RawMessage) (string, error) {
			var p struct{ ID string }
			if err := decodeArgs(args, &p); err != nil {
				return "", err
			}
			if err := m.MemoryForget(ctx, p.ID, ByAgent); err != nil {
				return "", err
			}
			return toolJSON(map[string]any{"forgotten": p.ID})
		},
	}
	if forgetNeedsApproval(channel) {
		forget.Confirm = true
		forget = m.confirmed(turn, forget)
	}
	return []agent.Tool{
		{
			Name: "memory_save",
			Description: "Save one fact to long-term memory, in a short self-contained sentence (\"The user's car is a blue Volvo.\"), " +
				"when the user asks you to remember something or tells you something lasting about themselves. " +
				"Saved items are in your context in every later turn. Returns the item with its id.",
			Parameters: json.RawMessage(`{"type":"object","properties":{"text":{"type":"string","minLength":1,"description":"the fact to remember"}},"required":["text"],"additionalProperties":false}`),
			Call: func(ctx context.Context, args json.RawMessage) (string, error) {
				var p struct{ Text string }
				if err := decodeArgs(args, &p); err != nil {
					return "", err
				}
				it, err := m.memorySave(ctx, p.Text, memory.SourceAgent, ByAgent, event.MemorySaved, turn)
				if err != nil {
					return "", err
				}
				return toolJSON(it)
			},
		},
		forget,
	}
}

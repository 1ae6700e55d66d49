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

// Values of Config.MemorySaveApproval (config memory.save_approval).
const (
	SaveApprovalUntrusted = "untrusted"
	SaveApprovalAlways    = "always"
	SaveApprovalNever     = "never"
)

// trustedDoor reports whether a person typed a turn's input that came
// from channel: only the web UI and the server's terminal. Email, the
// webhook (and the channels its callers name), MCP's send_message and
// fired schedules carry text that anyone with the address, the token or
// an old schedule could have written — forwarded from another node or
// not, the channel is the input's own.
func trustedDoor(channel string) bool {
	return channel == event.ChannelWeb || channel == event.ChannelConsole
}

// forgetNeedsApproval reports whether memory_forget must be approved by a
// person on a turn whose input came from channel (see trustedDoor).
func forgetNeedsApproval(channel string) bool { return !trustedDoor(channel) }

// saveNeedsApproval reports whether memory_save must be approved by a
// person on a turn whose input came from channel, under policy
// (Config.MemorySaveApproval; "" is untrusted): an outsider's "remember
// that the admin password is …" must not land in every later system
// prompt unseen.
func saveNeedsApproval(policy, channel string) bool {
	switch policy {
	case SaveApprovalAlways:
		return true
	case SaveApprovalNever:
		return false
	}
	return !trustedDoor(channel)
}

// sender names who sent the input in, for an item's From: the door's
// sender, or the schedule that fired it.
func sender(in event.UserData) string {
	if in.From == "" && in.ScheduleID != "" {
		return "schedule " + in.ScheduleID
	}
	return in.From
}

// memoryTools are memory_save and memory_forget for the turn turn, whose
// input is in. They run on the turn's goroutine and change memory through
// the hub like every door.
func (m *SessionManager) memoryTools(turn string, in event.UserData) []agent.Tool {
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
			// The agent acts for the turn: its approval (when one is
			// asked) was the Gate's.
			if _, err := m.memory(ctx, memoryCmd{op: memForget, id: p.ID, by: ByAgent, person: in.Person}); err != nil {
				return "", err
			}
			return toolJSON(map[string]any{"forgotten": p.ID})
		},
	}
	if forgetNeedsApproval(in.Channel) {
		forget.Confirm = true
		forget = m.confirmedSaying(turn, forget, m.forgetText)
	}
	save := agent.Tool{
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
			it, err := m.memorySave(ctx, memoryCmd{text: p.Text, source: memory.SourceAgent, by: ByAgent,
				action: event.MemorySaved, turn: turn, door: in.Channel, from: sender(in), person: in.Person})
			if err != nil {
				return "", err
			}
			return toolJSON(it)
		},
	}
	if saveNeedsApproval(m.cfg.MemorySaveApproval, in.Channel) {
		save.Confirm = true
		save = m.confirmedSaying(turn, save, saveText)
	}
	return []agent.Tool{save, forget}
}

// saveText is what a memory_save call would remember, for its approval
// card: "Remember: …".
func saveText(args json.RawMessage) string {
	var p struct{ Text string }
	if json.Unmarshal(args, &p) != nil || p.Text == "" {
		return ""
	}
	return "Remember: " + p.Text
}

// forgetText is the item a memory_forget call would forget, for its
// approval card: "Forget m15: …" (the item's text, not just its id).
// The turn's goroutine: Items may be read from any goroutine.
func (m *SessionManager) forgetText(args json.RawMessage) string {
	var p struct{ ID string }
	if json.Unmarshal(args, &p) != nil || p.ID == "" {
		return ""
	}
	it, ok := m.cfg.Items.Get(p.ID)
	if !ok {
		return "Forget " + p.ID + " (no memory item has that id)"
	}
	return "Forget " + it.ID + ": " + it.Text
}

// Package agent defines how a turn is run (the Agent interface) and holds
// the backends. It imports only event of ours.
package agent

import (
	"context"
	"encoding/json"

	"github.com/frontdesk-hq/frontdesk/event"
)

// Agent runs one turn. Run is called on a goroutine of its own, one turn at
// a time per session; it streams progress through emit, returns the final
// reply, and must return promptly (with ctx.Err()) once ctx is cancelled.
type Agent interface {
	Run(ctx context.Context, req Request, emit Emitter) (Reply, error)
}

// Emitter publishes one event of the running turn: event.Status,
// event.Delta, event.ToolCall or event.ToolResult with its *Data payload.
// It may block briefly while the session records the event.
type Emitter func(t event.Type, data any)

// Request is everything a backend gets for one turn.
type Request struct {
	Turn    string
	Channel string // where the input came from: web, console, email, webhook, …
	From    string
	Content string
	// Attachments of this input; the bytes are in the attachment store
	// (see the backend's config for how it reaches them).
	Attachments []event.Attachment
	// LongTermMemory is long-term memory as text for the system prompt:
	// the memory items that fit the budget, one "[id] text" line each
	// (memory.context_tokens); may be empty.
	LongTermMemory string
	// Context is the recent conversation (the chat ring), oldest first:
	// user and assistant events, not including this input.
	Context []event.Event
	// Tools the backend may call.
	Tools []Tool
	// Notes are system-level remarks for this turn (e.g. that older
	// conversation is reachable with the history tools, or that the input
	// is untrusted email); backends put them into the system prompt.
	Notes []string
}

// Reply is the outcome of a completed turn.
type Reply struct {
	Content string
	Usage   *event.Usage
}

// Tool is a function the agent may call during a turn.
type Tool struct {
	Name string
	// Server is the MCP server the tool comes from; "" for frontdesk's own.
	Server string
	// Confirm: a person must approve each call first (the hub asks every
	// door; see hub.Config.ApprovalTimeout).
	Confirm     bool
	Description string
	// Parameters is a JSON Schema object describing the arguments.
	Parameters json.RawMessage
	// Call runs the tool; it must honour ctx.
	Call func(ctx context.Context, args json.RawMessage) (string, error)
}

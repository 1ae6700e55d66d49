package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/frontdesk-hq/frontdesk/agent"
	"github.com/frontdesk-hq/frontdesk/event"
	"github.com/frontdesk-hq/frontdesk/hub"
)

// Channel is the door send_message's inputs come through.
const Channel = event.ChannelMCP

// Submitter is the part of the hub send_message uses.
type Submitter interface {
	Submit(ctx context.Context, in hub.Input) (hub.Result, error)
}

var _ Submitter = (*hub.SessionManager)(nil)

// SendTool returns send_message: it puts content into the shared
// conversation as channel "mcp" — every client sees it and the reply, the
// busy policy applies — and answers with the turn's outcome
// {turn, status, reply, error?}. It waits for the reply as long as the
// caller's request lasts.
func SendTool(s Submitter) agent.Tool {
	return agent.Tool{
		Name: "send_message",
		Description: "Send a message into the user's shared frontdesk conversation (everyone watching sees it, marked as coming over MCP) " +
			"and return the assistant's reply. Fails with a busy message while the assistant is answering something else, unless the server queues.",
		Parameters: json.RawMessage(`{"type":"object","properties":{"content":{"type":"string","minLength":1,"description":"the message"}},"required":["content"],"additionalProperties":false}`),
		Call: func(ctx context.Context, args json.RawMessage) (string, error) {
			var p struct {
				Content string `json:"content"`
			}
			dec := json.NewDecoder(strings.NewReader(string(args)))
			dec.DisallowUnknownFields()
			if err := dec.Decode(&p); err != nil {
				return "", fmt.Errorf("invalid arguments: %w", err)
			}
			done := make(chan hub.TurnOutcome, 1)
			res, err := s.Submit(ctx, hub.Input{Channel: Channel, Content: p.Content, Done: done})
			if err != nil {
				return "", err
			}
			if res.Outcome == hub.Rejected {
				return "", errors.New("busy: " + res.Busy.Message)
			}
			select {
			case o := <-done:
				b, err := json.Marshal(o)
				return string(b), err
			case <-ctx.Done():
				return "", fmt.Errorf("gave up waiting for the reply to turn %s (it goes on): %w", res.Turn, ctx.Err())
			}
		},
	}
}

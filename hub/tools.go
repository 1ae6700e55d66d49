package hub

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/frontdesk-hq/frontdesk/agent"
	"github.com/frontdesk-hq/frontdesk/event"
	"github.com/frontdesk-hq/frontdesk/history"
)

// Tool limits.
const (
	maxToolEvents = 200 // history_get_recent / history_get_range
	maxToolHits   = 50  // history_search
)

// toolEvent is how the history tools show an event to the model: the
// conversation, not the wire format.
type toolEvent struct {
	Seq     int64  `json:"seq"`
	TS      string `json:"ts"`
	Type    string `json:"type"`
	Turn    string `json:"turn,omitempty"`
	Channel string `json:"channel,omitempty"`
	From    string `json:"from,omitempty"`
	Content string `json:"content,omitempty"`
}

func toToolEvents(evs []event.Event) []toolEvent {
	out := make([]toolEvent, 0, len(evs))
	for _, e := range evs {
		te := toolEvent{Seq: e.Seq, TS: e.TS.Std().UTC().Format(time.RFC3339), Type: string(e.Type), Turn: e.Turn}
		switch e.Type {
		case event.User:
			var d event.UserData
			_ = json.Unmarshal(e.Data, &d)
			te.Channel, te.From, te.Content = d.Channel, d.From, d.Content
		case event.Assistant:
			var d event.AssistantData
			_ = json.Unmarshal(e.Data, &d)
			te.Content = d.Content
		case event.Notice:
			var d event.TextData
			_ = json.Unmarshal(e.Data, &d)
			te.Content = d.Text
		default:
			continue // tool calls, turn ends and resets are noise to the model
		}
		out = append(out, te)
	}
	return out
}

func toolJSON(v any) (string, error) {
	b, err := json.Marshal(v)
	return string(b), err
}

// tools are the history tools offered to every backend. They run on the
// turn's goroutine: the buffer through hub commands, the disk directly.
func (m *SessionManager) tools() []agent.Tool {
	return []agent.Tool{
		{
			Name:        "history_get_recent",
			Description: "Return the newest messages of the conversation (user and assistant), oldest first, including those from before the last reset.",
			Parameters:  json.RawMessage(`{"type":"object","properties":{"n":{"type":"integer","minimum":1,"maximum":200,"default":20,"description":"how many events"}},"additionalProperties":false}`),
			Call: func(ctx context.Context, args json.RawMessage) (string, error) {
				p := struct{ N int }{N: 20}
				if err := decodeArgs(args, &p); err != nil {
					return "", err
				}
				p.N = min(max(p.N, 1), maxToolEvents)
				evs, err := m.Recent(ctx, p.N)
				if err != nil {
					return "", err
				}
				return toolJSON(toToolEvents(evs))
			},
		},
		{
			Name:        "history_get_range",
			Description: "Return the conversation between two points, each a sequence number or an RFC 3339 time (inclusive), oldest first, at most 200 events.",
			Parameters:  json.RawMessage(`{"type":"object","properties":{"from":{"type":"string","description":"seq number or RFC 3339 time"},"to":{"type":"string","description":"seq number or RFC 3339 time"}},"required":["from","to"],"additionalProperties":false}`),
			Call: func(ctx context.Context, args json.RawMessage) (string, error) {
				var p struct{ From, To string }
				if err := decodeArgs(args, &p); err != nil {
					return "", err
				}
				from, err := history.ParseBound(p.From)
				if err != nil {
					return "", fmt.Errorf("from: %w", err)
				}
				to, err := history.ParseBound(p.To)
				if err != nil {
					return "", fmt.Errorf("to: %w", err)
				}
				if m.cfg.History == nil {
					return "", errors.New("the chat log is not available")
				}
				evs, truncated, _, err := m.cfg.History.Range(from, to, maxToolEvents)
				if err != nil {
					return "", err
				}
				return toolJSON(map[string]any{"events": toToolEvents(evs), "truncated": truncated})
			},
		},
		{
			Name:        "history_search",
			Description: "Search everything ever said in this conversation (user and assistant messages, case-insensitive), newest first. Use it to answer questions like 'what did I say about X'.",
			Parameters:  json.RawMessage(`{"type":"object","properties":{"query":{"type":"string","minLength":1},"limit":{"type":"integer","minimum":1,"maximum":50,"default":20}},"required":["query"],"additionalProperties":false}`),
			Call: func(ctx context.Context, args json.RawMessage) (string, error) {
				p := struct {
					Query string
					Limit int
				}{Limit: 20}
				if err := decodeArgs(args, &p); err != nil {
					return "", err
				}
				if p.Query == "" {
					return "", errors.New("query is empty")
				}
				if m.cfg.History == nil {
					return "", errors.New("the chat log is not available")
				}
				hits, _, err := m.cfg.History.Search(p.Query, min(max(p.Limit, 1), maxToolHits))
				if err != nil {
					return "", err
				}
				return toolJSON(map[string]any{"hits": hits})
			},
		},
	}
}

// decodeArgs decodes tool arguments strictly; empty args mean defaults.
func decodeArgs(args json.RawMessage, v any) error {
	if len(args) == 0 || string(args) == "null" {
		return nil
	}
	if err := json.Unmarshal(args, v); err != nil {
		return fmt.Errorf("invalid arguments: %w", err)
	}
	return nil
}

// Hit is one history search result.
type Hit = history.Hit

// ErrNoHistory means the session was built without a chat log reader.
var ErrNoHistory = errors.New("the chat log is not available")

// BadBoundError reports a from/to value that is neither a seq nor a time.
type BadBoundError struct {
	Name string
	Err  error
}

func (e *BadBoundError) Error() string { return e.Name + ": " + e.Err.Error() }

// Range returns the persisted events between from and to (each a seq or
// an RFC 3339 time, inclusive) from the chat log, oldest first, at most
// limit; truncated says the limit cut it. It reads files, not hub state.
func (m *SessionManager) Range(ctx context.Context, from, to string, limit int) (evs []event.Event, truncated bool, err error) {
	f, err := history.ParseBound(from)
	if err != nil {
		return nil, false, &BadBoundError{"from", err}
	}
	t, err := history.ParseBound(to)
	if err != nil {
		return nil, false, &BadBoundError{"to", err}
	}
	if m.cfg.History == nil {
		return nil, false, ErrNoHistory
	}
	evs, truncated, _, err = m.cfg.History.Range(f, t, limit)
	return evs, truncated, err
}

// Search searches user and assistant messages in the chat log, newest first.
func (m *SessionManager) Search(ctx context.Context, query string, limit int) ([]Hit, error) {
	if m.cfg.History == nil {
		return nil, ErrNoHistory
	}
	hits, _, err := m.cfg.History.Search(query, limit)
	return hits, err
}

package hub

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/frontdesk-hq/frontdesk/agent"
	"github.com/frontdesk-hq/frontdesk/event"
	"github.com/frontdesk-hq/frontdesk/history"
	"github.com/frontdesk-hq/frontdesk/index"
	"github.com/frontdesk-hq/frontdesk/internal/strictjson"
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
	// Attachments of a user event: name, type, size (not the bytes).
	Attachments []event.Attachment `json:"attachments,omitempty"`
	// ErasedBy is set for an erased message (its tombstone): who erased
	// it; Content is then empty.
	ErasedBy string `json:"erased_by,omitempty"`
}

func toToolEvents(evs []event.Event) []toolEvent {
	out := make([]toolEvent, 0, len(evs))
	for _, e := range evs {
		te := toolEvent{Seq: e.Seq, TS: e.TS.Std().UTC().Format(time.RFC3339), Type: string(e.Type), Turn: e.Turn}
		switch e.Type {
		case event.User, event.Assistant:
			m, _ := e.Message()
			te.Channel, te.From, te.Content, te.Attachments = m.Channel, m.From, m.Content, m.Attachments
			if event.IsTombstone(e) {
				var d event.TombstoneData
				_ = e.Decode(&d)
				te.ErasedBy = cmp.Or(d.By, "?")
			}
		case event.Notice:
			var d event.TextData
			_ = e.Decode(&d)
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

// historySearchDescription tells the model what history_search finds and
// how to ask.
const historySearchDescription = "Search everything ever said in this conversation — every user and assistant message since the start, " +
	"and the long-term memory items (type:memory; each hit starts with the item's [id]) — ranked by relevance (BM25) with a small bonus for recent messages. " +
	"Use it to answer questions like 'what did I say about X' or whenever the user refers to something you do not see in context. " +
	"Query syntax: " + index.Syntax + " Snippets mark matched words «like this». " +
	"broad:true in the result means very many messages matched and only the newest were ranked: add a distinctive word. " +
	"semantic:\"hybrid\" means search by meaning is on: hits also include messages saying the same in other words " +
	"(\"car\" finds \"automobile\"); semantic:\"unavailable\" means this answer is by keywords only."

// HistorySource is what the history tools read: the live session
// (*SessionManager) or, offline, the data directory's files.
type HistorySource interface {
	// Recent returns the newest n persisted events, oldest first.
	Recent(ctx context.Context, n int) ([]event.Event, error)
	// Range returns the events between from and to (see SessionManager.Range).
	Range(ctx context.Context, from, to string, limit int) ([]event.Event, bool, error)
	// SearchIndex runs a search query with the given options.
	SearchIndex(ctx context.Context, query string, opts index.Options) (SearchResult, error)
}

var _ HistorySource = (*SessionManager)(nil)

// tools are the history tools offered to every backend for the turn turn.
// They run on the turn's goroutine: the buffer through hub commands, the
// disk and the index directly.
func (m *SessionManager) tools(turn string) []agent.Tool { return HistoryTools(m, turn) }

// turnTools are every tool a turn gets: the history tools, the memory
// tools (with an item store; in is the turn's input: its door and
// sender) and the configured extra ones (MCP).
func (m *SessionManager) turnTools(turn string, in event.UserData) []agent.Tool {
	tools := m.tools(turn)
	if m.cfg.Items != nil {
		tools = append(tools, m.memoryTools(turn, in)...)
	}
	if m.cfg.Tools != nil {
		for _, t := range m.cfg.Tools() {
			if t.Confirm {
				t = m.confirmed(turn, t)
			}
			tools = append(tools, forPerson(t, in.Person))
		}
	}
	return tools
}

type turnPersonKey struct{}

// forPerson has t's calls know whose turn they run in (TurnPerson).
func forPerson(t agent.Tool, person string) agent.Tool {
	call := t.Call
	t.Call = func(ctx context.Context, args json.RawMessage) (string, error) {
		return call(context.WithValue(ctx, turnPersonKey{}, person), args)
	}
	return t
}

// TurnPerson is the person whose turn a tool call runs in (the turn's
// input's person; "" for nobody): a schedule the agent makes is theirs.
func TurnPerson(ctx context.Context) string {
	p, _ := ctx.Value(turnPersonKey{}).(string)
	return p
}

// BuiltinTools is how many of the session's own tools every turn gets:
// the history tools, and memory_save and memory_forget with an item store.
// mcp.max_tools counts them (and the schedule tools) before the MCP
// servers'. Safe from any goroutine: it reads only the configuration.
func (m *SessionManager) BuiltinTools() int {
	n := len(HistoryTools(m, ""))
	if m.cfg.Items != nil {
		n += len(m.memoryTools("", event.UserData{}))
	}
	return n
}

// HistoryTools returns the history tools (history_get_recent,
// history_get_range, history_search) over src, for agents and for the MCP
// server. The messages of turn are never search hits (the running turn's
// own input would match every search it makes); "" excludes nothing.
func HistoryTools(src HistorySource, turn string) []agent.Tool {
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
				evs, err := src.Recent(ctx, p.N)
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
				evs, truncated, err := src.Range(ctx, p.From, p.To, maxToolEvents)
				if err != nil {
					return "", err
				}
				return toolJSON(map[string]any{"events": toToolEvents(evs), "truncated": truncated})
			},
		},
		{
			Name:        "history_search",
			Description: historySearchDescription,
			Parameters:  json.RawMessage(`{"type":"object","properties":{"query":{"type":"string","minLength":1,"description":"keywords, optionally with \"phrases\", prefix* and filters"},"limit":{"type":"integer","minimum":1,"maximum":50,"default":10}},"required":["query"],"additionalProperties":false}`),
			Call: func(ctx context.Context, args json.RawMessage) (string, error) {
				p := struct {
					Query string
					Limit int
				}{Limit: 10}
				if err := decodeArgs(args, &p); err != nil {
					return "", err
				}
				res, err := src.SearchIndex(ctx, p.Query, index.Options{Limit: min(max(p.Limit, 1), maxToolHits), ExcludeTurn: turn})
				if err != nil {
					return "", err
				}
				if res.Hits == nil {
					res.Hits = []Hit{} // "hits":[] as GET /api/history/search answers, not null
				}
				return toolJSON(res)
			},
		},
	}
}

// decodeArgs decodes tool arguments; empty args mean defaults. A key
// twice, or in two cases ("query" and "Query"), is refused as on every
// door (strictjson.CheckKeys): encoding/json would keep the last one.
// Unknown keys are ignored: a model may send more than the schema asks.
func decodeArgs(args json.RawMessage, v any) error {
	if len(args) == 0 || string(args) == "null" {
		return nil
	}
	err := json.Unmarshal(args, v)
	if err == nil {
		err = strictjson.CheckKeys(args)
	}
	if err != nil {
		return fmt.Errorf("invalid arguments: %w", err)
	}
	return nil
}

// Hit is one history search result.
type Hit = index.Hit

// SearchResult is a search's answer: hits, the mode (and|or) and, while
// the index catches up, how far it has got.
type SearchResult = index.Result

// ErrNoHistory means the session was built without a chat log reader.
var ErrNoHistory = errors.New("the chat log is not available")

// IsQueryError reports whether err is a search query's fault (too long,
// a bad filter value, nothing to search for): its text says how to fix it.
func IsQueryError(err error) bool { return index.IsQueryError(err) }

// ErrNoIndex means the session was built without a search index.
var ErrNoIndex = errors.New("the search index is not available")

// BadBoundError reports a from/to value that is neither a seq nor a time.
type BadBoundError struct {
	Name string
	Err  error
}

func (e *BadBoundError) Error() string { return e.Name + ": " + e.Err.Error() }

// Range returns the persisted events between from and to (each a seq or
// an RFC 3339 time, inclusive) from the chat log, oldest first, at most
// limit; truncated says the limit cut it. It reads files, not hub state,
// and stops when ctx ends.
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
	evs, truncated, _, err = m.cfg.History.Range(ctx, f, t, limit)
	return evs, truncated, err
}

// Search runs a ranked full-text query (index.Syntax) over everything
// said and long-term memory, best first, at most limit hits. A query the
// index cannot run is an error index.IsQueryError recognises. It reads the
// index, not hub state, and stops when ctx ends.
func (m *SessionManager) Search(ctx context.Context, query string, limit int) (SearchResult, error) {
	return m.search(ctx, query, index.Options{Limit: limit}, searchByClient)
}

// SearchIndex is Search with every option of the index, for tool calls
// (the agent's history_search and the MCP server's): their durations are
// labelled "tool".
func (m *SessionManager) SearchIndex(ctx context.Context, query string, opts index.Options) (SearchResult, error) {
	res, err := m.search(ctx, query, opts, searchByTool)
	if err == nil {
		m.noteUses(res)
	}
	return res, err
}

// search runs on the caller's goroutine (the index has its own locking);
// caller labels its duration.
func (m *SessionManager) search(ctx context.Context, query string, opts index.Options, caller string) (SearchResult, error) {
	if m.cfg.Index == nil {
		return SearchResult{}, ErrNoIndex
	}
	opts.Now = m.now()
	t0 := time.Now()
	defer func() { m.metrics.search.WithLabelValues(caller).Observe(time.Since(t0).Seconds()) }()
	return m.cfg.Index.Search(ctx, query, opts)
}

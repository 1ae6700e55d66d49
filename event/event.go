// Package event defines the one Event schema shared by the WebSocket wire
// protocol, the chat log and the history tools. It imports nothing of ours.
package event

import (
	"encoding/json"
	"fmt"
	"time"
)

// Type names an event kind. The set is pinned by DESIGN.md.
type Type string

// Event types. Connected, Synced, Busy and Error are per-connection replies:
// they carry no seq and never enter history.
const (
	Connected  Type = "connected"
	Synced     Type = "synced"
	User       Type = "user"
	Status     Type = "status"
	Delta      Type = "delta"
	ToolCall   Type = "tool_call"
	ToolResult Type = "tool_result"
	Assistant  Type = "assistant"
	TurnEnd    Type = "turn_end"
	Notice     Type = "notice"
	Reset      Type = "reset"
	Busy       Type = "busy"
	Error      Type = "error"
	// ApprovalRequest: a tool call waits for a person's yes or no.
	ApprovalRequest Type = "approval_request"
	// ApprovalResult: the first answer (or the timeout, or a cancel).
	ApprovalResult Type = "approval_result"
	// TurnStart: an input that was recorded as queued (user.queued) has
	// begun to run. Only queued inputs get one; an input that runs at once
	// starts with its user event.
	TurnStart Type = "turn_start"
	// SchedulesChanged: a schedule was created, fired, moved on or
	// cancelled; clients that show the schedules list it again. Like
	// Connected it carries no seq, no turn and no data, and never enters
	// history: it is sent to the WebSocket clients connected at the time.
	SchedulesChanged Type = "schedules_changed"
	// MemoryChanged: a long-term memory item was saved, edited, deleted
	// or written by a consolidation (MemoryChangedData). It is in the chat
	// log: the memory item store is rebuilt from these events.
	MemoryChanged Type = "memory_changed"
)

// Persisted reports whether events of type t are written to the chat log.
func (t Type) Persisted() bool {
	switch t {
	case User, Assistant, ToolCall, ToolResult, TurnEnd, Notice, Reset, ApprovalRequest, ApprovalResult, TurnStart, MemoryChanged, Erased, PersonChanged:
		return true
	}
	return false
}

// Channels an input can come from. Webhook callers may name their own
// channel, but not one of the built-in doors' (see hub.CheckCallerChannel).
const (
	ChannelWeb      = "web"
	ChannelConsole  = "console"
	ChannelEmail    = "email"
	ChannelWebhook  = "webhook"
	ChannelSchedule = "schedule" // fired schedules
	ChannelMCP      = "mcp"      // the MCP server's send_message tool
	ChannelTelegram = "telegram" // the chat doors (channels/chat)
	ChannelMatrix   = "matrix"
	ChannelSlack    = "slack"
)

// Turn end statuses.
const (
	StatusCompleted   = "completed"
	StatusCancelled   = "cancelled"
	StatusError       = "error"
	StatusInterrupted = "interrupted"
)

// LogVersion is the value of "v" on every chat-log line.
const LogVersion = 1

// Event is one item of the session stream. Data holds the type's payload as
// raw JSON so an event read from the log is written back byte for byte.
type Event struct {
	V    int             `json:"v,omitempty"`
	Seq  int64           `json:"seq,omitempty"`
	TS   Time            `json:"ts"`
	Type Type            `json:"type"`
	Turn string          `json:"turn,omitempty"`
	Data json.RawMessage `json:"data,omitempty"`
}

// New builds an event of type t stamped with ts, marshalling data (one of
// the *Data structs below, or nil). It panics only if data cannot be
// marshalled, which for the payload types here is a programming error.
func New(t Type, turn string, ts time.Time, data any) Event {
	e := Event{TS: Time(ts), Type: t, Turn: turn}
	if data != nil {
		b, err := json.Marshal(data)
		if err != nil {
			panic(fmt.Sprintf("event: marshal %s data: %v", t, err))
		}
		e.Data = b
	}
	return e
}

// Decode unmarshals the event's data into v.
func (e Event) Decode(v any) error {
	if len(e.Data) == 0 {
		return fmt.Errorf("%s event has no data", e.Type)
	}
	return json.Unmarshal(e.Data, v)
}

// Time is a timestamp that marshals as RFC 3339 in UTC with exactly three
// fractional digits, as in "2026-11-22T10:00:00.123Z".
type Time time.Time

const timeLayout = "2006-01-02T15:04:05.000Z07:00"

// MarshalJSON implements json.Marshaler.
func (t Time) MarshalJSON() ([]byte, error) {
	b := make([]byte, 0, len(timeLayout)+2)
	b = append(b, '"')
	b = time.Time(t).UTC().AppendFormat(b, timeLayout)
	return append(b, '"'), nil
}

// UnmarshalJSON implements json.Unmarshaler; it accepts any RFC 3339 time.
func (t *Time) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	v, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return err
	}
	*t = Time(v)
	return nil
}

// Std returns t as a time.Time.
func (t Time) Std() time.Time { return time.Time(t) }

// UserData is the payload of a user event. From is always present, empty
// when the channel has no notion of a sender.
type UserData struct {
	Channel     string       `json:"channel"`
	From        string       `json:"from"`
	Content     string       `json:"content"`
	ClientMsgID string       `json:"client_msg_id,omitempty"`
	Attachments []Attachment `json:"attachments,omitempty"`
	// Queued is set on an input recorded on arrival that runs later (the
	// session was busy); a turn_start event with the same turn says when
	// it began.
	Queued bool `json:"queued,omitempty"`
	// ScheduleID names the schedule that fired this input (channel schedule).
	ScheduleID string `json:"schedule_id,omitempty"`
	// Person is who sent it (a people id), set by the server from the
	// credential, the terminal's person, the sender's address or account;
	// absent when the door knows nobody (an allowed but unmapped sender).
	// From stays the door's own label and never sets it.
	Person string `json:"person,omitempty"`
}

// Attachment is a file stored by content (data_dir/attachments) and
// referenced from a user event.
type Attachment struct {
	SHA256 string `json:"sha256"`
	Name   string `json:"name"`
	Type   string `json:"type"`
	Size   int64  `json:"size"`
}

// TurnStartData is the payload of a turn_start event: a queued input (the
// user event at seq InputSeq, whose turn this is) began to run.
type TurnStartData struct {
	InputSeq int64 `json:"input_seq"`
	WaitedMS int64 `json:"waited_ms"`
}

// TextData is the payload of status, delta and notice events.
type TextData struct {
	Text string `json:"text"`
	// By says who cancelled, on the notice of a cancelled turn: a channel
	// (web, console, …), "api", "reset", or "" when unknown.
	By string `json:"by,omitempty"`
	// Person is the people id of whoever cancelled, on that notice.
	Person string `json:"person,omitempty"`
}

// ToolCallData is the payload of a tool_call event.
type ToolCallData struct {
	ID   string          `json:"id"`
	Name string          `json:"name"`
	Args json.RawMessage `json:"args"`
	// Server is the MCP server of a tool named <server>__<tool>.
	Server string `json:"server,omitempty"`
}

// ToolResultData is the payload of a tool_result event.
type ToolResultData struct {
	ID     string `json:"id"`
	Name   string `json:"name"`
	Output string `json:"output"`
	Error  string `json:"error,omitempty"`
	Server string `json:"server,omitempty"`
}

// AssistantData is the payload of an assistant event. Partial is set when
// the turn was cancelled, failed or interrupted after some text had streamed.
type AssistantData struct {
	Content string `json:"content"`
	Partial bool   `json:"partial,omitempty"`
}

// Usage counts tokens, when the backend reports them.
type Usage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	TotalTokens      int `json:"total_tokens"`
}

// TurnEndData is the payload of a turn_end event.
type TurnEndData struct {
	Status string `json:"status"`
	Error  string `json:"error,omitempty"`
	// Code is set with status error when the chat log refused the turn's
	// events (storage_full, storage_error): its reply is not on disk.
	Code       string `json:"code,omitempty"`
	DurationMS int64  `json:"duration_ms"`
	Usage      *Usage `json:"usage,omitempty"`
}

// ResetData is the payload of a reset event.
type ResetData struct {
	Reason string `json:"reason"`
	Kept   int    `json:"kept"`
	// Person is who reset (a people id); absent for an idle reset.
	Person string `json:"person,omitempty"`
}

// ConnectedData is the payload of the first frame on a connection.
type ConnectedData struct {
	SessionID  string `json:"session_id"`
	Generation int64  `json:"generation"`
	Busy       bool   `json:"busy"`
	LastSeq    int64  `json:"last_seq"`
	Resumed    bool   `json:"resumed"`
	// MaxMessageBytes is the largest frame the server reads (server.max_message_bytes).
	MaxMessageBytes int64 `json:"max_message_bytes,omitempty"`
	// BusyPolicy is session.busy_policy, so a client knows whether a
	// message sent while busy is refused, queued or interrupts.
	BusyPolicy string `json:"busy_policy,omitempty"`
	// The attachment limits (attachments.max_bytes, max_per_message), so
	// a client can refuse a file before uploading it; absent without a store.
	AttachmentsMaxBytes      int64 `json:"attachments_max_bytes,omitempty"`
	AttachmentsMaxPerMessage int   `json:"attachments_max_per_message,omitempty"`
	// You is who this connection signed in as.
	You *You `json:"you,omitempty"`
}

// You is a signed-in person as their own client sees them: connected.you
// and GET /api/me.
type You struct {
	Person      string   `json:"person"`
	Name        string   `json:"name"`
	Role        string   `json:"role,omitempty"` // "" when the person lists permissions
	Kind        string   `json:"kind,omitempty"` // "service" for a script or bridge
	Permissions []string `json:"permissions"`
}

// SyncedData ends a replay. Gapless is false when the client did not get
// exactly the events after its since (it got the whole buffer instead).
// Cut is true when that is because the bounded buffer no longer holds them:
// older events are in the chat log (GET /api/history/range).
type SyncedData struct {
	LastSeq int64 `json:"last_seq"`
	Gapless bool  `json:"gapless"`
	Cut     bool  `json:"cut,omitempty"`
}

// BusyData tells a submitter its input did not start a turn. Queued is true
// when the input waits to run after the current turn (busy_policy: queue).
type BusyData struct {
	Turn        string `json:"turn"`
	Message     string `json:"message"`
	Queued      bool   `json:"queued,omitempty"`
	ClientMsgID string `json:"client_msg_id,omitempty"` // the input this answers
}

// ErrorData is the payload of an error reply. ClientMsgID names the
// message frame the error answers, when it was one.
type ErrorData struct {
	Code        string `json:"code"`
	Message     string `json:"message"`
	ClientMsgID string `json:"client_msg_id,omitempty"`
}

// Message is the text of a user or assistant event: the one way to read
// "who said what" from an event.
type Message struct {
	Channel string // user events: the door it came through
	From    string // user events: the sender, if the door has one
	Content string
	Partial bool // assistant events: the turn was cut short
	// Attachments of a user event (names, types, sizes; not the bytes).
	Attachments []Attachment
}

// Message returns the text of a user or assistant event. ok is false for
// any other type, and for a payload that does not decode.
func (e Event) Message() (m Message, ok bool) {
	switch e.Type {
	case User:
		var d UserData
		if e.Decode(&d) != nil {
			return m, false
		}
		return Message{Channel: d.Channel, From: d.From, Content: d.Content, Attachments: d.Attachments}, true
	case Assistant:
		var d AssistantData
		if e.Decode(&d) != nil {
			return m, false
		}
		return Message{Content: d.Content, Partial: d.Partial}, true
	}
	return m, false
}

// Approval decisions.
const (
	Approve = "approve"
	Deny    = "deny"
)

// ApprovalRequestData is the payload of an approval_request event: the
// tool call that waits, as the model made it.
//
// Text, when the server can say it, is what the call would do in words
// for the person who decides: for memory_save the text to remember, for
// memory_forget the text of the item to forget.
type ApprovalRequestData struct {
	ID     string          `json:"id"`
	Server string          `json:"server,omitempty"`
	Tool   string          `json:"tool"`
	Args   json.RawMessage `json:"args"`
	Text   string          `json:"text,omitempty"`
}

// ApprovalResultData is the payload of an approval_result event. By is the
// door that answered (web, console, api, …) or timeout, cancel, shutdown
// or restart for a call nobody answered.
type ApprovalResultData struct {
	ID       string `json:"id"`
	Decision string `json:"decision"`
	By       string `json:"by"`
	// Person is the people id of whoever answered (absent for a timeout,
	// cancel, shutdown or restart).
	Person string `json:"person,omitempty"`
}

// Memory change actions (MemoryChangedData.Action).
const (
	MemorySaved        = "saved"
	MemoryEdited       = "edited"
	MemoryDeleted      = "deleted"
	MemoryConsolidated = "consolidated"
)

// MemoryChangedData is the payload of a memory_changed event. By is who
// made the change: a door (web, console, api), "agent", or
// "consolidation". Text and Source are set when an item is saved, edited
// or consolidated — the event is what restarts and other nodes rebuild
// the item store from — and absent on deleted, which carries only the id.
//
// Door and From (on the agent's saves; absent in logs of earlier
// versions) say on whose behalf the agent saved: the channel of the turn's
// input (web, console, email, webhook, mcp, schedule, …) and its sender
// there (an email address, a webhook's from, "schedule <id>"; empty when
// the door names none). A door's own save has Source = By = the door.
type MemoryChangedData struct {
	Action string `json:"action"`
	ID     string `json:"id"`
	By     string `json:"by"`
	Text   string `json:"text,omitempty"`
	Source string `json:"source,omitempty"`
	Door   string `json:"door,omitempty"`
	From   string `json:"from,omitempty"`
	// Person is the people id behind the change: who made it at a door,
	// or, on the agent's saves, the person whose turn it was.
	Person string `json:"person,omitempty"`
}

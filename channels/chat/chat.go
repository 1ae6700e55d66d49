// Package chat is the shared core of the chat doors (Telegram, Matrix,
// Slack): everything a chat door does that does not depend on the
// platform. A connector (channels/telegram, channels/matrix,
// channels/slack) only moves messages: it receives from the platform and
// hands each message to the Door, and it posts, edits and types when the
// Door asks. The Door decides who may talk, submits to the session,
// streams the reply by editing the message it posted, splits it at the
// platform's limit, shows approvals and remembers where it was.
//
// Exactly once. The Door records an accepted message (its reply still
// owed) in data_dir/<door>/state.json before Message returns; only then
// does the connector move its position (Telegram's update offset,
// Matrix's sync token, Slack's envelope ack), which the Door stores in
// the same file. A message handed twice (a crash between the two steps)
// has the same client_msg_id, so the session answers it once. A reply
// owed at a restart is finished from the session's outcome of that turn:
// the message already posted for it is edited, not posted again. The one
// window left: a crash after the platform accepted a new message and
// before its id was stored posts that part again.
package chat

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/frontdesk-hq/frontdesk/event"
)

// Message is one message a connector received.
type Message struct {
	// ID is the platform's id of the message, unique within Chat
	// (Telegram's message_id, Matrix's event id, Slack's ts).
	ID string
	// Chat is where it was said and where the answer goes (a Telegram
	// chat id, a Matrix room id, a Slack channel id).
	Chat string
	// Thread is the thread to answer in, if the platform has threads
	// (Slack's thread_ts); "" answers as a reply to ID.
	Thread string
	// From is the sender's account as people and allow name it
	// ("@ann" or "12345" on Telegram, "@ann:example.org", "U0123").
	// Aliases are other names of the same account ("12345" beside
	// "@ann"): allow and people may list any of them.
	From    string
	Aliases []string
	// Text is the message's text (the platform's markup undone as far as
	// the connector can: the model reads plain text).
	Text string
	// Direct is true in a one-to-one chat; Mentioned when the message
	// names the assistant or answers one of its messages. In a group the
	// Door answers only when Mentioned.
	Direct, Mentioned bool
	// Files are the message's photos and documents.
	Files []File
}

// File is an incoming photo or document. Open fetches its bytes; the Door
// stores them with the attachment store's limits and sniffing.
type File struct {
	Name string
	Size int64 // as the platform says; 0 if unknown
	Open func(ctx context.Context) (io.ReadCloser, error)
}

// Action is a button pressed or a reaction given: an answer to an
// approval request the Door posted.
type Action struct {
	Chat    string
	From    string
	Aliases []string
	// Approval is the request's id (the button's data), or "" when the
	// connector knows only the message it answers (OnMessage: a reaction
	// or a reply in Matrix).
	Approval  string
	OnMessage string
	// Decision is "approve" or "deny".
	Decision string
	// Answer, if set, tells the presser how it went (Telegram's
	// answerCallbackQuery); the Door calls it once.
	Answer func(ctx context.Context, text string)
}

// Post is a message the Door wants posted.
type Post struct {
	Chat string
	// ReplyTo is the message it answers ("" for none); Thread as Message.
	ReplyTo, Thread string
	// Text is in the platform's markup (Limits.Render made it) and no
	// longer than Limits.MaxText; Plain is the same without markup.
	Text, Plain string
	// Buttons, if set, are choices under the message (an approval).
	Buttons []Button
}

// Button is one choice under a posted message; Data comes back as
// Action.Approval + Action.Decision.
type Button struct {
	Label    string
	Approval string
	Decision string
}

// Edit replaces the text of a message the Door posted.
type Edit struct {
	Chat, ID    string
	Text, Plain string
	// Final is set on the last edit of a reply (Matrix sends a notice of
	// it; connectors that throttle edits must not drop it).
	Final bool
}

// Limits are a platform's rules.
type Limits struct {
	// MaxText is the longest text a message may have, in the source
	// (Markdown) runes the Door splits at; a connector leaves room for
	// its markup growing the text.
	MaxText int
	// EditEvery is the least time between two edits of a streaming reply.
	EditEvery time.Duration
	// TypingEvery is how often the typing indicator is sent again while
	// the assistant works; 0 for a platform without one.
	TypingEvery time.Duration
	// Style is the markup Render produces.
	Style Style
}

// Connector is one chat platform.
type Connector interface {
	// Run receives until ctx ends, starting from in.Cursor(). It hands
	// every message and action to in, one at a time, waiting for each
	// (Message returns once the input is safe), and calls in.Advance with
	// its new position once everything before it was handed. Errors from
	// the platform are retried with backoff (in.Report says so); Run
	// returns only when ctx ends.
	Run(ctx context.Context, in Inbox) error
	// Send posts p and returns the new message's id.
	Send(ctx context.Context, p Post) (id string, err error)
	// Edit changes a posted message. A platform's "not modified" is nil.
	Edit(ctx context.Context, e Edit) error
	// Typing shows the typing indicator in chat (a no-op where there is none).
	Typing(ctx context.Context, chat string) error
	Limits() Limits
}

// Inbox is what a Connector hands its messages to: the Door.
type Inbox interface {
	// Cursor is the position the connector stored last ("" at first).
	Cursor() string
	// Allowed says whether an account may talk (allow, or a person's who
	// may): a Matrix invite from it is accepted. It logs nothing.
	Allowed(from string, aliases ...string) bool
	// Message takes one message. nil means it is answered or safely
	// recorded: the connector may move past it. An error means it could
	// not be recorded (a full disk, the session stopping): hand it again
	// later, after a pause.
	Message(ctx context.Context, m Message) error
	// Action takes a button press or reaction.
	Action(ctx context.Context, a Action)
	// Advance stores the connector's new position.
	Advance(cursor string) error
	// Report tells the Door how the platform answers: nil is well, an
	// error is why not (shown in /healthz and /api/session).
	Report(err error)
}

// RetryError is a platform's "too many requests": try again after After.
type RetryError struct {
	After time.Duration
	Err   error
}

func (e *RetryError) Error() string {
	return fmt.Sprintf("%v (retry after %s)", e.Err, e.After)
}

func (e *RetryError) Unwrap() error { return e.Err }

// ErrUnauthorized is what a connector's error wraps when the platform
// refuses its token (revoked, wrong): retrying soon will not help.
var ErrUnauthorized = errors.New("the platform refused the token")

// DoorNames are the chat doors, as channel names.
var DoorNames = []string{event.ChannelTelegram, event.ChannelMatrix, event.ChannelSlack}

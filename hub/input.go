package hub

import (
	"errors"
	"fmt"
	"io/fs"
	"regexp"
	"slices"
	"strings"
	"unicode"

	"github.com/frontdesk-hq/frontdesk/event"
)

// InputError is why Submit refused an input before anything was recorded:
// Code is a stable word for the wire (the WebSocket error frame, the
// webhook's 400), Message a sentence for the sender. Compare with
// errors.Is against the Err* values below.
type InputError struct {
	Code    string
	Message string
}

func (e *InputError) Error() string { return e.Message }

// MaxClientMsgIDBytes caps an input's client_msg_id. The session keeps
// the ids it accepted and echoes them to every client; 256 bytes leaves
// room for the email door's ids ("email:" and a Message-ID of up to 250).
const MaxClientMsgIDBytes = 256

// Input errors. Every door gets them from Submit, so every door refuses
// the same things in the same words.
var (
	// ErrEmpty rejects an input with no content (after cleaning).
	ErrEmpty = &InputError{"empty_content", "content is empty"}
	// ErrBadChannel rejects a channel name that is not a short lower-case word.
	ErrBadChannel = &InputError{"bad_channel", "channel must match ^[a-z][a-z0-9-]{0,31}$"}
	// ErrReservedChannel rejects a caller-chosen channel that names a
	// built-in door (see CheckCallerChannel).
	ErrReservedChannel = &InputError{"reserved_channel", "channel names web, console, email, schedule, mcp, telegram, matrix and slack belong to frontdesk's own doors; " +
		"name your source (e.g. \"cron\" or \"mail-bridge\") or leave channel out for \"webhook\""}
	// ErrClientMsgIDTooLong rejects a client_msg_id over MaxClientMsgIDBytes.
	ErrClientMsgIDTooLong = &InputError{"bad_client_msg_id", fmt.Sprintf("client_msg_id is too long: use at most %d bytes", MaxClientMsgIDBytes)}
	// ErrNotForwarded rejects a forwarded input that only the holder's
	// own doors make (see checkForwarded).
	ErrNotForwarded = &InputError{"reserved_channel", "inputs of the email, schedule and chat doors are taken by the node that runs the assistant; " +
		"another node never forwards them"}
)

// tooLarge rejects an input whose text is n bytes, over limit
// (Config.MaxMessageBytes).
func tooLarge(n int, limit int64) error {
	return &InputError{"too_large", fmt.Sprintf("the message is %d bytes, more than server.max_message_bytes (%d)", n, limit)}
}

// Attachments is the attachment store as the session sees it.
// *attachments.Store implements it (main wires it in). Stat returns the
// record of a stored file: an error wrapping fs.ErrInvalid for a malformed
// id, fs.ErrNotExist for one nothing is stored under.
type Attachments interface {
	Stat(sha256 string) (event.Attachment, error)
}

// DefaultMaxAttachments is Config.MaxAttachments' default.
const DefaultMaxAttachments = 10

// attachmentError is the InputError for a reference the store refused.
func attachmentError(sha string, err error) error {
	switch {
	case errors.Is(err, fs.ErrInvalid):
		return &InputError{"bad_attachment", fmt.Sprintf("attachment %.80q is not an attachment id (the file's sha256: 64 lower-case hex digits)", sha)}
	case errors.Is(err, fs.ErrNotExist):
		return &InputError{"unknown_attachment", "no attachment " + sha + " is stored: upload it first with POST /api/attachments"}
	}
	return fmt.Errorf("look up attachment %s: %w", sha, err)
}

// AttachmentRefs turns the attachment ids a client sent into references
// for Input.Attachments (Submit checks and completes them). nil stays nil.
func AttachmentRefs(ids []string) []event.Attachment {
	if ids == nil {
		return nil
	}
	out := make([]event.Attachment, len(ids))
	for i, id := range ids {
		out[i] = event.Attachment{SHA256: id}
	}
	return out
}

// resolveAttachments checks an input's attachment references against the
// store: every one must name a stored file (else nothing is recorded or
// run), at most Config.MaxAttachments of them. Each reference gets its
// type and size from the store; a name given by the door (email) is kept
// (one line, no control characters), else the store's. A file referenced
// twice counts once. Submit calls it on the caller's goroutine, after clean.
func (m *SessionManager) resolveAttachments(in Input) (Input, error) {
	if len(in.Attachments) == 0 {
		return in, nil
	}
	store, limit := m.cfg.Attachments, m.cfg.MaxAttachments
	if store == nil {
		return in, &InputError{"attachments_disabled", "this server keeps no attachments"}
	}
	out := make([]event.Attachment, 0, len(in.Attachments))
	seen := make(map[string]bool, len(in.Attachments))
	for _, ref := range in.Attachments {
		if seen[ref.SHA256] {
			continue
		}
		seen[ref.SHA256] = true
		if len(out) == limit {
			return in, &InputError{"too_many_attachments", fmt.Sprintf("a message may carry at most %d attachments (attachments.max_per_message)", limit)}
		}
		a, err := store.Stat(ref.SHA256)
		if err != nil {
			return in, attachmentError(ref.SHA256, err)
		}
		if name := stripControl(ref.Name, false); strings.TrimSpace(name) != "" {
			a.Name = name
		}
		out = append(out, a)
	}
	in.Attachments = out
	return in, nil
}

// clean is the one place that validates and cleans an input from any door
// — and from another node's doors, forwarded to this one (Serve) — before
// the session sees it. Submit calls it on the caller's goroutine.
//
// The text (content and from) is at most maxBytes (Config.MaxMessageBytes;
// 0: no cap), except an email's, whose door caps the whole mail.
// Control characters are removed from the content, except newline and
// tab: they are invisible in the UI, and in the terminal (and to the
// model) they can move the cursor, rewrite what was printed or pass for
// something else ("\x1c\x1c/status" reads as "/status"). From is one line
// and keeps none. Invalid UTF-8 (the console and email doors may pass it
// through) becomes U+FFFD.
func clean(in Input, maxBytes int64) (Input, error) {
	if n := len(in.Content) + len(in.From); maxBytes > 0 && int64(n) > maxBytes && in.Channel != event.ChannelEmail {
		return in, tooLarge(n, maxBytes)
	}
	in.Content = stripControl(in.Content, true)
	in.From = stripControl(in.From, false)
	if strings.TrimSpace(in.Content) == "" && len(in.Attachments) == 0 {
		return in, ErrEmpty
	}
	if len(in.ClientMsgID) > MaxClientMsgIDBytes {
		return in, ErrClientMsgIDTooLong
	}
	if !channelName.MatchString(in.Channel) {
		return in, ErrBadChannel
	}
	return in, nil
}

var channelName = regexp.MustCompile(`^[a-z][a-z0-9-]{0,31}$`)

// reservedChannels belong to the built-in doors: every client and the
// model read the channel as where an input came from, so a caller must not
// be able to pass a webhook post off as an email or a typed line.
var reservedChannels = []string{event.ChannelWeb, event.ChannelConsole, event.ChannelEmail, event.ChannelSchedule, event.ChannelMCP,
	event.ChannelTelegram, event.ChannelMatrix, event.ChannelSlack}

// CheckCallerChannel checks a channel name chosen by the caller rather
// than by the door (the webhook's "channel" field): a short lower-case
// word (ErrBadChannel) that is not a built-in door's (ErrReservedChannel).
// Doors that name their own channel need not call it.
func CheckCallerChannel(name string) error {
	if !channelName.MatchString(name) {
		return ErrBadChannel
	}
	if slices.Contains(reservedChannels, name) {
		return ErrReservedChannel
	}
	return nil
}

// forwardedChannels are the channels of the doors that run on every node
// and forward their inputs to the holder: the web page (WebSocket), the
// console and MCP's send_message; the webhook's are its callers' own
// names (CheckCallerChannel). Email and schedules are the holder's own
// doors: they run where the lease is.
var forwardedChannels = []string{event.ChannelWeb, event.ChannelConsole, event.ChannelMCP}

// checkForwarded is what the holder checks of an input another node
// forwarded (Serve) besides what Submit checks of every input: that a
// door that forwards could have sent it — its channel is one of
// forwardedChannels or a caller's own name, and it carries nothing only
// the holder's doors set (Patient, ScheduleID, attachment names; the
// store names the files). Whatever the other node's door checked is
// checked again here (clean, resolveAttachments): what arrives over
// the cluster's connection is judged as if it came through a door.
func checkForwarded(in Input) (Input, error) {
	if !slices.Contains(forwardedChannels, in.Channel) {
		if err := CheckCallerChannel(in.Channel); errors.Is(err, ErrReservedChannel) {
			return in, ErrNotForwarded
		} else if err != nil {
			return in, err
		}
	}
	if in.Patient || in.ScheduleID != "" {
		return in, ErrNotForwarded
	}
	in.Notify, in.Done = nil, nil
	if in.Attachments != nil {
		refs := make([]event.Attachment, len(in.Attachments))
		for i, a := range in.Attachments {
			refs[i] = event.Attachment{SHA256: a.SHA256}
		}
		in.Attachments = refs
	}
	return in, nil
}

// stripControl returns s as valid UTF-8 without control characters (C0,
// DEL, C1); multiline keeps newlines and tabs. s is returned as is when
// there is nothing to remove, which is the common case.
func stripControl(s string, multiline bool) string {
	keep := func(r rune) bool {
		return !unicode.IsControl(r) || (multiline && (r == '\n' || r == '\t'))
	}
	clean := true
	for _, r := range s {
		if r == unicode.ReplacementChar || !keep(r) {
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	// strings.Map turns each invalid byte into U+FFFD.
	return strings.Map(func(r rune) rune {
		if !keep(r) {
			return -1
		}
		return r
	}, s)
}

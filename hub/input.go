package hub

import (
	"fmt"
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
	ErrReservedChannel = &InputError{"reserved_channel", "channel names web, console, email, schedule and mcp belong to frontdesk's own doors; " +
		"name your source (e.g. \"cron\" or \"mail-bridge\") or leave channel out for \"webhook\""}
	// ErrClientMsgIDTooLong rejects a client_msg_id over MaxClientMsgIDBytes.
	ErrClientMsgIDTooLong = &InputError{"bad_client_msg_id", fmt.Sprintf("client_msg_id is too long: use at most %d bytes", MaxClientMsgIDBytes)}
)

// clean is the one place that validates and cleans an input from any door
// before the session sees it. Submit calls it on the caller's goroutine.
//
// Control characters are removed from the content, except newline and
// tab: they are invisible in the UI, and in the terminal (and to the
// model) they can move the cursor, rewrite what was printed or pass for
// something else ("\x1c\x1c/status" reads as "/status"). From is one line
// and keeps none. Invalid UTF-8 (the console and email doors may pass it
// through) becomes U+FFFD.
func clean(in Input) (Input, error) {
	in.Content = stripControl(in.Content, true)
	in.From = stripControl(in.From, false)
	if strings.TrimSpace(in.Content) == "" {
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
var reservedChannels = []string{event.ChannelWeb, event.ChannelConsole, event.ChannelEmail, event.ChannelSchedule, event.ChannelMCP}

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

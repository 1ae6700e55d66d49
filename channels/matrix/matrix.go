// Package matrix is the Matrix door's connector: it syncs with a
// homeserver as a bot account, hands the messages of the rooms it was
// invited to (by an allowed account) to the chat Door, and posts, edits
// (m.replace) and types when the Door asks. Encrypted rooms work through
// mautrix-go's pure-Go crypto (build tag goolm); its keys live in
// DataDir/matrix/crypto.db and the login (access token, device id) in
// DataDir/matrix/session.json, so a restart is the same device.
//
// Without -tags goolm the package builds but New returns an error: the
// crypto of mautrix-go needs the tag, and the door is not offered
// without it.
package matrix

import (
	"log/slog"
	"time"
)

// Options configure a Connector.
type Options struct {
	// Homeserver is the client-server API's base URL
	// (https://matrix.example.org). Required.
	Homeserver string
	// UserID is the bot's account (@frontdesk:example.org). Required.
	UserID string
	// Password logs in when there is no stored session and no
	// AccessToken; AccessToken, if set, is used as is (its device is the
	// one whoami names). One of the two is required.
	Password, AccessToken string
	// Encryption makes encrypted rooms work (read and answered
	// encrypted). Off, encrypted messages are skipped with a warning.
	Encryption bool
	// DataDir is frontdesk's data directory; the connector keeps
	// DataDir/matrix/session.json and crypto.db. Required.
	DataDir string
	// DeviceName is the new device's name at a password login (default
	// "frontdesk").
	DeviceName string
	Logger     *slog.Logger
	// PollTimeout is the long poll of /sync (default 30 s); tests shorten
	// it. MinBackoff and MaxBackoff bound the pause after a failed sync or
	// a message the Door could not take (defaults 1 s and 1 minute; a
	// revoked token waits MaxBackoff * 5).
	PollTimeout            time.Duration
	MinBackoff, MaxBackoff time.Duration
}

// Limits of Matrix: events may be 64 KiB; 16000 source runes leave room
// for the HTML and the plain body that both travel.
const (
	maxText     = 16000
	editEvery   = time.Second
	typingEvery = 20 * time.Second
	typingFor   = 30 * time.Second
)

package main

import (
	"io"
	"log/slog"
	"time"

	"github.com/frontdesk-hq/frontdesk/channels/console"
	"github.com/frontdesk-hq/frontdesk/channels/email"
	"github.com/frontdesk-hq/frontdesk/channels/ws"
	"github.com/frontdesk-hq/frontdesk/config"
	"github.com/frontdesk-hq/frontdesk/event"
	"github.com/frontdesk-hq/frontdesk/hub"
	"github.com/frontdesk-hq/frontdesk/people"
)

// The doors' wiring: each door built from the configuration, and the
// person each door speaks for.

// consoleMode says whether the console REPL runs — on when stdin is a
// terminal (auto), or forced — and in color; its terminal shows log lines
// in the console's form from the start.
func consoleMode(cfg config.Config, stdin io.Reader, stdout io.Writer, getenv func(string) string, logs *console.LogSink) (on, color bool) {
	on = cfg.Channels.Console.Enabled == "true" || (cfg.Channels.Console.Enabled == "auto" && console.IsTerminal(stdin))
	color = console.IsTerminal(stdout) && getenv("NO_COLOR") == ""
	if on {
		logs.Readable(color)
	}
	return on, color
}

// consolePerson is who types at the terminal: channels.console.person, or
// the first admin (the implicit owner without people).
func consolePerson(cfg config.Config, dir *people.Directory) string {
	if cfg.Channels.Console.Person != "" {
		return cfg.Channels.Console.Person
	}
	if p := dir.FirstAdmin(); p != nil {
		return p.ID
	}
	return ""
}

// consoleNames gives the REPL people's names; none for the implicit
// owner (nothing configured: the labels of before, as in the page).
func consoleNames(dir *people.Directory) func(string) string {
	if dir.Implicit() {
		return nil
	}
	return dir.Name
}

// emailPeople is the email door's people: the person whose emails hold a
// sender, and whether they may talk. Without people (the implicit owner)
// a sender is nobody: allow_from alone decides, as before.
func emailPeople(dir *people.Directory) func(string) (string, bool) {
	if dir.Implicit() {
		return nil
	}
	return func(addr string) (string, bool) {
		p := dir.ByEmail(addr)
		if p == nil {
			return "", false
		}
		return p.ID, p.Can(event.PermTalk)
	}
}

// newWS is the WebSocket door with the server block's limits.
func newWS(cfg config.Config, h *hub.SessionManager, logger *slog.Logger) *ws.Handler {
	return ws.New(h, ws.Options{
		MaxMessageBytes:    cfg.Server.MaxMessageBytes,
		AttachmentMaxBytes: cfg.Attachments.MaxBytes,
		PingInterval:       time.Duration(cfg.Server.PingIntervalSec) * time.Second,
		WriteTimeout:       time.Duration(cfg.Server.WriteTimeoutSec) * time.Second,
		MaxClients:         cfg.Server.MaxClients,
		FrameRatePerSec:    cfg.Server.FrameRatePerSec,
		FrameRateBurst:     cfg.Server.FrameRateBurst,
		Logger:             logger,
	})
}

// oidcClientSecret is auth.oidc's client secret; main has refused to start when its variable is named but empty.
func oidcClientSecret(cfg config.Config, getenv func(string) string) string {
	s, _ := cfg.OIDCClientSecret(getenv)
	return s
}

// newEmail builds the email channel: IMAP in, SMTP out. Enabled but
// unusable (say, a password variable not set) refuses to start rather than
// silently not answering mail. It stops before the hub at shutdown, so no
// mail is handed to a stopping session; what is unanswered waits in
// <data_dir>/email for the next start.
func newEmail(cfg config.Config, h *hub.SessionManager, getenv func(string) string, logger *slog.Logger, st *stores,
	replicate func([]byte) error) (*email.Channel, error) {
	e := cfg.Channels.Email
	files := st.files
	return email.New(h, email.Options{
		Address: e.Address, AllowFrom: e.AllowFrom, MaxBytes: e.MaxBytes, RatePerHour: e.RatePerHour,
		People: emailPeople(st.people),
		IMAP: email.IMAPOptions{Addr: e.IMAP.Addr, TLS: e.IMAP.TLS, Username: e.IMAP.Username,
			Password: getenv(e.IMAP.PasswordEnv), PasswordEnv: e.IMAP.PasswordEnv, Mailbox: e.IMAP.Mailbox,
			Idle: e.IMAP.Idle, PollInterval: time.Duration(e.IMAP.PollIntervalSec) * time.Second},
		SMTP: email.SMTPOptions{Addr: e.SMTP.Addr, TLS: e.SMTP.TLS, Username: e.SMTP.Username,
			Password: getenv(e.SMTP.PasswordEnv), PasswordEnv: e.SMTP.PasswordEnv},
		DataDir: cfg.DataDir, Logger: logger,
		Attachments: files, MaxAttachments: cfg.Attachments.MaxPerMessage,
		Replicate: replicate,
	})
}

package config

import (
	"fmt"
	"net"
	"net/mail"
	"strings"
)

// Channels configures the doors into the session besides the web UI.
type Channels struct {
	Console Console `yaml:"console"`
	Webhook Webhook `yaml:"webhook"`
	Email   Email   `yaml:"email"`
	// The chat doors (channels/chat and its connectors).
	Telegram Telegram `yaml:"telegram"`
	Matrix   Matrix   `yaml:"matrix"`
	Slack    Slack    `yaml:"slack"`
}

// Console configures the terminal REPL (not yet available).
type Console struct {
	// Enabled is auto | true | false. Default auto.
	Enabled string `yaml:"enabled"`
	// Person is who types at the terminal: a people id. Default the
	// first admin in people (or the implicit owner).
	Person string `yaml:"person"`
}

// Webhook configures POST /api/messages.
type Webhook struct {
	// Enabled mounts POST /api/messages. Default true.
	Enabled bool `yaml:"enabled"`
	// RatePerSec and RateBurst limit POST /api/messages for the whole
	// process (a token bucket: RateBurst at once, then RatePerSec a
	// second); past it the answer is 429 with Retry-After. 0 per second
	// means no limit. Defaults 1 and 20.
	RatePerSec float64 `yaml:"rate_per_sec"`
	RateBurst  int     `yaml:"rate_burst"`
}

// Email configures the email channel: mail read over IMAP, replies sent
// over SMTP. See channels/email.
type Email struct {
	// Enabled starts the channel. Default false.
	Enabled bool `yaml:"enabled"`
	// Address is the assistant's own address: the From of replies. Mail
	// from it is never answered. Required when enabled.
	Address string `yaml:"address"`
	// AllowFrom lists who gets an answer: exact addresses
	// ("ana@example.com") or whole domains ("@example.com", no
	// subdomains). Required and non-empty when enabled; mail from anyone
	// else is marked seen and skipped.
	AllowFrom []string `yaml:"allow_from"`
	// MaxBytes: larger mail is not processed (logged, marked seen).
	// Default 1048576 (1 MiB).
	MaxBytes int64 `yaml:"max_bytes"`
	// RatePerHour caps the mails answered per sender in any hour; the
	// excess is marked seen and skipped. 0 means no limit. Default 10.
	RatePerHour int  `yaml:"rate_per_hour"`
	IMAP        IMAP `yaml:"imap"`
	SMTP        SMTP `yaml:"smtp"`
}

// IMAP configures the incoming side of the email channel.
type IMAP struct {
	// Addr is the server's HOST:PORT (993 for tls, 143 for starttls).
	// Required when email is enabled.
	Addr string `yaml:"addr"`
	// TLS is tls | starttls | none; none only for loopback addresses.
	// Default starttls.
	TLS string `yaml:"tls"`
	// Username logs in. Required when email is enabled.
	Username string `yaml:"username"`
	// PasswordEnv names the environment variable holding the password (an
	// app password for Gmail, Fastmail, iCloud). Default FRONTDESK_IMAP_PASSWORD.
	PasswordEnv string `yaml:"password_env"`
	// Mailbox is watched for new mail. Default INBOX.
	Mailbox string `yaml:"mailbox"`
	// Idle waits for new mail with IMAP IDLE when the server offers it;
	// false (or a server without IDLE) polls instead. Default true.
	Idle bool `yaml:"idle"`
	// PollIntervalSec is how often the mailbox is checked without IDLE.
	// Default 60.
	PollIntervalSec int `yaml:"poll_interval_sec"`
}

// SMTP configures the outgoing side of the email channel.
type SMTP struct {
	// Addr is the submission server's HOST:PORT (465 for tls, 587 for
	// starttls). Required when email is enabled.
	Addr string `yaml:"addr"`
	// TLS is tls | starttls | none; none only for loopback addresses.
	// Default starttls.
	TLS string `yaml:"tls"`
	// Username authenticates (PLAIN or LOGIN); empty sends without AUTH
	// (a local relay that trusts this host). Default empty.
	Username string `yaml:"username"`
	// PasswordEnv names the environment variable holding the password.
	// Default FRONTDESK_SMTP_PASSWORD.
	PasswordEnv string `yaml:"password_env"`
}

// validateEmail checks channels.email. The TLS modes are checked always;
// everything else only when the channel is enabled.
func (c *Config) validateEmail(bad badFunc) {
	e := c.Channels.Email
	oneOf(bad, "channels.email.imap.tls", e.IMAP.TLS, "tls", "starttls", "none")
	oneOf(bad, "channels.email.smtp.tls", e.SMTP.TLS, "tls", "starttls", "none")
	if !e.Enabled {
		return
	}
	if a, err := mail.ParseAddress(e.Address); err != nil || a.Address != strings.TrimSpace(e.Address) {
		bad("channels.email.address", "%q is not a plain email address; set it to the assistant's own address, e.g. assistant@example.com", e.Address)
	}
	if len(e.AllowFrom) == 0 {
		bad("channels.email.allow_from", "must list who may email the assistant, e.g. [\"you@example.com\"] or [\"@example.com\"]")
	}
	for i, a := range e.AllowFrom {
		if !validAllow(a) {
			bad(fmt.Sprintf("channels.email.allow_from[%d]", i), "%q is neither an address (you@example.com) nor a domain (@example.com)", a)
		}
	}
	if e.MaxBytes < 1024 || e.MaxBytes > 64<<20 {
		bad("channels.email.max_bytes", "%d is out of range; use 1024 to 67108864 (default 1048576)", e.MaxBytes)
	}
	if e.RatePerHour < 0 {
		bad("channels.email.rate_per_hour", "must be 0 (no limit) or a positive number (default 10)")
	}
	for _, s := range []struct{ key, addr, tls, passEnv string }{
		{"channels.email.imap", e.IMAP.Addr, e.IMAP.TLS, e.IMAP.PasswordEnv},
		{"channels.email.smtp", e.SMTP.Addr, e.SMTP.TLS, e.SMTP.PasswordEnv},
	} {
		host, port, err := net.SplitHostPort(s.addr)
		if err != nil || host == "" || port == "" {
			bad(s.key+".addr", "%q is not HOST:PORT, e.g. imap.example.com:993 or smtp.example.com:587", s.addr)
		} else if s.tls == "none" && !loopbackHost(host) {
			bad(s.key+".tls", "none sends the password in clear text; it is allowed only for loopback addresses, not %q: use tls or starttls", host)
		}
		if s.passEnv != "" && !envName(s.passEnv) {
			bad(s.key+".password_env", "%q is not an environment variable name", s.passEnv)
		}
	}
	if strings.TrimSpace(e.IMAP.Username) == "" {
		bad("channels.email.imap.username", "must be set to the mailbox login (often the full address)")
	}
	if e.IMAP.PasswordEnv == "" {
		bad("channels.email.imap.password_env", "must name the environment variable holding the IMAP password")
	}
	if e.SMTP.Username != "" && e.SMTP.PasswordEnv == "" {
		bad("channels.email.smtp.password_env", "must name the environment variable holding the SMTP password")
	}
	if strings.TrimSpace(e.IMAP.Mailbox) == "" {
		bad("channels.email.imap.mailbox", "must not be empty (default INBOX)")
	}
	if e.IMAP.PollIntervalSec < 5 || e.IMAP.PollIntervalSec > 3600 {
		bad("channels.email.imap.poll_interval_sec", "%d is out of range; use 5 to 3600 (default 60)", e.IMAP.PollIntervalSec)
	}
}

// validAllow accepts "user@domain" or "@domain".
func validAllow(s string) bool {
	if d, ok := strings.CutPrefix(s, "@"); ok {
		if d == "localhost" {
			return true
		}
		return strings.Contains(d, ".") && !strings.ContainsAny(d, "@ <>,;\"\\")
	}
	a, err := mail.ParseAddress(s)
	return err == nil && a.Address == s
}

// Package logging makes the server's one log stream: slog in the configured
// format and level, with every secret the server holds redacted.
package logging

import (
	"encoding/json"
	"io"
	"log/slog"
	"slices"
	"strconv"
	"strings"

	"github.com/frontdesk-hq/frontdesk/config"
)

// Setup makes the server's one log stream: the configured format
// and level, secrets redacted, written to w. It becomes the process
// default, so whatever logs through the standard log package (net/http
// when its ErrorLog is unset, a library) or slog's package functions
// (httpjson) goes through the same handler. The server owns the process's
// logging from here on.
func Setup(cfg config.Config, getenv func(string) string, w io.Writer) *slog.Logger {
	logger := New(cfg.Log, newRedactor(w, secrets(cfg, getenv)))
	slog.SetDefault(logger)
	return logger
}

// New returns the one logger every part of the server writes to, in
// the format and at the level of the log section (validated by config).
func New(c config.Log, w io.Writer) *slog.Logger {
	var level slog.Level
	if err := level.UnmarshalText([]byte(c.Level)); err != nil {
		level = slog.LevelInfo
	}
	opts := &slog.HandlerOptions{Level: level}
	if c.Format == "json" {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}

// secrets returns the secret values the server holds: the auth token, the
// model API key, the mail passwords and the variables passed to a command
// backend. Values shorter than minSecret are left out: redacting them
// would garble ordinary words.
func secrets(cfg config.Config, getenv func(string) string) []string {
	vals := []string{cfg.AuthTokenValue(getenv)}
	for _, name := range append([]string{
		cfg.Agent.OpenAI.APIKeyEnv,
		cfg.Channels.Email.IMAP.PasswordEnv,
		cfg.Channels.Email.SMTP.PasswordEnv,
	}, cfg.Agent.Command.PassEnv...) {
		if name != "" {
			vals = append(vals, getenv(name))
		}
	}
	return slices.DeleteFunc(vals, func(v string) bool { return len(v) < minSecret })
}

const minSecret = 4

// redactor replaces secrets in everything written to the log with
// [REDACTED]. No code logs a secret on purpose; this also covers what
// comes back from outside (a model server or a mail server quoting a key
// or a password in an error, a command backend printing its environment)
// and what a future log line might carry by mistake. Each Write is one
// log line (slog and the log package write whole records), so a secret
// is never split across writes.
type redactor struct {
	w io.Writer
	r *strings.Replacer
}

// newRedactor returns w itself when there are no secrets.
func newRedactor(w io.Writer, secrets []string) io.Writer {
	var forms []string
	for _, s := range secrets {
		// As written raw, and as the text and JSON handlers escape it.
		q := strconv.Quote(s)
		j, _ := json.Marshal(s)
		forms = append(forms, s, q[1:len(q)-1], string(j[1:len(j)-1]))
	}
	if len(forms) == 0 {
		return w
	}
	// Longest first: a secret that contains another is replaced whole.
	slices.SortFunc(forms, func(a, b string) int {
		if len(a) != len(b) {
			return len(b) - len(a)
		}
		return strings.Compare(a, b)
	})
	forms = slices.Compact(forms)
	pairs := make([]string, 0, 2*len(forms))
	for _, f := range forms {
		pairs = append(pairs, f, "[REDACTED]")
	}
	return &redactor{w: w, r: strings.NewReplacer(pairs...)}
}

func (r *redactor) Write(p []byte) (int, error) {
	if _, err := io.WriteString(r.w, r.r.Replace(string(p))); err != nil {
		return 0, err
	}
	return len(p), nil
}

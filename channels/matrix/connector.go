//go:build goolm

package matrix

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/rs/zerolog"
	"maunium.net/go/mautrix"
	"maunium.net/go/mautrix/id"

	"github.com/frontdesk-hq/frontdesk/channels/chat"
	"github.com/frontdesk-hq/frontdesk/internal/backoff"
	"github.com/frontdesk-hq/frontdesk/internal/ctxsleep"
)

// Connector is the Matrix door's connector. Run owns the sync loop;
// Send, Edit and Typing may be called from any goroutine (they wait
// until Run has logged in).
type Connector struct {
	opts Options
	log  *slog.Logger
	zlog zerolog.Logger
	dir  string
	cli  *mautrix.Client

	ready     chan struct{} // closed once Run has logged in and set up
	readyOnce sync.Once
	st        *stores       // nil until ready
	helper    *cryptoHelper // nil without Encryption
	name      string        // the bot's display name, for mentions
}

var _ chat.Connector = (*Connector)(nil)

// New checks o and makes the connector; nothing is contacted before Run.
func New(o Options) (*Connector, error) {
	if o.Homeserver == "" || o.UserID == "" || o.DataDir == "" {
		return nil, errors.New("matrix: homeserver, user_id and the data directory are required")
	}
	if o.Password == "" && o.AccessToken == "" {
		return nil, errors.New("matrix: a password (password_env) or an access token (access_token_env) is required")
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.PollTimeout <= 0 {
		o.PollTimeout = 30 * time.Second
	}
	if o.MinBackoff <= 0 {
		o.MinBackoff = time.Second
	}
	if o.MaxBackoff <= 0 {
		o.MaxBackoff = time.Minute
	}
	o.Homeserver = strings.TrimRight(o.Homeserver, "/")
	cli, err := mautrix.NewClient(o.Homeserver, id.UserID(o.UserID), "")
	if err != nil {
		return nil, fmt.Errorf("matrix: %w", err)
	}
	log := o.Logger.With("door", "matrix")
	c := &Connector{opts: o, log: log, dir: filepath.Join(o.DataDir, "matrix"), cli: cli, ready: make(chan struct{})}
	lvl := zerolog.InfoLevel
	if log.Enabled(context.Background(), slog.LevelDebug) {
		lvl = zerolog.DebugLevel
	}
	c.zlog = zerolog.New(slogWriter{log}).Level(lvl)
	cli.Log = c.zlog
	if err := os.MkdirAll(c.dir, 0o700); err != nil {
		return nil, fmt.Errorf("matrix: %w", err)
	}
	return c, nil
}

// Limits are Matrix's.
func (c *Connector) Limits() chat.Limits {
	return chat.Limits{MaxText: maxText, EditEvery: editEvery, TypingEvery: typingEvery, Style: chat.StyleHTML}
}

// Close closes crypto.db; call it after Run returned and the Door's
// replies ended.
func (c *Connector) Close() error {
	select {
	case <-c.ready:
		return c.st.db.Close()
	default:
		return nil
	}
}

// setup logs in (or reuses session.json), opens crypto.db and loads the
// Olm machine; Run retries it until it works.
func (c *Connector) setup(ctx context.Context) error {
	if c.st != nil {
		return nil // Run again (a cluster node that leads again): set up already
	}
	s, err := c.login(ctx)
	if err != nil {
		return err
	}
	st, err := openStores(ctx, filepath.Join(c.dir, "crypto.db"), s.UserID, s.DeviceID, s.PickleKey, c.zlog)
	if err != nil {
		return err
	}
	c.cli.StateStore = st.state
	if c.opts.Encryption {
		h := newCryptoHelper(c.cli, st, &c.zlog)
		if err := h.Init(ctx); err != nil {
			st.db.Close()
			return err
		}
		c.helper = h
		c.cli.Crypto = h
	}
	if r, err := c.cli.GetOwnDisplayName(ctx); err == nil {
		c.name = r.DisplayName
	}
	c.st = st
	c.log.Info("matrix: logged in", "user", s.UserID, "device", s.DeviceID, "encryption", c.opts.Encryption)
	c.readyOnce.Do(func() { close(c.ready) })
	return nil
}

// wait returns once Run is set up, or ctx's error.
func (c *Connector) wait(ctx context.Context) error {
	select {
	case <-c.ready:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// DeviceID is the bot's device, once Run has logged in ("" before).
func (c *Connector) DeviceID() string {
	select {
	case <-c.ready:
		return c.cli.DeviceID.String()
	default:
		return ""
	}
}

// mapErr turns the homeserver's refusals into the chat contract's
// errors: 429 M_LIMIT_EXCEEDED is a *chat.RetryError, M_UNKNOWN_TOKEN
// (or any 401) wraps chat.ErrUnauthorized.
func mapErr(err error) error {
	var he mautrix.HTTPError
	if !errors.As(err, &he) {
		return err
	}
	status := 0
	if he.Response != nil {
		status = he.Response.StatusCode
	}
	code := ""
	if he.RespError != nil {
		code = he.RespError.ErrCode
	}
	switch {
	case code == "M_LIMIT_EXCEEDED" || status == http.StatusTooManyRequests:
		after := time.Second
		if he.RespError != nil {
			if ms, ok := he.RespError.ExtraData["retry_after_ms"].(float64); ok && ms > 0 {
				after = time.Duration(ms) * time.Millisecond
			}
		}
		return &chat.RetryError{After: after, Err: err}
	case code == "M_UNKNOWN_TOKEN" || code == "M_MISSING_TOKEN" || status == http.StatusUnauthorized:
		return fmt.Errorf("%w: %w", chat.ErrUnauthorized, err)
	}
	return err
}

// pause waits before the next try after err: a RetryError's After, a
// refused token MaxBackoff*5, else bo's next wait. False if ctx ended.
func (c *Connector) pause(ctx context.Context, err error, bo *backoff.Backoff) bool {
	var re *chat.RetryError
	switch {
	case errors.As(err, &re):
		return ctxsleep.Sleep(ctx, re.After)
	case errors.Is(err, chat.ErrUnauthorized):
		return ctxsleep.Sleep(ctx, 5*c.opts.MaxBackoff)
	}
	return ctxsleep.Sleep(ctx, bo.Next())
}

// newBackoff is a run of failures' waits, from MinBackoff to MaxBackoff.
func (c *Connector) newBackoff() backoff.Backoff {
	return backoff.Backoff{Min: c.opts.MinBackoff, Max: c.opts.MaxBackoff}
}

// slogWriter carries mautrix's zerolog lines to slog: warnings and
// errors as such, the rest at debug.
type slogWriter struct{ log *slog.Logger }

func (w slogWriter) Write(p []byte) (int, error) {
	var m map[string]any
	if json.Unmarshal(p, &m) != nil {
		return len(p), nil
	}
	lvl := slog.LevelDebug
	switch m["level"] {
	case "warn":
		lvl = slog.LevelWarn
	case "error", "fatal", "panic":
		lvl = slog.LevelError
	}
	msg, _ := m["message"].(string)
	delete(m, "message")
	delete(m, "level")
	delete(m, "time")
	attrs := make([]any, 0, 2*len(m))
	for k, v := range m {
		attrs = append(attrs, k, v)
	}
	w.log.Log(context.Background(), lvl, "mautrix: "+msg, attrs...)
	return len(p), nil
}

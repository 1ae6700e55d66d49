// Package slack is the Slack door's connector: it receives over Socket
// Mode (no public URL needed) and posts with the Web API, through
// github.com/slack-go/slack. Everything that does not depend on Slack —
// who may talk, streaming by edits, approvals, exactly once — is the
// chat.Door's (package channels/chat).
//
// Exactly once. An events_api envelope is acknowledged only after the
// Door's Message returned nil (the input is in the chat log); an envelope
// not acknowledged is delivered again by Slack, and the Door knows the
// message by its channel and ts. So there is no cursor: Slack keeps the
// position.
package slack

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/slack-go/slack"
	"github.com/slack-go/slack/socketmode"

	"github.com/frontdesk-hq/frontdesk/channels/chat"
	"github.com/frontdesk-hq/frontdesk/internal/backoff"
	"github.com/frontdesk-hq/frontdesk/internal/ctxsleep"
)

// DefaultAPIURL is Slack's public Web API.
const DefaultAPIURL = "https://slack.com/api/"

// Options configure a Connector. main fills the tokens from the
// environment (channels.slack.app_token_env, bot_token_env).
type Options struct {
	// AppToken is the app-level token (xapp-…, scope connections:write)
	// that opens the Socket Mode connection. Required.
	AppToken string
	// BotToken is the bot token (xoxb-…) for the Web API and for
	// downloading files. Required.
	BotToken string
	// APIURL is the Web API's base URL; "" is DefaultAPIURL.
	APIURL string
	// HTTPClient makes the Web API calls and file downloads; nil is a
	// client with a 30 s timeout.
	HTTPClient *http.Client
	Logger     *slog.Logger
	// MinBackoff and MaxBackoff bound the wait (doubling, with jitter)
	// before the connection is tried again after a failure, and before a
	// message the Door could not take is handed again. Defaults 1 s and
	// 1 minute.
	MinBackoff, MaxBackoff time.Duration
	// AuthRetry is the wait before trying again when Slack refuses a
	// token (revoked, inactive): default 2 minutes.
	AuthRetry time.Duration
	// PingInterval is how long the socket may go without a ping from
	// Slack before it is deemed dead and reopened; default 30 s.
	PingInterval time.Duration
	// EditEvery is the least time between two edits of a streaming
	// reply (Limits.EditEvery); default 1 s (chat.update allows ~50 a
	// minute).
	EditEvery time.Duration
}

// Connector is the Slack door's chat.Connector. Send, Edit and Typing may
// be called from any goroutine, also while Run runs; Run is called once.
type Connector struct {
	opts Options
	api  *slack.Client
	http *http.Client
	log  *slog.Logger
	// botID is the bot's user id (auth.test), owned by Run's goroutine.
	botID string
}

var _ chat.Connector = (*Connector)(nil)

// New checks o and makes a Connector; it does not talk to Slack yet.
func New(o Options) (*Connector, error) {
	if o.AppToken == "" || o.BotToken == "" {
		return nil, errors.New("slack: an app token (xapp-…) and a bot token (xoxb-…) are both required")
	}
	if o.APIURL == "" {
		o.APIURL = DefaultAPIURL
	}
	if !strings.HasSuffix(o.APIURL, "/") {
		o.APIURL += "/"
	}
	if o.HTTPClient == nil {
		o.HTTPClient = &http.Client{Timeout: 30 * time.Second}
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.MinBackoff <= 0 {
		o.MinBackoff = time.Second
	}
	if o.MaxBackoff <= 0 {
		o.MaxBackoff = time.Minute
	}
	if o.AuthRetry <= 0 {
		o.AuthRetry = 2 * time.Minute
	}
	if o.PingInterval <= 0 {
		o.PingInterval = 30 * time.Second
	}
	if o.EditEvery <= 0 {
		o.EditEvery = time.Second
	}
	api := slack.New(o.BotToken, slack.OptionAppLevelToken(o.AppToken), slack.OptionAPIURL(o.APIURL),
		slack.OptionHTTPClient(o.HTTPClient))
	return &Connector{opts: o, api: api, http: o.HTTPClient, log: o.Logger.With("door", "slack")}, nil
}

// Limits implements chat.Connector: Slack allows 40000 characters, but a
// message of 3500 reads better; bots have no typing indicator.
func (c *Connector) Limits() chat.Limits {
	return chat.Limits{MaxText: 3500, EditEvery: c.opts.EditEvery, TypingEvery: 0, Style: chat.StyleSlack}
}

// Typing implements chat.Connector: a Slack bot has no typing indicator.
func (c *Connector) Typing(ctx context.Context, chat string) error { return nil }

// Run implements chat.Connector: it keeps a Socket Mode connection open
// until ctx ends, reopening it after any failure.
func (c *Connector) Run(ctx context.Context, in chat.Inbox) error {
	bo := c.newBackoff()
	for {
		connected, err := c.session(ctx, in)
		if ctx.Err() != nil {
			return nil
		}
		if connected {
			bo.Reset()
		}
		err = mapErr(err)
		in.Report(err)
		wait := bo.Next()
		var re *chat.RetryError
		switch {
		case errors.Is(err, chat.ErrUnauthorized):
			wait = c.opts.AuthRetry
		case errors.As(err, &re) && re.After > wait:
			wait = re.After
		}
		c.log.Warn("slack: not connected", "err", err, "retry_in", wait)
		if !ctxsleep.Sleep(ctx, wait) {
			return nil
		}
	}
}

// session learns who the bot is and runs one Socket Mode client until it
// gives up (a refused token) or ctx ends. connected says whether it got
// through at least once.
func (c *Connector) session(ctx context.Context, in chat.Inbox) (connected bool, err error) {
	me, err := c.api.AuthTestContext(ctx)
	if err != nil {
		return false, fmt.Errorf("auth.test: %w", err)
	}
	c.botID = me.UserID
	smc := socketmode.New(c.api, socketmode.OptionPingInterval(c.opts.PingInterval),
		socketmode.OptionLog(log.New(io.Discard, "", 0)))
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	errc := make(chan error, 1)
	go func() { errc <- smc.RunContext(ctx) }()
	for {
		select {
		case err := <-errc:
			return connected, fmt.Errorf("socket mode: %w", err)
		case ev := <-smc.Events:
			if ev.Type == socketmode.EventTypeConnected {
				connected = true
			}
			c.handle(ctx, in, smc, ev)
		}
	}
}

// newBackoff is a run of failures' waits, from MinBackoff to MaxBackoff.
func (c *Connector) newBackoff() backoff.Backoff {
	return backoff.Backoff{Min: c.opts.MinBackoff, Max: c.opts.MaxBackoff}
}

// authErrors are the Web API's answers that mean the token is no good.
var authErrors = map[string]bool{"invalid_auth": true, "token_revoked": true, "account_inactive": true,
	"not_authed": true, "token_expired": true}

// mapErr turns the library's errors into the chat core's: 429 into a
// *chat.RetryError, a refused token into one wrapping chat.ErrUnauthorized.
func mapErr(err error) error {
	if err == nil {
		return nil
	}
	if rl, ok := errors.AsType[*slack.RateLimitedError](err); ok {
		return &chat.RetryError{After: rl.RetryAfter, Err: err}
	}
	if se, ok := errors.AsType[slack.SlackErrorResponse](err); ok && authErrors[se.Err] {
		return fmt.Errorf("%w: %w", chat.ErrUnauthorized, err)
	}
	return err
}

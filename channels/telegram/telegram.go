// Package telegram is the Telegram door's connector: a bot that long-polls
// the Bot API (no public URL needed) and posts, edits and types through
// github.com/go-telegram/bot. It hands every message and button press to
// the chat.Door and moves its update offset only after the Door has the
// input safe; the Door does everything else.
package telegram

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/go-telegram/bot"
	"github.com/go-telegram/bot/models"

	"github.com/frontdesk-hq/frontdesk/channels/chat"
)

// DefaultBaseURL is the public Bot API.
const DefaultBaseURL = "https://api.telegram.org"

// Options configure a Connector. Zero values take the defaults named.
type Options struct {
	// Token is the bot's token from @BotFather. Required.
	Token string
	// BaseURL is the Bot API's address; "" is DefaultBaseURL. Requests go
	// to <BaseURL>/bot<token>/<method>, files come from
	// <BaseURL>/file/bot<token>/<path>.
	BaseURL string
	Logger  *slog.Logger
	// PollTimeout is how long one getUpdates waits for an update (whole
	// seconds, at least 1; default 50 s).
	PollTimeout time.Duration
	// MinBackoff and MaxBackoff bound the wait after a failed poll
	// (doubling, with jitter; defaults 1 s and 1 minute). A 429's
	// retry_after wins.
	MinBackoff, MaxBackoff time.Duration
	// UnauthorizedBackoff is the wait after the API refused the token
	// (default 5 minutes): a revoked token is not fixed by asking again soon.
	UnauthorizedBackoff time.Duration
	// EditEvery is the least time between two edits of a streaming reply
	// (default 1 s: Telegram allows about one edit a second per chat).
	EditEvery time.Duration
}

// Connector is the Telegram chat.Connector. Send, Edit and Typing may be
// called from any goroutine; Run is called once.
type Connector struct {
	opts Options
	bot  *bot.Bot
	// poll is for getUpdates (its timeout outlasts the long poll) and
	// file downloads; the library's client does the other calls.
	poll *http.Client
	log  *slog.Logger
}

var _ chat.Connector = (*Connector)(nil)

// New makes a Connector; it does not talk to the API until Run.
func New(o Options) (*Connector, error) {
	if strings.TrimSpace(o.Token) == "" {
		return nil, errors.New("telegram: the bot token is empty")
	}
	if o.BaseURL == "" {
		o.BaseURL = DefaultBaseURL
	}
	o.BaseURL = strings.TrimRight(o.BaseURL, "/")
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.PollTimeout <= 0 {
		o.PollTimeout = 50 * time.Second
	}
	o.PollTimeout = max(o.PollTimeout, time.Second) // 0 s would be a short poll, a busy loop
	if o.MinBackoff <= 0 {
		o.MinBackoff = time.Second
	}
	if o.MaxBackoff <= 0 {
		o.MaxBackoff = time.Minute
	}
	if o.UnauthorizedBackoff <= 0 {
		o.UnauthorizedBackoff = 5 * time.Minute
	}
	if o.EditEvery <= 0 {
		o.EditEvery = time.Second
	}
	log := o.Logger.With("door", "telegram")
	b, err := bot.New(o.Token, bot.WithServerURL(o.BaseURL), bot.WithSkipGetMe(),
		bot.WithHTTPClient(time.Minute, &http.Client{Timeout: time.Minute}),
		bot.WithErrorsHandler(func(err error) { log.Debug("telegram: library", "err", err) }))
	if err != nil {
		return nil, fmt.Errorf("telegram: %w", err)
	}
	return &Connector{opts: o, bot: b, log: log,
		poll: &http.Client{Timeout: o.PollTimeout + 30*time.Second}}, nil
}

// Limits implements chat.Connector: 4096 characters a message leave room
// for the HTML tags 3500 source runes may grow.
func (c *Connector) Limits() chat.Limits {
	return chat.Limits{MaxText: 3500, EditEvery: c.opts.EditEvery, TypingEvery: 4 * time.Second, Style: chat.StyleHTML}
}

// Send implements chat.Connector: a reply to p.ReplyTo in HTML, with an
// inline keyboard for p.Buttons. Text Telegram cannot parse as HTML is
// sent again as plain text.
func (c *Connector) Send(ctx context.Context, p chat.Post) (string, error) {
	params := &bot.SendMessageParams{ChatID: p.Chat, Text: p.Text, ParseMode: models.ParseModeHTML,
		LinkPreviewOptions: &models.LinkPreviewOptions{IsDisabled: bot.True()}}
	if id, err := strconv.Atoi(p.ReplyTo); err == nil {
		params.ReplyParameters = &models.ReplyParameters{MessageID: id, AllowSendingWithoutReply: true}
	}
	if len(p.Buttons) > 0 {
		row := make([]button, 0, len(p.Buttons))
		for _, b := range p.Buttons {
			row = append(row, button{Text: b.Label, CallbackData: b.Decision + ":" + b.Approval})
		}
		params.ReplyMarkup = keyboard{InlineKeyboard: [][]button{row}}
	}
	m, err := c.bot.SendMessage(ctx, params)
	if unparsable(err) {
		params.Text, params.ParseMode = p.Plain, ""
		m, err = c.bot.SendMessage(ctx, params)
	}
	if err != nil {
		return "", apiError("sendMessage", err)
	}
	return strconv.Itoa(m.ID), nil
}

// keyboard is an inline keyboard of callback buttons. It stands in for
// the library's models.InlineKeyboardMarkup, whose buttons always carry
// "copy_text":{"text":""}, which Telegram refuses with
// BUTTON_COPY_TEXT_INVALID (go-telegram/bot pull request 167).
type keyboard struct {
	InlineKeyboard [][]button `json:"inline_keyboard"`
}

type button struct {
	Text         string `json:"text"`
	CallbackData string `json:"callback_data"`
}

// Edit implements chat.Connector. Telegram's "message is not modified" is
// nil. An edit drops the message's buttons (an approval once answered).
func (c *Connector) Edit(ctx context.Context, e chat.Edit) error {
	id, err := strconv.Atoi(e.ID)
	if err != nil {
		return fmt.Errorf("telegram: message id %q is not a number", e.ID)
	}
	params := &bot.EditMessageTextParams{ChatID: e.Chat, MessageID: id, Text: e.Text, ParseMode: models.ParseModeHTML,
		LinkPreviewOptions: &models.LinkPreviewOptions{IsDisabled: bot.True()}}
	_, err = c.bot.EditMessageText(ctx, params)
	if unparsable(err) {
		params.Text, params.ParseMode = e.Plain, ""
		_, err = c.bot.EditMessageText(ctx, params)
	}
	if err != nil && errors.Is(err, bot.ErrorBadRequest) && strings.Contains(err.Error(), "message is not modified") {
		return nil
	}
	if err != nil {
		return apiError("editMessageText", err)
	}
	return nil
}

// Typing implements chat.Connector: "typing…" for about 5 s.
func (c *Connector) Typing(ctx context.Context, chatID string) error {
	_, err := c.bot.SendChatAction(ctx, &bot.SendChatActionParams{ChatID: chatID, Action: models.ChatActionTyping})
	if err != nil {
		return apiError("sendChatAction", err)
	}
	return nil
}

// unparsable is Telegram refusing the HTML ("can't parse entities").
func unparsable(err error) bool {
	return err != nil && errors.Is(err, bot.ErrorBadRequest) && strings.Contains(err.Error(), "can't parse entities")
}

// apiError maps the library's errors to the chat core's: a 429 is a
// *chat.RetryError, a refused token wraps chat.ErrUnauthorized.
func apiError(method string, err error) error {
	var tooMany *bot.TooManyRequestsError
	switch {
	case errors.As(err, &tooMany):
		return &chat.RetryError{After: time.Duration(max(tooMany.RetryAfter, 1)) * time.Second,
			Err: fmt.Errorf("telegram %s: %w", method, err)}
	case errors.Is(err, bot.ErrorUnauthorized), errors.Is(err, bot.ErrorNotFound):
		return fmt.Errorf("telegram %s: %w (%v)", method, chat.ErrUnauthorized, err)
	}
	return fmt.Errorf("telegram %s: %w", method, err)
}

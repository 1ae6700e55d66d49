package telegram

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/go-telegram/bot/models"

	"github.com/frontdesk-hq/frontdesk/channels/chat"
	"github.com/frontdesk-hq/frontdesk/internal/backoff"
	"github.com/frontdesk-hq/frontdesk/internal/ctxsleep"
)

// Run implements chat.Connector. It long-polls getUpdates itself rather
// than with the library's loop, which confirms an update's offset before
// its handler ran: here the offset after an update is stored (in.Advance)
// and sent to Telegram (the next getUpdates) only once in.Message returned
// nil for it, so a crash in between hands the update again.
func (c *Connector) Run(ctx context.Context, in chat.Inbox) error {
	offset, _ := strconv.ParseInt(in.Cursor(), 10, 64)
	var me *models.User
	failing := false
	bo := backoff.Backoff{Min: c.opts.MinBackoff, Max: c.opts.MaxBackoff}
	for ctx.Err() == nil {
		var ups []*models.Update
		var err error
		if me == nil {
			me, err = c.bot.GetMe(ctx)
			if err != nil {
				me, err = nil, apiError("getMe", err)
			}
		}
		if err == nil {
			ups, err = c.getUpdates(ctx, offset)
		}
		if err != nil {
			if ctx.Err() != nil {
				break
			}
			failing = true
			in.Report(err)
			c.pause(ctx, err, &bo)
			continue
		}
		if failing {
			failing = false
			in.Report(nil)
		}
		var taken bool
		if offset, taken = c.handle(ctx, in, me, ups, offset, &bo); taken {
			bo.Reset()
		}
	}
	return nil
}

// handle hands ups to in one by one and returns the offset after the last
// one taken, and whether all were. A message the Door could not take stops
// the batch: after a pause (bo's next) the same offset is polled again and
// Telegram hands it again.
func (c *Connector) handle(ctx context.Context, in chat.Inbox, me *models.User, ups []*models.Update, offset int64,
	bo *backoff.Backoff) (int64, bool) {
	for _, u := range ups {
		if u.ID < offset {
			continue // an old update a misbehaving server sent again
		}
		if err := c.dispatch(ctx, in, me, u); err != nil {
			if ctx.Err() == nil {
				c.log.Warn("telegram: the door could not take a message; it will be handed again", "update", u.ID, "err", err)
				c.pause(ctx, err, bo)
			}
			return offset, false
		}
		offset = u.ID + 1
		if err := in.Advance(strconv.FormatInt(offset, 10)); err != nil {
			// Telegram keeps the update until the next poll confirms
			// it; the Door knows the message (a second hand is a duplicate).
			c.log.Warn("telegram: could not store the update offset", "err", err)
		}
	}
	return offset, true
}

// dispatch hands one update to in: a message, or a button press.
func (c *Connector) dispatch(ctx context.Context, in chat.Inbox, me *models.User, u *models.Update) error {
	switch {
	case u.Message != nil:
		m, ok := c.message(me, u.Message)
		if !ok {
			return nil
		}
		return in.Message(ctx, m)
	case u.CallbackQuery != nil:
		in.Action(ctx, c.action(u.CallbackQuery))
	}
	return nil
}

// pause waits after err: a 429's retry_after, minutes for a refused
// token, else bo's next wait.
func (c *Connector) pause(ctx context.Context, err error, bo *backoff.Backoff) {
	d := bo.Next()
	var retry *chat.RetryError
	switch {
	case errors.As(err, &retry):
		d = retry.After
	case errors.Is(err, chat.ErrUnauthorized):
		d = c.opts.UnauthorizedBackoff
	}
	c.log.Warn("telegram: the Bot API failed; trying again", "err", err, "wait", d)
	ctxsleep.Sleep(ctx, d)
}

// apiReply is the Bot API's answer envelope.
type apiReply struct {
	OK          bool            `json:"ok"`
	Result      json.RawMessage `json:"result"`
	ErrorCode   int             `json:"error_code"`
	Description string          `json:"description"`
	Parameters  struct {
		RetryAfter int `json:"retry_after"`
	} `json:"parameters"`
}

// getUpdates long-polls for the updates from offset on; sending offset
// confirms every update before it.
func (c *Connector) getUpdates(ctx context.Context, offset int64) ([]*models.Update, error) {
	form := url.Values{
		"timeout":         {strconv.Itoa(int(c.opts.PollTimeout / time.Second))},
		"allowed_updates": {`["message","callback_query"]`},
	}
	if offset > 0 {
		form.Set("offset", strconv.FormatInt(offset, 10))
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.opts.BaseURL+"/bot"+c.opts.Token+"/getUpdates",
		strings.NewReader(form.Encode()))
	if err != nil {
		return nil, fmt.Errorf("telegram getUpdates: %w", err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err := c.poll.Do(req)
	if err != nil {
		return nil, fmt.Errorf("telegram getUpdates: %w", c.hideToken(err))
	}
	defer resp.Body.Close()
	var r apiReply
	if err := json.NewDecoder(io.LimitReader(resp.Body, 64<<20)).Decode(&r); err != nil {
		return nil, fmt.Errorf("telegram getUpdates: HTTP %d: %w", resp.StatusCode, err)
	}
	switch {
	case r.OK:
		var ups []*models.Update
		if err := json.Unmarshal(r.Result, &ups); err != nil {
			return nil, fmt.Errorf("telegram getUpdates: %w", err)
		}
		return ups, nil
	case r.ErrorCode == http.StatusTooManyRequests:
		return nil, &chat.RetryError{After: time.Duration(max(r.Parameters.RetryAfter, 1)) * time.Second,
			Err: fmt.Errorf("telegram getUpdates: %s", r.Description)}
	case r.ErrorCode == http.StatusUnauthorized || r.ErrorCode == http.StatusNotFound:
		return nil, fmt.Errorf("telegram getUpdates: %w (%d %s)", chat.ErrUnauthorized, r.ErrorCode, r.Description)
	}
	return nil, fmt.Errorf("telegram getUpdates: %d %s", r.ErrorCode, r.Description)
}

// hideToken keeps the token out of an error that quotes the URL.
func (c *Connector) hideToken(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return errors.New(strings.ReplaceAll(ue.Error(), c.opts.Token, "***"))
	}
	return err
}

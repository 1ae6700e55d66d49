package slack

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"

	"github.com/slack-go/slack"
	"github.com/slack-go/slack/slackevents"
	"github.com/slack-go/slack/socketmode"

	"github.com/frontdesk-hq/frontdesk/channels/chat"
	"github.com/frontdesk-hq/frontdesk/internal/ctxsleep"
)

// handle takes one event of the Socket Mode client, on Run's goroutine.
func (c *Connector) handle(ctx context.Context, in chat.Inbox, smc *socketmode.Client, ev socketmode.Event) {
	switch ev.Type {
	case socketmode.EventTypeConnected:
		in.Report(nil)
	case socketmode.EventTypeConnectionError:
		if ce, ok := ev.Data.(*slack.ConnectionErrorEvent); ok {
			in.Report(mapErr(fmt.Errorf("socket mode: %w", ce.ErrorObj)))
		}
	case socketmode.EventTypeEventsAPI:
		e, ok := ev.Data.(slackevents.EventsAPIEvent)
		m, hand := c.message(e)
		if ok && hand && !c.give(ctx, in, m) {
			return // ctx ended: not acknowledged, Slack delivers it again
		}
		c.ack(ctx, smc, ev)
	case socketmode.EventTypeInteractive:
		// Slack wants the ack within 3 s, and a press lost in a crash can be
		// pressed again: acknowledged first.
		c.ack(ctx, smc, ev)
		if cb, ok := ev.Data.(slack.InteractionCallback); ok {
			c.interact(ctx, in, cb)
		}
	case socketmode.EventTypeSlashCommand:
		c.ack(ctx, smc, ev) // not used: acknowledged so Slack does not say it failed
	}
}

// give hands m to the Door until it is taken (with backoff between
// tries); false if ctx ended first.
func (c *Connector) give(ctx context.Context, in chat.Inbox, m chat.Message) bool {
	bo := c.newBackoff()
	for {
		err := in.Message(ctx, m)
		if err == nil {
			return true
		}
		if ctx.Err() != nil {
			return false
		}
		c.log.Warn("slack: the door did not take a message; trying again", "chat", m.Chat, "ts", m.ID, "err", err)
		if !ctxsleep.Sleep(ctx, bo.Next()) {
			return false
		}
	}
}

func (c *Connector) ack(ctx context.Context, smc *socketmode.Client, ev socketmode.Event) {
	if ev.Request == nil || ev.Request.EnvelopeID == "" {
		return
	}
	if err := smc.AckCtx(ctx, ev.Request.EnvelopeID, nil); err != nil && ctx.Err() == nil {
		c.log.Warn("slack: could not acknowledge an envelope", "err", err)
	}
}

// userSubtypes are the message subtypes a person's new message has.
var userSubtypes = map[string]bool{"": true, "file_share": true, "thread_broadcast": true}

// message turns a message or app_mention event into a chat.Message;
// false for what the Door should not see (bots, the bot itself, edits,
// joins and the other subtypes).
func (c *Connector) message(e slackevents.EventsAPIEvent) (chat.Message, bool) {
	switch x := e.InnerEvent.Data.(type) {
	case *slackevents.MessageEvent:
		if x.BotID != "" || x.User == "" || x.User == c.botID || !userSubtypes[x.SubType] {
			return chat.Message{}, false
		}
		m := chat.Message{ID: x.TimeStamp, Chat: x.Channel, Thread: x.ThreadTimeStamp, From: x.User,
			Direct: x.ChannelType == "im", Mentioned: c.mentions(x.Text)}
		if x.Message != nil {
			m.Mentioned = m.Mentioned || (x.Message.ParentUserId == c.botID && c.botID != "")
			m.Files = c.files(x.Message.Files)
		}
		m.Text = c.clean(x.Text)
		return m, true
	case *slackevents.AppMentionEvent:
		if x.BotID != "" || x.User == "" || x.User == c.botID {
			return chat.Message{}, false
		}
		return chat.Message{ID: x.TimeStamp, Chat: x.Channel, Thread: x.ThreadTimeStamp, From: x.User,
			Mentioned: true, Text: c.clean(x.Text), Files: c.files(x.Files)}, true
	}
	return chat.Message{}, false
}

func (c *Connector) mentions(text string) bool {
	return c.botID != "" && (strings.Contains(text, "<@"+c.botID+">") || strings.Contains(text, "<@"+c.botID+"|"))
}

// interact hands a pressed approval button to the Door.
func (c *Connector) interact(ctx context.Context, in chat.Inbox, cb slack.InteractionCallback) {
	if cb.Type != slack.InteractionTypeBlockActions {
		return
	}
	for _, b := range cb.ActionCallback.BlockActions {
		decision, id, ok := strings.Cut(b.Value, ":")
		if !ok {
			continue
		}
		chatID, user := cb.Channel.ID, cb.User.ID
		in.Action(ctx, chat.Action{Chat: chatID, From: user, Approval: id, Decision: decision,
			Answer: func(ctx context.Context, text string) { c.whisper(ctx, chatID, user, text) }})
	}
}

// whisper tells one person how their button press went (an ephemeral
// message only they see).
func (c *Connector) whisper(ctx context.Context, chatID, user, text string) {
	if _, err := c.api.PostEphemeralContext(ctx, chatID, user, slack.MsgOptionText(text, false)); err != nil {
		c.log.Warn("slack: could not answer a button", "err", err)
	}
}

// files are a message's files, downloaded with the bot token when the
// Door opens them.
func (c *Connector) files(fs []slack.File) []chat.File {
	var out []chat.File
	for _, f := range fs {
		u := f.URLPrivateDownload
		if u == "" {
			u = f.URLPrivate
		}
		if u == "" {
			continue
		}
		name := f.Name
		if name == "" {
			name = f.Title
		}
		out = append(out, chat.File{Name: name, Size: int64(f.Size),
			Open: func(ctx context.Context) (io.ReadCloser, error) { return c.download(ctx, u) }})
	}
	return out
}

// download fetches a file's url_private. The bot token goes only to
// Slack's own hosts (or the configured API's host), never elsewhere.
func (c *Connector) download(ctx context.Context, raw string) (io.ReadCloser, error) {
	if !c.trusted(raw) {
		return nil, fmt.Errorf("slack: not downloading %q: not a Slack file URL", raw)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, raw, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+c.opts.BotToken)
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, fmt.Errorf("slack: download file: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		return nil, fmt.Errorf("slack: download file: %s", resp.Status)
	}
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") && resp.Request.URL.Host != req.URL.Host {
		resp.Body.Close()
		return nil, errors.New("slack: download file: redirected to a sign-in page (the bot token cannot read it; is files:read granted?)")
	}
	return resp.Body, nil
}

func (c *Connector) trusted(raw string) bool {
	u, err := url.Parse(raw)
	if err != nil {
		return false
	}
	api, _ := url.Parse(c.opts.APIURL)
	if api != nil && u.Host == api.Host && u.Scheme == api.Scheme {
		return true
	}
	h := u.Hostname()
	return u.Scheme == "https" && (h == "files.slack.com" || strings.HasSuffix(h, ".slack.com") || strings.HasSuffix(h, ".slack-edge.com"))
}

// slackLink is Slack's markup for mentions, channels and links: <…>.
var slackLink = regexp.MustCompile(`<([^<>]*)>`)

// clean undoes Slack's markup as far as the model needs: the bot's own
// mention goes, other mentions and links become plain text, and &amp;
// &lt; &gt; are unescaped.
func (c *Connector) clean(text string) string {
	if c.botID != "" { // the mention and one space after it
		text = regexp.MustCompile(`<@`+regexp.QuoteMeta(c.botID)+`(\|[^<>]*)?> ?`).ReplaceAllString(text, "")
	}
	text = slackLink.ReplaceAllStringFunc(text, func(s string) string {
		inner := s[1 : len(s)-1]
		target, label, _ := strings.Cut(inner, "|")
		switch {
		case strings.HasPrefix(target, "@"), strings.HasPrefix(target, "#"):
			if label != "" {
				return target[:1] + label
			}
			return target
		case strings.HasPrefix(target, "!"):
			if label != "" {
				return label
			}
			return "@" + strings.TrimPrefix(target, "!")
		case label != "" && label != target:
			return label + " (" + target + ")"
		}
		return target
	})
	text = strings.NewReplacer("&lt;", "<", "&gt;", ">", "&amp;", "&").Replace(text)
	return strings.TrimSpace(text)
}

//go:build goolm

package matrix

import (
	"context"
	"html"
	"strings"

	"maunium.net/go/mautrix/event"
	"maunium.net/go/mautrix/id"

	"github.com/frontdesk-hq/frontdesk/channels/chat"
)

// Send posts p as m.text with an HTML formatted_body, as a reply to
// p.ReplyTo; encrypted when the room is. Buttons become a line asking
// for a reaction.
func (c *Connector) Send(ctx context.Context, p chat.Post) (string, error) {
	if err := c.wait(ctx); err != nil {
		return "", err
	}
	text, plain := p.Text, p.Plain
	if len(p.Buttons) > 0 {
		hint := approveHint(p.Buttons[0].Approval)
		text += "\n\n" + html.EscapeString(hint)
		plain += "\n\n" + hint
	}
	content := body(text, plain)
	content.Mentions = &event.Mentions{}
	if p.ReplyTo != "" {
		content.RelatesTo = &event.RelatesTo{InReplyTo: &event.InReplyTo{EventID: id.EventID(p.ReplyTo)}}
	}
	resp, err := c.cli.SendMessageEvent(ctx, id.RoomID(p.Chat), event.EventMessage, content)
	if err != nil {
		return "", mapErr(err)
	}
	return resp.EventID.String(), nil
}

// Edit replaces a posted message (m.replace with m.new_content; the
// outer body is the "* " fallback of clients without edits).
func (c *Connector) Edit(ctx context.Context, e chat.Edit) error {
	if err := c.wait(ctx); err != nil {
		return err
	}
	content := body("* "+e.Text, "* "+e.Plain)
	content.NewContent = body(e.Text, e.Plain)
	content.NewContent.Mentions = &event.Mentions{}
	content.Mentions = &event.Mentions{}
	content.RelatesTo = &event.RelatesTo{Type: event.RelReplace, EventID: id.EventID(e.ID)}
	_, err := c.cli.SendMessageEvent(ctx, id.RoomID(e.Chat), event.EventMessage, content)
	if err == nil && e.Final {
		// The reply is done: the typing indicator would linger up to 30 s.
		if _, err := c.cli.UserTyping(ctx, id.RoomID(e.Chat), false, 0); err != nil {
			c.log.Debug("matrix: could not stop typing", "err", err)
		}
	}
	return mapErr(err)
}

// Typing shows the bot typing for 30 s (the Door renews it every 20 s).
func (c *Connector) Typing(ctx context.Context, chat string) error {
	if err := c.wait(ctx); err != nil {
		return err
	}
	_, err := c.cli.UserTyping(ctx, id.RoomID(chat), true, typingFor)
	return mapErr(err)
}

// body is an m.text of the Door's HTML and plain text; newlines outside
// <pre> become <br> (HTML folds them).
func body(text, plain string) *event.MessageEventContent {
	return &event.MessageEventContent{MsgType: event.MsgText, Body: plain,
		Format: event.FormatHTML, FormattedBody: breaks(text)}
}

// breaks turns the newlines of s outside <pre>…</pre> into <br>.
func breaks(s string) string {
	var b strings.Builder
	for {
		i := strings.Index(s, "<pre>")
		if i < 0 {
			b.WriteString(strings.ReplaceAll(s, "\n", "<br>"))
			return b.String()
		}
		b.WriteString(strings.ReplaceAll(s[:i], "\n", "<br>"))
		j := strings.Index(s[i:], "</pre>")
		if j < 0 {
			b.WriteString(s[i:])
			return b.String()
		}
		j += i + len("</pre>")
		b.WriteString(s[i:j])
		s = s[j:]
	}
}

// approveHint is added to a post with buttons: Matrix has none, a
// reaction or a reply answers.
func approveHint(id string) string {
	return "React 👍 to approve or 👎 to deny (or reply /approve " + id + ")."
}

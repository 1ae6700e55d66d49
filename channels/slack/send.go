package slack

import (
	"cmp"
	"context"

	"github.com/slack-go/slack"

	"github.com/frontdesk-hq/frontdesk/channels/chat"
)

// sectionMax is the longest text a section block takes.
const sectionMax = 3000

// Send implements chat.Connector: chat.postMessage, in the thread of the
// message it answers; buttons as an actions block under the text.
func (c *Connector) Send(ctx context.Context, p chat.Post) (string, error) {
	opts := []slack.MsgOption{slack.MsgOptionText(p.Text, false)}
	if thread := cmp.Or(p.Thread, p.ReplyTo); thread != "" {
		opts = append(opts, slack.MsgOptionTS(thread))
	}
	if len(p.Buttons) > 0 {
		opts = append(opts, slack.MsgOptionBlocks(buttons(p)...))
	}
	_, ts, err := c.api.PostMessageContext(ctx, p.Chat, opts...)
	if err != nil {
		return "", mapErr(err)
	}
	return ts, nil
}

// Edit implements chat.Connector: chat.update with the new text and no
// blocks (an answered approval's buttons go away).
func (c *Connector) Edit(ctx context.Context, e chat.Edit) error {
	_, _, _, err := c.api.UpdateMessageContext(ctx, e.Chat, e.ID, slack.MsgOptionText(e.Text, false), slack.MsgOptionBlocks())
	return mapErr(err)
}

// buttons are p's text as a section and its buttons as an actions block;
// a button's value is "<decision>:<approval id>".
func buttons(p chat.Post) []slack.Block {
	text := p.Text
	if r := []rune(text); len(r) > sectionMax {
		text = string(r[:sectionMax-1]) + "…"
	}
	var els []slack.BlockElement
	for _, b := range p.Buttons {
		btn := slack.NewButtonBlockElement("frontdesk_"+b.Decision, b.Decision+":"+b.Approval,
			slack.NewTextBlockObject(slack.PlainTextType, b.Label, false, false))
		switch b.Decision {
		case "approve":
			btn.Style = slack.StylePrimary
		case "deny":
			btn.Style = slack.StyleDanger
		}
		els = append(els, btn)
	}
	return []slack.Block{
		slack.NewSectionBlock(slack.NewTextBlockObject(slack.MarkdownType, text, false, false), nil, nil),
		slack.NewActionBlock("frontdesk_approval", els...),
	}
}

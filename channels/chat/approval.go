package chat

import (
	"context"
	"fmt"

	"github.com/frontdesk-hq/frontdesk/event"
	"github.com/frontdesk-hq/frontdesk/hub"
)

// ask posts an approval request of the reply's turn in its chat, with
// Approve and Deny buttons (the connector shows them as it can).
func (r *reply) ask(ctx context.Context, f *hub.Frame) {
	var a event.ApprovalRequestData
	if f.Event.Decode(&a) != nil {
		return
	}
	md := approvalText(a)
	d := r.d
	var id string
	err := d.retry(ctx, func() error {
		var err error
		id, err = d.conn.Send(ctx, Post{Chat: r.o.Chat, ReplyTo: r.o.ReplyTo, Thread: r.o.Thread,
			Text: Render(md, d.lim.Style), Plain: Render(md, StylePlain),
			Buttons: []Button{{Label: "Approve", Approval: a.ID, Decision: "approve"}, {Label: "Deny", Approval: a.ID, Decision: "deny"}}})
		return err
	})
	if err != nil {
		return
	}
	m := askedMsg{chat: r.o.Chat, id: id, text: md}
	d.mu.Lock()
	res, decided := d.early[a.ID]
	if !decided {
		d.asked[a.ID] = m
	}
	d.mu.Unlock()
	if decided {
		d.markAnswered(ctx, m, res)
	}
}

// maxEarly bounds Door.early: results of approvals no message of this
// door asks for (another door's) are kept there too.
const maxEarly = 64

// maxArgs caps the arguments an approval request shows in a chat: the
// message must stay within every platform's limit (the page shows them
// whole).
const maxArgs = 1500

func approvalText(a event.ApprovalRequestData) string {
	tool := a.Tool
	if a.Server != "" {
		tool = a.Server + "/" + a.Tool
	}
	s := fmt.Sprintf("**Approval needed**: the assistant wants to run `%s`", tool)
	if args := string(a.Args); len(args) > 0 && args != "{}" && args != "null" {
		if r := []rune(args); len(r) > maxArgs {
			args = string(r[:maxArgs]) + "…"
		}
		s += "\n```\n" + args + "\n```"
	}
	if a.Text != "" {
		s += "\n" + a.Text
	}
	return s + "\nApprove or deny (or answer `/approve " + a.ID + "` or `/deny " + a.ID + "`)."
}

// approvalDone edits the message that asked, once the request is
// answered (from any door), to say how: the buttons go away.
func (d *Door) approvalDone(ctx context.Context, f *hub.Frame) {
	var res event.ApprovalResultData
	if f.Event.Decode(&res) != nil {
		return
	}
	d.mu.Lock()
	m, ok := d.asked[res.ID]
	delete(d.asked, res.ID)
	if !ok {
		d.early[res.ID] = res
		d.earlyOrder = append(d.earlyOrder, res.ID)
		if len(d.earlyOrder) > maxEarly {
			delete(d.early, d.earlyOrder[0])
			d.earlyOrder = d.earlyOrder[1:]
		}
	}
	d.mu.Unlock()
	if ok {
		d.markAnswered(ctx, m, res)
	}
}

// markAnswered edits the message m that asked to say how res went.
func (d *Door) markAnswered(ctx context.Context, m askedMsg, res event.ApprovalResultData) {
	verdict := map[string]string{"approve": "Approved", "deny": "Denied"}[res.Decision]
	by := res.By
	if res.Person != "" && d.opts.Names != nil {
		if n := d.opts.Names(res.Person); n != "" {
			by = n + " · " + res.By
		}
	}
	md := m.text + "\n\n**" + verdict + "** by " + by
	if err := d.conn.Edit(ctx, Edit{Chat: m.chat, ID: m.id, Text: Render(md, d.lim.Style), Plain: Render(md, StylePlain), Final: true}); err != nil {
		d.log.Warn("chat: could not mark an approval request answered", "err", err)
	}
}

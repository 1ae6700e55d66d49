package email

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/frontdesk-hq/frontdesk/event"
	"github.com/frontdesk-hq/frontdesk/hub"
)

// Notes sent instead of silence when a turn did not complete.
const (
	noteCancelled   = "Your message reached the assistant, but the reply was cancelled before it was finished. Please send it again if you still need an answer."
	noteError       = "Your message reached the assistant, but it could not answer because of an error. Please try again later."
	noteInterrupted = "Your message reached the assistant, but the server restarted before the reply was finished. Please send it again if you still need an answer."
	noteLost        = "Your message reached the assistant, but its reply was lost in a restart. Please send it again if you still need an answer."
	noteEmpty       = "The assistant finished without writing a reply."
)

// maxReferences bounds the References header of a reply (RFC 5322 allows
// trimming the middle; the first and the latest ids matter most).
const maxReferences = 20

// work is the worker goroutine: it takes committed mail from inbox/ in
// arrival order, one at a time, and turns each into a reply in outbox/.
func (c *Channel) work(ctx context.Context) error {
	bo := backoff{min: time.Second, max: time.Minute}
	failing := false // the last attempt failed: say so once, not at every retry
	for {
		items, errs := c.spool.inboxItems()
		for _, err := range errs {
			c.log.Error("unreadable email in the inbox moved aside", "err", err)
		}
		var retry <-chan time.Time
		for _, it := range items {
			err := c.answer(ctx, it)
			if errors.Is(err, errCrash) {
				return err
			}
			if ctx.Err() != nil {
				return nil
			}
			if err != nil {
				d := bo.next()
				level := slog.LevelWarn
				if failing {
					level = slog.LevelDebug
				}
				c.log.Log(ctx, level, "could not hand an email to the session; it stays in the inbox and is retried",
					"from", it.From, "err", err, "retry_in", d.Round(time.Millisecond))
				failing = true
				retry = time.After(d)
				break
			}
			if failing {
				c.log.Info("emails reach the session again", "from", it.From)
				failing = false
			}
			bo.reset()
		}
		select {
		case <-ctx.Done():
			return nil
		case <-c.wakeWorker:
		case <-retry:
		}
	}
}

// answer runs one mail through the session and leaves its reply in
// outbox/. It is idempotent: after a crash at any point it is simply run
// again. The chat log is the durable record of the turn: a second Submit
// of the same client_msg_id is a Duplicate that reports the recorded
// outcome (or "interrupted", or "unknown") instead of running a new turn.
func (c *Channel) answer(ctx context.Context, it inboxItem) error {
	if exists(c.spool.outboxPath(it.Key)) {
		// The reply was written before a crash; only the cleanup is missing.
		if err := removeFile(c.spool.inboxPath(it.Key)); err != nil {
			return err
		}
		wake(c.wakeSender)
		return nil
	}
	done := make(chan hub.TurnOutcome, 1)
	in := hub.Input{
		Channel:     event.ChannelEmail,
		From:        it.From,
		Content:     it.Content,
		ClientMsgID: it.ClientMsgID,
		Attachments: it.Attachments,
		Patient:     true, // email waits its turn, whatever busy_policy says
		Done:        done,
	}
	res, err := c.s.Submit(ctx, in)
	var bad *hub.InputError
	if errors.As(err, &bad) && len(in.Attachments) > 0 {
		// The files were removed from the store since the mail was taken
		// (by hand: frontdesk never deletes them). Retrying would refuse it
		// forever and hold up every mail behind it; answer without them.
		c.log.Warn("email attachments are no longer stored; answering without them", "from", it.From, "err", err)
		in.Attachments = nil
		in.Content += "\n\n[This mail had attachments that are no longer stored.]"
		res, err = c.s.Submit(ctx, in)
	}
	if err != nil {
		return fmt.Errorf("submit: %w", err)
	}
	if res.Outcome == hub.Duplicate {
		c.log.Info("email was already in the session before a restart; answering from its recorded outcome",
			"from", it.From, "turn", res.Turn)
	}
	if err := c.step("submitted"); err != nil {
		return err
	}
	var o hub.TurnOutcome
	select {
	case o = <-done:
	case <-ctx.Done():
		return ctx.Err()
	}
	if o.Status == hub.StatusNotRecorded {
		// It waited its turn, then the chat log could not take it: it
		// never ran. It stays in inbox/ for the next try.
		return fmt.Errorf("submit: %w", o.Err)
	}
	if ctx.Err() != nil {
		// Shutting down: the outcome may be our own stop's. The mail stays
		// in inbox/ and is answered from the chat log at the next start.
		return ctx.Err()
	}
	if err := c.step("outcome"); err != nil {
		return err
	}
	reply := c.composeReply(it, o)
	if err := writeJSON(c.spool.outboxPath(it.Key), reply); err != nil {
		return fmt.Errorf("queue reply: %w", err)
	}
	if err := c.step("outbox"); err != nil {
		return err
	}
	if err := removeFile(c.spool.inboxPath(it.Key)); err != nil {
		return fmt.Errorf("remove answered email: %w", err)
	}
	if err := c.step("inbox-deleted"); err != nil {
		return err
	}
	if o.Status != event.StatusCompleted {
		c.log.Warn("email turn did not complete; a note goes back instead", "from", it.From, "turn", o.Turn, "status", o.Status, "err", o.Error)
	}
	wake(c.wakeSender)
	return nil
}

// composeReply builds the reply mail for a turn's outcome: the reply
// itself when the turn completed, a short note otherwise — never silence.
func (c *Channel) composeReply(it inboxItem, o hub.TurnOutcome) outboxItem {
	body, note := strings.TrimSpace(o.Reply), ""
	switch o.Status {
	case event.StatusCompleted:
		if body == "" {
			body, note = noteEmpty, o.Status
		}
	case event.StatusCancelled:
		body, note = noteCancelled, o.Status
	case event.StatusInterrupted:
		body, note = noteInterrupted, o.Status
	case event.StatusError:
		body, note = noteError, o.Status
	default: // unknown (too old to tell), replaced
		body, note = noteLost, o.Status
	}
	refs := it.References
	if it.MessageID != "" {
		refs = append(append([]string(nil), refs...), it.MessageID)
	}
	if len(refs) > maxReferences {
		refs = append([]string{refs[0]}, refs[len(refs)-maxReferences+1:]...)
	}
	return outboxItem{
		V: 1, Key: it.Key, From: c.opts.Address, To: it.From,
		Subject:    replySubject(it.Subject),
		MessageID:  newMessageID(c.opts.Address),
		InReplyTo:  it.MessageID,
		References: refs,
		Body:       body,
		Note:       note,
		Created:    c.opts.Now().UTC(),
		Received:   it.Received,
	}
}

// replySubject is "Re: <subject>", without piling up Re: prefixes.
func replySubject(s string) string {
	s = strings.TrimSpace(s)
	if s == "" {
		return "Re: your message"
	}
	if len(s) >= 3 && strings.EqualFold(s[:3], "re:") {
		return "Re: " + strings.TrimSpace(s[3:])
	}
	return "Re: " + s
}

// newMessageID makes a unique Message-ID (without <>) in the domain of addr.
func newMessageID(addr string) string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	domain := "frontdesk.invalid"
	if at := strings.LastIndexByte(addr, '@'); at >= 0 && at+1 < len(addr) {
		domain = addr[at+1:]
	}
	return "frontdesk." + hex.EncodeToString(b[:]) + "@" + domain
}

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
	"github.com/frontdesk-hq/frontdesk/internal/backoff"
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

// work is the worker goroutine: it hands every committed mail in inbox/
// to the session at once, in arrival order — the session records each on
// arrival (queued behind a running turn), so every client sees mail come
// in and a crash finds it in the chat log — then turns each outcome into a
// reply in outbox/ as the turns end.
func (c *Channel) work(ctx context.Context) error {
	w := &workState{bo: backoff.Backoff{Min: time.Second, Max: time.Minute}, inSession: map[string]*handed{}}
	for {
		items, errs := c.spool.inboxItems()
		for _, err := range errs {
			c.log.Error("unreadable email in the inbox moved aside", "err", err)
		}
		if err := c.handOverAll(ctx, w, items); err != nil {
			if errors.Is(err, errCrash) {
				return err
			}
			return nil // ctx ended
		}
		// Answer the oldest handed mail first: turns end in that order.
		var next *handed
		for _, it := range items {
			if h := w.inSession[it.Key]; h != nil {
				next = h
				break
			}
		}
		var outcome <-chan hub.TurnOutcome
		if next != nil {
			outcome = next.done
		}
		select {
		case <-ctx.Done():
			return nil
		case <-c.wakeWorker:
		case <-w.hold:
			w.hold = nil
		case o := <-outcome:
			delete(w.inSession, next.it.Key)
			err := c.answer(ctx, next.it, o)
			if errors.Is(err, errCrash) {
				return err
			}
			if ctx.Err() != nil {
				// Shutting down: the outcome may be our own stop's. The mail
				// stays in inbox/ and is answered from the chat log at the
				// next start.
				return nil
			}
			if err != nil {
				c.handFailed(ctx, w, next.it, err)
			}
		}
	}
}

// workState is the worker goroutine's own.
type workState struct {
	bo        backoff.Backoff
	failing   bool               // the last attempt failed: say so once, not at every retry
	inSession map[string]*handed // by inbox key: handed over, outcome to come
	hold      <-chan time.Time   // after a failure: hand nothing over until it fires
}

// handOverAll hands the mails not yet in the session over, in order,
// until one fails (then it waits for w.hold). It returns errCrash or the
// context's error, else nil.
func (c *Channel) handOverAll(ctx context.Context, w *workState, items []inboxItem) error {
	for _, it := range items {
		if w.hold != nil {
			return nil
		}
		if _, ok := w.inSession[it.Key]; ok {
			continue
		}
		h, err := c.handOver(ctx, it)
		if errors.Is(err, errCrash) {
			return err
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if err != nil {
			c.handFailed(ctx, w, it, err)
			return nil
		}
		if h != nil {
			w.inSession[it.Key] = h
		}
		if w.failing {
			c.log.Info("emails reach the session again", "from", it.From)
			w.failing = false
		}
		w.bo.Reset()
	}
	return nil
}

// handFailed logs that a mail could not be handed over or answered (once at
// warning level while failures go on) and holds further hand-overs for a
// growing wait.
func (c *Channel) handFailed(ctx context.Context, w *workState, it inboxItem, err error) {
	d := w.bo.Next()
	level := slog.LevelWarn
	if w.failing {
		level = slog.LevelDebug
	}
	c.log.Log(ctx, level, "could not hand an email to the session; it stays in the inbox and is retried",
		"from", it.From, "err", err, "retry_in", d.Round(time.Millisecond))
	w.failing = true
	w.hold = time.After(d)
}

// handed is a mail the session has taken; done receives its turn's outcome.
type handed struct {
	it   inboxItem
	done chan hub.TurnOutcome
}

// handOver submits one mail to the session (nil, nil: its reply was
// written before a crash and only the cleanup was missing). It is
// idempotent: after a crash at any point it is simply run again. The chat
// log is the durable record of the mail: a second Submit of the same
// client_msg_id is a Duplicate that reports the recorded outcome (or
// "interrupted", or "unknown"), or waits for the turn if it is still
// queued, instead of running a new turn.
func (c *Channel) handOver(ctx context.Context, it inboxItem) (*handed, error) {
	if exists(c.spool.outboxPath(it.Key)) {
		if err := removeFile(c.spool.inboxPath(it.Key)); err != nil {
			return nil, err
		}
		wake(c.wakeSender)
		return nil, nil
	}
	done := make(chan hub.TurnOutcome, 1)
	person, _ := c.person(it.From)
	in := hub.Input{
		Channel:     event.ChannelEmail,
		Person:      person, // not signed in: an address only says who sent it
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
		return nil, fmt.Errorf("submit: %w", err)
	}
	if res.Outcome == hub.Duplicate {
		c.log.Info("email was already in the session before a restart; answering from its recorded outcome",
			"from", it.From, "turn", res.Turn)
	}
	if err := c.step("submitted"); err != nil {
		return nil, err
	}
	return &handed{it: it, done: done}, nil
}

// answer turns a mail's outcome into its reply in outbox/ and removes it
// from inbox/. An outcome that says it never ran keeps it in inbox/ for
// the next try.
func (c *Channel) answer(ctx context.Context, it inboxItem, o hub.TurnOutcome) error {
	switch o.Status {
	case hub.StatusNotRecorded:
		// Its turn could not be started in the chat log: it never ran.
		return fmt.Errorf("submit: %w", o.Err)
	case hub.StatusStillQueued:
		// The session stopped first; it stays queued in the chat log.
		return errors.New("the session stopped before this email ran")
	}
	if ctx.Err() != nil {
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
	c.replicated()
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

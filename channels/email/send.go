package email

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/emersion/go-message/mail"
	"github.com/emersion/go-sasl"
	"github.com/emersion/go-smtp"
	"github.com/frontdesk-hq/frontdesk/internal/backoff"
)

// smtpTimeout bounds one whole SMTP transaction.
const smtpTimeout = 2 * time.Minute

// sendGrace lets an SMTP transaction under way at shutdown finish: cut
// after the final dot, the reply would be sent yet still in the outbox,
// and go out again at the next start.
const sendGrace = 1500 * time.Millisecond

// maxPermanentAttempts: a reply the server keeps refusing with a permanent
// (5xx, not authentication) error is moved to failed/ after this many tries.
const maxPermanentAttempts = 5

// send is the sender goroutine: it sends every reply in outbox/, oldest
// first, and retries failures with capped backoff. At start every pending
// reply is due at once.
func (c *Channel) send(ctx context.Context) error {
	due := map[string]time.Time{} // key → not before; absent: due now
	for {
		items, errs := c.spool.outboxItems()
		for _, err := range errs {
			c.log.Error("unreadable reply in the outbox moved aside", "err", err)
		}
		c.count(func(m *Metrics) { m.OutboxPending = len(items) })
		present := map[string]bool{}
		var wait time.Duration = -1
		for _, it := range items {
			present[it.Key] = true
			if ctx.Err() != nil {
				return nil
			}
			if exists(c.spool.inboxPath(it.Key)) {
				// The worker has yet to drop the mail this answers; sent
				// now, a crash before that drop would answer it twice.
				// The worker wakes us when it is done.
				continue
			}
			if t, ok := due[it.Key]; ok {
				if d := time.Until(t); d > 0 {
					if wait < 0 || d < wait {
						wait = d
					}
					continue
				}
			}
			err := c.deliver(ctx, it)
			if errors.Is(err, errCrash) {
				return err
			}
			if ctx.Err() != nil {
				return nil
			}
			if err == nil {
				delete(due, it.Key)
				continue
			}
			d, gaveUp := c.failed(it, err)
			if gaveUp {
				delete(due, it.Key)
				continue
			}
			due[it.Key] = time.Now().Add(d)
			if wait < 0 || d < wait {
				wait = d
			}
		}
		for k := range due {
			if !present[k] {
				delete(due, k)
			}
		}
		var timer *time.Timer
		var fire <-chan time.Time
		if wait >= 0 {
			timer = time.NewTimer(wait)
			fire = timer.C
		}
		select {
		case <-ctx.Done():
		case <-c.wakeSender:
		case <-fire:
		}
		if timer != nil {
			timer.Stop()
		}
		if ctx.Err() != nil {
			return nil
		}
	}
}

// failed records a failed attempt on the reply's file and says how long to
// wait before the next, or that the reply was given up on.
func (c *Channel) failed(it outboxItem, err error) (wait time.Duration, gaveUp bool) {
	it.Attempts++
	it.LastError = err.Error()
	c.count(func(m *Metrics) { m.SendErrors++ })
	if permanent(err) && it.Attempts >= maxPermanentAttempts {
		dst := filepath.Join(c.spool.failed, it.Key+".json")
		if werr := writeJSON(dst, it); werr == nil {
			if rerr := removeFile(c.spool.outboxPath(it.Key)); rerr == nil {
				c.count(func(m *Metrics) { m.SendFailed++ })
				c.log.Error("the SMTP server refuses this reply; giving up (kept in "+dst+")",
					"to", it.To, "attempts", it.Attempts, "err", err)
				return 0, true
			}
		}
	}
	if werr := writeJSON(c.spool.outboxPath(it.Key), it); werr != nil {
		c.log.Error("record a failed send", "err", werr)
	}
	b := backoff.Backoff{Min: c.opts.SendMinBackoff, Max: c.opts.SendMaxBackoff}
	for range min(it.Attempts, 30) {
		wait = b.Next()
	}
	c.log.Warn("sending an email reply failed; retrying", "to", it.To, "attempt", it.Attempts, "err", err, "retry_in", wait.Round(time.Millisecond))
	return wait, false
}

// permanent reports a 5xx SMTP reply that retrying will not fix.
// Authentication failures are not: the operator may fix the password.
func permanent(err error) bool {
	var se *smtp.SMTPError
	if !errors.As(err, &se) || se.Code < 500 || se.Code > 599 {
		return false
	}
	switch se.Code {
	case 530, 534, 535, 538:
		return false
	}
	return true
}

// deliver sends one reply and deletes its file once the server accepted it.
//
// The one window that can duplicate a reply is here: a crash after the
// server accepted the message and before the file is gone sends it again
// at the next start. The resend carries the same Message-ID, so mail
// clients and most servers show it once.
func (c *Channel) deliver(ctx context.Context, it outboxItem) error {
	msg, err := buildMessage(it, c.opts.Now())
	if err != nil {
		return err
	}
	// Replicated first: a holder that takes over after a failover must
	// know this reply exists (it sends it again, with the same
	// Message-ID, only if it was not recorded as sent).
	if err := c.replicate(); err != nil {
		return err
	}
	sctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	defer cancel()
	stop := context.AfterFunc(ctx, func() { time.AfterFunc(sendGrace, cancel) })
	defer stop()
	if err := c.smtpSend(sctx, it.From, it.To, msg); err != nil {
		return err
	}
	if err := c.step("sent"); err != nil {
		return err
	}
	if err := removeFile(c.spool.outboxPath(it.Key)); err != nil && !os.IsNotExist(err) {
		// Not fatal for this reply, but it would go out again: say so loudly.
		c.log.Error("reply sent but its outbox file could not be removed; it may be sent again", "err", err)
	}
	c.replicated()
	if d := c.opts.Now().Sub(it.Received); !it.Received.IsZero() && d >= 0 {
		c.answered.Observe(d.Seconds())
	}
	c.count(func(m *Metrics) {
		m.Replies++
		if it.Note != "" {
			m.Notes++
		}
	})
	c.log.Info("email reply sent", "to", it.To, "subject", it.Subject, "message_id", it.MessageID, "note", it.Note)
	return nil
}

// buildMessage renders a reply: text/plain UTF-8, quoted-printable, with
// the threading and loop-prevention headers.
func buildMessage(it outboxItem, now time.Time) ([]byte, error) {
	var h mail.Header
	h.SetDate(now)
	h.SetAddressList("From", []*mail.Address{{Address: it.From}})
	h.SetAddressList("To", []*mail.Address{{Address: it.To}})
	h.SetSubject(it.Subject)
	h.SetMessageID(it.MessageID)
	if it.InReplyTo != "" {
		h.SetMsgIDList("In-Reply-To", []string{it.InReplyTo})
	}
	if len(it.References) > 0 {
		h.SetMsgIDList("References", it.References)
	}
	// RFC 3834: a machine's answer says so, and asks Exchange not to
	// answer it with an out-of-office reply in turn.
	// A notification (no In-Reply-To: a fired schedule's reply) is
	// auto-generated rather than an auto-reply.
	if it.InReplyTo == "" {
		h.Set("Auto-Submitted", "auto-generated")
	} else {
		h.Set("Auto-Submitted", "auto-replied")
	}
	h.Set("X-Auto-Response-Suppress", "All")
	h.SetContentType("text/plain", map[string]string{"charset": "utf-8"})
	h.Set("Content-Transfer-Encoding", "quoted-printable")
	var buf bytes.Buffer
	w, err := mail.CreateSingleInlineWriter(&buf, h)
	if err != nil {
		return nil, fmt.Errorf("build reply: %w", err)
	}
	body := strings.ReplaceAll(it.Body, "\r\n", "\n")
	body = strings.ReplaceAll(body, "\n", "\r\n")
	if _, err := io.WriteString(w, body+"\r\n"); err != nil {
		return nil, fmt.Errorf("build reply: %w", err)
	}
	if err := w.Close(); err != nil {
		return nil, fmt.Errorf("build reply: %w", err)
	}
	return buf.Bytes(), nil
}

// smtpSend submits msg over one SMTP connection.
func (c *Channel) smtpSend(ctx context.Context, from, to string, msg []byte) error {
	o := c.opts.SMTP
	ctx, cancel := context.WithTimeout(ctx, smtpTimeout)
	defer cancel()
	conn, err := c.dial(ctx, o.Addr, o.TLS, 0)
	if err != nil {
		return fmt.Errorf("connect to %s: %w", o.Addr, err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(smtpTimeout))
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()

	var cl *smtp.Client
	if o.TLS == TLSStart {
		host, _, _ := net.SplitHostPort(o.Addr)
		if cl, err = smtp.NewClientStartTLS(conn, c.tlsConfig(host)); err != nil {
			return fmt.Errorf("starttls with %s: %w", o.Addr, err)
		}
	} else {
		cl = smtp.NewClient(conn)
	}
	defer cl.Close()
	if o.Username != "" {
		var auth sasl.Client
		switch {
		case cl.SupportsAuth(sasl.Plain):
			auth = sasl.NewPlainClient("", o.Username, o.Password)
		case cl.SupportsAuth(sasl.Login):
			auth = sasl.NewLoginClient(o.Username, o.Password)
		default:
			return fmt.Errorf("%s offers neither AUTH PLAIN nor LOGIN", o.Addr)
		}
		if err := cl.Auth(auth); err != nil {
			return fmt.Errorf("smtp auth as %s: %w", o.Username, err)
		}
	}
	if err := cl.SendMail(from, []string{to}, bytes.NewReader(msg)); err != nil {
		return fmt.Errorf("smtp send to %s: %w", to, err)
	}
	if err := cl.Quit(); err != nil {
		// The message was accepted at the final dot; a failed QUIT does not
		// undo that, and retrying would send it twice.
		c.log.Debug("smtp quit", "err", err)
	}
	return nil
}

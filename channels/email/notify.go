package email

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
)

// Notify queues a mail that answers no message — a fired schedule's reply
// (notify: email) — in the outbox, so it is sent like a reply: retried
// with backoff, kept across restarts, moved to failed/ if the server
// refuses it for good. key (the firing's client_msg_id) names it: while
// the mail is unsent, a second Notify with the same key is a no-op, and
// its Message-ID is derived from key, so a resend after a crash right
// after the SMTP server accepted it is recognisable as the same mail.
// to must be on allow_from: the assistant mails only people who may mail
// it. Safe from any goroutine; it does not touch the network.
func (c *Channel) Notify(key, to, subject, body string) error {
	if !c.allow.allowed(to) {
		return fmt.Errorf("email notify: %s is not on channels.email.allow_from", to)
	}
	k := keyOf(key)
	path := c.spool.outboxPath(k)
	if !exists(path) {
		it := outboxItem{V: 1, Key: k, From: c.opts.Address, To: to, Subject: subject,
			MessageID: notifyMessageID(key, c.opts.Address), Body: body, Created: c.opts.Now().UTC()}
		if err := writeJSON(path, it); err != nil {
			return fmt.Errorf("email notify: %w", err)
		}
	}
	wake(c.wakeSender)
	return nil
}

// notifyMessageID is a Message-ID fixed by key.
func notifyMessageID(key, addr string) string {
	h := sha256.Sum256([]byte(key))
	domain := "frontdesk.invalid"
	if at := strings.LastIndexByte(addr, '@'); at >= 0 && at+1 < len(addr) {
		domain = addr[at+1:]
	}
	return "frontdesk.notify." + hex.EncodeToString(h[:12]) + "@" + domain
}

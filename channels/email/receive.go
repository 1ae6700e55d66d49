package email

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/emersion/go-imap/v2"
	"github.com/emersion/go-imap/v2/imapclient"
	"github.com/emersion/go-message/charset"
	"github.com/frontdesk-hq/frontdesk/event"
	"github.com/frontdesk-hq/frontdesk/internal/atomicfile"
	"github.com/frontdesk-hq/frontdesk/internal/backoff"
	"github.com/frontdesk-hq/frontdesk/internal/ctxsleep"
)

// authError is a login the server refused: retried slowly, reported once.
type authError struct{ err error }

func (e *authError) Error() string { return "login refused: " + e.err.Error() }
func (e *authError) Unwrap() error { return e.err }

// healthy is how long a connection must have lasted for the next failure
// to start the backoff from the beginning again.
const healthy = time.Minute

// receive is the receiver goroutine: one IMAP connection at a time, until
// ctx ends, reconnecting after any error with backoff and jitter.
func (c *Channel) receive(ctx context.Context) error {
	bo := backoff.Backoff{Min: c.opts.MinBackoff, Max: c.opts.MaxBackoff}
	for {
		start := time.Now()
		err := c.session(ctx)
		c.count(func(m *Metrics) { m.Connected = false })
		if errors.Is(err, errCrash) {
			return err
		}
		if ctx.Err() != nil {
			return nil
		}
		if se := (*spoolError)(nil); errors.As(err, &se) {
			// Not the server's fault: the mail stays unread there and
			// is fetched again once the spool can be written. Said once.
			wait := bo.Next()
			level := slog.LevelError
			if c.spoolReported {
				level = slog.LevelDebug
			}
			c.log.Log(ctx, level, "cannot write the email spool; new mail stays unread on the server and is fetched again",
				"dir", c.spool.dir, "err", err, "retry_in", wait.Round(time.Millisecond))
			c.spoolReported = true
			if !ctxsleep.Sleep(ctx, wait) {
				return nil
			}
			continue
		}
		c.count(func(m *Metrics) { m.IMAPErrors++ })
		var wait time.Duration
		var ae *authError
		if errors.As(err, &ae) {
			c.count(func(m *Metrics) { m.AuthFailures++ })
			wait = c.opts.AuthRetry
			if !c.authReported {
				c.log.Error("the IMAP server refused the login; check imap.username and the password in "+
					envOr(c.opts.IMAP.PasswordEnv, "the environment")+" (Gmail, Fastmail and iCloud need an app password)",
					"user", c.opts.IMAP.Username, "err", ae.err, "retry_in", wait)
				c.authReported = true
			} else {
				c.log.Debug("IMAP login refused again", "err", ae.err)
			}
		} else {
			if time.Since(start) >= healthy {
				bo.Reset()
			}
			wait = bo.Next()
			c.log.Warn("IMAP connection failed; reconnecting", "err", err, "retry_in", wait.Round(time.Millisecond))
		}
		if !ctxsleep.Sleep(ctx, wait) {
			return nil
		}
	}
}

// quiet is the longest a healthy connection stays silent: the IDLE
// watchdog or the poll interval, plus room for a slow server.
func (c *Channel) quiet() time.Duration {
	if c.opts.quiet > 0 {
		return c.opts.quiet
	}
	q := c.opts.IdleRestart
	if p := c.opts.IMAP.PollInterval; p > q {
		q = p
	}
	return q + time.Minute
}

// session runs one IMAP connection: log in, SELECT, catch up, then IDLE or
// poll until an error or ctx ends.
func (c *Channel) session(ctx context.Context) error {
	o := c.opts.IMAP
	newMail := make(chan struct{}, 1)
	conn, err := c.dial(ctx, o.Addr, o.TLS, c.quiet())
	if err != nil {
		return fmt.Errorf("connect to %s: %w", o.Addr, err)
	}
	opts := &imapclient.Options{
		WordDecoder: &mime.WordDecoder{CharsetReader: charset.Reader},
		UnilateralDataHandler: &imapclient.UnilateralDataHandler{
			Mailbox: func(d *imapclient.UnilateralDataMailbox) {
				if d.NumMessages != nil {
					wake(newMail) // EXISTS: something arrived
				}
			},
		},
	}
	// Closing the connection is how ctx interrupts any blocked command.
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()
	var cl *imapclient.Client
	if o.TLS == TLSStart {
		host, _, _ := net.SplitHostPort(o.Addr)
		opts.TLSConfig = c.tlsConfig(host)
		if cl, err = imapclient.NewStartTLS(conn, opts); err != nil {
			return fmt.Errorf("starttls with %s: %w", o.Addr, err)
		}
	} else {
		cl = imapclient.New(conn, opts)
		if err := cl.WaitGreeting(); err != nil {
			cl.Close()
			return fmt.Errorf("greeting from %s: %w", o.Addr, err)
		}
	}
	defer cl.Close()

	if err := cl.Login(o.Username, o.Password).Wait(); err != nil {
		var ie *imap.Error
		if errors.As(err, &ie) && ie.Code != imap.ResponseCodeUnavailable {
			return &authError{err} // NO or BAD to LOGIN: the credentials
		}
		return fmt.Errorf("login: %w", err)
	}
	if c.authReported {
		c.log.Info("IMAP login accepted again")
		c.authReported = false
	}
	sel, err := cl.Select(o.Mailbox, nil).Wait()
	if err != nil {
		return fmt.Errorf("select %s: %w", o.Mailbox, err)
	}
	idle := o.Idle && cl.Caps().Has(imap.CapIdle)
	c.count(func(m *Metrics) { m.Connected = true })
	c.log.Info("IMAP connected", "addr", o.Addr, "mailbox", o.Mailbox, "messages", sel.NumMessages, "idle", idle)
	if err := c.catchUp(ctx, cl, sel); err != nil {
		return err
	}
	if idle {
		return c.idleLoop(ctx, cl, newMail)
	}
	return c.pollLoop(ctx, cl)
}

// idleLoop waits in IDLE for news; a watchdog ends IDLE and sends NOOP at
// least every IdleRestart, since a silent connection may be dead.
func (c *Channel) idleLoop(ctx context.Context, cl *imapclient.Client, newMail <-chan struct{}) error {
	for {
		idle, err := cl.Idle()
		if err != nil {
			return fmt.Errorf("idle: %w", err)
		}
		watchdog := time.NewTimer(c.opts.IdleRestart)
		woke := false
		select {
		case <-ctx.Done():
		case <-newMail:
		case <-watchdog.C:
			woke = true
		case <-cl.Closed():
		}
		watchdog.Stop()
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if err := idle.Close(); err != nil {
			return fmt.Errorf("end idle: %w", err)
		}
		if err := idle.Wait(); err != nil {
			return fmt.Errorf("idle: %w", err)
		}
		if woke {
			if err := cl.Noop().Wait(); err != nil {
				return fmt.Errorf("noop: %w", err)
			}
		}
		if err := c.fetchNew(ctx, cl); err != nil {
			return err
		}
	}
}

// pollLoop checks the mailbox every PollInterval.
func (c *Channel) pollLoop(ctx context.Context, cl *imapclient.Client) error {
	t := time.NewTicker(c.opts.IMAP.PollInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-cl.Closed():
			return errors.New("connection closed by the server")
		case <-t.C:
		}
		if err := cl.Noop().Wait(); err != nil {
			return fmt.Errorf("noop: %w", err)
		}
		if err := c.fetchNew(ctx, cl); err != nil {
			return err
		}
	}
}

// catchUp places the cursor on the very first start, handles a changed
// UIDVALIDITY, and fetches whatever arrived since the last run.
func (c *Channel) catchUp(ctx context.Context, cl *imapclient.Client, sel *imap.SelectData) error {
	mb := c.opts.IMAP.Mailbox
	if sel.UIDValidity == 0 {
		return fmt.Errorf("the server sent no UIDVALIDITY for %s", mb)
	}
	st := c.spool.state.Mailboxes[mb]
	switch {
	case st == nil:
		last, err := lastUID(cl, sel)
		if err != nil {
			return err
		}
		st = &mailboxState{UIDValidity: sel.UIDValidity, LastUID: last, Since: c.opts.Now().UTC()}
		c.spool.state.Mailboxes[mb] = st
		if err := c.spool.saveState(); err != nil {
			return err
		}
		c.log.Info("first start: the cursor is placed at the end of the mailbox; mail already there is not answered",
			"mailbox", mb, "uidvalidity", st.UIDValidity, "after_uid", st.LastUID)
	case st.UIDValidity != sel.UIDValidity:
		return c.rescan(ctx, cl, st, sel)
	}
	return c.fetchNew(ctx, cl)
}

// lastUID is the highest UID now in the mailbox (0 if empty).
func lastUID(cl *imapclient.Client, sel *imap.SelectData) (uint32, error) {
	if sel.UIDNext > 0 {
		return uint32(sel.UIDNext) - 1, nil
	}
	if sel.NumMessages == 0 {
		return 0, nil
	}
	msgs, err := cl.Fetch(imap.SeqSetNum(sel.NumMessages), &imap.FetchOptions{UID: true}).Collect()
	if err != nil {
		return 0, fmt.Errorf("fetch the last UID: %w", err)
	}
	var last uint32
	for _, m := range msgs {
		last = max(last, uint32(m.UID))
	}
	return last, nil
}

// meta is what the first FETCH tells about a new message.
type meta struct {
	UID      uint32
	Size     int64
	Seen     bool
	Internal time.Time
	From     string // envelope From, for log lines only
}

// listNew lists the messages with UID > after, in UID order. "after+1:*"
// also returns the last message when nothing is newer, hence the filter.
func listNew(cl *imapclient.Client, after uint32) ([]meta, error) {
	set := imap.UIDSet{imap.UIDRange{Start: imap.UID(after + 1), Stop: 0}}
	msgs, err := cl.Fetch(set, &imap.FetchOptions{UID: true, RFC822Size: true, Flags: true, InternalDate: true, Envelope: true}).Collect()
	if err != nil {
		return nil, fmt.Errorf("fetch new messages: %w", err)
	}
	var out []meta
	for _, m := range msgs {
		if uint32(m.UID) <= after {
			continue
		}
		seen := false
		for _, f := range m.Flags {
			if strings.EqualFold(string(f), string(imap.FlagSeen)) {
				seen = true
			}
		}
		var from string
		if m.Envelope != nil && len(m.Envelope.From) > 0 {
			from = m.Envelope.From[0].Addr()
		}
		out = append(out, meta{UID: uint32(m.UID), Size: m.RFC822Size, Seen: seen, Internal: m.InternalDate, From: from})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].UID < out[j].UID })
	return out, nil
}

// fetchNew handles every message after the cursor, in UID order.
func (c *Channel) fetchNew(ctx context.Context, cl *imapclient.Client) error {
	st := c.spool.state.Mailboxes[c.opts.IMAP.Mailbox]
	msgs, err := listNew(cl, st.LastUID)
	if err != nil {
		return err
	}
	for _, m := range msgs {
		if err := c.handle(ctx, cl, st, m, m.UID <= st.RescanTo); err != nil {
			return err
		}
	}
	return nil
}

// rescan follows a UIDVALIDITY change: every UID is new, so the mailbox is
// walked from the start and mail is matched by key (Message-ID) instead.
// Up to the UID that was last when the change was seen (RescanTo, kept in
// state.json so that a crash half-way changes nothing), mail handled
// before, mail already \Seen and mail older than the first start are
// passed over: no mass re-replies. Mail after it is new mail.
func (c *Channel) rescan(ctx context.Context, cl *imapclient.Client, st *mailboxState, sel *imap.SelectData) error {
	c.log.Warn("the mailbox's UIDVALIDITY changed; rescanning it and matching mail by Message-ID",
		"mailbox", c.opts.IMAP.Mailbox, "old", st.UIDValidity, "new", sel.UIDValidity)
	c.count(func(m *Metrics) { m.Rescans++ })
	// Mail recorded but not committed under the old UIDs cannot be fetched
	// again by UID: commit it now, and remember its key so the scan below
	// does not take it twice.
	if err := c.commitPending(st, func(inboxItem) bool { return true }); err != nil {
		return err
	}
	last, err := lastUID(cl, sel)
	if err != nil {
		return err
	}
	st.UIDValidity, st.LastUID, st.RescanTo = sel.UIDValidity, 0, last
	if err := c.spool.saveState(); err != nil {
		return err
	}
	return c.fetchNew(ctx, cl)
}

// beforeStart reports whether a message's INTERNALDATE (whole seconds)
// lies before the cursor was first placed.
func beforeStart(internal, since time.Time) bool {
	return !internal.IsZero() && internal.Before(since.Truncate(time.Second).Add(-time.Second))
}

// fetchBody fetches at most limit+1 bytes of a message without setting
// \Seen (BODY.PEEK), so that oversized mail is recognised without reading it.
func fetchBody(cl *imapclient.Client, uid uint32, limit int64) ([]byte, error) {
	section := &imap.FetchItemBodySection{Peek: true, Partial: &imap.SectionPartial{Offset: 0, Size: limit + 1}}
	cmd := cl.Fetch(imap.UIDSetNum(imap.UID(uid)), &imap.FetchOptions{UID: true, BodySection: []*imap.FetchItemBodySection{section}})
	defer cmd.Close()
	var body []byte
	found := false
	for msg := cmd.Next(); msg != nil; msg = cmd.Next() {
		for item := msg.Next(); item != nil; item = msg.Next() {
			if b, ok := item.(imapclient.FetchItemDataBodySection); ok && !found && b.Literal != nil {
				var err error
				body, err = io.ReadAll(io.LimitReader(b.Literal, limit+1))
				if err != nil {
					return nil, fmt.Errorf("read message %d: %w", uid, err)
				}
				found = true
			}
		}
	}
	if err := cmd.Close(); err != nil {
		return nil, fmt.Errorf("fetch message %d: %w", uid, err)
	}
	if !found {
		return nil, errVanished
	}
	return body, nil
}

// errVanished: the message was expunged between listing and fetching.
var errVanished = errors.New("message vanished")

// clientMsgID identifies a mail to the session: its Message-ID, or a hash
// of its bytes when it has none (or a silly one).
func clientMsgID(m *mailMsg, raw []byte) string {
	if id := m.MessageID; id != "" && len(id) <= 250 && !strings.ContainsAny(id, " \t\r\n") {
		return "email:" + id
	}
	h := sha256.Sum256(raw)
	return "email:sha256:" + hex.EncodeToString(h[:16])
}

// handle decides on one message and moves the cursor past it, in the
// order that makes a crash harmless at any point:
//
//  1. fetch (BODY.PEEK: \Seen untouched) and decide;
//  2. an accepted mail is written to inbox/<key>.pending (fsync);
//  3. STORE +FLAGS \Seen;
//  4. the cursor (last UID, and the key for dedup) goes to state.json;
//  5. the inbox file is committed: renamed to <key>.json, which is what
//     the worker takes.
//
// A crash before 4 fetches the message again at the next start: it is
// decided again and its .pending file overwritten, never answered twice
// (nothing before 5 is visible to the worker). A crash between 4 and 5 is
// mended at start by commitPending (the cursor says the mail was taken).
func (c *Channel) handle(ctx context.Context, cl *imapclient.Client, st *mailboxState, m meta, rescan bool) error {
	var (
		reason string
		it     *inboxItem
		key    string
	)
	switch {
	case rescan && (m.Seen || beforeStart(m.Internal, st.Since)):
		reason = SkipBeforeStart
	case m.Size > c.opts.MaxBytes:
		reason = SkipTooLarge
	default:
		raw, err := fetchBody(cl, m.UID, c.opts.MaxBytes)
		if errors.Is(err, errVanished) {
			c.log.Info("email vanished before it was read", "uid", m.UID)
			return c.advance(st, m.UID, "")
		}
		if err != nil {
			return err
		}
		if err := c.step("fetched"); err != nil {
			return err
		}
		if int64(len(raw)) > c.opts.MaxBytes {
			reason = SkipTooLarge
			break
		}
		if reason, it = c.decide(st, m, raw); it != nil {
			key = it.Key
		}
	}
	c.count(func(mt *Metrics) { mt.Received++ })
	if it != nil {
		if err := writeJSON(c.spool.pendingPath(it.Key), it); err != nil {
			return &spoolError{fmt.Errorf("record email: %w", err)}
		}
		if err := c.step("recorded"); err != nil {
			return err
		}
	}
	store := cl.Store(imap.UIDSetNum(imap.UID(m.UID)), &imap.StoreFlags{
		Op: imap.StoreFlagsAdd, Silent: true, Flags: []imap.Flag{imap.FlagSeen}}, nil)
	if err := store.Close(); err != nil {
		return fmt.Errorf("mark message %d seen: %w", m.UID, err)
	}
	if err := c.step("seen"); err != nil {
		return err
	}
	if err := c.advance(st, m.UID, key); err != nil {
		return err
	}
	if err := c.step("cursor"); err != nil {
		return err
	}
	if it == nil {
		c.count(func(mt *Metrics) { mt.Skipped[reason]++ })
		c.log.Info("email skipped", "reason", reason, "from", m.From, "uid", m.UID, "size", m.Size)
		return nil
	}
	if err := c.commit(it.Key); err != nil {
		return err
	}
	c.replicated()
	c.count(func(mt *Metrics) { mt.Accepted++ })
	c.log.Info("email accepted", "from", it.From, "subject", it.Subject, "uid", m.UID)
	wake(c.wakeWorker)
	return nil
}

// advance moves the cursor past uid and remembers key, durably.
func (c *Channel) advance(st *mailboxState, uid uint32, key string) error {
	st.LastUID = max(st.LastUID, uid)
	st.remember(key)
	if err := c.spool.saveState(); err != nil {
		return &spoolError{fmt.Errorf("save email state: %w", err)}
	}
	if c.spoolReported {
		c.log.Info("the email spool can be written again")
		c.spoolReported = false
	}
	c.replicated()
	return nil
}

// decide parses raw and screens it; it returns an inbox item for mail to
// answer, or the reason to skip it.
//
// A mail recorded before a crash and now refused (the configuration
// changed in between) has its recording removed: it is not answered.
func (c *Channel) decide(st *mailboxState, m meta, raw []byte) (string, *inboxItem) {
	msg, err := parseMail(raw)
	if err != nil {
		return SkipUnreadable, nil
	}
	id := clientMsgID(msg, raw)
	key := keyOf(id)
	refuse := func(reason string) (string, *inboxItem) {
		if err := removeFile(c.spool.pendingPath(key)); err != nil {
			c.log.Error("remove a refused email's recording", "err", err)
		}
		return reason, nil
	}
	if reason := c.screen(msg); reason != "" {
		return refuse(reason)
	}
	if st.known(key) {
		return SkipDuplicate, nil
	}
	if msg.Capped {
		c.log.Warn("email has more parts or nesting than are read; the rest is ignored",
			"from", msg.From, "uid", m.UID, "max_parts", maxParts, "max_depth", maxDepth)
	}
	// An uncommitted copy from before a crash is this same mail: it was
	// counted against the rate limit already, in a previous life.
	if !exists(c.spool.pendingPath(key)) && !c.limiter.allow(msg.From, c.opts.Now()) {
		return refuse(SkipRateLimited)
	}
	subject := msg.Subject
	atts, skipped := c.storeFiles(msg)
	content := "Subject: " + subject + "\n\n" + msg.Text + skipped
	now := c.opts.Now().UTC()
	return "", &inboxItem{
		V: 1, Key: key, ClientMsgID: id, From: msg.From, Subject: subject, Content: content,
		MessageID: msg.MessageID, References: msg.References,
		UIDValidity: st.UIDValidity, UID: m.UID, Received: now, Seq: now.UnixNano(),
		Attachments: atts,
	}
}

// storeFiles puts an accepted mail's files in the attachment store, at
// most MaxAttachments of them, and returns their records and a line for
// the model naming each file that was not stored and why ("" if none).
// Storing is idempotent (by content), so a mail decided again after a
// crash stores nothing twice.
func (c *Channel) storeFiles(msg *mailMsg) ([]event.Attachment, string) {
	var (
		atts    []event.Attachment
		skipped []string
	)
	for _, f := range msg.Files {
		name := cleanLine(f.Name)
		switch {
		case c.opts.Attachments == nil:
			skipped = append(skipped, fmt.Sprintf("%q (this server keeps no attachments)", name))
		case len(atts) == c.opts.MaxAttachments:
			skipped = append(skipped, fmt.Sprintf("%q (over the limit of %d files per message)", name, c.opts.MaxAttachments))
		default:
			a, err := c.opts.Attachments.Put(bytes.NewReader(f.Data), f.Name)
			if err != nil {
				c.log.Warn("email attachment not stored", "from", msg.From, "name", name, "err", err)
				skipped = append(skipped, fmt.Sprintf("%q (%s, %v)", name, event.FormatSize(int64(len(f.Data))), err))
				continue
			}
			atts = append(atts, a)
		}
	}
	if len(skipped) == 0 {
		return atts, ""
	}
	return atts, "\n\n[Attachments not stored: " + strings.Join(skipped, "; ") + "]"
}

// commit makes a recorded mail visible to the worker.
func (c *Channel) commit(key string) error {
	if err := os.Rename(c.spool.pendingPath(key), c.spool.inboxPath(key)); err != nil {
		return &spoolError{fmt.Errorf("commit email: %w", err)}
	}
	if err := atomicfile.SyncDir(c.spool.inbox); err != nil {
		return &spoolError{fmt.Errorf("commit email: %w", err)}
	}
	return nil
}

// commitPending commits the recorded mail for which pick says so and
// remembers its key; it runs at start (and on a rescan) before the
// worker may look.
func (c *Channel) commitPending(st *mailboxState, pick func(inboxItem) bool) error {
	items, errs := c.spool.pendingItems()
	for _, err := range errs {
		c.log.Error("unreadable pending email moved aside", "err", err)
	}
	changed := false
	for _, it := range items {
		if !pick(it) {
			continue
		}
		if err := c.commit(it.Key); err != nil {
			return err
		}
		if st != nil {
			st.remember(it.Key)
			changed = true
		}
		c.log.Info("email recorded before a restart is taken now", "from", it.From, "uid", it.UID)
	}
	if changed {
		return c.spool.saveState()
	}
	return nil
}

// recover runs at start, before the worker looks: it commits the mail
// that was recorded and passed by the cursor (its key was remembered with
// the cursor) when the process died before committing it, and removes a
// recording the cursor passed without taking (decided otherwise when
// fetched again). Other recordings wait: their UID is fetched again.
func (c *Channel) recover() error {
	st := c.spool.state.Mailboxes[c.opts.IMAP.Mailbox]
	if st == nil {
		return nil
	}
	if err := c.commitPending(st, func(it inboxItem) bool { return st.known(it.Key) }); err != nil {
		return err
	}
	items, _ := c.spool.pendingItems()
	for _, it := range items {
		if it.UIDValidity == st.UIDValidity && it.UID <= st.LastUID {
			c.log.Info("dropping a stale email recording", "uid", it.UID, "from", it.From)
			if err := removeFile(c.spool.pendingPath(it.Key)); err != nil {
				return err
			}
		}
	}
	return nil
}

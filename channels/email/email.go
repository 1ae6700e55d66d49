// Package email is the email channel: mail from allowed senders is read
// over IMAP, becomes a user input in the shared session, and is answered
// by SMTP in the same thread.
//
// Email is the most exposed door, so the channel is built around two
// promises: every accepted mail is answered exactly once (a crash at any
// point causes neither a duplicate reply nor a missed mail, except the
// narrow window documented on deliver), and nothing automated is
// ever answered (no loops with auto-responders, lists or bounces).
//
// Three goroutines, each with one job and ended by Run's context:
//
//	receiver  IMAP: log in, SELECT, catch up, IDLE or poll; for each new UID
//	          decide, record an accepted mail in inbox/, mark it \Seen,
//	          advance the cursor in state.json, commit the inbox file
//	          (see handle for why in this order).
//	worker    inbox/ in arrival order: submit to the session (Patient, so it
//	          waits its turn and is never refused as busy), wait for the
//	          outcome, turn it into a reply in outbox/, drop the inbox file.
//	sender    outbox/: send each reply by SMTP, delete it once accepted,
//	          retry with capped backoff after errors and restarts.
//
// On disk (Options.DataDir/email, files 0600, directories 0700):
//
//	state.json           UIDVALIDITY, last handled UID, recent message keys
//	inbox/<key>.pending  accepted mail, recorded but not yet committed
//	inbox/<key>.json     accepted mail not yet answered
//	outbox/<key>.json    replies not yet accepted by the SMTP server
//	failed/<key>.json    replies the SMTP server refused for good
package email

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/mail"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/frontdesk-hq/frontdesk/event"
	"github.com/frontdesk-hq/frontdesk/hub"
	"github.com/frontdesk-hq/frontdesk/internal/atomicfile"
)

// Session is the part of the hub the channel uses.
type Session interface {
	Submit(ctx context.Context, in hub.Input) (hub.Result, error)
}

var _ Session = (*hub.SessionManager)(nil)

// AttachmentStore keeps the files of accepted mail. *attachments.Store
// implements it (main wires it in): Put stores r's bytes under their
// sha256, sniffs the type, sanitises name, and refuses a file over its
// limit with an error that says so.
type AttachmentStore interface {
	Put(r io.Reader, name string) (event.Attachment, error)
}

// TLS modes for IMAPOptions.TLS and SMTPOptions.TLS.
const (
	TLSImplicit = "tls"      // TLS from the first byte (IMAP 993, SMTP 465)
	TLSStart    = "starttls" // plain connection upgraded with STARTTLS (143, 587)
	TLSNone     = "none"     // no encryption; config allows it on loopback only
)

// Options configure a Channel. Zero durations mean the defaults noted.
type Options struct {
	// Address is the assistant's own address: From of replies, never answered.
	Address string
	// AllowFrom lists exact addresses or "@domain" entries. Required.
	AllowFrom []string
	// MaxBytes: larger mail is skipped. Default 1 MiB.
	MaxBytes int64
	// RatePerHour caps the mails answered per sender per hour; 0: no limit.
	RatePerHour int
	// People, if set, finds the person behind a sender's address (people
	// emails): their mail is theirs (person on the user event) and allowed
	// even if AllowFrom does not list it, unless they may not talk
	// (mayTalk false: skipped as SkipForbidden). "" for nobody.
	People func(addr string) (person string, mayTalk bool)
	IMAP   IMAPOptions
	SMTP   SMTPOptions
	// DataDir is frontdesk's data directory; the channel keeps its files
	// in DataDir/email. Required.
	DataDir string
	// Logger receives operational messages. Default slog.Default().
	Logger *slog.Logger
	// Attachments stores the files of accepted mail (attachments and
	// inline parts); nil: they are listed as not stored. MaxAttachments
	// caps the files stored per mail (attachments.max_per_message);
	// default 10. The rest are named as skipped in the text the model sees.
	Attachments    AttachmentStore
	MaxAttachments int
	// TLSConfig is the base TLS configuration for both servers (tests set
	// RootCAs). Nil: the system roots; ServerName is always filled in.
	TLSConfig *tls.Config

	// IdleRestart is the IDLE watchdog: IDLE is stopped, NOOP sent and IDLE
	// restarted at least this often. Default 9 minutes (servers may drop
	// an IDLE after 30, and some NAT boxes sooner).
	IdleRestart time.Duration
	// MinBackoff and MaxBackoff bound the reconnect delay after an IMAP
	// error (doubling, with jitter). Defaults 1 s and 5 minutes.
	MinBackoff, MaxBackoff time.Duration
	// AuthRetry is the delay after the server rejected the password.
	// Default 15 minutes.
	AuthRetry time.Duration
	// SendMinBackoff and SendMaxBackoff bound the delay between attempts to
	// send one reply. Defaults 5 s and 15 minutes.
	SendMinBackoff, SendMaxBackoff time.Duration
	// Now is the clock. Default time.Now.
	Now func() time.Time

	// Replicate, if set, is given a snapshot of the spool (RestoreSpool
	// reads it) after the receiver moved the cursor or committed a mail and
	// after the worker queued a reply, and, required, before each reply is
	// sent and after it was: a reply goes out only once the spool that
	// records it is replicated. On a cluster it is the copy a new lease
	// holder starts from after a failover. It may be called from several
	// goroutines, one call at a time.
	Replicate func(snapshot []byte) error

	// quiet, if set, replaces the read timeout derived from IdleRestart
	// and PollInterval (tests with a dead peer).
	quiet time.Duration
	// crash, if set, is asked at each step of the exactly-once pipeline;
	// true makes the channel stop dead right there, as if the process
	// had died (tests).
	crash func(step string) bool
}

// IMAPOptions configure the incoming side.
type IMAPOptions struct {
	Addr     string // HOST:PORT
	TLS      string // TLSImplicit, TLSStart (default) or TLSNone
	Username string
	Password string
	// PasswordEnv names the variable Password came from, for messages.
	PasswordEnv string
	// Mailbox is watched. Default INBOX.
	Mailbox string
	// Idle uses IDLE when the server offers it; otherwise the mailbox is
	// polled every PollInterval (default 60 s).
	Idle         bool
	PollInterval time.Duration
}

// SMTPOptions configure the outgoing side.
type SMTPOptions struct {
	Addr     string // HOST:PORT
	TLS      string // TLSImplicit, TLSStart (default) or TLSNone
	Username string // empty: no AUTH
	Password string
	// PasswordEnv names the variable Password came from, for messages.
	PasswordEnv string
}

// Channel is the email channel. Create it with New and run it with Run.
type Channel struct {
	opts    Options
	s       Session
	log     *slog.Logger
	dir     string
	allow   allowList
	self    string // Address, lowercased
	limiter *rateLimiter
	spool   *spool

	authReported  bool // receiver only: a refused login was logged
	spoolReported bool // receiver only: a failed spool write was logged

	wakeWorker chan struct{} // 1 slot: inbox/ has new work
	wakeSender chan struct{} // 1 slot: outbox/ has new work

	replMu sync.Mutex // one replicate at a time

	mu      sync.Mutex // guards metrics only
	metrics Metrics
	// answered is the receive→answer time: from the fetch of a mail to
	// its reply accepted by the SMTP server (a Prometheus type: safe for
	// concurrent use, observed by the sender).
	answered prometheus.Histogram
}

// Metrics are the channel's counters since start. Skipped is keyed by
// reason (see the Skip* constants).
type Metrics struct {
	Received      uint64            // mails fetched and decided on
	Accepted      uint64            // mails put into the session
	Skipped       map[string]uint64 // mails marked seen without an answer
	Replies       uint64            // replies accepted by the SMTP server (notes included)
	Notes         uint64            // of those, notes about a cancelled, failed or lost turn
	SendErrors    uint64            // failed SMTP attempts (each retried)
	SendFailed    uint64            // replies given up on (moved to failed/)
	IMAPErrors    uint64            // IMAP connections that ended in an error
	AuthFailures  uint64            // logins the IMAP server rejected
	Rescans       uint64            // UIDVALIDITY changes handled
	Connected     bool              // an IMAP connection is up
	OutboxPending int               // replies waiting to be sent (last seen by the sender)
}

// Metrics returns a copy of the counters. Safe from any goroutine.
func (c *Channel) Metrics() Metrics {
	c.mu.Lock()
	defer c.mu.Unlock()
	m := c.metrics
	m.Skipped = make(map[string]uint64, len(c.metrics.Skipped))
	for k, v := range c.metrics.Skipped {
		m.Skipped[k] = v
	}
	return m
}

func (c *Channel) count(f func(m *Metrics)) {
	c.mu.Lock()
	f(&c.metrics)
	c.mu.Unlock()
}

// New checks opts and prepares the data directory; nothing connects until Run.
func New(s Session, opts Options) (*Channel, error) {
	opts.setDefaults()
	self, allow, err := opts.check()
	if err != nil {
		return nil, fmt.Errorf("email channel: %w", err)
	}
	dir := filepath.Join(opts.DataDir, "email")
	sp, err := openSpool(dir)
	if err != nil {
		return nil, fmt.Errorf("email channel: %w", err)
	}
	return &Channel{
		opts:       opts,
		s:          s,
		log:        opts.Logger.With("channel", "email"),
		dir:        dir,
		allow:      allow,
		self:       strings.ToLower(self.Address),
		limiter:    newRateLimiter(opts.RatePerHour, time.Hour),
		spool:      sp,
		wakeWorker: make(chan struct{}, 1),
		wakeSender: make(chan struct{}, 1),
		metrics:    Metrics{Skipped: map[string]uint64{}},
		answered: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "frontdesk_email_answer_seconds",
			Help:    "From a mail fetched over IMAP to its reply (or note) accepted by the SMTP server; restarts in between count.",
			Buckets: []float64{.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800, 3600, 4 * 3600},
		}),
	}, nil
}

// setDefaults fills in what o leaves unset.
func (o *Options) setDefaults() {
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.MaxBytes <= 0 {
		o.MaxBytes = 1 << 20
	}
	if o.MaxAttachments <= 0 {
		o.MaxAttachments = hub.DefaultMaxAttachments
	}
	if o.IMAP.TLS == "" {
		o.IMAP.TLS = TLSStart
	}
	if o.SMTP.TLS == "" {
		o.SMTP.TLS = TLSStart
	}
	if o.IMAP.Mailbox == "" {
		o.IMAP.Mailbox = "INBOX"
	}
	if o.IMAP.PollInterval <= 0 {
		o.IMAP.PollInterval = 60 * time.Second
	}
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&o.IdleRestart, 9*time.Minute)
	def(&o.MinBackoff, time.Second)
	def(&o.MaxBackoff, 5*time.Minute)
	def(&o.AuthRetry, 15*time.Minute)
	def(&o.SendMinBackoff, 5*time.Second)
	def(&o.SendMaxBackoff, 15*time.Minute)
}

// check reports every problem of o at once; it returns the assistant's
// own address and the parsed allow list.
func (o *Options) check() (*mail.Address, allowList, error) {
	var errs []error
	self, err := mail.ParseAddress(o.Address)
	if err != nil {
		errs = append(errs, fmt.Errorf("address %q: %w", o.Address, err))
	}
	allow, err := parseAllowList(o.AllowFrom)
	if err != nil {
		errs = append(errs, err)
	}
	for _, m := range []string{o.IMAP.TLS, o.SMTP.TLS} {
		if m != TLSImplicit && m != TLSStart && m != TLSNone {
			errs = append(errs, fmt.Errorf("tls mode %q is not tls, starttls or none", m))
		}
	}
	if o.IMAP.Addr == "" || o.SMTP.Addr == "" {
		errs = append(errs, errors.New("both the IMAP and the SMTP address are required"))
	}
	if o.IMAP.Password == "" {
		errs = append(errs, fmt.Errorf("no IMAP password: set the %s environment variable", envOr(o.IMAP.PasswordEnv, "IMAP password")))
	}
	if o.SMTP.Username != "" && o.SMTP.Password == "" {
		errs = append(errs, fmt.Errorf("no SMTP password: set the %s environment variable", envOr(o.SMTP.PasswordEnv, "SMTP password")))
	}
	if o.DataDir == "" {
		errs = append(errs, errors.New("no data directory"))
	}
	return self, allow, errors.Join(errs...)
}

func envOr(env, what string) string {
	if env != "" {
		return env
	}
	return what
}

// errCrash is how a simulated crash (Options.crash) unwinds.
var errCrash = errors.New("simulated crash")

// step asks the crash hook whether to die at this step of the pipeline.
func (c *Channel) step(name string) error {
	if c.opts.crash != nil && c.opts.crash(name) {
		return errCrash
	}
	return nil
}

// Run receives, submits and replies until ctx ends; call it once. It
// returns nil after ctx ends (pending work stays on disk for the next
// start), or an error if the spool cannot be read at start (or, in
// tests, the simulated crash). IMAP, SMTP and session errors are logged
// and retried, never returned.
func (c *Channel) Run(ctx context.Context) error {
	if err := c.spool.reloadState(); err != nil {
		return fmt.Errorf("email channel: %w", err)
	}
	if err := c.recover(); err != nil {
		return fmt.Errorf("email channel: %w", err)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		wg    sync.WaitGroup
		once  sync.Once
		first error
	)
	for _, f := range []func(context.Context) error{c.receive, c.work, c.send} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := f(ctx); err != nil && ctx.Err() == nil {
				once.Do(func() { first = err })
				cancel() // one part down stops the others: nothing runs half
			}
		}()
	}
	wg.Wait()
	return first
}

func wake(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// removeFile deletes path and syncs its directory, so that the deletion
// survives a crash (a resurrected outbox file would be sent twice).
func removeFile(path string) error {
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return atomicfile.SyncDir(filepath.Dir(path))
}

package email

import (
	"bufio"
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/emersion/go-imap/v2"
	"github.com/emersion/go-imap/v2/imapclient"
	"github.com/emersion/go-imap/v2/imapserver"
	"github.com/emersion/go-imap/v2/imapserver/imapmemserver"
	"github.com/emersion/go-message"
	"github.com/emersion/go-message/mail"
	"github.com/emersion/go-sasl"
	"github.com/emersion/go-smtp"

	"github.com/frontdesk-hq/frontdesk/agent"
	"github.com/frontdesk-hq/frontdesk/attachments"
	"github.com/frontdesk-hq/frontdesk/history"
	"github.com/frontdesk-hq/frontdesk/hub"
)

// Test identities.
const (
	botAddr  = "assistant@example.com"
	ana      = "ana@example.com"     // allowed by address
	bob      = "bob@example.org"     // allowed by domain
	mallory  = "mallory@example.net" // not allowed
	imapUser = "assistant"
	imapPass = "imap-secret"
	smtpUser = "assistant@example.com"
	smtpPass = "smtp-secret"
)

const waitFor = 10 * time.Second

// logBuf collects the channel's log; it is printed if the test fails.
type logBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuf) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuf) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func (l *logBuf) count(sub string) int { return strings.Count(l.String(), sub) }

// --- IMAP: go-imap's in-process server ---------------------------------

type imapFixture struct {
	mem  *imapmemserver.Server
	srv  *imapserver.Server
	addr string

	mu    sync.Mutex
	user  *imapmemserver.User
	conns []net.Conn
	debug bytes.Buffer // client commands as the server saw them
}

// newIMAP starts an IMAP server on 127.0.0.1:0; idle says whether it
// offers IDLE (IMAP4rev2) or only IMAP4rev1.
func newIMAP(t *testing.T, idle bool) *imapFixture {
	t.Helper()
	return newIMAPTLS(t, idle, nil, false)
}

// newIMAPTLS is newIMAP with STARTTLS offered (cfg set, implicit false)
// or TLS from the first byte (implicit).
func newIMAPTLS(t *testing.T, idle bool, cfg *tls.Config, implicit bool) *imapFixture {
	t.Helper()
	f := &imapFixture{mem: imapmemserver.New()}
	f.user = imapmemserver.NewUser(imapUser, imapPass)
	if err := f.user.Create("INBOX", nil); err != nil {
		t.Fatal(err)
	}
	f.mem.AddUser(f.user)
	caps := imap.CapSet{imap.CapIMAP4rev1: {}}
	if idle {
		caps[imap.CapIMAP4rev2] = struct{}{}
	}
	f.srv = imapserver.New(&imapserver.Options{
		NewSession: func(*imapserver.Conn) (imapserver.Session, *imapserver.GreetingData, error) {
			return pollingIdle{f.mem.NewSession()}, nil, nil
		},
		Caps:         caps,
		InsecureAuth: cfg == nil,
		TLSConfig:    cfg,
		Logger:       discardPrintf{},
		DebugWriter:  lockedWriter{&f.mu, &f.debug},
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f.addr = ln.Addr().String()
	if implicit {
		ln = tls.NewListener(ln, cfg)
	}
	go f.srv.Serve(&trackingListener{Listener: ln, f: f})
	t.Cleanup(func() { f.srv.Close() })
	return f
}

// pollingIdle replaces imapmemserver's IDLE, which loses an update queued
// between the previous command and the start of IDLE (its tracker only
// listens for new updates once idling): this one checks every 10 ms, as
// some real servers do.
type pollingIdle struct{ imapserver.Session }

func (s pollingIdle) Idle(w *imapserver.UpdateWriter, stop <-chan struct{}) error {
	t := time.NewTicker(10 * time.Millisecond)
	defer t.Stop()
	for {
		if err := s.Poll(w, true); err != nil {
			return err
		}
		select {
		case <-stop:
			return nil
		case <-t.C:
		}
	}
}

// Namespace and Move forward what IMAP4rev2 requires.
func (s pollingIdle) Namespace() (*imap.NamespaceData, error) {
	return s.Session.(imapserver.SessionNamespace).Namespace()
}

func (s pollingIdle) Move(w *imapserver.MoveWriter, numSet imap.NumSet, dest string) error {
	return s.Session.(imapserver.SessionMove).Move(w, numSet, dest)
}

type discardPrintf struct{}

func (discardPrintf) Printf(string, ...any) {}
func (discardPrintf) Println(...any)        {}

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

type trackingListener struct {
	net.Listener
	f *imapFixture
}

func (l *trackingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err == nil {
		l.f.mu.Lock()
		l.f.conns = append(l.f.conns, c)
		l.f.mu.Unlock()
	}
	return c, err
}

// dropAll closes every connection the server accepted so far.
func (f *imapFixture) dropAll() {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, c := range f.conns {
		c.Close()
	}
	f.conns = nil
}

// commands counts a command in what clients sent ("IDLE", "NOOP", "LOGIN").
func (f *imapFixture) commands(name string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(regexp.MustCompile(`(?m)^T\d+ `+name+`\b`).FindAll(f.debug.Bytes(), -1))
}

// deliver appends raw to INBOX, as a mail server would on delivery.
func (f *imapFixture) deliver(t *testing.T, raw string) {
	t.Helper()
	f.deliverAt(t, raw, time.Now())
}

func (f *imapFixture) deliverAt(t *testing.T, raw string, when time.Time, flags ...imap.Flag) {
	t.Helper()
	f.mu.Lock()
	u := f.user
	f.mu.Unlock()
	if _, err := u.Append("INBOX", bytes.NewReader([]byte(raw)), &imap.AppendOptions{Time: when, Flags: flags}); err != nil {
		t.Fatalf("deliver: %v", err)
	}
}

// recreate deletes and re-creates INBOX: it gets a new UIDVALIDITY, as
// after a server migration.
func (f *imapFixture) recreate(t *testing.T) {
	t.Helper()
	if err := f.user.Delete("INBOX"); err != nil {
		t.Fatal(err)
	}
	if err := f.user.Create("INBOX", nil); err != nil {
		t.Fatal(err)
	}
}

// setPassword replaces the user with one that has a new password (and an
// empty INBOX).
func (f *imapFixture) setPassword(t *testing.T, pass string) {
	t.Helper()
	u := imapmemserver.NewUser(imapUser, pass)
	if err := u.Create("INBOX", nil); err != nil {
		t.Fatal(err)
	}
	f.mu.Lock()
	f.user = u
	f.mu.Unlock()
	f.mem.AddUser(u)
}

// seen reports each message's \Seen flag by UID, read over IMAP.
func (f *imapFixture) seen(t *testing.T) map[uint32]bool {
	t.Helper()
	return imapSeen(t, f.addr, imapUser, imapPass)
}

func imapSeen(t *testing.T, addr, user, pass string) map[uint32]bool {
	t.Helper()
	cl, err := imapclient.DialInsecure(addr, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if err := cl.Login(user, pass).Wait(); err != nil {
		t.Fatal(err)
	}
	sel, err := cl.Select("INBOX", &imap.SelectOptions{ReadOnly: true}).Wait()
	if err != nil {
		t.Fatal(err)
	}
	out := map[uint32]bool{}
	if sel.NumMessages == 0 {
		return out
	}
	msgs, err := cl.Fetch(imap.SeqSet{imap.SeqRange{Start: 1, Stop: 0}}, &imap.FetchOptions{UID: true, Flags: true}).Collect()
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range msgs {
		out[uint32(m.UID)] = false
		for _, fl := range m.Flags {
			if fl == imap.FlagSeen {
				out[uint32(m.UID)] = true
			}
		}
	}
	return out
}

// --- SMTP: a go-smtp server backend ----------------------------------

type sentMail struct {
	From   string
	To     []string
	Raw    []byte
	Header mail.Header
	Body   string
}

type smtpFixture struct {
	addr string
	got  chan sentMail

	mu   sync.Mutex
	fail func(n int) error // n counts DATA commands from 1; nil: accept all
	n    int
}

func newSMTP(t *testing.T) *smtpFixture {
	t.Helper()
	return newSMTPTLS(t, nil, false)
}

// newSMTPTLS is newSMTP with STARTTLS (cfg set, implicit false) or
// implicit TLS.
func newSMTPTLS(t *testing.T, cfg *tls.Config, implicit bool) *smtpFixture {
	t.Helper()
	f := &smtpFixture{got: make(chan sentMail, 1000)}
	s := smtp.NewServer(smtp.BackendFunc(func(*smtp.Conn) (smtp.Session, error) { return &smtpSession{f: f}, nil }))
	s.Domain = "localhost"
	s.AllowInsecureAuth = cfg == nil
	if !implicit {
		s.TLSConfig = cfg
	}
	s.ReadTimeout, s.WriteTimeout = 10*time.Second, 10*time.Second
	s.ErrorLog = discardPrintf{}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f.addr = ln.Addr().String()
	if implicit {
		ln = tls.NewListener(ln, cfg)
	}
	go s.Serve(ln)
	t.Cleanup(func() { s.Close() })
	return f
}

func (f *smtpFixture) failWith(fn func(n int) error) {
	f.mu.Lock()
	f.fail, f.n = fn, 0
	f.mu.Unlock()
}

// next waits for the next delivered mail.
func (f *smtpFixture) next(t *testing.T) sentMail {
	t.Helper()
	select {
	case m := <-f.got:
		return m
	case <-time.After(waitFor):
		t.Fatal("no mail arrived at the SMTP server")
		return sentMail{}
	}
}

// none asserts that nothing more was delivered.
func (f *smtpFixture) none(t *testing.T) {
	t.Helper()
	select {
	case m := <-f.got:
		t.Fatalf("unexpected extra mail to %v: %s / %q", m.To, m.Header.Get("Subject"), m.Body)
	default:
	}
}

type smtpSession struct {
	f      *smtpFixture
	authed bool
	from   string
	to     []string
}

func (s *smtpSession) AuthMechanisms() []string { return []string{sasl.Plain} }

func (s *smtpSession) Auth(string) (sasl.Server, error) {
	return sasl.NewPlainServer(func(_, user, pass string) error {
		if user != smtpUser || pass != smtpPass {
			return errors.New("bad credentials")
		}
		s.authed = true
		return nil
	}), nil
}

func (s *smtpSession) Mail(from string, _ *smtp.MailOptions) error {
	if !s.authed {
		return &smtp.SMTPError{Code: 530, Message: "authentication required"}
	}
	s.from = from
	return nil
}

func (s *smtpSession) Rcpt(to string, _ *smtp.RcptOptions) error {
	s.to = append(s.to, to)
	return nil
}

func (s *smtpSession) Data(r io.Reader) error {
	raw, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	s.f.mu.Lock()
	s.f.n++
	fail, n := s.f.fail, s.f.n
	s.f.mu.Unlock()
	if fail != nil {
		if err := fail(n); err != nil {
			return err
		}
	}
	e, err := message.Read(bytes.NewReader(raw))
	if err != nil {
		return err
	}
	body, _ := io.ReadAll(e.Body)
	s.f.got <- sentMail{From: s.from, To: s.to, Raw: raw, Header: mail.Header{Header: e.Header}, Body: string(body)}
	return nil
}

func (s *smtpSession) Reset()        { s.from, s.to = "", nil }
func (s *smtpSession) Logout() error { return nil }

// --- the agent -----------------------------------------------------------

// echoAgent answers "reply to: <input>", fails on "PLEASE FAIL", and
// waits for gate when one is set.
type echoAgent struct {
	mu      sync.Mutex
	reqs    []agent.Request
	gate    chan struct{}
	started chan string
}

func newEchoAgent() *echoAgent { return &echoAgent{started: make(chan string, 100)} }

func (a *echoAgent) Run(ctx context.Context, req agent.Request, _ agent.Emitter) (agent.Reply, error) {
	a.mu.Lock()
	a.reqs = append(a.reqs, req)
	gate := a.gate
	a.mu.Unlock()
	a.started <- req.Turn
	if strings.Contains(req.Content, "PLEASE FAIL") {
		return agent.Reply{}, errors.New("backend exploded")
	}
	if gate != nil {
		select {
		case <-gate:
		case <-ctx.Done():
			return agent.Reply{}, ctx.Err()
		}
	}
	return agent.Reply{Content: "reply to: " + req.Content}, nil
}

func (a *echoAgent) requests() []agent.Request {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]agent.Request(nil), a.reqs...)
}

func (a *echoAgent) setGate(g chan struct{}) {
	a.mu.Lock()
	a.gate = g
	a.mu.Unlock()
}

// --- a whole frontdesk process: chat log, hub, email channel -------------

type env struct {
	t     *testing.T
	dir   string
	imap  *imapFixture
	smtp  *smtpFixture
	agent *echoAgent
	logs  *logBuf
	p     *proc
	// logPath, if set, is the chat log instead of dir/chat_history.ndjson.
	logPath string
	// wrap, if set, wraps the hub the channel is given (to watch its calls).
	wrap func(Session) Session
	// files, if set, is the attachment store of the hub and the channel.
	files *attachments.Store
}

type proc struct {
	hub      *hub.SessionManager
	log      *history.Log
	ch       *Channel
	stopHub  context.CancelFunc
	stopChan context.CancelFunc
	hubDone  chan error
	chDone   chan error
}

func newEnv(t *testing.T) *env {
	t.Helper()
	e := &env{t: t, dir: t.TempDir(), imap: newIMAP(t, true), smtp: newSMTP(t), agent: newEchoAgent(), logs: &logBuf{}}
	t.Cleanup(func() {
		if e.p != nil {
			e.stop()
		}
		if t.Failed() {
			e.imap.mu.Lock()
			t.Logf("imap:\n%s", e.imap.debug.String())
			e.imap.mu.Unlock()
			t.Logf("channel log:\n%s", e.logs.String())
		}
	})
	return e
}

// options are the channel's options for this environment, fast timings.
func (e *env) options() Options {
	return Options{
		Address:     botAddr,
		AllowFrom:   []string{ana, "@example.org"},
		MaxBytes:    256 << 10,
		RatePerHour: 10,
		IMAP: IMAPOptions{Addr: e.imap.addr, TLS: TLSNone, Username: imapUser, Password: imapPass,
			Mailbox: "INBOX", Idle: true, PollInterval: 100 * time.Millisecond},
		SMTP:           SMTPOptions{Addr: e.smtp.addr, TLS: TLSNone, Username: smtpUser, Password: smtpPass},
		DataDir:        e.dir,
		Logger:         slog.New(slog.NewTextHandler(e.logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		MinBackoff:     20 * time.Millisecond,
		MaxBackoff:     200 * time.Millisecond,
		AuthRetry:      300 * time.Millisecond,
		SendMinBackoff: 20 * time.Millisecond,
		SendMaxBackoff: 100 * time.Millisecond,
	}
}

// start starts a process: the hub restored from the chat log, then the
// channel. mutate adjusts the options.
func (e *env) start(mutate ...func(*Options)) *proc {
	t := e.t
	t.Helper()
	if e.p != nil {
		t.Fatal("a process is already running")
	}
	path := filepath.Join(e.dir, "chat_history.ndjson")
	if e.logPath != "" {
		path = e.logPath
	}
	tail, _, err := history.ReadTail(path, 5000)
	if err != nil {
		t.Fatal(err)
	}
	lg, err := history.Open(history.Options{Path: path, RotateMB: 5})
	if err != nil {
		t.Fatal(err)
	}
	hcfg := hub.Config{DataDir: e.dir, Restore: tail, Logger: slog.New(slog.NewTextHandler(e.logs, nil))}
	if e.files != nil {
		hcfg.Attachments = e.files
	}
	h := hub.New(hcfg, lg, e.agent)
	p := &proc{hub: h, log: lg, hubDone: make(chan error, 1), chDone: make(chan error, 1)}
	hctx, stopHub := context.WithCancel(context.Background())
	p.stopHub = stopHub
	go func() { p.hubDone <- h.Run(hctx) }()
	opts := e.options()
	if e.files != nil {
		opts.Attachments = e.files
	}
	for _, m := range mutate {
		m(&opts)
	}
	var s Session = h
	if e.wrap != nil {
		s = e.wrap(h)
	}
	ch, err := New(s, opts)
	if err != nil {
		stopHub()
		<-p.hubDone
		lg.Close()
		t.Fatal(err)
	}
	p.ch = ch
	cctx, stopChan := context.WithCancel(context.Background())
	p.stopChan = stopChan
	go func() { p.chDone <- ch.Run(cctx) }()
	e.p = p
	return p
}

// stop shuts the process down in main's order: the channel, then the hub,
// then the log.
func (e *env) stop() {
	e.t.Helper()
	p := e.p
	e.p = nil
	p.stopChan()
	select {
	case err := <-p.chDone:
		if err != nil && !errors.Is(err, errCrash) {
			e.t.Errorf("channel Run: %v", err)
		}
	case <-time.After(waitFor):
		e.t.Fatal("the channel did not stop")
	}
	e.stopRest(p)
}

func (e *env) stopRest(p *proc) {
	p.stopHub()
	select {
	case <-p.hubDone:
	case <-time.After(waitFor):
		e.t.Fatal("the hub did not stop")
	}
	if err := p.log.Close(); err != nil {
		e.t.Error(err)
	}
}

// crashed waits for the channel to die of a simulated crash, then takes
// the rest of the process down with it as kill -9 would: the chat log is
// left as it was at the crash, without the hub's orderly ending.
func (e *env) crashed() {
	e.t.Helper()
	p := e.p
	e.p = nil
	select {
	case err := <-p.chDone:
		if !errors.Is(err, errCrash) {
			e.t.Fatalf("channel ended with %v, want the simulated crash", err)
		}
	case <-time.After(waitFor):
		e.t.Fatal("the channel did not crash")
	}
	path := filepath.Join(e.dir, "chat_history.ndjson")
	if err := p.log.Sync(); err != nil {
		e.t.Fatal(err)
	}
	snap, err := os.ReadFile(path)
	if err != nil {
		e.t.Fatal(err)
	}
	e.stopRest(p)
	if err := os.WriteFile(path, snap, 0o600); err != nil {
		e.t.Fatal(err)
	}
}

// eventually polls cond until it holds or the test times out.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(waitFor)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// connected waits until the channel has an IMAP connection up.
func (e *env) connected() {
	e.t.Helper()
	eventually(e.t, "the IMAP connection", func() bool { return e.p.ch.Metrics().Connected })
}

// --- mail ----------------------------------------------------------------

var mailSeq int

// newMail builds a raw message from the given sender. hdrs are "Key: value"
// lines that replace (or, with value "-", delete) the default header of
// that name, or are added.
func newMail(from, subject, body string, hdrs ...string) string {
	mailSeq++
	type kv struct{ k, v string }
	h := []kv{
		{"Return-Path", "<" + from + ">"},
		{"From", from},
		{"To", botAddr},
		{"Subject", subject},
		{"Message-ID", fmt.Sprintf("<m%d.%d@test.example>", mailSeq, time.Now().UnixNano())},
		{"Date", time.Now().Format(time.RFC1123Z)},
		{"MIME-Version", "1.0"},
		{"Content-Type", "text/plain; charset=utf-8"},
	}
outer:
	for _, line := range hdrs {
		k, v, _ := strings.Cut(line, ":")
		v = strings.TrimSpace(v)
		for i := range h {
			if strings.EqualFold(h[i].k, k) {
				h[i].v = v
				continue outer
			}
		}
		h = append(h, kv{k, v})
	}
	var b strings.Builder
	for _, x := range h {
		if x.v != "-" {
			b.WriteString(x.k + ": " + x.v + "\r\n")
		}
	}
	b.WriteString("\r\n")
	b.WriteString(strings.ReplaceAll(strings.ReplaceAll(body, "\r\n", "\n"), "\n", "\r\n"))
	return b.String()
}

// messageID returns the <id> of a raw mail built by newMail.
func messageID(raw string) string {
	m := regexp.MustCompile(`(?m)^Message-ID: <([^>]+)>`).FindStringSubmatch(raw)
	if m == nil {
		return ""
	}
	return m[1]
}

// inReplyTo is the id a reply answers.
func inReplyTo(m sentMail) string {
	ids, _ := m.Header.MsgIDList("In-Reply-To")
	if len(ids) == 0 {
		return ""
	}
	return ids[0]
}

// spoolEmpty asserts that no mail or reply is left half-way.
func (e *env) spoolEmpty() {
	e.t.Helper()
	for _, d := range []string{"inbox", "outbox"} {
		ents, err := os.ReadDir(filepath.Join(e.dir, "email", d))
		if err != nil {
			e.t.Fatal(err)
		}
		if len(ents) != 0 {
			var names []string
			for _, x := range ents {
				names = append(names, x.Name())
			}
			e.t.Errorf("email/%s is not empty: %v", d, names)
		}
	}
}

// dialTestIMAP logs in to the fixture and selects INBOX.
func dialTestIMAP(t *testing.T, addr string) *imapclient.Client {
	t.Helper()
	cl, err := imapclient.DialInsecure(addr, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cl.Close() })
	if err := cl.Login(imapUser, imapPass).Wait(); err != nil {
		t.Fatal(err)
	}
	if _, err := cl.Select("INBOX", nil).Wait(); err != nil {
		t.Fatal(err)
	}
	return cl
}

// blackhole is a TCP proxy whose existing connections can be frozen: they
// stay open but nothing passes any more, like a peer that vanished
// without FIN or RST. New connections pass normally.
type blackhole struct {
	addr string
	mu   sync.Mutex
	live []*holeConn
}

type holeConn struct {
	mu     sync.Mutex
	frozen bool
}

func (h *holeConn) isFrozen() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.frozen
}

func newBlackhole(t *testing.T, upstream string) *blackhole {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	b := &blackhole{addr: ln.Addr().String()}
	var conns []net.Conn
	var cmu sync.Mutex
	t.Cleanup(func() {
		ln.Close()
		cmu.Lock()
		for _, c := range conns {
			c.Close()
		}
		cmu.Unlock()
	})
	go func() {
		for {
			down, err := ln.Accept()
			if err != nil {
				return
			}
			up, err := net.Dial("tcp", upstream)
			if err != nil {
				down.Close()
				continue
			}
			cmu.Lock()
			conns = append(conns, down, up)
			cmu.Unlock()
			hc := &holeConn{}
			b.mu.Lock()
			b.live = append(b.live, hc)
			b.mu.Unlock()
			pipe := func(dst, src net.Conn) {
				buf := make([]byte, 32<<10)
				for {
					n, err := src.Read(buf)
					if err != nil {
						return
					}
					if hc.isFrozen() {
						continue // swallowed
					}
					if _, err := dst.Write(buf[:n]); err != nil {
						return
					}
				}
			}
			go pipe(up, down)
			go pipe(down, up)
		}
	}()
	return b
}

// freeze makes every current connection a black hole.
func (b *blackhole) freeze() {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, c := range b.live {
		c.mu.Lock()
		c.frozen = true
		c.mu.Unlock()
	}
}

// newCapFilter is a proxy in front of an IMAP server that hides one
// capability (go-imap's server always offers IDLE; real ones may not).
func newCapFilter(t *testing.T, upstream, hide string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	word := regexp.MustCompile(`(?i) ` + regexp.QuoteMeta(hide) + `\b`)
	go func() {
		for {
			down, err := ln.Accept()
			if err != nil {
				return
			}
			up, err := net.Dial("tcp", upstream)
			if err != nil {
				down.Close()
				continue
			}
			go func() { io.Copy(up, down); up.Close() }()
			go func() {
				defer down.Close()
				r := bufio.NewReader(up)
				for {
					line, err := r.ReadString('\n')
					if strings.Contains(strings.ToUpper(line), "CAPABILITY") {
						line = word.ReplaceAllString(line, "")
					}
					if _, werr := io.WriteString(down, line); werr != nil || err != nil {
						return
					}
				}
			}()
		}
	}()
	return ln.Addr().String()
}

// testCert makes a self-signed certificate for 127.0.0.1: the servers'
// configuration and a client configuration that trusts it.
func testCert(t *testing.T) (server, client *tls.Config) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "frontdesk test"},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		IPAddresses:  []net.IP{net.ParseIP("127.0.0.1")},
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	server = &tls.Config{Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key, Leaf: cert}}}
	return server, &tls.Config{RootCAs: pool}
}

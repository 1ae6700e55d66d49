package chat

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/frontdesk-hq/frontdesk/event"
	"github.com/frontdesk-hq/frontdesk/hub"
)

// Session is the part of the hub a chat door uses.
type Session interface {
	Submit(ctx context.Context, in hub.Input) (hub.Result, error)
	Subscribe(ctx context.Context, since int64) (*hub.Subscription, hub.Snapshot, error)
	Info(ctx context.Context) (hub.Info, error)
	CancelBy(ctx context.Context, a hub.Actor) (bool, error)
	Decide(ctx context.Context, id, decision string, a hub.Actor) (event.ApprovalResultData, error)
}

var _ Session = (*hub.SessionManager)(nil)

// AttachmentStore keeps incoming files; *attachments.Store implements it.
type AttachmentStore interface {
	Put(r io.Reader, name string) (event.Attachment, error)
}

// Options configure a Door.
type Options struct {
	// Door is the channel name: telegram, matrix or slack.
	Door string
	// Allow lists the accounts that may talk (any of a Message's From and
	// Aliases; @usernames without regard to case).
	Allow []string
	// People finds the person an account belongs to (people[].accounts)
	// and whether they may talk; their accounts are allowed even when
	// Allow does not list them. nil: nobody is configured (one person on
	// a laptop), and every allowed account speaks as Owner.
	People func(account string) (person string, mayTalk bool)
	Owner  string
	// Names is a person's display name, for approval results.
	Names func(person string) string
	// DataDir is frontdesk's data directory: the door keeps
	// DataDir/<Door>/state.json. Required.
	DataDir string
	// Attachments stores incoming files (nil: not stored, and the text
	// the model sees says so); MaxAttachments caps them per message
	// (default 10).
	Attachments    AttachmentStore
	MaxAttachments int
	// Replicate, if set, is given state.json after every change (a
	// cluster's copy for the next lease holder; see RestoreState).
	Replicate func([]byte) error
	Logger    *slog.Logger
	// Backoff bounds the wait between tries of a post or edit the
	// platform refused (doubling; a RetryError's After wins). Defaults 1 s
	// and 1 minute.
	MinBackoff, MaxBackoff time.Duration
}

// Door is one chat door: a Connector joined to the session.
type Door struct {
	opts  Options
	s     Session
	conn  Connector
	lim   Limits
	log   *slog.Logger
	state *stateFile
	ctx   context.Context // Run's: the replies follow it
	run   atomic.Bool     // Run is running
	wg    sync.WaitGroup  // Run's goroutines, the replies' among them

	mu      sync.Mutex
	replies map[string]*reply // by the input's client_msg_id
	byTurn  map[string]*reply
	asked   map[string]askedMsg // approval id → the message that asks
	// early are approval results that came before the message asking was
	// posted (answered from another door while the post was retried),
	// the last maxEarly of them; ask marks its message at once.
	early      map[string]event.ApprovalResultData
	earlyOrder []string
	refused    map[string]bool // accounts logged as not allowed
	recvErr    error           // the connector's last Report
	sendErr    error           // the last post or edit that failed for good
}

// askedMsg is an approval request's message.
type askedMsg struct{ chat, id, text string }

// New opens the door's state; Run starts it.
func New(s Session, c Connector, o Options) (*Door, error) {
	if o.Door == "" || o.DataDir == "" {
		return nil, errors.New("chat: Door and DataDir are required")
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.MaxAttachments <= 0 {
		o.MaxAttachments = 10
	}
	if o.MinBackoff <= 0 {
		o.MinBackoff = time.Second
	}
	if o.MaxBackoff <= 0 {
		o.MaxBackoff = time.Minute
	}
	st, err := openState(StateDir(o.DataDir, o.Door), o.Replicate)
	if err != nil {
		return nil, err
	}
	lim := c.Limits()
	if lim.MaxText <= 0 {
		lim.MaxText = 4000
	}
	return &Door{opts: o, s: s, conn: c, lim: lim, log: o.Logger.With("door", o.Door), state: st,
		replies: map[string]*reply{}, byTurn: map[string]*reply{}, asked: map[string]askedMsg{}, refused: map[string]bool{},
		early: map[string]event.ApprovalResultData{}}, nil
}

// Run reads state.json (again: on a cluster the new lease holder's copy
// was just restored), joins the session's stream, finishes the replies
// owed from before and runs the connector until ctx ends.
func (d *Door) Run(ctx context.Context) error {
	if err := d.state.reload(); err != nil {
		return fmt.Errorf("%s door: %w", d.opts.Door, err)
	}
	sub, err := d.subscribe(ctx, -1)
	if err != nil {
		return fmt.Errorf("%s door: %w", d.opts.Door, err)
	}
	d.ctx = ctx
	d.run.Store(true)
	defer d.run.Store(false)
	defer d.wg.Wait()
	d.wg.Go(func() { d.dispatch(ctx, sub) })
	for _, o := range d.state.owedNow() {
		d.wg.Go(func() { d.resume(ctx, o) })
	}
	err = d.conn.Run(ctx, d)
	if ctx.Err() != nil {
		return nil
	}
	return err
}

// Running says whether Run runs (on a cluster: this node holds the lease).
func (d *Door) Running() bool { return d.run.Load() }

// Health is "" while the door works, else why not ("telegram: …").
func (d *Door) Health() string {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, err := range []error{d.recvErr, d.sendErr} {
		if err != nil {
			return d.opts.Door + ": " + err.Error()
		}
	}
	return ""
}

// Cursor implements Inbox.
func (d *Door) Cursor() string { return d.state.cursor() }

// Advance implements Inbox.
func (d *Door) Advance(c string) error { return d.state.setCursor(c) }

// Report implements Inbox.
func (d *Door) Report(err error) { d.setHealth(true, err) }

func (d *Door) setHealth(recv bool, err error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if recv {
		d.recvErr = err
	} else {
		d.sendErr = err
	}
}

// Allowed implements Inbox.
func (d *Door) Allowed(from string, aliases ...string) bool {
	_, ok := d.find(from, aliases)
	return ok
}

// speaker is who sent a message, as the door found them.
type speaker struct {
	account, person string
}

// who finds the sender: the person an account belongs to, or an allowed
// account. ok false: not answered.
func (d *Door) who(from string, aliases []string) (speaker, bool) {
	sp, ok := d.find(from, aliases)
	switch {
	case !ok && sp.person != "":
		d.refuseOnce(from, "their person may not talk")
	case !ok:
		d.refuseOnce(from, "not on allow and no person's account")
	}
	return sp, ok
}

// find is who without the log line.
func (d *Door) find(from string, aliases []string) (speaker, bool) {
	names := append([]string{from}, aliases...)
	if d.opts.People != nil {
		for _, n := range names {
			if p, may := d.opts.People(n); p != "" {
				return speaker{from, p}, may
			}
		}
	}
	for _, n := range names {
		if slices.ContainsFunc(d.opts.Allow, func(a string) bool { return sameAccount(a, n) }) {
			sp := speaker{account: from}
			if d.opts.People == nil {
				sp.person = d.opts.Owner
			}
			return sp, true
		}
	}
	return speaker{}, false
}

func sameAccount(a, b string) bool {
	if strings.HasPrefix(a, "@") && !strings.Contains(a, ":") {
		return strings.EqualFold(a, b) // a Telegram @username
	}
	return a == b
}

// refuseOnce logs an account that is not answered, once per account.
func (d *Door) refuseOnce(account, why string) {
	d.mu.Lock()
	seen := d.refused[account]
	d.refused[account] = true
	d.mu.Unlock()
	if !seen {
		d.log.Warn("chat: a message from this account is not answered", "account", account, "why", why)
	}
}

// Message implements Inbox.
func (d *Door) Message(ctx context.Context, m Message) error {
	sp, ok := d.who(m.From, m.Aliases)
	if !ok || (!m.Direct && !m.Mentioned) {
		return nil
	}
	o := &owed{Key: d.opts.Door + ":" + m.Chat + ":" + m.ID, Chat: m.Chat, ReplyTo: m.ID, Thread: m.Thread,
		From: m.From, Person: sp.person, Content: strings.TrimSpace(m.Text)}
	if d.command(ctx, o, sp) {
		return nil
	}
	var notes []string
	o.Attachments, notes = d.files(ctx, m.Files)
	if len(notes) > 0 {
		o.Content = strings.TrimSpace(o.Content + "\n\n" + strings.Join(notes, "\n"))
	}
	return d.submit(ctx, o)
}

// files stores a message's files; notes name those not stored, for the
// text the model reads.
func (d *Door) files(ctx context.Context, fs []File) ([]event.Attachment, []string) {
	var out []event.Attachment
	var notes []string
	for i, f := range fs {
		if d.opts.Attachments == nil || i >= d.opts.MaxAttachments {
			notes = append(notes, fmt.Sprintf("[file %q was not stored: %s]", f.Name, skipped(d.opts.Attachments == nil)))
			continue
		}
		a, err := d.storeFile(ctx, f)
		if err != nil {
			d.log.Warn("chat: a file was not stored", "name", f.Name, "err", err)
			notes = append(notes, fmt.Sprintf("[file %q was not stored: %v]", f.Name, err))
			continue
		}
		out = append(out, a)
	}
	return out, notes
}

func skipped(noStore bool) string {
	if noStore {
		return "attachments are off"
	}
	return "too many files in one message"
}

func (d *Door) storeFile(ctx context.Context, f File) (event.Attachment, error) {
	r, err := f.Open(ctx)
	if err != nil {
		return event.Attachment{}, err
	}
	defer r.Close()
	return d.opts.Attachments.Put(r, f.Name)
}

// command runs /cancel, /approve ID, /deny ID, /start and /help (or the
// same with "!"); false for anything else.
func (d *Door) command(ctx context.Context, o *owed, sp speaker) bool {
	word, arg, _ := strings.Cut(o.Content, " ")
	word, _, _ = strings.Cut(word, "@") // /cancel@frontdesk_bot
	if rest, ok := strings.CutPrefix(word, "!"); ok {
		word = "/" + rest // Slack keeps "/" for its own commands: !cancel
	}
	actor := hub.Actor{Door: d.opts.Door, Person: sp.person, SignedIn: sp.person != ""}
	var text string
	switch word {
	case "/cancel":
		ran, err := d.s.CancelBy(ctx, actor)
		text = map[bool]string{true: "Cancelled.", false: "Nothing is running."}[ran]
		if err != nil {
			text = "Not cancelled: " + err.Error()
		}
	case "/approve", "/deny":
		text = d.decide(ctx, strings.TrimSpace(arg), strings.TrimPrefix(word, "/"), actor)
	case "/start", "/help":
		text = "This is frontdesk: write here and the assistant answers. /cancel stops a reply; " +
			"/approve ID and /deny ID answer an approval request."
	default:
		return false
	}
	d.say(ctx, o, text)
	return true
}

// decide answers an approval request for actor; the text says how it went.
func (d *Door) decide(ctx context.Context, id, decision string, actor hub.Actor) string {
	if id == "" {
		return "Which request? /" + decision + " ID"
	}
	if _, err := d.s.Decide(ctx, id, decision, actor); err != nil {
		return "Not answered: " + err.Error()
	}
	return map[string]string{"approve": "Approved.", "deny": "Denied."}[decision]
}

// Action implements Inbox: a button or reaction answering an approval.
func (d *Door) Action(ctx context.Context, a Action) {
	answer := func(text string) {
		if a.Answer != nil {
			a.Answer(ctx, text)
		}
	}
	sp, ok := d.who(a.From, a.Aliases)
	if !ok {
		answer("You are not allowed here.")
		return
	}
	id := a.Approval
	if id == "" {
		id = d.approvalOf(a.OnMessage)
	}
	if id == "" || (a.Decision != "approve" && a.Decision != "deny") {
		answer("That is not an approval request.")
		return
	}
	answer(d.decide(ctx, id, a.Decision, hub.Actor{Door: d.opts.Door, Person: sp.person, SignedIn: sp.person != ""}))
}

// approvalOf finds the approval asked by message id.
func (d *Door) approvalOf(msg string) string {
	d.mu.Lock()
	defer d.mu.Unlock()
	for id, a := range d.asked {
		if a.id == msg && msg != "" {
			return id
		}
	}
	return ""
}

// say posts a short answer (busy, refused, a command's result) to o's
// chat; it is not retried.
func (d *Door) say(ctx context.Context, o *owed, text string) {
	if _, err := d.conn.Send(ctx, Post{Chat: o.Chat, ReplyTo: o.ReplyTo, Thread: o.Thread,
		Text: Render(text, d.lim.Style), Plain: text}); err != nil {
		d.log.Warn("chat: could not answer", "err", err)
	}
}

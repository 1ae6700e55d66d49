// Package console is the terminal channel: a REPL in the terminal the
// server runs in, built on github.com/ergochat/readline (whose Close, unlike
// the unmaintained chzyer/readline's, does not hang while a Readline call is
// in progress — clean shutdown depends on that).
//
// Two goroutines: Run reads lines and pushes commands into the hub; a
// printer goroutine prints the session's live stream through readline,
// which redraws the prompt and the half-typed line after each write (see
// screen for how the prompt changes, and printer.delta for how a reply is
// streamed).
package console

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ergochat/readline"
	"golang.org/x/term"

	"github.com/frontdesk-hq/frontdesk/event"
	"github.com/frontdesk-hq/frontdesk/hub"
	"github.com/frontdesk-hq/frontdesk/memory"
)

// Session is the part of the hub the console uses.
type Session interface {
	Subscribe(ctx context.Context, since int64) (*hub.Subscription, hub.Snapshot, error)
	Submit(ctx context.Context, in hub.Input) (hub.Result, error)
	CancelBy(ctx context.Context, a hub.Actor) (bool, error)
	Reset(ctx context.Context, reason string, a hub.Actor) (event.ResetData, error)
	Decide(ctx context.Context, id, decision string, a hub.Actor) (event.ApprovalResultData, error)
	Info(ctx context.Context) (hub.Info, error)
	Recent(ctx context.Context, n int) ([]event.Event, error)
	Search(ctx context.Context, query string, limit int) (hub.SearchResult, error)
	MemoryList(ctx context.Context) ([]memory.Item, error)
	MemoryForget(ctx context.Context, id string, a hub.Actor) error
	Erase(ctx context.Context, seq int64, a hub.Actor) (event.ErasedData, error)
}

var _ Session = (*hub.SessionManager)(nil)

// Options configures the REPL.
type Options struct {
	Stdin  io.Reader
	Stdout io.Writer
	// Color enables ANSI styling (dim status lines, bold labels).
	Color bool
	// Logs, if set, is pointed at the REPL while it runs, so log lines do
	// not break the prompt (they are shown in the console's own form, see
	// humanLog); it is pointed back when the REPL ends.
	Logs *LogSink
	// Stop, if set, stops the whole server (a clean shutdown, as SIGTERM):
	// Ctrl-\ at the prompt calls it. Nil: Ctrl-\ is ignored.
	Stop func()
	// Schedules, if set, serves /schedules.
	Schedules Schedules
	// Cluster, if set (a node of a cluster), tells /status this node's
	// name, the lease holder and this node's role. Called on the REPL's
	// goroutine.
	Cluster func() ClusterView
	// Person is who types here (channels.console.person: a people id;
	// "" names nobody). The terminal counts as signed in.
	Person string
	// Names gives a person's display name for the lines the REPL prints
	// ("Ann · web"; "" falls back to the id); nil prints no names (one
	// implicit person: the labels of before).
	Names func(person string) string
}

// ClusterView is a cluster node's view for /status: its name, the lease
// holder (the node that runs the assistant; "" while none is known) and
// its role (leader, follower, electing).
type ClusterView struct {
	Node, Holder, Role string
}

// IsTerminal reports whether r is a terminal (an *os.File on a tty).
func IsTerminal(r any) bool {
	f, ok := r.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// LogSink is an io.Writer whose destination can be switched while other
// goroutines write to it.
type LogSink struct {
	mu sync.Mutex
	w  io.Writer
}

// NewLogSink returns a sink writing to w.
func NewLogSink(w io.Writer) *LogSink { return &LogSink{w: w} }

func (s *LogSink) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}

// Readable makes the sink write each log line in the console's own form
// ("[log] message (k=v …)", see humanLog) to where it writes now: for the
// lines logged while the server starts, before Run takes them over, and
// after the REPL ends.
func (s *LogSink) Readable(color bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.w = readableLog{w: s.w, o: Options{Color: color}}
}

func (s *LogSink) swap(w io.Writer) io.Writer {
	s.mu.Lock()
	defer s.mu.Unlock()
	old := s.w
	s.w = w
	return old
}

const help = `Type a message and press Enter to send it to the assistant.
  /cancel          cancel the running reply (Ctrl-C does too)
  /approve [id]    let a tool call that waits for approval run (id: when several wait)
  /deny [id]       refuse it
  /reset           consolidate memory and start a fresh context (keeps recent exchanges)
  /history [n]     show the last n events (default 20)
  /search <text>   search the whole conversation history
  /status          show the session state
  /schedules       list reminders and recurring tasks; /schedules cancel <id> cancels one
  /memory          list what the assistant remembers (id, date, source, text)
  /forget <id>     make it forget one item (the ids are in /memory: m3, or just 3)
  /erase <seq>     erase one message everywhere it is stored (the #seq is in /history);
                   backups made before still hold it
  /help            this text
  /quit            leave the console (Ctrl-D too); the server keeps running
Ctrl-\ stops the server (as SIGTERM does), here and after /quit.`

// closedNote is printed when the REPL ends and the server goes on.
const closedNote = "console closed; the server keeps running (stop it with Ctrl-C or Ctrl-\\, or SIGTERM)"

// Run runs the REPL until /quit, Ctrl-D, the end of stdin, or ctx ends.
// The server goes on either way; Run returns nil unless the REPL could
// not start.
func Run(ctx context.Context, s Session, o Options) error {
	r := &repl{s: s, stop: o.Stop, sched: o.Schedules, cluster: o.Cluster,
		me: hub.Actor{Door: event.ChannelConsole, Person: o.Person, SignedIn: true}}
	scr := &screen{w: o.Stdout}
	cfg := &readline.Config{
		Prompt:          o.style(bold, "you› "),
		Stdin:           o.Stdin,
		Stdout:          scr,
		Stderr:          scr,
		InterruptPrompt: "^C",
		EOFPrompt:       "\n",
		HistoryLimit:    -1, // nothing typed here is kept outside the chat log
		// Unbound control keys would stay in the line as invisible
		// characters; Ctrl-\ stops the server.
		FuncFilterInputRune: r.filterRune,
	}
	terminalFuncs(cfg, o)
	rl, err := readline.NewFromConfig(cfg)
	if err != nil {
		return fmt.Errorf("start console: %w", err)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := context.AfterFunc(ctx, func() { rl.Close() })
	defer stop()
	if IsTerminal(o.Stdout) {
		// Last: readline leaves its prompt on the screen when closed.
		defer io.WriteString(o.Stdout, "\r\x1b[K")
	}
	defer rl.Close()

	p := &printer{w: rl, o: o, prompt: cfg.Prompt, size: cfg.FuncGetSize}
	if cfg.FuncIsTerminal() {
		scr.rl = rl
		p.scr = scr
	}
	r.p = p
	if o.Logs != nil {
		old := o.Logs.swap(logWriter{p})
		defer o.Logs.swap(old)
	}
	sub, snap, err := s.Subscribe(ctx, 0)
	if err != nil {
		return fmt.Errorf("start console: %w", err)
	}
	p.welcome(snap)
	printerDone := make(chan struct{})
	go func() {
		defer close(printerDone)
		p.follow(ctx, s, sub)
	}()
	defer func() { cancel(); r.resends.Wait(); <-printerDone }()

	for {
		line, err := rl.ReadLine()
		switch {
		case errors.Is(err, readline.ErrInterrupt):
			// readline ends the line with a bare LF (raw mode): return to
			// the first column before the next prompt is drawn.
			p.interrupted()
			r.interrupt(ctx)
			continue
		case err != nil: // io.EOF (Ctrl-D, end of input) or closed
			if ctx.Err() == nil && !r.stopping.Load() {
				p.say(o.style(dim, closedNote))
			}
			return nil
		}
		p.entered()
		if quit := r.handle(ctx, strings.TrimSpace(stripControl(line))); quit {
			p.say(o.style(dim, closedNote))
			return nil
		}
	}
}

// repl handles typed lines on Run's goroutine.
type repl struct {
	s  Session
	p  *printer
	id int
	// stop stops the server (Options.Stop); stopping is set once Ctrl-\
	// asked for it (on readline's goroutine).
	stop     func()
	stopping atomic.Bool
	// sched serves /schedules; nil: not available.
	sched Schedules
	// cluster is Options.Cluster.
	cluster func() ClusterView
	// me is who asks the session for things from here (Options.Person).
	me hub.Actor
	// resends are the inputs refused for want of a desk that are sent
	// again by themselves (resend); Run waits for them as it ends.
	resends sync.WaitGroup
}

func (r *repl) interrupt(ctx context.Context) {
	// Ctrl-C cancels a running reply; otherwise readline has cleared the line.
	if ok, err := r.s.CancelBy(ctx, r.me); err == nil && ok {
		return // the notice arrives through the stream
	}
}

func (r *repl) handle(ctx context.Context, line string) (quit bool) {
	if line == "" || r.stopping.Load() {
		return false // typed ahead of Ctrl-\: the server is stopping
	}
	if !strings.HasPrefix(line, "/") || strings.HasPrefix(line, "//") {
		r.send(ctx, strings.TrimPrefix(line, "/"))
		return false
	}
	cmd, arg, _ := strings.Cut(line, " ")
	arg = strings.TrimSpace(arg)
	switch cmd {
	case "/quit", "/exit":
		return true
	case "/help":
		r.p.say(help)
	case "/cancel":
		ok, err := r.s.CancelBy(ctx, r.me)
		switch {
		case err != nil:
			r.p.say("cancel failed: " + err.Error())
		case !ok:
			r.p.say(r.p.o.style(dim, "nothing to cancel"))
		}
	case "/approve", "/deny":
		// Everyone sees the approval_result; only a failure is printed here.
		if _, err := r.s.Decide(ctx, arg, strings.TrimPrefix(cmd, "/"), r.me); err != nil {
			r.p.say(strings.TrimPrefix(cmd, "/") + " failed: " + err.Error())
		}
	case "/reset":
		if _, err := r.s.Reset(ctx, hub.ResetManual, r.me); err != nil {
			r.p.say("reset failed: " + errText(err))
		}
	case "/schedules":
		r.schedules(ctx, arg)
	case "/memory":
		r.memoryList(ctx, arg)
	case "/forget":
		r.forget(ctx, arg)
	case "/erase":
		r.erase(ctx, arg)
	case "/status":
		r.status(ctx)
	case "/history":
		r.history(ctx, arg)
	case "/search":
		r.search(ctx, arg)
	default:
		r.p.say("unknown command " + cmd + " (try /help; start a message with // to send a literal slash)")
	}
	return false
}

// status prints /status: the session at a glance.
func (r *repl) status(ctx context.Context) {
	info, err := r.s.Info(ctx)
	if err != nil {
		r.p.say("status failed: " + err.Error())
		return
	}
	state := "idle"
	if info.Busy {
		state = "working on " + info.Turn
	}
	line := fmt.Sprintf("session %s · generation %d · %s · last seq %d · %s", info.SessionID, info.Generation, state, info.LastSeq, clientCount(info.Subscribers))
	if r.cluster != nil {
		line += " · " + clusterLine(r.cluster())
	}
	r.p.say(line)
}

// clusterLine names this node and the holder for /status.
func clusterLine(c ClusterView) string {
	switch {
	case c.Holder == "" || c.Role == "electing":
		return "node " + c.Node + " · no node runs the assistant right now (waiting for the desk)"
	case c.Holder == c.Node:
		return "node " + c.Node + " (the holder: it runs the assistant)"
	}
	return "node " + c.Node + " · holder " + c.Holder
}

// history prints /history [n]: the last n events.
func (r *repl) history(ctx context.Context, arg string) {
	n := 20
	if arg != "" {
		v, err := strconv.Atoi(arg)
		if err != nil || v < 1 || v > 1000 {
			r.p.say("usage: /history [n]   (n from 1 to 1000)")
			return
		}
		n = v
	}
	evs, err := r.s.Recent(ctx, n)
	if err != nil {
		r.p.say("history failed: " + err.Error())
		return
	}
	for _, e := range evs {
		r.p.show(e)
	}
}

// search prints /search: ranked hits, best first.
func (r *repl) search(ctx context.Context, arg string) {
	if arg == "" {
		r.p.say("usage: /search <words> (\"a phrase\", prefix*, channel:, from:, type:, before:, after:)")
		return
	}
	res, err := r.s.Search(ctx, arg, 20)
	if err != nil {
		r.p.say("search failed: " + err.Error())
		return
	}
	if len(res.Hits) == 0 {
		r.p.say(r.p.o.style(dim, "no matches"))
	} else if res.Mode != "and" || res.Indexing != nil {
		r.p.say(r.p.o.style(dim, res.String()))
	}
	// Best first; matched words in bold, or marked «like this» as the
	// index gives them when there is no colour.
	for _, h := range res.Hits {
		who := h.Type // assistant, memory
		if h.Type == string(event.User) {
			who = label(h.Channel, h.From)
		}
		ref := fmt.Sprintf("#%d", h.Seq)
		if h.Seq == 0 {
			ref = "memory"
		}
		r.p.say(fmt.Sprintf("%s %s %s: %s", h.TS.Local().Format("2006-01-02 15:04"), ref, who, r.p.o.marked(h.Snippet)))
	}
}

func (r *repl) send(ctx context.Context, content string) {
	r.id++
	in := hub.Input{
		Channel:     event.ChannelConsole,
		Person:      r.me.Person,
		SignedIn:    true,
		Content:     content,
		ClientMsgID: fmt.Sprintf("console-%d-%d", time.Now().UnixNano(), r.id),
	}
	res, err := r.s.Submit(ctx, in)
	if deskRefused(err) {
		r.p.say(r.p.o.style(dim, "waiting for the desk: no node runs the assistant right now; your message is sent again by itself (for up to a minute)"))
		r.resends.Add(1)
		go func() {
			defer r.resends.Done()
			r.resend(ctx, in)
		}()
		return
	}
	r.answered(res, err)
}

// resendFor bounds how long a refused input is sent again.
const resendFor = time.Minute

// deskRefused: no node ran the input (no_leader) or whether one did is
// unknown (no_answer); either way it is safe to send it again with the
// same client_msg_id, which never runs twice.
func deskRefused(err error) bool {
	return errors.Is(err, hub.ErrNoLeader) || errors.Is(err, hub.ErrNoAnswer)
}

// resend sends in again after 1 s, doubling to 5 s, while it is refused
// for want of a desk, for up to resendFor; it runs on a goroutine of its
// own (the prompt stays free) and ends with ctx. The echo shows through
// the stream as for any input.
func (r *repl) resend(ctx context.Context, in hub.Input) {
	giveUp := time.Now().Add(resendFor)
	for try := 0; ; try++ {
		t := time.NewTimer(min(5*time.Second, time.Second<<try))
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		res, err := r.s.Submit(ctx, in)
		if deskRefused(err) && time.Now().Before(giveUp) {
			continue
		}
		if ctx.Err() == nil {
			r.answered(res, err)
		}
		return
	}
}

// answered prints what the terminal needs to know of a submitted input's
// answer: a refusal, busy, queued (the echo itself comes in the stream).
func (r *repl) answered(res hub.Result, err error) {
	switch {
	case err != nil:
		r.p.say("not sent: " + errText(err))
	case res.Outcome == hub.Rejected:
		r.p.say(r.p.o.style(bold, "busy: ") + res.Busy.Message)
	case res.Outcome == hub.Queued:
		r.p.say(r.p.o.style(dim, res.Busy.Message))
	}
}

// errText says what went wrong in a line for the terminal: a storage
// fault by its code (the one the web and the API show) and its sentence.
func errText(err error) string {
	var se *hub.StorageError
	if errors.As(err, &se) {
		return se.Code + ": " + se.Message()
	}
	return err.Error()
}

// ANSI styles.
const (
	dim  = "\x1b[2m"
	bold = "\x1b[1m"
)

// marked shows a search snippet's «marked» words in bold when colour is
// on.
func (o Options) marked(snippet string) string {
	if !o.Color {
		return snippet
	}
	return strings.NewReplacer("«", bold, "»", "\x1b[0m").Replace(snippet)
}

func (o Options) style(code, s string) string {
	if !o.Color {
		return s
	}
	return code + s + "\x1b[0m"
}

// terminalFuncs makes readline's terminal handling follow the streams we
// were given, not the process's fds 0 and 1 (the library's default): a
// reader that is no file is never a terminal.
func terminalFuncs(cfg *readline.Config, o Options) {
	cfg.FuncIsTerminal = func() bool { return false }
	f, ok := o.Stdin.(*os.File)
	if !ok {
		return
	}
	fd := int(f.Fd())
	var saved *term.State
	cfg.FuncIsTerminal = func() bool { return term.IsTerminal(fd) }
	cfg.FuncMakeRaw = func() (err error) { saved, err = term.MakeRaw(fd); return err }
	cfg.FuncExitRaw = func() error {
		if saved == nil {
			return nil
		}
		return term.Restore(fd, saved)
	}
	out := fd
	if of, ok := o.Stdout.(*os.File); ok {
		out = int(of.Fd())
	}
	cfg.FuncGetSize = func() (int, int) {
		w, h, err := term.GetSize(out)
		if err != nil || w <= 0 || h <= 0 {
			return 80, 24 // a pty nobody sized: assume the classic terminal
		}
		return w, h
	}
}

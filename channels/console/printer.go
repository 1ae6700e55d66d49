package console

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"github.com/frontdesk-hq/frontdesk/event"
	"github.com/frontdesk-hq/frontdesk/hub"
)

// printer renders session events as terminal lines. The printer goroutine
// and Run's goroutine both print: say and show take mu; the lower-case
// helpers expect it held.
type printer struct {
	mu sync.Mutex
	w  io.Writer
	o  Options

	// scr, if set, is the terminal through readline: the row a reply is
	// being streamed on is readline's prompt (see stream). Nil: a reply's
	// words are written as they come (not a terminal; tests).
	scr *screen
	// prompt is the prompt typed lines follow.
	prompt string
	// size is the terminal's width and height.
	size func() (int, int)

	streaming string // turn whose reply is being streamed on the current line
	partial   string // with scr: the streamed line so far, shown as the prompt
	cut       string // turn whose streamed line Ctrl-C ended (its reply is on screen)
	lastSeq   int64
	queued    map[string]string // waiting inputs' labels by turn, for their start
	// Status and delta frames carry no seq. transient counts those printed
	// since the last seq; a resubscription from lastSeq replays them, and
	// skip drops that many again.
	transient, skip int
	// unlogged is the turn whose turn_end came without a seq (the chat log
	// owed it: a full disk); its copy with a seq, once written, is not
	// printed again.
	unlogged string
}

// write writes s with every newline as CR LF: while readline shows the
// prompt the terminal is in raw mode, where a bare LF does not return the
// cursor to the first column.
func (p *printer) write(s string) { _, _ = io.WriteString(p.w, crlf.Replace(s)) }

var crlf = strings.NewReplacer("\r\n", "\r\n", "\n", "\r\n")

// say prints a line of the console's own.
func (p *printer) say(s string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.line(s)
}

// show prints an event from /history or /search.
func (p *printer) show(e event.Event) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.historyLine(e)
}

// line prints s on a line of its own, ending a streamed line first. The
// leading CR matters after Enter: readline leaves the cursor on the next
// row but not in its first column.
func (p *printer) line(s string) {
	if p.streaming != "" {
		p.endStream()
	}
	p.write("\r" + s + "\n")
}

// startStream begins a reply's line.
func (p *printer) startStream(turn string) {
	if p.streaming != "" {
		p.endStream()
	}
	p.streaming = turn
	label := p.o.style(bold, "assistant› ")
	if p.scr == nil {
		p.write(label)
		return
	}
	p.partial = label
	p.showStream()
}

// delta adds streamed words to the reply's line.
//
// On a terminal the line being streamed is readline's prompt (with what
// was typed meanwhile after it), and only finished lines are written
// above it: readline measures its prompt by display width and wraps it
// as the terminal does, so it erases and redraws exactly what is on the
// screen. Text written through readline without a newline at its end
// would be measured by its count of runes, and the cursor taken to the
// next row as soon as a row is full, where a terminal keeps it in the
// last column until the next character (a pending wrap): a reply ending
// at the right margin, or holding wide characters, was partly erased by
// the next redraw.
func (p *printer) delta(text string) {
	if p.scr == nil {
		p.write(text)
		return
	}
	p.partial += streamText(text)
	p.showStream()
}

// showStream writes the streamed reply's finished lines and makes the
// rest readline's prompt.
func (p *printer) showStream() {
	var done string
	if i := strings.LastIndexByte(p.partial, '\n'); i >= 0 {
		done, p.partial = p.partial[:i+1], p.partial[i+1:]
	}
	// A prompt taller than the screen cannot be redrawn in place: a long
	// paragraph is ended at a space while it is well within it (wide
	// characters take two columns, hence runes × 2).
	if w, h := p.size(); utf8.RuneCountInString(p.partial)*2 > w*max(h/2, 2) {
		i := strings.LastIndexByte(p.partial, ' ')
		if i <= 0 {
			i = len(p.partial)
		}
		done += p.partial[:i] + "\n"
		p.partial = strings.TrimPrefix(p.partial[i:], " ")
	}
	if done == "" {
		done = "\x1b[0m" // writes nothing, for readline to redraw
	}
	p.scr.setPrompt([]byte(crlf.Replace(done)), p.partial, "")
}

// streamText is streamed text as it can be shown in the prompt: no
// control characters but newlines, tabs as spaces (readline counts a tab
// as four columns, a terminal moves to the next multiple of eight).
func streamText(s string) string {
	s = strings.ReplaceAll(s, "\t", "    ")
	return strings.Map(func(r rune) rune {
		if r != '\n' && (unicode.IsControl(r) || r == '\u2028' || r == '\u2029') {
			return -1
		}
		return r
	}, s)
}

// endStream ends the streamed line and brings the prompt back below it.
func (p *printer) endStream() {
	p.streaming = ""
	if p.scr == nil {
		p.write("\n")
		return
	}
	line := p.partial + "\n"
	if p.partial == "" {
		line = "\r" // the row is empty: the last line ended with a newline
	}
	p.partial = ""
	p.scr.setPrompt([]byte(crlf.Replace(line)), p.prompt, "^C")
}

// interrupted is called when Ctrl-C ended readline's line: during a
// streamed reply that line was the reply's own, now ended (readline drew
// it last, and leaves it on the screen).
func (p *printer) interrupted() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.streaming != "" {
		p.cut = p.streaming
		p.streaming, p.partial = "", ""
		if p.scr != nil {
			p.scr.setPrompt([]byte("\r"), p.prompt, "^C")
			return
		}
	}
	p.write("\r")
}

// entered is called when Enter ended readline's line: readline ends it
// with a bare LF (raw mode), which leaves the cursor in the column where
// the line ended. Back to the first column, where readline then draws
// the prompt: output that starts a row then starts there too.
//
// During a streamed reply the line Enter ended was the reply's, with what
// was typed after it: it stays, and the reply goes on on the next row.
func (p *printer) entered() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.streaming != "" && p.scr != nil {
		p.partial = ""
		p.scr.setPrompt([]byte("\r"), "", "")
		return
	}
	p.write("\r")
}

func (p *printer) welcome(snap hub.Snapshot) {
	p.mu.Lock()
	defer p.mu.Unlock()
	c := snap.Connected
	p.line(p.o.style(dim, fmt.Sprintf("frontdesk console — session %s, generation %d. /help for commands.", c.SessionID, c.Generation)))
	// A little context: the last few exchanges, with the marks of what
	// happened to them (a reset, a cancel, an interruption).
	var recent []event.Event
	for _, f := range snap.Replay {
		if welcomeLine(f.Event) {
			recent = append(recent, f.Event)
		}
	}
	if len(recent) > 8 {
		recent = recent[len(recent)-8:]
	}
	for _, e := range recent {
		p.historyLine(e)
	}
	p.lastSeq = snap.Synced.LastSeq
	if c.Busy {
		p.line(p.o.style(dim, "… the assistant is working on a reply"))
	}
}

// welcomeLine says whether e is shown in the welcome's context: the
// messages, resets, notices (a cancel's says who and when) and turns that
// did not complete for another reason.
func welcomeLine(e event.Event) bool {
	switch e.Type {
	case event.User, event.Assistant, event.Reset, event.Notice:
		return true
	case event.TurnEnd:
		st := decode[event.TurnEndData](e).Status
		return st == event.StatusInterrupted || st == event.StatusError
	}
	return false
}

// follow prints the live stream until ctx ends or the hub stops; a slow
// consumer drop resubscribes from the last event printed.
func (p *printer) follow(ctx context.Context, s Session, sub *hub.Subscription) {
	for {
		for {
			f, ok := sub.Next(ctx)
			if !ok {
				break
			}
			p.mu.Lock()
			p.event(f.Event)
			p.mu.Unlock()
		}
		if ctx.Err() != nil {
			sub.Close()
			return
		}
		if !errors.Is(sub.Err(), hub.ErrSlowConsumer) {
			return
		}
		var snap hub.Snapshot
		var err error
		if sub, snap, err = s.Subscribe(ctx, p.lastSeq); err != nil {
			return
		}
		p.mu.Lock()
		p.replay(snap.Replay)
		p.mu.Unlock()
	}
}

// replay prints a resubscription's replay (from lastSeq): the status and
// delta frames printed since the last seq come again and are skipped.
func (p *printer) replay(frames []*hub.Frame) {
	p.skip, p.transient = p.transient, 0
	for _, f := range frames {
		p.event(f.Event)
	}
}

func decode[T any](e event.Event) T {
	var v T
	_ = e.Decode(&v)
	return v
}

func label(channel, from string) string {
	if from != "" {
		return channel + " " + from
	}
	return channel
}

// who names a person at a door: "Ann · web" (the person's name, or their
// id), or just door for an event without a person (an unmapped sender, a
// log of an earlier version) or without Options.Names.
func (p *printer) who(door, person string) string {
	if person == "" || p.o.Names == nil {
		return door
	}
	return p.name(person) + " · " + door
}

// name is a person's display name (Options.Names), else their id.
func (p *printer) name(person string) string {
	if p.o.Names != nil && p.o.Names(person) != "" {
		return p.o.Names(person)
	}
	return person
}

// event prints one live event.
func (p *printer) event(e event.Event) {
	if e.Seq > 0 {
		if e.Seq <= p.lastSeq {
			return
		}
		p.lastSeq = e.Seq
		p.transient, p.skip = 0, 0
	} else if e.Type == event.Status || e.Type == event.Delta {
		p.transient++
		if p.skip > 0 {
			p.skip--
			return // printed before the resubscription
		}
	}
	if p.erasure(e) {
		return
	}
	switch e.Type {
	case event.User:
		p.user(e)
	case event.TurnStart:
		who, ok := p.queued[e.Turn]
		delete(p.queued, e.Turn)
		if !ok {
			who = "a queued message"
		}
		p.line(p.o.style(dim, "▶ now answering the queued message from "+who))
	case event.Status:
		if p.streaming == "" {
			p.line(p.o.style(dim, "… "+decode[event.TextData](e).Text))
		}
	case event.Delta:
		if p.cut == e.Turn {
			return // Ctrl-C ended its line; the cancel follows
		}
		if p.streaming != e.Turn {
			p.startStream(e.Turn)
		}
		p.delta(decode[event.TextData](e).Text)
	case event.Assistant:
		d := decode[event.AssistantData](e)
		if p.streaming == e.Turn {
			p.endStream() // it was streamed already
			return
		}
		if p.cut == e.Turn {
			return // streamed up to where Ctrl-C cut it
		}
		p.line(p.o.style(bold, "assistant› ") + d.Content)
	case event.ToolCall:
		d := decode[event.ToolCallData](e)
		p.line(p.o.style(dim, fmt.Sprintf("⚙ %s %s", d.Name, clip(string(d.Args), 120))))
	case event.ToolResult:
		d := decode[event.ToolResultData](e)
		if d.Error != "" {
			p.line(p.o.style(dim, "  ✗ "+clip(d.Error, 160)))
		} else {
			p.line(p.o.style(dim, "  → "+clip(d.Output, 160)))
		}
	case event.TurnEnd:
		p.turnEnd(e)
	case event.ApprovalRequest:
		p.approvalLine(decode[event.ApprovalRequestData](e))
	case event.ApprovalResult, event.Notice, event.Reset, event.MemoryChanged:
		p.change(e)
	}
}

// change prints what someone did — an approval's answer, a notice (a
// cancel), a reset, a memory change — naming who and from which door.
func (p *printer) change(e event.Event) {
	switch e.Type {
	case event.ApprovalResult:
		d := decode[event.ApprovalResultData](e)
		word := "approved"
		if d.Decision != event.Approve {
			word = "denied"
		}
		p.line(p.o.style(dim, fmt.Sprintf("[%s] %s (by %s)", d.ID, word, p.who(d.By, d.Person))))
	case event.Notice:
		d := decode[event.TextData](e)
		if d.Person != "" {
			d.Text += " (" + p.who(d.By, d.Person) + ")"
		}
		p.line(p.o.style(dim, d.Text))
	case event.Reset:
		d := decode[event.ResetData](e)
		reason := d.Reason
		if d.Person != "" {
			reason += ", by " + p.name(d.Person)
		}
		p.line(fmt.Sprintf("— conversation reset (%s): memory consolidated, kept the last %d exchanges —", reason, d.Kept))
	case event.MemoryChanged:
		d := decode[event.MemoryChangedData](e)
		d.By = p.who(d.By, d.Person)
		p.line(p.o.style(dim, memoryLine(d)))
	}
}

// erasure prints an erased event, or an erased message's tombstone (a
// replay), as "#12 message erased (by web)", and reports whether e was one.
func (p *printer) erasure(e event.Event) bool {
	switch {
	case e.Type == event.Erased:
		d := decode[event.ErasedData](e)
		p.line(p.o.style(dim, fmt.Sprintf("#%d %s", d.Seq, erasedNote(p.who(d.By, d.Person)))))
	case (e.Type == event.User || e.Type == event.Assistant) && event.IsTombstone(e):
		p.line(p.o.style(dim, fmt.Sprintf("#%d %s", e.Seq, erasedNote(decode[event.TombstoneData](e).By))))
	default:
		return false
	}
	return true
}

// erasedNote is what stands in place of an erased message.
func erasedNote(by string) string {
	return "message erased (by " + by + ")"
}

// approvalLine shows a tool call that waits for a person: its id, the
// tool, and what it would do — the server's words when it has them (a
// memory tool's item text), else the call's arguments.
func (p *printer) approvalLine(d event.ApprovalRequestData) {
	what := string(d.Args)
	if d.Text != "" {
		what = "— " + d.Text
	}
	p.line(p.o.style(bold, fmt.Sprintf("approval needed [%s]: ", d.ID)) + fmt.Sprintf("%s %s — /approve %s or /deny %s", d.Tool, clip(what, 200), d.ID, d.ID))
}

// memoryLine tells a change to the long-term memory made at any door:
// "memory: saved m-… by agent: “…”" (a forgotten item's text is gone).
func memoryLine(d event.MemoryChangedData) string {
	s := fmt.Sprintf("memory: %s %s by %s", d.Action, d.ID, d.By)
	if d.Text != "" && d.Action != event.MemoryDeleted {
		s += ": “" + clip(d.Text, 120) + "”"
	}
	return s
}

// user prints a user event typed elsewhere (a queued one at once, and
// again when it starts).
func (p *printer) user(e event.Event) {
	d := decode[event.UserData](e)
	if d.Queued {
		// Recorded now, run later: shown at once, and again when it starts.
		if p.queued == nil {
			p.queued = map[string]string{}
		}
		p.queued[e.Turn] = p.who(label(d.Channel, d.From), d.Person)
		if d.Channel == event.ChannelConsole {
			return // typed here; send said it waits
		}
		p.line(p.o.style(bold, "[queued] "+p.who(label(d.Channel, d.From), d.Person)+": ") + userText(d))
		return
	}
	if d.Channel == event.ChannelConsole {
		return // typed here: it is on the screen already
	}
	p.line(p.o.style(bold, "["+p.who(label(d.Channel, d.From), d.Person)+"] ") + userText(d))
}

// userText is what a user event says: its words, and the names of the
// files sent with it ("2 files: chart.png, notes.pdf"; alone for a
// message of files only).
func userText(d event.UserData) string {
	n := len(d.Attachments)
	if n == 0 {
		return d.Content
	}
	names := make([]string, n)
	for i, a := range d.Attachments {
		names[i] = stripControl(a.Name)
	}
	files := fmt.Sprintf("%d files: %s", n, strings.Join(names, ", "))
	if n == 1 {
		files = "1 file: " + names[0]
	}
	if strings.TrimSpace(d.Content) == "" {
		return files
	}
	return d.Content + " (" + files + ")"
}

// turnEnd closes a turn's output and says how it ended, unless completed.
func (p *printer) turnEnd(e event.Event) {
	d := decode[event.TurnEndData](e)
	if e.Seq == 0 {
		p.unlogged = e.Turn
	} else if p.unlogged == e.Turn {
		p.unlogged = ""
		return // shown when it happened; now it is on disk too
	}
	if p.streaming == e.Turn {
		p.endStream()
	}
	if p.cut == e.Turn {
		p.cut = ""
	}
	delete(p.queued, e.Turn)
	switch d.Status {
	case event.StatusError:
		p.line("[error] " + d.Error)
	case event.StatusInterrupted:
		// The reason is the log's: the same words on every node.
		p.line(p.o.style(dim, strings.TrimSpace("[interrupted] "+d.Error)))
	}
}

// historyLine prints an event from /history or the welcome context.
func (p *printer) historyLine(e event.Event) {
	ts := e.TS.Std().Local().Format("15:04")
	if e.Type == event.User || e.Type == event.Assistant {
		ts += fmt.Sprintf(" #%d", e.Seq) // what /erase takes
		if event.IsTombstone(e) {
			p.line(p.o.style(dim, ts+" "+erasedNote(decode[event.TombstoneData](e).By)))
			return
		}
	}
	switch e.Type {
	case event.User:
		d := decode[event.UserData](e)
		mark := ""
		if d.Queued {
			mark = "[queued] "
		}
		p.line(p.o.style(dim, ts+" ") + p.o.style(bold, mark+"["+label(d.Channel, d.From)+"] ") + userText(d))
	case event.Assistant:
		p.line(p.o.style(dim, ts+" ") + p.o.style(bold, "assistant› ") + decode[event.AssistantData](e).Content)
	case event.TurnEnd:
		if d := decode[event.TurnEndData](e); d.Status != event.StatusCompleted {
			p.line(p.o.style(dim, ts+" ["+d.Status+"] "+d.Error))
		}
	case event.Notice:
		p.line(p.o.style(dim, ts+" "+decode[event.TextData](e).Text))
	case event.Reset:
		d := decode[event.ResetData](e)
		p.line(p.o.style(dim, fmt.Sprintf("%s — reset (%s), kept %d —", ts, d.Reason, d.Kept)))
	}
}

func clip(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n]) + "…"
	}
	return s
}

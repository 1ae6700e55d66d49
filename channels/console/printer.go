package console

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"

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

	// prompt hides readline's prompt while a reply streams (true) and
	// shows it again; nil: nothing to hide (tests).
	prompt func(hide bool)

	streaming string // turn whose reply is being streamed on the current line
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

// startStream begins a reply's line: the prompt is hidden until it ends,
// so it is not drawn after the streamed words.
func (p *printer) startStream(turn string) {
	if p.streaming != "" {
		p.endStream()
	}
	if p.prompt != nil {
		p.prompt(true)
	}
	p.streaming = turn
	p.write(p.o.style(bold, "assistant› "))
}

// endStream ends the streamed line and brings the prompt back below it.
func (p *printer) endStream() {
	if p.prompt != nil {
		p.prompt(false) // before the write: readline redraws after it
	}
	p.write("\n")
	p.streaming = ""
}

// interrupted is called when Ctrl-C ended readline's line: during a
// streamed reply that line was the reply's own, now ended.
func (p *printer) interrupted() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.streaming != "" {
		p.cut = p.streaming
		p.streaming = ""
		if p.prompt != nil {
			p.prompt(false)
		}
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
		p.write(decode[event.TextData](e).Text)
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
		d := decode[event.ApprovalRequestData](e)
		p.line(p.o.style(bold, fmt.Sprintf("approval needed [%s]: ", d.ID)) + fmt.Sprintf("%s %s — /approve %s or /deny %s", d.Tool, clip(string(d.Args), 200), d.ID, d.ID))
	case event.ApprovalResult:
		d := decode[event.ApprovalResultData](e)
		word := "approved"
		if d.Decision != event.Approve {
			word = "denied"
		}
		p.line(p.o.style(dim, fmt.Sprintf("[%s] %s (%s)", d.ID, word, d.By)))
	case event.Notice:
		p.line(p.o.style(dim, decode[event.TextData](e).Text))
	case event.Reset:
		d := decode[event.ResetData](e)
		p.line(fmt.Sprintf("— conversation reset (%s): memory consolidated, kept the last %d exchanges —", d.Reason, d.Kept))
	}
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
		p.queued[e.Turn] = label(d.Channel, d.From)
		if d.Channel == event.ChannelConsole {
			return // typed here; send said it waits
		}
		p.line(p.o.style(bold, "[queued] "+label(d.Channel, d.From)+": ") + d.Content)
		return
	}
	if d.Channel == event.ChannelConsole {
		return // typed here: it is on the screen already
	}
	p.line(p.o.style(bold, "["+label(d.Channel, d.From)+"] ") + d.Content)
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
		p.line(p.o.style(dim, "[interrupted]"))
	}
}

// historyLine prints an event from /history or the welcome context.
func (p *printer) historyLine(e event.Event) {
	ts := e.TS.Std().Local().Format("15:04")
	switch e.Type {
	case event.User:
		d := decode[event.UserData](e)
		mark := ""
		if d.Queued {
			mark = "[queued] "
		}
		p.line(p.o.style(dim, ts+" ") + p.o.style(bold, mark+"["+label(d.Channel, d.From)+"] ") + d.Content)
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

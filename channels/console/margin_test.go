package console

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/creack/pty"

	"github.com/frontdesk-hq/frontdesk/agent"
	"github.com/frontdesk-hq/frontdesk/event"
	"github.com/frontdesk-hq/frontdesk/history"
	"github.com/frontdesk-hq/frontdesk/hub"
	"github.com/frontdesk-hq/frontdesk/internal/testkit/vtscreen"
)

// sized answers "go <n> <tag>" with a reply exactly n columns wide that
// starts with tag, streamed a word at a time as real backends do, and
// "mark <k>" with "ok <k>".
type sized struct{}

func (sized) Run(ctx context.Context, req agent.Request, emit agent.Emitter) (agent.Reply, error) {
	f := strings.Fields(req.Content)
	if len(f) == 2 && f[0] == "mark" {
		emit(event.Delta, event.TextData{Text: "ok " + f[1]})
		return agent.Reply{Content: "ok " + f[1]}, nil
	}
	n, _ := strconv.Atoi(f[1])
	reply := sizedReply(n, f[2])
	for _, w := range strings.SplitAfter(reply, " ") {
		emit(event.Delta, event.TextData{Text: w})
	}
	return agent.Reply{Content: reply}, nil
}

// sizedReply is tag followed by words of varied lengths, n columns in all.
func sizedReply(n int, tag string) string {
	b := []byte(tag)
	for i := 0; len(b) < n; i++ {
		b = append(b, ' ')
		for range 2 + i*3%6 {
			b = append(b, byte('a'+i%26))
		}
	}
	b = b[:n]
	if b[n-1] == ' ' {
		b[n-1] = '.'
	}
	return string(b)
}

// ptyREPL is the REPL running in a pseudo-terminal of a given width, its
// output shown on a VT screen that answers readline's cursor queries.
type ptyREPL struct {
	t      *testing.T
	m      *hub.SessionManager
	tty    *os.File // the terminal side: what a person types into
	mu     sync.Mutex
	vt     *vtscreen.Screen
	raw    []byte
	more   chan struct{}
	events *hub.Subscription
}

func startPtyREPL(t *testing.T, ctx context.Context, width int) *ptyREPL {
	t.Helper()
	dir := t.TempDir()
	lg, err := history.Open(history.Options{Path: filepath.Join(dir, "chat_history.ndjson"), RotateMB: 5})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { lg.Close() })
	m := hub.New(hub.Config{DataDir: dir, Logger: slog.New(slog.DiscardHandler)}, lg, sized{})
	ctx, cancel := context.WithCancel(ctx)
	hubDone := make(chan struct{})
	go func() { defer close(hubDone); m.Run(ctx) }()

	ptm, tty, err := pty.Open()
	if err != nil {
		t.Fatal(err)
	}
	if err := pty.Setsize(ptm, &pty.Winsize{Cols: uint16(width), Rows: 40}); err != nil {
		t.Fatal(err)
	}
	events, _, err := m.Subscribe(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	r := &ptyREPL{t: t, m: m, tty: ptm, vt: vtscreen.New(width, 40), more: make(chan struct{}, 1), events: events}
	pumped := make(chan struct{})
	go func() {
		defer close(pumped)
		buf := make([]byte, 4096)
		for {
			n, err := ptm.Read(buf)
			r.mu.Lock()
			answer := r.vt.Feed(buf[:n])
			r.raw = append(r.raw, buf[:n]...)
			r.mu.Unlock()
			ptm.Write(answer)
			select {
			case r.more <- struct{}{}:
			default:
			}
			if err != nil {
				return
			}
		}
	}()
	replDone := make(chan error, 1)
	go func() { replDone <- Run(ctx, m, Options{Stdin: tty, Stdout: tty, Color: width%2 == 0}) }()
	t.Cleanup(func() {
		cancel()
		if err := <-replDone; err != nil {
			t.Error(err)
		}
		// Both ends are in blocking mode (Fd was called) and a read(2) in
		// progress holds its file open: a line (the terminal is back in
		// canonical mode) wakes readline's reader, which has stopped, so
		// that closing the terminal side ends the pump's read.
		ptm.Write([]byte("\n"))
		tty.Close()
		<-pumped
		ptm.Close()
		<-hubDone
	})
	return r
}

func (r *ptyREPL) screen() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.vt.String()
}

// waitUntil waits until ok holds for the screen and returns the screen.
func (r *ptyREPL) waitUntil(what string, ok func(string) bool) string {
	r.t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		s := r.screen()
		if ok(s) {
			return s
		}
		select {
		case <-r.more:
		case <-deadline:
			r.mu.Lock()
			raw := string(r.raw)
			r.mu.Unlock()
			r.t.Fatalf("no %s on the terminal within 10s; screen:\n%s\nraw: %q", what, s, raw)
		}
	}
}

// waitPrompt waits until the bottom line is the prompt followed by typed.
func (r *ptyREPL) waitPrompt(typed string) string {
	r.t.Helper()
	want := strings.TrimRight("you› "+typed, " ")
	return r.waitUntil("prompt "+want, func(s string) bool {
		return s[strings.LastIndexByte(s, '\n')+1:] == want
	})
}

// turnEnd waits for the next turn_end on the session.
func (r *ptyREPL) turnEnd(ctx context.Context) {
	r.t.Helper()
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	for {
		f, ok := r.events.Next(ctx)
		if !ok {
			r.t.Fatalf("session stream ended: %v", r.events.Err())
		}
		if f.Event.Type == event.TurnEnd {
			return
		}
	}
}

func (r *ptyREPL) submit(ctx context.Context, content string) {
	r.t.Helper()
	if _, err := r.m.Submit(ctx, hub.Input{Channel: "webhook", Content: content, Patient: true}); err != nil {
		r.t.Fatal(err)
	}
}

func (r *ptyREPL) typeText(s string) {
	r.t.Helper()
	if _, err := r.tty.Write([]byte(s)); err != nil {
		r.t.Fatal(err)
	}
}

// TestReplyAtTheRightMarginStaysOnScreen: a reply whose last row ends in
// the last columns of the terminal, or just past them, is still on the
// screen once the prompt is back below it — at widths from 20 to 140 (in
// colour at even widths), for a line typed here and for one from another
// door (with and without a half-typed line at the prompt).
func TestReplyAtTheRightMarginStaysOnScreen(t *testing.T) {
	ctx := context.Background()
	// Every width to 40, then every third and every tenth (every width
	// found nothing more, and took 20 s).
	for width := 20; width <= 140; width++ {
		if width > 40 && width%3 != 1 && width%10 != 0 {
			continue
		}
		t.Run(strconv.Itoa(width), func(t *testing.T) { marginReplies(t, ctx, width) })
	}
}

func marginReplies(t *testing.T, ctx context.Context, width int) {
	prefix := len([]rune("assistant› "))
	r := startPtyREPL(t, ctx, width)
	r.waitPrompt("")
	k := 0
	for rows := 0; rows < 2; rows++ {
		for end := width - 3; end <= width+1; end++ {
			for _, door := range []string{"typed", "webhook", "webhook, half-typed"} {
				k++
				n := rows*width + end - prefix
				tag := fmt.Sprintf("%d.%d", width, k)
				reply := sizedReply(n, tag)
				half := ""
				switch door {
				case "typed":
					r.typeText(fmt.Sprintf("go %d %s\r", n, tag))
				case "webhook, half-typed":
					half = "half"
					r.typeText(half)
					r.waitPrompt(half)
					fallthrough
				default:
					r.submit(ctx, fmt.Sprintf("go %d %s", n, tag))
				}
				r.turnEnd(ctx)
				// Something after it: once it is shown, the reply's
				// own redraws are over.
				r.submit(ctx, fmt.Sprintf("mark %d", k))
				r.turnEnd(ctx)
				mark := fmt.Sprintf("assistant› ok %d\n", k)
				scr := r.waitUntil(mark, func(s string) bool {
					return strings.Contains(s, mark) && strings.HasSuffix(s, strings.TrimRight("\nyou› "+half, " "))
				})
				if !strings.Contains(scr, "\nassistant› "+reply+"\n") {
					t.Fatalf("width %d, reply ending in column %d (%s): the reply is not on the screen whole:\n%s", width, end, door, scr)
				}
				if half != "" {
					r.typeText("\x15") // Ctrl-U: clear the half-typed line
					r.waitPrompt("")
				}
			}
		}
	}
}

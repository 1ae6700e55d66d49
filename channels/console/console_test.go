package console

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/frontdesk-hq/frontdesk/event"
	"github.com/frontdesk-hq/frontdesk/history"
	"github.com/frontdesk-hq/frontdesk/hub"
	"github.com/frontdesk-hq/frontdesk/internal/testkit/testagent"
	"github.com/frontdesk-hq/frontdesk/internal/testkit/testdisk"
)

// syncBuffer is an io.Writer the REPL's goroutines may share; a test
// waits on it for what the terminal shows.
type syncBuffer struct {
	mu      sync.Mutex
	b       bytes.Buffer
	written chan struct{} // closed at the next Write
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.written != nil {
		close(s.written)
		s.written = nil
	}
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// waitFor waits until want has been written at least n times, failing
// after 10 s.
func (s *syncBuffer) waitFor(t *testing.T, want string, n int) {
	t.Helper()
	deadline := time.NewTimer(10 * time.Second)
	defer deadline.Stop()
	for {
		s.mu.Lock()
		if strings.Count(s.b.String(), want) >= n {
			s.mu.Unlock()
			return
		}
		if s.written == nil {
			s.written = make(chan struct{})
		}
		written := s.written
		s.mu.Unlock()
		select {
		case <-written:
		case <-deadline.C:
			t.Fatalf("the terminal never showed %q %d times:\n%s", want, n, s.String())
		}
	}
}

// replRun is a hub and the REPL on it: typed is its stdin, out what it
// shows, repl its result once stdin is closed.
type replRun struct {
	ctx   context.Context
	typed *io.PipeWriter
	out   *syncBuffer
	repl  chan error
}

// runREPL runs m and the REPL on it; stop ends the hub (call it before
// closing m's chat log).
func runREPL(m *hub.SessionManager) (*replRun, func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); m.Run(ctx) }()
	in, typed := io.Pipe()
	r := &replRun{ctx: ctx, typed: typed, out: &syncBuffer{}, repl: make(chan error, 1)}
	go func() { r.repl <- Run(ctx, m, Options{Stdin: in, Stdout: r.out}) }()
	return r, func() { cancel(); <-done }
}

// TestStorageFaultIsPrinted: on a data directory that takes no writes, a
// typed line and /reset are answered with the storage code the web and
// the API show.
func TestStorageFaultIsPrinted(t *testing.T) {
	disk := testdisk.New(t)
	code := hub.StorageFailed
	if disk.Full {
		code = hub.StorageFull
	}
	lg, err := history.Open(history.Options{Path: filepath.Join(disk.Dir, "chat_history.ndjson"), RotateMB: 5})
	if err != nil {
		t.Fatal(err)
	}
	defer lg.Close()
	m := hub.New(hub.Config{DataDir: disk.Dir, Logger: slog.New(slog.DiscardHandler)}, lg, &testagent.Count{N: 1})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); m.Run(ctx) }()
	defer func() { cancel(); <-done }()
	if _, err := m.Info(ctx); err != nil { // the session file is written
		t.Fatal(err)
	}
	disk.Fail()

	big := strings.Repeat("a long message ", 600) // over a tmpfs page
	var out syncBuffer
	if err := Run(ctx, m, Options{Stdin: strings.NewReader(big + "\n/reset\n"), Stdout: &out}); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	for _, want := range []string{"not sent: " + code + ": ", "reset failed: " + code + ": "} {
		if !strings.Contains(got, want) {
			t.Errorf("the REPL printed no %q:\n%s", want, got)
		}
	}
	if info, _ := m.Info(ctx); info.LastSeq != 0 {
		t.Errorf("last seq %d: something was recorded", info.LastSeq)
	}
}

// The printer resumes without printing twice: status and delta frames
// carry no seq, and a resubscription from the last seq replays those it
// printed already; a turn_end shown without a seq (the log owed it) is
// not printed again when it comes with its seq.
func TestPrinterResumesWithoutRepeats(t *testing.T) {
	var out syncBuffer
	p := &printer{w: &out, queued: map[string]string{}}
	ev := func(seq int64, typ event.Type, data any) event.Event {
		e := event.New(typ, "t1", time.Now(), data)
		e.Seq = seq
		return e
	}
	frames := func(evs ...event.Event) []*hub.Frame {
		var fs []*hub.Frame
		for _, e := range evs {
			fs = append(fs, &hub.Frame{Event: e})
		}
		return fs
	}
	p.event(ev(1, event.User, event.UserData{Channel: "web", Content: "hi"}))
	p.event(ev(0, event.Delta, event.TextData{Text: "alpha "}))
	p.event(ev(0, event.Delta, event.TextData{Text: "beta "}))
	p.replay(frames(ev(0, event.Delta, event.TextData{Text: "alpha "}), ev(0, event.Delta, event.TextData{Text: "beta "}),
		ev(0, event.Delta, event.TextData{Text: "gamma "})))
	end := event.TurnEndData{Status: event.StatusError, Code: hub.StorageFull, Error: "the disk is full"}
	p.event(ev(0, event.TurnEnd, end))
	p.event(ev(2, event.TurnEnd, end))
	got := out.String()
	for _, w := range []string{"alpha ", "beta ", "gamma ", "the disk is full"} {
		if n := strings.Count(got, w); n != 1 {
			t.Errorf("%q printed %d times, want once:\n%s", w, n, got)
		}
	}
}

// TestHelpAndREADMEListEveryCommand: each command /help lists is in the
// table of terminal commands in docs/terminal.md, and /approve and /deny are there.
func TestHelpAndREADMEListEveryCommand(t *testing.T) {
	readme, err := os.ReadFile("../../docs/terminal.md")
	if err != nil {
		t.Fatal(err)
	}
	var cmds []string
	for _, l := range strings.Split(help, "\n") {
		if f := strings.Fields(l); len(f) > 0 && strings.HasPrefix(l, "  /") {
			cmds = append(cmds, f[0])
		}
	}
	if !slices.Contains(cmds, "/approve") || !slices.Contains(cmds, "/deny") {
		t.Errorf("/help lacks /approve or /deny: %v", cmds)
	}
	for _, c := range cmds {
		if c == "/help" || c == "/quit" {
			continue // "| `/help` |", "| Ctrl-D, `/quit` |"
		}
		if !strings.Contains(string(readme), "| `"+c) {
			t.Errorf("docs/terminal.md's table has no row for %s", c)
		}
	}
}

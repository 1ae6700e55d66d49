package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/creack/pty"

	"github.com/frontdesk-hq/frontdesk/event"
	"github.com/frontdesk-hq/frontdesk/history"
	"github.com/frontdesk-hq/frontdesk/internal/testkit/testio"
	"github.com/frontdesk-hq/frontdesk/internal/testkit/vtscreen"
)

// term is the frontdesk binary running in a pseudo-terminal, as an
// operator would run it. It answers readline's cursor-position queries.
type term struct {
	t    *testing.T
	cmd  *exec.Cmd
	pty  *os.File
	mu   sync.Mutex
	out  bytes.Buffer // everything the terminal showed
	more chan struct{}
	done chan error
	eof  chan struct{} // closed when everything the program wrote has been read
}

func startInPty(t *testing.T, args ...string) *term {
	t.Helper()
	return startInPtyDir(t, t.TempDir(), args...)
}

// startInPtyDir is startInPty in the working directory dir.
func startInPtyDir(t *testing.T, dir string, args ...string) *term {
	t.Helper()
	cmd := exec.Command(binary, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "NO_COLOR=1", "TERM=xterm")
	f, err := pty.StartWithSize(cmd, &pty.Winsize{Rows: 40, Cols: 160})
	if err != nil {
		t.Fatal(err)
	}
	tm := &term{t: t, cmd: cmd, pty: f, more: make(chan struct{}, 1), done: make(chan error, 1), eof: make(chan struct{})}
	go tm.pump()
	go func() { tm.done <- cmd.Wait() }()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-tm.done
		f.Close()
	})
	return tm
}

func (tm *term) pump() {
	defer close(tm.eof)
	buf := make([]byte, 4096)
	vt := vtscreen.New(160, 40) // the pty's size; follows the output to answer cursor queries
	for {
		n, err := tm.pty.Read(buf)
		if n > 0 {
			chunk := buf[:n]
			// readline asks where the cursor is (before it draws its
			// prompt, so as not to draw over text already on the row); a
			// terminal answers with where the cursor really is.
			if answer := vt.Feed(chunk); len(answer) > 0 {
				tm.pty.Write(answer)
			}
			tm.mu.Lock()
			tm.out.Write(chunk)
			tm.mu.Unlock()
			select {
			case tm.more <- struct{}{}:
			default:
			}
		}
		if err != nil {
			return
		}
	}
}

// exited waits for the program to exit and for the last of its output to
// be read (the pump may lag behind the exit): then screen is final.
func (tm *term) exited() error {
	tm.t.Helper()
	err := <-tm.done
	tm.done <- err
	select {
	case <-tm.eof:
	case <-time.After(5 * time.Second):
		tm.t.Fatal("the terminal's output did not end within 5 s of the exit")
	}
	return err
}

// screen is what the terminal shows now (all lines, scrollback included).
func (tm *term) screen() string {
	tm.mu.Lock()
	b := append([]byte(nil), tm.out.Bytes()...)
	tm.mu.Unlock()
	vt := vtscreen.New(160, 40)
	vt.Write(b)
	return vt.String()
}

// waitFor waits until the screen matches re at least n times and returns
// the screen.
func (tm *term) waitFor(re string, n int) string {
	tm.t.Helper()
	rx := regexp.MustCompile(re)
	return tm.waitUntil(re, func(s string) bool { return len(rx.FindAllStringIndex(s, -1)) >= n })
}

// waitPrompt waits until the bottom line is the prompt followed by typed.
func (tm *term) waitPrompt(typed string) string {
	tm.t.Helper()
	want := strings.TrimRight("you› "+typed, " ")
	return tm.waitUntil("prompt "+want, func(s string) bool {
		lines := strings.Split(s, "\n")
		return lines[len(lines)-1] == want
	})
}

func (tm *term) waitUntil(what string, ok func(string) bool) string {
	tm.t.Helper()
	deadline := time.After(15 * time.Second)
	for {
		s := tm.screen()
		if ok(s) {
			return s
		}
		select {
		case <-tm.more:
		case err := <-tm.done:
			tm.done <- err
			tm.t.Fatalf("frontdesk exited (%v) while waiting for %s; screen:\n%s", err, what, tm.screen())
		case <-deadline:
			tm.t.Fatalf("no %s on the terminal within 15s; screen:\n%s", what, s)
		}
	}
}

func (tm *term) typeText(s string) {
	tm.t.Helper()
	if _, err := tm.pty.Write([]byte(s)); err != nil {
		tm.t.Fatal(err)
	}
}

func TestConsoleREPL(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "c.yaml")
	os.WriteFile(cfg, []byte("agent:\n  demo:\n    delay_ms: 40\n"), 0o600)
	tm := startInPty(t, "-addr", "127.0.0.1:0", "-data", "d", "-config", cfg)
	url := regexp.MustCompile(`listening on (http://\S+)`).FindStringSubmatch(tm.waitFor(`listening on http://\S+`, 1))[1]
	tm.waitPrompt("")

	// A typed line goes to the assistant; the reply streams in on one line
	// and the prompt comes back below it.
	tm.typeText("hello there\r")
	scr := tm.waitFor(`real model\.`, 1)
	tm.waitPrompt("")
	if !strings.Contains(scr, "you› hello there\n") || !strings.Contains(scr, "assistant› You said “hello there” (2 words). I am the frontdesk demo assistant") {
		t.Fatalf("screen after the first reply:\n%s", scr)
	}

	// A browser client watching sees the console input labelled console.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(url, "http")+"/ws", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseNow()
	for {
		_, b, err := c.Read(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(b), `"channel":"console","from":"","content":"hello there"`) {
			break
		}
		if strings.Contains(string(b), `"type":"synced"`) {
			t.Fatal("replay has no console-labelled user event")
		}
	}

	// Something arriving through another door while a line is half typed:
	// it is printed above, and the half-typed line stays intact below.
	tm.typeText("half-typ")
	tm.waitPrompt("half-typ")
	resp, err := http.Post(url+"/api/messages", "application/json", strings.NewReader(`{"content":"ping from cron","channel":"cron"}`))
	if err != nil || resp.StatusCode != 202 {
		t.Fatalf("webhook post: %v %v", err, resp)
	}
	scr = tm.waitFor(`real model\.`, 2)
	// The webhook's sender is the implicit owner (nothing configured):
	// no name, the label of before.
	if !strings.Contains(scr, "[cron] ping from cron\n") || !strings.Contains(scr, "assistant› You said “ping from cron”") {
		t.Fatalf("webhook input not shown properly:\n%s", scr)
	}
	tm.waitPrompt("half-typ")
	tm.typeText("ed\r")
	tm.waitFor(`You said “half-typed”`, 1)
	tm.waitFor(`real model\.`, 3)

	// /cancel stops a running reply.
	tm.typeText("tell me something long\r")
	tm.waitFor(`You said “tell me something long”`, 1)
	tm.typeText("/cancel\r")
	tm.waitFor(`Cancelled from the console after \d+(\.\d)? s\.`, 1)

	// Ctrl-C cancels a running reply too…
	tm.typeText("and another one\r")
	tm.waitFor(`You said “and another one”`, 1)
	tm.typeText("\x03")
	tm.waitFor(`Cancelled from the console after \d+(\.\d)? s\.`, 2)
	// …and on an idle prompt it clears the line instead.
	tm.waitPrompt("")
	tm.typeText("never sent")
	tm.waitPrompt("never sent")
	tm.typeText("\x03")
	tm.waitPrompt("")

	// Commands.
	tm.typeText("/status\r")
	tm.waitFor(`session s-[0-9a-f]+ · generation 1 · idle`, 1)
	tm.typeText("/history 2\r")
	tm.waitFor(`\[cancelled\]`, 1)
	tm.typeText("/search half-typed\r")
	tm.waitFor(`#\d+ console: «half»-«typed»`, 1)
	tm.typeText("/nope\r")
	tm.waitFor(`unknown command /nope`, 1)

	// /quit ends the REPL; the server keeps serving.
	tm.typeText("/quit\r")
	tm.waitFor(`console closed; the server keeps running`, 1)
	var info struct {
		LastSeq int64 `json:"last_seq"`
	}
	if code := testio.GetJSON(t, url+"/api/session", &info); code != 200 || info.LastSeq == 0 {
		t.Fatalf("server after /quit: %d %+v", code, info)
	}
	// "never sent" was cleared by Ctrl-C and never reached the session.
	var hist struct{ Hits []json.RawMessage }
	testio.GetJSON(t, url+"/api/history/search?q=never+sent", &hist)
	if len(hist.Hits) != 0 {
		t.Fatalf("the cleared line was sent: %s", hist.Hits)
	}
	if err := tm.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := <-tm.done; err != nil {
		t.Fatalf("exit after SIGTERM: %v", err)
	}
	tm.done <- nil
}

func TestConsoleCtrlDEndsREPLOnly(t *testing.T) {
	tm := startInPty(t, "-addr", "127.0.0.1:0", "-data", "d")
	tm.waitPrompt("")
	url := regexp.MustCompile(`listening on (http://\S+)`).FindStringSubmatch(tm.screen())[1]
	tm.typeText("\x04")
	tm.waitFor(`console closed`, 1)
	var health map[string]string
	if code := testio.GetJSON(t, url+"/healthz", &health); code != 200 {
		t.Fatalf("healthz after Ctrl-D: %d", code)
	}
}

func TestConsoleOnPipeEndsAtEOFServerKeepsServing(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "c.yaml")
	os.WriteFile(cfg, []byte("channels:\n  console:\n    enabled: true\nagent:\n  demo:\n    delay_ms: 0\n"), 0o600)
	// Input from a pipe: one message, then end of input.
	p := startBinaryWithStdin(t, dir, strings.NewReader("from a pipe\n"), "-addr", "127.0.0.1:0", "-data", "d", "-config", cfg)
	deadline := time.Now().Add(15 * time.Second)
	for {
		var hist struct{ Hits []json.RawMessage }
		testio.GetJSON(t, p.url+"/api/history/search?q=from+a+pipe", &hist)
		if len(hist.Hits) > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("piped line never reached the session\n%s", p.stderr)
		}
		time.Sleep(20 * time.Millisecond)
	}
	var health map[string]string
	if code := testio.GetJSON(t, p.url+"/healthz", &health); code != 200 {
		t.Fatalf("healthz after stdin EOF: %d", code)
	}
}

// TestConsoleMends: the REPL's rough edges of issue 13 — log lines in the
// console's own form with the prompt back at the first column, a clean
// line when Ctrl-C cuts a reply, the marks of a reset and a cancel in the
// replay after a restart, "1 client", Ctrl-\ as the one way to stop
// (invisible characters never sent), SIGQUIT after /quit a clean stop, no
// prompt left on the screen at the end.
func TestConsoleMends(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "c.yaml"), []byte("agent:\n  demo:\n    delay_ms: 40\n"), 0o600)
	args := []string{"-addr", "127.0.0.1:0", "-data", "d", "-config", "c.yaml"}
	tm := startInPtyDir(t, dir, args...)
	tm.waitPrompt("")
	tm.typeText("hello there\r")
	tm.waitFor(`real model\.`, 1)
	tm.waitPrompt("")
	tm.typeText("/reset\r")
	scr := tm.waitFor(`\[log\] memory consolidated \(id=\S+ heading=".*" fallback=true\)`, 1)
	tm.waitPrompt("") // the whole bottom line: the prompt starts at column 1
	if strings.Contains(scr, "level=") || strings.Contains(scr, "summarizer_err") {
		t.Fatalf("a raw log line reached the console:\n%s", scr)
	}

	tm.typeText("tell me something long\r")
	tm.waitFor(`You said “tell me something long”`, 1)
	tm.typeText("\x03")
	scr = tm.waitFor(`Cancelled from the console after \d+(\.\d)? s\.`, 1)
	tm.waitPrompt("")
	for _, l := range strings.Split(scr, "\n") {
		if strings.HasPrefix(l, "assistant› You said “tell me something long”") && (strings.Contains(l, "you›") || strings.Contains(l, "^C")) {
			t.Fatalf("the cut reply's line holds the prompt: %q", l)
		}
	}

	tm.typeText("/status\r")
	tm.waitFor(`· 1 client$|· 1 client\n`, 1)

	// Ctrl-\ at the prompt stops the server; what was typed after it is
	// neither kept nor sent.
	tm.typeText("\x1c\x1c/status\r")
	if err := tm.exited(); err != nil {
		t.Fatalf("exit after Ctrl-\\: %v\n%s", err, tm.screen())
	}
	scr = tm.screen()
	lines := strings.Split(strings.TrimRight(scr, "\n "), "\n")
	if last := lines[len(lines)-1]; strings.HasPrefix(last, "you›") {
		t.Errorf("a prompt is left on the screen at shutdown: %q", last)
	}
	logged, _, err := history.ReadTail(filepath.Join(dir, "d", "chat_history.ndjson"), 1000)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range logged {
		if e.Type == event.User && strings.Contains(string(e.Data), "status") {
			t.Fatalf("a line typed after Ctrl-\\ reached the session: %s", e.Data)
		}
	}

	// The replay after a restart keeps the reset and the cancel.
	tm = startInPtyDir(t, dir, args...)
	scr = tm.waitPrompt("")
	for _, want := range []string{"— reset (manual), kept 1 —", "Cancelled from the console after"} {
		if !strings.Contains(scr, want) {
			t.Errorf("replay after a restart lacks %q:\n%s", want, scr)
		}
	}
	// After /quit the terminal is the shell's again: Ctrl-\ sends
	// SIGQUIT, a clean stop, not a goroutine dump.
	tm.typeText("/quit\r")
	tm.waitFor(`console closed; the server keeps running \(stop it with Ctrl-C or Ctrl-\\`, 1)
	tm.cmd.Process.Signal(syscall.SIGQUIT)
	if err := tm.exited(); err != nil {
		t.Fatalf("exit after SIGQUIT: %v\n%s", err, tm.screen())
	}
	if scr := tm.screen(); strings.Contains(scr, "goroutine ") {
		t.Fatalf("SIGQUIT dumped goroutines:\n%s", scr)
	}
}

// TestConsoleStartupLogIsReadable: a log line written while the server
// starts, before the console's banner (here: a damaged chat log line
// skipped), is in the console's form like the ones after it.
func TestConsoleStartupLogIsReadable(t *testing.T) {
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "d"), 0o700)
	os.WriteFile(filepath.Join(dir, "d", "chat_history.ndjson"), []byte("not an event\n"), 0o600)
	tm := startInPtyDir(t, dir, "-addr", "127.0.0.1:0", "-data", "d")
	scr := tm.waitPrompt("")
	banner := strings.Index(scr, "frontdesk console —")
	warning := strings.Index(scr, "[warning] skipped malformed chat log lines (count=1)")
	if warning < 0 || warning > banner || strings.Contains(scr, "level=") {
		t.Fatalf("the startup log line is not in the console's form before the banner:\n%s", scr)
	}
}

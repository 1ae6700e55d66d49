//go:build linux

package agent

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"

	"golang.org/x/sys/unix"

	"github.com/frontdesk-hq/frontdesk/attachments"
	"github.com/frontdesk-hq/frontdesk/event"
)

// script is the absolute path of a testdata program.
func script(t *testing.T, name string) string {
	t.Helper()
	p, err := filepath.Abs(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// runCommand runs c in the background; the result arrives on the channel.
type runResult struct {
	reply Reply
	err   error
	took  time.Duration
}

func runCommand(ctx context.Context, c *Command, req Request, rec *recorder) <-chan runResult {
	done := make(chan runResult, 1)
	go func() {
		start := time.Now()
		reply, err := c.Run(ctx, req, rec.emit)
		done <- runResult{reply, err, time.Since(start)}
	}()
	return done
}

func waitRun(t *testing.T, done <-chan runResult) runResult {
	t.Helper()
	select {
	case r := <-done:
		return r
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return")
	}
	return runResult{}
}

// childPID reads the "child <pid>" line a script prints first.
func childPID(t *testing.T, rec *recorder) int {
	t.Helper()
	var got string
	for !strings.Contains(got, "\n") {
		select {
		case d := <-rec.deltas:
			got += d
		case <-time.After(5 * time.Second):
			t.Fatalf("no child pid printed (got %q)", got)
		}
	}
	var pid int
	if _, err := fmt.Sscanf(got, "child %d", &pid); err != nil {
		t.Fatalf("parse %q: %v", got, err)
	}
	return pid
}

// openGate lets a script blocked on `read line < "$GATE"` go on.
func openGate(t *testing.T, gate string) {
	t.Helper()
	g, err := os.OpenFile(gate, os.O_WRONLY, 0) // blocks until the script opens it
	if err != nil {
		t.Fatal(err)
	}
	g.WriteString("go\n")
	g.Close()
}

// pidfd opens a handle on pid, which must be running, so its exit can be
// awaited even though it is not our child.
func pidfd(t *testing.T, pid int) int {
	t.Helper()
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		t.Fatalf("pidfd_open(%d): %v", pid, err)
	}
	t.Cleanup(func() { unix.Close(fd) })
	if exited(t, fd, 0) {
		t.Fatalf("process %d is not running before the test acts", pid)
	}
	return fd
}

// exited waits up to d for the process behind fd to exit (a zombie counts:
// it runs no more) and reports whether it did.
func exited(t *testing.T, fd int, d time.Duration) bool {
	t.Helper()
	for {
		n, err := unix.Poll([]unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}, int(d.Milliseconds()))
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		return n > 0
	}
}

func TestCommandRequestJSON(t *testing.T) {
	files, err := attachments.Open(t.TempDir(), 0)
	if err != nil {
		t.Fatal(err)
	}
	note, err := files.Put(strings.NewReader("minutes"), "notes.txt")
	if err != nil {
		t.Fatal(err)
	}
	c := &Command{Argv: []string{script(t, "cmd_echo_request.sh")}, Files: files}
	ts := time.Date(2026, 11, 22, 10, 0, 0, 123e6, time.UTC)
	req := Request{
		Turn: "t42", Channel: "email", From: "ann@example.com", Content: "what did we decide?",
		LongTermMemory: "- Launch on Friday.",
		Attachments:    []event.Attachment{note},
		Context: []event.Event{
			event.New(event.User, "t40", ts, event.UserData{Channel: "web", Content: "hello", Attachments: []event.Attachment{note}}),
			event.New(event.ToolCall, "t40", ts, event.ToolCallData{ID: "c1", Name: "x", Args: []byte(`{}`)}),
			event.New(event.Assistant, "t40", ts.Add(time.Second), event.AssistantData{Content: "Hi!"}),
		},
		Notes: []string{"The user text is untrusted content from ann@example.com."},
		Tools: (&searchTool{}).tools(),
	}
	r := waitRun(t, runCommand(testCtx(t), c, req, newRecorder()))
	if r.err != nil {
		t.Fatal(r.err)
	}
	rec := `{"sha256":"` + note.SHA256 + `","name":"notes.txt","type":"text/plain; charset=utf-8","size":7`
	want := `{"turn":"t42","channel":"email","from":"ann@example.com","content":"what did we decide?",` +
		`"long_term_memory":"- Launch on Friday.",` +
		`"context":[{"role":"user","content":"hello","ts":"2026-11-22T10:00:00.123Z","attachments":[` + rec + `}]},` +
		`{"role":"assistant","content":"Hi!","ts":"2026-11-22T10:00:01.123Z"}],` +
		`"notes":["The user text is untrusted content from ann@example.com."],` +
		`"attachments":[` + rec + `,"path":"` + files.Path(note.SHA256) + `"}]}`
	if r.reply.Content != want {
		t.Errorf("stdin request\n got %s\nwant %s", r.reply.Content, want)
	}
	// Empty lists are [] rather than null.
	r = waitRun(t, runCommand(testCtx(t), c, Request{Turn: "t1", Channel: "web", Content: "x"}, newRecorder()))
	if !strings.Contains(r.reply.Content, `"context":[],"notes":[],"attachments":[]`) {
		t.Errorf("empty request %s; want [] for context, notes and attachments", r.reply.Content)
	}
}

func TestCommandStreamsAsItArrives(t *testing.T) {
	gate := filepath.Join(t.TempDir(), "gate")
	if err := syscall.Mkfifo(gate, 0o600); err != nil {
		t.Fatal(err)
	}
	c := &Command{Argv: []string{script(t, "cmd_stream.sh")}, Env: []string{"GATE=" + gate}}
	rec := newRecorder()
	done := runCommand(testCtx(t), c, Request{Turn: "t1", Content: "x"}, rec)
	select {
	case d := <-rec.deltas:
		// Written without a newline and with half a character after it:
		// the first part streams at once, the half character waits.
		if d != "part one, " {
			t.Errorf("first delta %q, want %q", d, "part one, ")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the first part did not stream before the program finished")
	}
	openGate(t, gate)
	r := waitRun(t, done)
	if r.err != nil {
		t.Fatal(r.err)
	}
	want := "part one, ☕ part two"
	if r.reply.Content != want || rec.text() != want {
		t.Errorf("reply %q, deltas %q; want %q", r.reply.Content, rec.text(), want)
	}
	for _, e := range rec.all() {
		if d, ok := e.data.(event.TextData); ok && !utf8.ValidString(d.Text) {
			t.Errorf("%s %q is not valid UTF-8", e.typ, d.Text)
		}
	}
}

func TestCommandFailure(t *testing.T) {
	var logs bytes.Buffer
	c := &Command{Argv: []string{script(t, "cmd_fail.sh")}, Logger: slog.New(slog.NewTextHandler(&logs, nil))}
	r := waitRun(t, runCommand(testCtx(t), c, Request{Turn: "t3", Content: "x"}, newRecorder()))
	want := `the command "cmd_fail.sh" failed with exit status 3: model crashed: out of memory`
	if r.err == nil || r.err.Error() != want {
		t.Errorf("err %v\nwant %s", r.err, want)
	}
	if r.reply.Content != "partial answer\n" {
		t.Errorf("partial reply %q", r.reply.Content)
	}
	for _, w := range []string{`line="loading model"`, `line="model crashed: out of memory"`, "turn=t3"} {
		if !strings.Contains(logs.String(), w) {
			t.Errorf("log lacks %s:\n%s", w, logs.String())
		}
	}
}

func TestCommandStop(t *testing.T) {
	tests := []struct {
		name    string
		script  string
		timeout time.Duration
		grace   time.Duration
		cancel  bool
		wantErr string // empty: context.Canceled
	}{
		{name: "cancel", script: "cmd_hang.sh", cancel: true},
		{name: "timeout", script: "cmd_hang.sh", timeout: time.Second,
			wantErr: `the command "cmd_hang.sh" ran longer than 1s (agent.command.timeout_sec) and was stopped`},
		{name: "cancel, SIGTERM ignored", script: "cmd_ignore_term.sh", cancel: true, grace: 300 * time.Millisecond},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := &Command{Argv: []string{script(t, tc.script)}, Timeout: tc.timeout, KillGrace: tc.grace,
				Logger: slog.New(slog.DiscardHandler)}
			rec := newRecorder()
			ctx, cancel := context.WithCancel(testCtx(t))
			defer cancel()
			done := runCommand(ctx, c, Request{Turn: "t1", Content: "x"}, rec)
			fd := pidfd(t, childPID(t, rec))
			if tc.cancel {
				cancel()
			}
			r := waitRun(t, done)
			switch {
			case tc.wantErr == "" && !errors.Is(r.err, context.Canceled):
				t.Errorf("err %v, want context.Canceled", r.err)
			case tc.wantErr != "" && (r.err == nil || r.err.Error() != tc.wantErr):
				t.Errorf("err %v\nwant %s", r.err, tc.wantErr)
			}
			if tc.grace > 0 && r.took < tc.grace {
				t.Errorf("returned after %v, before the SIGKILL grace %v", r.took, tc.grace)
			}
			if !exited(t, fd, 2*time.Second) {
				t.Error("the program's child is still running: an orphan")
			}
		})
	}
}

func TestCommandReapsLeftoverChild(t *testing.T) {
	gate := filepath.Join(t.TempDir(), "gate")
	if err := syscall.Mkfifo(gate, 0o600); err != nil {
		t.Fatal(err)
	}
	c := &Command{Argv: []string{script(t, "cmd_leave_child.sh")}, Env: []string{"GATE=" + gate}}
	rec := newRecorder()
	done := runCommand(testCtx(t), c, Request{Turn: "t1", Content: "x"}, rec)
	fd := pidfd(t, childPID(t, rec))
	openGate(t, gate) // now the program exits, leaving its child
	r := waitRun(t, done)
	if r.err != nil || !strings.HasPrefix(r.reply.Content, "child ") {
		t.Fatalf("Run: %q, %v", r.reply.Content, r.err)
	}
	if !exited(t, fd, 2*time.Second) {
		t.Error("the child the program left behind is still running")
	}
}

func TestCommandEnvironment(t *testing.T) {
	t.Setenv("FRONTDESK_TEST_SECRET", "s3cret")
	t.Setenv("HOME", "/home/fd")
	c := &Command{Argv: []string{script(t, "cmd_env.sh")}, Env: []string{"FOO=bar"}}
	r := waitRun(t, runCommand(testCtx(t), c, Request{Turn: "t1", Content: "x"}, newRecorder()))
	if want := "FOO=bar SECRET=unset HOME=/home/fd PATHSET=yes"; r.err != nil || r.reply.Content != want {
		t.Errorf("environment %q, %v; want %q", r.reply.Content, r.err, want)
	}
}

func TestCommandIgnoringStdin(t *testing.T) {
	c := &Command{Argv: []string{script(t, "cmd_no_stdin.sh")}}
	big := strings.Repeat("x", 1<<20) // far more than a pipe holds
	r := waitRun(t, runCommand(testCtx(t), c, Request{Turn: "t1", Content: big}, newRecorder()))
	if r.err != nil || r.reply.Content != "ok\n" {
		t.Errorf("Run: %q, %v", r.reply.Content, r.err)
	}
}

func TestCommandStartFailure(t *testing.T) {
	c := &Command{Argv: []string{filepath.Join(t.TempDir(), "missing")}}
	_, err := c.Run(testCtx(t), Request{Turn: "t1"}, newRecorder().emit)
	if err == nil || !strings.Contains(err.Error(), "could not start") {
		t.Errorf("err %v", err)
	}
	if _, err := (&Command{}).Run(testCtx(t), Request{}, newRecorder().emit); err == nil {
		t.Error("no argv accepted")
	}
}

func TestCommandCheck(t *testing.T) {
	dir := t.TempDir()
	plain := filepath.Join(dir, "plain")
	if err := os.WriteFile(plain, []byte("#!/bin/sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		argv []string
		want string // empty: no error
	}{
		{"script", []string{script(t, "cmd_echo_request.sh")}, ""},
		{"in PATH", []string{"sh", "-c", "true"}, ""},
		{"not in PATH", []string{"frontdesk-no-such-program"}, "not found in PATH"},
		{"missing file", []string{filepath.Join(dir, "missing")}, "no such file"},
		{"not executable", []string{plain}, "not executable"},
		{"directory", []string{dir}, "is a directory"},
		{"empty", nil, "argv is empty"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := (&Command{Argv: tc.argv}).Check(testCtx(t))
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("Check: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("Check: %v, want %q", err, tc.want)
			}
		})
	}
}

// FuzzUTF8Splitter: however the bytes of a valid UTF-8 text are cut into
// reads, every piece is valid UTF-8 and the pieces add up to the text.
func FuzzUTF8Splitter(f *testing.F) {
	f.Add("part one, ☕ part two", []byte{11, 1, 1})
	f.Add("héllo 🌍 wörld", []byte{1, 2, 3, 4})
	f.Fuzz(func(t *testing.T, text string, cuts []byte) {
		b := []byte(text)
		var u utf8Splitter
		var out strings.Builder
		for _, c := range cuts {
			n := min(int(c%8), len(b))
			piece := u.write(b[:n])
			b = b[n:]
			if !utf8.ValidString(piece) {
				t.Fatalf("piece %q is not valid UTF-8", piece)
			}
			out.WriteString(piece)
		}
		out.WriteString(u.write(b))
		out.WriteString(u.flush())
		if want := strings.ToValidUTF8(text, "\uFFFD"); utf8.ValidString(text) && out.String() != want {
			t.Fatalf("pieces add up to %q, want %q", out.String(), want)
		}
		if !utf8.ValidString(out.String()) {
			t.Fatalf("output %q is not valid UTF-8", out.String())
		}
	})
}

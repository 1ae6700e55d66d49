package agent

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/frontdesk-hq/frontdesk/event"
)

// DefaultKillGrace is how long a stopped command's process group has
// between SIGTERM and SIGKILL.
const DefaultKillGrace = 2 * time.Second

// CommandRequest is the JSON document the command backend writes to the
// program's stdin, then closes stdin. Every field is always present:
//
//	{
//	  "turn": "t42",
//	  "channel": "web",
//	  "from": "",
//	  "content": "what did we decide about the launch?",
//	  "long_term_memory": "## 2026-11-21 …\n- …",
//	  "context": [
//	    {"role": "user", "content": "hello", "ts": "2026-11-22T10:00:00.123Z"},
//	    {"role": "assistant", "content": "Hi! How can I help?", "ts": "2026-11-22T10:00:01.456Z"}
//	  ],
//	  "notes": ["Older conversation was consolidated into long-term memory; …"],
//	  "attachments": [
//	    {"sha256": "9f86d0…", "name": "plan.pdf", "type": "application/pdf", "size": 48213,
//	     "path": "/srv/frontdesk/data/attachments/9f/9f86d0…"}
//	  ]
//	}
//
// turn is the turn id; channel is web, console, email, webhook or a
// webhook caller's own name; from is the sender (an email address, or ""
// when the channel has none); content is the input; long_term_memory is
// Markdown, possibly ""; context is the recent conversation oldest first,
// without this input (role is "user" or "assistant", ts RFC 3339 UTC);
// notes are system-level remarks for this turn, possibly [];
// attachments are this input's files, possibly [] — path is where the
// stored file is (read it, never write it; "" when the server keeps no
// attachments). Context messages carry their attachments' records too.
type CommandRequest struct {
	Turn           string           `json:"turn"`
	Channel        string           `json:"channel"`
	From           string           `json:"from"`
	Content        string           `json:"content"`
	LongTermMemory string           `json:"long_term_memory"`
	Context        []CommandMessage `json:"context"`
	Notes          []string         `json:"notes"`
	Attachments    []CommandFile    `json:"attachments"`
}

// CommandFile is an attachment of CommandRequest: its record and the path
// of the stored file.
type CommandFile struct {
	event.Attachment
	Path string `json:"path"`
}

// CommandMessage is one message of CommandRequest.Context.
type CommandMessage struct {
	Role        string             `json:"role"`
	Content     string             `json:"content"`
	TS          event.Time         `json:"ts"`
	Attachments []event.Attachment `json:"attachments,omitempty"`
}

// NewCommandRequest is the stdin document for req; files (may be nil)
// gives the attachments' paths.
func NewCommandRequest(req Request, files Files) CommandRequest {
	r := CommandRequest{
		Turn: req.Turn, Channel: req.Channel, From: req.From, Content: req.Content,
		LongTermMemory: req.LongTermMemory,
		Context:        []CommandMessage{},
		Notes:          append([]string{}, req.Notes...),
		Attachments:    make([]CommandFile, 0, len(req.Attachments)),
	}
	for _, a := range req.Attachments {
		f := CommandFile{Attachment: a}
		if files != nil {
			f.Path = files.Path(a.SHA256)
		}
		r.Attachments = append(r.Attachments, f)
	}
	for _, e := range req.Context {
		if m, ok := e.Message(); ok {
			r.Context = append(r.Context, CommandMessage{Role: string(e.Type), Content: m.Content, TS: e.TS, Attachments: m.Attachments})
		}
	}
	return r
}

// Command is the backend that runs a program once per turn. The program
// gets a CommandRequest as JSON on stdin; whatever it writes to stdout is
// streamed to everyone as the reply, as it arrives (not line by line);
// each line it writes to stderr is logged; a non-zero exit fails the turn
// with the last stderr line in the message.
//
// The program runs in a process group of its own. Cancel and Timeout stop
// the whole group: SIGTERM, then SIGKILL once KillGrace has passed or as
// soon as the program has exited and its stdout is closed. When the
// program exits by itself, anything it left running in its group gets the
// same treatment, so no turn leaves orphans behind.
//
// The environment is minimal: frontdesk's PATH and HOME, then Env.
// Tools are not offered to the program. On systems without process groups
// (Windows) cancel and timeout kill the program alone.
type Command struct {
	// Argv is the program and its arguments; argv[0] is looked up in PATH. Required.
	Argv []string
	// Env holds "NAME=value" entries added to the environment; a later
	// entry wins over an earlier one and over PATH and HOME.
	Env []string
	// Timeout stops a turn's program after this long; 0 means no limit.
	Timeout time.Duration
	// KillGrace is the time between SIGTERM and SIGKILL. Default DefaultKillGrace.
	KillGrace time.Duration
	// Logger receives the program's stderr lines. Default slog.Default().
	Logger *slog.Logger
	// Files gives the paths of attachments in the request. Nil: paths are "".
	Files Files
}

var (
	_ Agent                                     = (*Command)(nil)
	_ interface{ Check(context.Context) error } = (*Command)(nil)
)

// Check reports whether argv[0] resolves (through PATH when it has no
// slash) to an executable file.
func (c *Command) Check(ctx context.Context) error {
	if len(c.Argv) == 0 || c.Argv[0] == "" {
		return errors.New("agent.command.argv is empty: name the program to run")
	}
	p, err := exec.LookPath(c.Argv[0])
	switch {
	case errors.Is(err, exec.ErrNotFound):
		return fmt.Errorf("agent.command.argv[0] %q: not found in PATH", c.Argv[0])
	case errors.Is(err, fs.ErrPermission):
		return fmt.Errorf("agent.command.argv[0] %q: not executable (chmod +x?)", c.Argv[0])
	case errors.Is(err, syscall.EISDIR):
		return fmt.Errorf("agent.command.argv[0] %q is a directory, not a program", c.Argv[0])
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("agent.command.argv[0] %q: no such file", c.Argv[0])
	case err != nil:
		return fmt.Errorf("agent.command.argv[0] %q: %w", c.Argv[0], err)
	}
	fi, err := os.Stat(p)
	if err != nil {
		return fmt.Errorf("agent.command.argv[0] %q: %w", c.Argv[0], err)
	}
	if !fi.Mode().IsRegular() || fi.Mode().Perm()&0o111 == 0 {
		return fmt.Errorf("agent.command.argv[0] %q (%s) is not an executable file", c.Argv[0], p)
	}
	return nil
}

// Run implements Agent.
func (c *Command) Run(ctx context.Context, req Request, emit Emitter) (Reply, error) {
	if len(c.Argv) == 0 || c.Argv[0] == "" {
		return Reply{}, errors.New("the command backend has no program to run (agent.command.argv)")
	}
	name := filepath.Base(c.Argv[0])
	input, err := json.Marshal(NewCommandRequest(req, c.Files))
	if err != nil {
		return Reply{}, fmt.Errorf("encode the command's request: %w", err)
	}
	emit(event.Status, event.TextData{Text: fmt.Sprintf("running %s…", name)})

	p, err := startProcess(c.Argv, c.environ())
	if err != nil {
		return Reply{}, fmt.Errorf("the command %q could not start: %w", c.Argv[0], err)
	}
	defer p.stdin.Close() // unblocks the writer if the program never reads
	go func() {
		p.stdin.Write(input) // EPIPE when the program does not read stdin: fine
		p.stdin.Close()
	}()
	logger := c.Logger
	if logger == nil {
		logger = slog.Default()
	}
	out := newStreamReader(p.stdout, emit)
	errs := newStderrLogger(p.stderr, logger.With("command", name, "pid", p.cmd.Process.Pid, "turn", req.Turn))

	var timeout <-chan time.Time
	if c.Timeout > 0 {
		t := time.NewTimer(c.Timeout)
		defer t.Stop()
		timeout = t.C
	}
	grace := c.KillGrace
	if grace <= 0 {
		grace = DefaultKillGrace
	}
	var runErr, exitErr error
	exited := false
	select {
	case exitErr = <-p.exited:
		exited = true
		p.stopGroup(grace, out.done, true)
	case <-ctx.Done():
		p.stopGroup(grace, out.done, false)
	case <-timeout:
		p.stopGroup(grace, out.done, false)
		runErr = fmt.Errorf("the command %q ran longer than %s (agent.command.timeout_sec) and was stopped", name, fmtDuration(c.Timeout))
	}
	// Everything in the group is dead, so stdout and stderr reach EOF
	// unless a process escaped the group (setsid) and holds them open.
	out.wait(grace)
	errs.wait(grace)
	if exited {
		runErr = c.exitError(exitErr, errs.lastLine())
	}
	reply := Reply{Content: out.text()}
	if err := ctx.Err(); err != nil {
		return reply, err
	}
	return reply, runErr
}

// environ is the program's environment: PATH, HOME, then c.Env.
func (c *Command) environ() []string {
	path := os.Getenv("PATH")
	if path == "" {
		path = "/usr/local/bin:/usr/bin:/bin"
	}
	env := []string{"PATH=" + path}
	if home := os.Getenv("HOME"); home != "" {
		env = append(env, "HOME="+home)
	}
	return append(env, c.Env...)
}

// exitError explains a program that exited on its own, nil for status 0.
func (c *Command) exitError(err error, lastStderr string) error {
	if err == nil {
		return nil
	}
	name := filepath.Base(c.Argv[0])
	detail := ""
	if l := lastStderr; l != "" {
		detail = ": " + l
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return fmt.Errorf("the command %q was killed (signal %d: %s)%s", name, int(ws.Signal()), ws.Signal(), detail)
		}
		return fmt.Errorf("the command %q failed with exit status %d%s", name, ee.ExitCode(), detail)
	}
	return fmt.Errorf("the command %q failed: %v", name, err)
}

// process is a started program with our ends of its pipes.
type process struct {
	cmd    *exec.Cmd
	stdin  *os.File
	stdout *os.File
	stderr *os.File
	exited chan error // cmd.Wait's result, sent once
}

// startProcess starts argv in a new process group. Its stdio are plain
// pipes (not exec's copying goroutines), so Wait returns when the program
// exits even if something it started still holds them.
func startProcess(argv, env []string) (*process, error) {
	var files []*os.File
	closeAll := func() {
		for _, f := range files {
			f.Close()
		}
	}
	pipe := func() (r, w *os.File, err error) {
		r, w, err = os.Pipe()
		if err == nil {
			files = append(files, r, w)
		}
		return r, w, err
	}
	inR, inW, err := pipe()
	if err != nil {
		return nil, err
	}
	outR, outW, err := pipe()
	if err != nil {
		closeAll()
		return nil, err
	}
	errR, errW, err := pipe()
	if err != nil {
		closeAll()
		return nil, err
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = env
	cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, errW
	setProcessGroup(cmd)
	if err := cmd.Start(); err != nil {
		closeAll()
		return nil, err
	}
	inR.Close()
	outW.Close()
	errW.Close()
	p := &process{cmd: cmd, stdin: inW, stdout: outR, stderr: errR, exited: make(chan error, 1)}
	go func() { p.exited <- cmd.Wait() }()
	return p, nil
}

// stopGroup ends the process group: SIGTERM; then, once the leader has
// exited and stdout is closed (everyone who could still write is gone) or
// grace has passed, SIGKILL to whatever is left; then it waits for the
// leader. A group that is already empty costs one kill(2).
func (p *process) stopGroup(grace time.Duration, stdoutDone <-chan struct{}, leaderGone bool) {
	if err := signalGroup(p.cmd.Process, syscall.SIGTERM); errors.Is(err, syscall.ESRCH) && leaderGone {
		return
	}
	expired := make(chan struct{})
	t := time.AfterFunc(grace, func() { close(expired) })
	defer t.Stop()
	if !leaderGone {
		select {
		case <-p.exited:
			leaderGone = true
		case <-expired:
		}
	}
	if leaderGone {
		select {
		case <-stdoutDone:
		case <-expired:
		}
	}
	signalGroup(p.cmd.Process, syscall.SIGKILL)
	if !leaderGone {
		<-p.exited
	}
}

// streamReader emits a pipe's bytes as deltas as they arrive, holding
// back only an incomplete UTF-8 sequence at the end of a read until the
// rest arrives. Invalid bytes become U+FFFD.
type streamReader struct {
	f    *os.File
	done chan struct{}
	buf  strings.Builder // written by the reading goroutine until done is closed
}

func newStreamReader(f *os.File, emit Emitter) *streamReader {
	s := &streamReader{f: f, done: make(chan struct{})}
	go s.read(emit)
	return s
}

func (s *streamReader) read(emit Emitter) {
	defer close(s.done)
	defer s.f.Close()
	send := func(text string) {
		if text != "" {
			s.buf.WriteString(text)
			emit(event.Delta, event.TextData{Text: text})
		}
	}
	chunk := make([]byte, 4096)
	var split utf8Splitter
	for {
		n, err := s.f.Read(chunk)
		send(split.write(chunk[:n]))
		if err != nil {
			break
		}
	}
	send(split.flush())
}

// utf8Splitter turns a byte stream into valid UTF-8 text piece by piece:
// write returns what can be shown now, holding back a character whose
// bytes have not all arrived; flush returns the rest. Invalid bytes
// become U+FFFD.
type utf8Splitter struct{ pending []byte }

func (u *utf8Splitter) write(b []byte) string {
	u.pending = append(u.pending, b...)
	cut := completeUTF8(u.pending)
	text := strings.ToValidUTF8(string(u.pending[:cut]), "\uFFFD")
	u.pending = append(u.pending[:0], u.pending[cut:]...)
	return text
}

func (u *utf8Splitter) flush() string {
	text := strings.ToValidUTF8(string(u.pending), "\uFFFD")
	u.pending = u.pending[:0]
	return text
}

// wait waits for EOF, at most d; then it closes the pipe, which ends the
// read at once, and waits for the reader to finish.
func (s *streamReader) wait(d time.Duration) { waitOrClose(s.done, s.f, d) }

// waitOrClose waits until done is closed, at most d; then it closes f so a
// reader blocked on it returns, and waits for done.
func waitOrClose(done <-chan struct{}, f io.Closer, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
		f.Close()
		<-done
	}
}

// text is everything read; call it only after wait.
func (s *streamReader) text() string { return s.buf.String() }

// completeUTF8 returns how much of b ends on a character boundary: all of
// it unless b ends in the first bytes of a multi-byte character.
func completeUTF8(b []byte) int {
	for i := len(b) - 1; i >= 0 && i >= len(b)-utf8.UTFMax; i-- {
		if utf8.RuneStart(b[i]) {
			if utf8.FullRune(b[i:]) {
				return len(b)
			}
			return i
		}
	}
	return len(b)
}

// stderrLogger logs each stderr line and remembers the last non-empty one.
type stderrLogger struct {
	f    *os.File
	done chan struct{}
	mu   sync.Mutex
	last string
}

func newStderrLogger(f *os.File, logger *slog.Logger) *stderrLogger {
	s := &stderrLogger{f: f, done: make(chan struct{})}
	go func() {
		defer close(s.done)
		defer f.Close()
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 0, 4096), 64<<10)
		for sc.Scan() {
			line := strings.TrimRight(sc.Text(), "\r")
			logger.Info("command stderr", "line", line)
			if strings.TrimSpace(line) != "" {
				s.mu.Lock()
				s.last = truncateUTF8(strings.TrimSpace(line), 300)
				s.mu.Unlock()
			}
		}
		io.Copy(io.Discard, f) // a line over 64 KiB stops the scanner: keep draining
	}()
	return s
}

func (s *stderrLogger) wait(d time.Duration) { waitOrClose(s.done, s.f, d) }

func (s *stderrLogger) lastLine() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.last
}

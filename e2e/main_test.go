package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/emersion/go-imap/v2"
	"github.com/emersion/go-imap/v2/imapserver"
	"github.com/emersion/go-imap/v2/imapserver/imapmemserver"

	"github.com/frontdesk-hq/frontdesk/event"
	"github.com/frontdesk-hq/frontdesk/history"
	"github.com/frontdesk-hq/frontdesk/internal/testkit/testio"
)

var (
	binary   string // the frontdesk binary TestMain builds
	repoRoot string // the repository's root, for the files tests read (README.md, contrib/)
)

func TestMain(m *testing.M) {
	root, err := filepath.Abs("..")
	if err != nil {
		panic(err)
	}
	repoRoot = root
	dir, err := os.MkdirTemp("", "frontdesk-bin-")
	if err != nil {
		panic(err)
	}
	binary = filepath.Join(dir, "frontdesk")
	build := exec.Command("go", "build", "-ldflags", "-X main.version=test-1.2.3", "-o", binary, ".")
	build.Dir = repoRoot
	out, err := build.CombinedOutput()
	if err != nil {
		fmt.Fprintf(os.Stderr, "build: %v\n%s", err, out)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// proc is a running frontdesk binary.
type proc struct {
	cmd    *exec.Cmd
	url    string
	stderr *lockedBuffer
	stdout *lockedBuffer // every line it printed (read after the line arrived)
	exited chan error
	addr   chan string
}

// startBinary runs the binary with args in dir and waits for its address.
func startBinary(t *testing.T, dir string, env []string, args ...string) *proc {
	t.Helper()
	return launch(t, dir, env, nil, args...)
}

// startBinaryWithStdin runs the binary with stdin connected to r.
func startBinaryWithStdin(t *testing.T, dir string, r io.Reader, args ...string) *proc {
	t.Helper()
	return launch(t, dir, nil, r, args...)
}

func launch(t *testing.T, dir string, env []string, stdin io.Reader, args ...string) *proc {
	t.Helper()
	p := spawn(t, dir, env, stdin, args...)
	p.await(t, 10*time.Second)
	return p
}

// spawn starts the binary without waiting for it to listen (await does):
// cluster nodes wait for each other before they listen.
func spawn(t testing.TB, dir string, env []string, stdin io.Reader, args ...string) *proc {
	t.Helper()
	cmd := exec.Command(binary, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdin = stdin
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	p := &proc{cmd: cmd, stderr: &lockedBuffer{}, stdout: &lockedBuffer{}, exited: make(chan error, 1), addr: make(chan string, 1)}
	cmd.Stderr = p.stderr
	if d := os.Getenv("FRONTDESK_TEST_LOGDIR"); d != "" {
		// Keep every process's log for a look after the test.
		f, err := os.CreateTemp(d, strings.ReplaceAll(t.Name(), "/", "_")+"-*.log")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { f.Close() })
		fmt.Fprintf(f, "%s\n", strings.Join(args, " "))
		cmd.Stderr = io.MultiWriter(p.stderr, f)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		sc := bufio.NewScanner(stdout)
		re := regexp.MustCompile(`listening on (http://\S+)`)
		for sc.Scan() {
			fmt.Fprintln(p.stdout, sc.Text())
			if m := re.FindStringSubmatch(sc.Text()); m != nil {
				p.addr <- m[1]
			}
		}
		io.Copy(io.Discard, stdout)
	}()
	go func() { p.exited <- cmd.Wait() }()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-p.exited
		p.exited <- nil
	})
	return p
}

// await waits until p listens, failing the test after wait.
func (p *proc) await(t testing.TB, wait time.Duration) {
	t.Helper()
	if err := p.awaitErr(wait); err != nil {
		t.Fatal(err)
	}
}

// awaitErr is await that returns what went wrong.
func (p *proc) awaitErr(wait time.Duration) error {
	select {
	case p.url = <-p.addr:
		return nil
	case err := <-p.exited:
		p.exited <- err
		return fmt.Errorf("frontdesk exited before listening: %v\n%s", err, p.stderr)
	case <-time.After(wait):
		return fmt.Errorf("frontdesk did not start within %v\n%s", wait, p.stderr)
	}
}

func (p *proc) stop(t *testing.T, sig syscall.Signal) (time.Duration, error) {
	t.Helper()
	start := time.Now()
	if err := p.cmd.Process.Signal(sig); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-p.exited:
		p.exited <- err
		return time.Since(start), err
	case <-time.After(10 * time.Second):
		t.Fatalf("no exit within 10s of %v\n%s", sig, p.stderr)
	}
	return 0, nil
}

func TestBinaryServesAndStopsCleanly(t *testing.T) {
	dir := t.TempDir()
	// The demo agent streams slowly so SIGTERM lands mid-turn.
	cfg := filepath.Join(dir, "slow.yaml")
	os.WriteFile(cfg, []byte("agent:\n  demo:\n    delay_ms: 200\n"), 0o600)
	p := startBinary(t, dir, nil, "-addr", "127.0.0.1:0", "-data", "state", "-config", cfg)

	var health map[string]string
	if code := testio.GetJSON(t, p.url+"/healthz", &health); code != 200 || health["status"] != "ok" {
		t.Fatalf("/healthz = %d %v", code, health)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(p.url, "http")+"/ws", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseNow()
	readType := func(want event.Type) {
		t.Helper()
		for {
			_, b, err := c.Read(ctx)
			if err != nil {
				t.Fatalf("waiting for %s: %v", want, err)
			}
			var e event.Event
			json.Unmarshal(b, &e)
			if e.Type == want {
				return
			}
		}
	}
	readType(event.Synced)
	c.Write(ctx, websocket.MessageText, []byte(`{"type":"message","content":"tell me a long story","client_msg_id":"m-1"}`))
	readType(event.Delta)

	took, err := p.stop(t, syscall.SIGTERM)
	if err != nil {
		t.Fatalf("exit after SIGTERM: %v\n%s", err, p.stderr)
	}
	if took > 5*time.Second {
		t.Errorf("shutdown took %v, want < 5s", took)
	}
	// The client was told the server is going away.
	for {
		_, _, err := c.Read(ctx)
		if err != nil {
			if got := websocket.CloseStatus(err); got != websocket.StatusGoingAway {
				t.Fatalf("close status %v (%v), want 1001", got, err)
			}
			break
		}
	}
	// The cut turn is marked interrupted in the log, after the input.
	evs, skipped, err := history.ReadTail(filepath.Join(dir, "state", "chat_history.ndjson"), 100)
	if err != nil || skipped > 0 {
		t.Fatalf("read log: %v (skipped %d)", err, skipped)
	}
	if len(evs) < 2 || evs[0].Type != event.User || evs[len(evs)-1].Type != event.TurnEnd ||
		!strings.Contains(string(evs[len(evs)-1].Data), `"interrupted"`) {
		t.Fatalf("log after SIGTERM: %v", evs)
	}
	for _, name := range []string{"state", "state/chat_history.ndjson", "state/session.json"} {
		st, err := os.Stat(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		want := os.FileMode(0o600)
		if st.IsDir() {
			want = 0o700
		}
		if st.Mode().Perm() != want {
			t.Errorf("%s mode %v, want %v", name, st.Mode().Perm(), want)
		}
	}

	// Restarted, the session and the sequence go on.
	p2 := startBinary(t, dir, nil, "-addr", "127.0.0.1:0", "-data", "state", "-config", cfg)
	var info struct {
		SessionID string `json:"session_id"`
		LastSeq   int64  `json:"last_seq"`
	}
	testio.GetJSON(t, p2.url+"/api/session", &info)
	if info.LastSeq != evs[len(evs)-1].Seq {
		t.Fatalf("last_seq after restart = %d, want %d", info.LastSeq, evs[len(evs)-1].Seq)
	}
	if _, err := p2.stop(t, syscall.SIGINT); err != nil {
		t.Fatalf("exit after SIGINT: %v\n%s", err, p2.stderr)
	}
}

func TestRefusesPublicAddressWithoutToken(t *testing.T) {
	var stderr bytes.Buffer
	cmd := exec.Command(binary, "-addr", "0.0.0.0:0", "-data", t.TempDir())
	cmd.Dir = t.TempDir()
	cmd.Env = append(os.Environ(), "FRONTDESK_AUTH_TOKEN=")
	cmd.Stderr = &stderr
	err := cmd.Run()
	if err == nil {
		t.Fatal("started on 0.0.0.0 without a token")
	}
	if !strings.Contains(stderr.String(), "FRONTDESK_AUTH_TOKEN") {
		t.Fatalf("message does not name the token variable: %s", stderr.String())
	}
	// With a token it starts.
	p := startBinary(t, t.TempDir(), []string{"FRONTDESK_AUTH_TOKEN=4f9c2a7e1b3d5f60a8"}, "-addr", "0.0.0.0:0", "-data", "d")
	if _, err := p.stop(t, syscall.SIGTERM); err != nil {
		t.Fatalf("exit: %v\n%s", err, p.stderr)
	}
}

func TestVersionFromLdflags(t *testing.T) {
	out, err := exec.Command(binary, "version").Output()
	if err != nil || strings.TrimSpace(string(out)) != "frontdesk test-1.2.3" {
		t.Fatalf("version = %q, %v", out, err)
	}
}

func TestEnabledEmailWithoutPasswordRefusesToStart(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "mail.yaml")
	os.WriteFile(cfg, []byte(`channels:
  email:
    enabled: true
    address: assistant@example.com
    allow_from: ["@example.com"]
    imap: {addr: "127.0.0.1:1143", tls: none, username: assistant}
    smtp: {addr: "127.0.0.1:1025", tls: none}
`), 0o600)
	var stderr bytes.Buffer
	cmd := exec.Command(binary, "-config", cfg, "-data", filepath.Join(dir, "d"), "-addr", "127.0.0.1:0")
	cmd.Env = append(os.Environ(), "FRONTDESK_IMAP_PASSWORD=")
	cmd.Stderr = &stderr
	if err := cmd.Run(); err == nil {
		t.Fatal("started with email enabled and no IMAP password")
	}
	if !strings.Contains(stderr.String(), "FRONTDESK_IMAP_PASSWORD") {
		t.Fatalf("the error does not name the variable: %s", stderr.String())
	}
}

// startMemIMAP serves an in-memory IMAP mailbox for the user "assistant"
// with password on 127.0.0.1 until the test ends (IDLE offered if idle);
// mail appended to the returned user's INBOX is new mail for the server.
func startMemIMAP(t *testing.T, password string, idle bool) (*imapmemserver.User, string) {
	t.Helper()
	mem := imapmemserver.New()
	user := imapmemserver.NewUser("assistant", password)
	if err := user.Create("INBOX", nil); err != nil {
		t.Fatal(err)
	}
	mem.AddUser(user)
	caps := imap.CapSet{imap.CapIMAP4rev1: {}}
	if idle {
		caps[imap.CapIdle] = struct{}{}
	}
	srv := imapserver.New(&imapserver.Options{
		NewSession: func(*imapserver.Conn) (imapserver.Session, *imapserver.GreetingData, error) {
			return mem.NewSession(), nil, nil
		},
		Caps:         caps,
		InsecureAuth: true,
		Logger:       log.New(io.Discard, "", 0),
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return user, ln.Addr().String()
}

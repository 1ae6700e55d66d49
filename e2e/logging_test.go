package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// logLines runs the binary and collects its stderr line by line, so a test
// can wait for a line instead of sleeping.
type logLines struct {
	mu    sync.Mutex
	lines []string
	more  chan struct{}
}

func (l *logLines) add(line string) {
	l.mu.Lock()
	l.lines = append(l.lines, line)
	l.mu.Unlock()
	select {
	case l.more <- struct{}{}:
	default:
	}
}

func (l *logLines) all() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.lines, "\n")
}

// waitFor waits up to 20 s for a line matching re.
func (l *logLines) waitFor(t *testing.T, re string) {
	t.Helper()
	rx := regexp.MustCompile(re)
	deadline := time.After(20 * time.Second)
	for !rx.MatchString(l.all()) {
		select {
		case <-l.more:
		case <-deadline:
			t.Fatalf("no log line matching %s within 20s; log:\n%s", re, l.all())
		}
	}
}

// loggedProc is a running binary whose stderr (logs) and stdout (out) are
// collected line by line.
type loggedProc struct {
	cmd       *exec.Cmd
	url       string
	logs, out *logLines
	exited    chan error
}

// startLogged runs the binary in dir with env added and waits for its
// address; it is killed when the test ends.
func startLogged(t *testing.T, dir string, env []string, args ...string) *loggedProc {
	t.Helper()
	cmd := exec.Command(binary, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	p := &loggedProc{cmd: cmd, logs: &logLines{more: make(chan struct{}, 1)}, out: &logLines{more: make(chan struct{}, 1)},
		exited: make(chan error, 1)}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var reading sync.WaitGroup
	for _, s := range []struct {
		r io.Reader
		l *logLines
	}{{stderr, p.logs}, {stdout, p.out}} {
		reading.Go(func() {
			sc := bufio.NewScanner(s.r)
			for sc.Scan() {
				s.l.add(sc.Text())
			}
		})
	}
	go func() { reading.Wait(); p.exited <- cmd.Wait() }()
	t.Cleanup(func() { cmd.Process.Kill(); <-p.exited; p.exited <- nil })
	p.out.waitFor(t, `listening on http://\S+`)
	p.url = regexp.MustCompile(`listening on (http://\S+)`).FindStringSubmatch(p.out.all())[1]
	return p
}

// TestSecretsNeverLogged runs the server with an auth token, a model API
// key and mail passwords, makes everything that might mention them happen
// (a refused token, the token in a URL, a model server that answers 401
// quoting the key back, an IMAP server that refuses the password), at log
// level debug, and checks that no secret is in the log.
func TestSecretsNeverLogged(t *testing.T) {
	const (
		token    = "TOKEN-9f8e7d6c5b4a3928"
		apiKey   = "sk-APIKEY-1a2b3c4d5e6f7a8b"
		imapPass = "IMAP-PASS-5f4e3d2c1b0a"
		smtpPass = "SMTP-PASS-0a1b2c3d4e5f"
	)
	// A model server that, like some proxies, quotes the key back in its
	// errors: first a 500 (retried, and logged with the server's answer),
	// then a 401.
	var sawKey sync.Once
	keyUsed := make(chan struct{})
	var requests atomic.Int32
	model := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") == "Bearer "+apiKey {
			sawKey.Do(func() { close(keyUsed) })
		}
		w.Header().Set("Content-Type", "application/json")
		if requests.Add(1)%2 == 1 {
			w.WriteHeader(http.StatusInternalServerError)
			fmt.Fprintf(w, `{"error":{"message":"upstream rejected key %s","type":"server_error"}}`, apiKey)
			return
		}
		w.WriteHeader(http.StatusUnauthorized)
		fmt.Fprintf(w, `{"error":{"message":"Incorrect API key provided: %s","type":"invalid_request_error","code":"invalid_api_key"}}`, apiKey)
	}))
	defer model.Close()
	defer func() {
		select {
		case <-keyUsed:
		default:
			t.Error("the model server never saw the key: the test did not use it")
		}
	}()
	// An IMAP server where the assistant's password is another one.
	_, imapAddr := startMemIMAP(t, "not-the-configured-one", false)

	tests := []struct {
		name, format, agent string
		wantLog             []string
	}{
		{"openai, text", "text", fmt.Sprintf(`{backend: openai, openai: {base_url: %q, model: gpt-test}}`, model.URL+"/v1"),
			[]string{"model request failed; retrying"}},
		// A command backend that prints the key it was passed to stderr,
		// which frontdesk logs line by line.
		{"command, json", "json", `{backend: command, command: {argv: ["sh", "-c", "echo using key $OPENAI_API_KEY >&2; echo hi"], pass_env: [OPENAI_API_KEY]}}`,
			[]string{"command stderr", "using key [REDACTED]"}},
	}
	for _, tc := range tests {
		format := tc.format
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			cfg := filepath.Join(dir, "secrets.yaml")
			os.WriteFile(cfg, []byte(fmt.Sprintf(`log: {format: %s, level: debug}
agent: %s
channels:
  email:
    enabled: true
    address: assistant@example.com
    allow_from: ["@example.com"]
    imap: {addr: %q, tls: none, username: assistant}
    smtp: {addr: "127.0.0.1:1", tls: none, username: assistant}
`, format, tc.agent, imapAddr)), 0o600)
			p := startLogged(t, dir, []string{"FRONTDESK_AUTH_TOKEN=" + token, "OPENAI_API_KEY=" + apiKey,
				"FRONTDESK_IMAP_PASSWORD=" + imapPass, "FRONTDESK_SMTP_PASSWORD=" + smtpPass},
				"-addr", "127.0.0.1:0", "-data", "state", "-config", cfg)
			base, logs, out := p.url, p.logs, p.out

			call := func(method, path, auth, body string) (int, string) {
				t.Helper()
				req, _ := http.NewRequest(method, base+path, strings.NewReader(body))
				if auth != "" {
					req.Header.Set("Authorization", auth)
				}
				if body != "" {
					req.Header.Set("Content-Type", "application/json")
				}
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				defer resp.Body.Close()
				b, _ := io.ReadAll(resp.Body)
				return resp.StatusCode, string(b)
			}
			// A refused token, then the right one in a header and in a URL.
			if code, _ := call("GET", "/api/session", "Bearer wrong-token-0000000000", ""); code != 401 {
				t.Fatalf("wrong token: %d, want 401", code)
			}
			if code, _ := call("GET", "/api/session?token="+token, "", ""); code != 200 {
				t.Fatalf("token in the URL: %d, want 200", code)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			c, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(base, "http")+"/ws?token="+token, nil)
			if err != nil {
				t.Fatal(err)
			}
			c.Close(websocket.StatusNormalClosure, "")
			// A turn the model server refuses; its error quotes the key.
			if code, body := call("POST", "/api/messages?wait=1&timeout=60", "Bearer "+token, `{"content":"hello"}`); code != 200 {
				t.Fatalf("a turn: %d %s, want 200", code, body)
			}
			// The mail server refuses the password.
			logs.waitFor(t, `refused the login`)

			if _, err := (&proc{cmd: p.cmd, exited: p.exited, stderr: &lockedBuffer{}}).stop(t, syscall.SIGTERM); err != nil {
				t.Fatalf("exit: %v\n%s", err, logs.all())
			}
			log := logs.all()
			for name, secret := range map[string]string{"auth token": token, "API key": apiKey, "IMAP password": imapPass, "SMTP password": smtpPass} {
				if strings.Contains(log, secret) || strings.Contains(out.all(), secret) {
					t.Errorf("the %s is in the output:\n%s", name, log)
				}
			}
			// The log did see what happened, and every line is in the
			// configured format.
			for _, want := range append([]string{"refused the login", "shutting down"}, tc.wantLog...) {
				if !strings.Contains(log, want) {
					t.Errorf("the log does not mention %q:\n%s", want, log)
				}
			}
			for _, line := range logs.lines {
				if ok := format == "json" && json.Valid([]byte(line)) || format == "text" && strings.HasPrefix(line, "time="); !ok {
					t.Errorf("a log line not in %s format: %q", format, line)
				}
			}
		})
	}
}

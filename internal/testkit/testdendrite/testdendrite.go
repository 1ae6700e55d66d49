// Package testdendrite runs a real Matrix homeserver — Dendrite v0.13.8,
// built once per machine from the module proxy and cached — on loopback
// for the tests of the Matrix door. It is imported only by tests.
//
//	s := testdendrite.Start(t)        // fresh server, killed at t.Cleanup
//	ann, annTok := s.CreateAccount(t, "ann", "ann-password")
//	// point the door (or any Matrix client) at s.URL
//
// Each server has its own SQLite databases in t.TempDir(), federation
// off, registration closed except through the shared secret that
// CreateAccount uses, rate limiting off and server name ServerName.
//
// With the goolm build tag, NewUser gives a test a person's own Matrix
// client, end-to-end encryption included (user.go).
package testdendrite

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"
)

// ServerName is the Matrix server name of every test server: user ids
// look like @ann:localhost.
const ServerName = "localhost"

// startTimeout bounds how long a fresh server may take to answer
// /_matrix/client/versions (about a second here; more on a loaded CI).
const startTimeout = 30 * time.Second

// Server is one running Dendrite. Its exported fields are set by Start
// and are read-only. Stop and Restart are for the test goroutine; the
// other methods may be called from any goroutine.
type Server struct {
	// URL is the client-server API base, http://127.0.0.1:port; it stays
	// the same across Restart.
	URL string
	// ServerName is the server's Matrix name, "localhost".
	ServerName string
	// Dir holds the config, the signing key, the SQLite databases, the
	// media store and dendrite.log; it is the test's temp dir.
	Dir string

	bin    string // the directory of the four binaries
	config string // dendrite.yaml
	log    string // dendrite's stdout and stderr, across restarts
	addr   string // host:port of URL
	cmd    *exec.Cmd
	exited chan struct{} // closed when cmd has been waited for
}

// Start builds Dendrite if this machine has not yet (see Binaries), starts
// a fresh server on a free 127.0.0.1 port and returns once it answers
// /_matrix/client/versions. At t.Cleanup the process is killed; if the
// test failed, the tail of its log is logged first. Call it from the test
// goroutine.
func Start(t testing.TB) *Server {
	t.Helper()
	bin := Binaries(t)
	dir := t.TempDir()
	s := &Server{
		ServerName: ServerName,
		Dir:        dir,
		bin:        bin,
		config:     filepath.Join(dir, "dendrite.yaml"),
		log:        filepath.Join(dir, "dendrite.log"),
	}
	s.writeConfig(t)
	t.Cleanup(func() {
		s.Stop(t)
		if t.Failed() {
			t.Logf("dendrite log (%s), last lines:\n%s", s.addr, s.logTail(8000))
		}
	})
	// The free port is closed again before Dendrite binds it; another
	// process may take it in between, so an early exit with "address
	// already in use" tries a new one.
	for try := 1; ; try++ {
		s.addr = freePort(t)
		s.URL = "http://" + s.addr
		err := s.start()
		if err == nil {
			return s
		}
		if try < 3 && strings.Contains(s.logTail(4000), "address already in use") {
			t.Logf("dendrite: %s was taken, trying another port", s.addr)
			continue
		}
		t.Fatalf("start dendrite: %v\n%s", err, s.logTail(8000))
	}
}

// Stop kills the server (SIGKILL, as a crash would) and waits for it to
// exit; its data stays for Restart. Start's cleanup does this too, and a
// stopped server may be stopped again. It is for tests of a homeserver
// that goes away. Call it from the test goroutine.
func (s *Server) Stop(t testing.TB) {
	t.Helper()
	if s.cmd == nil {
		return
	}
	s.cmd.Process.Kill() // an error means it has exited already
	select {
	case <-s.exited:
	case <-time.After(10 * time.Second):
		t.Errorf("dendrite (pid %d) did not exit within 10s of SIGKILL", s.cmd.Process.Pid)
	}
}

// Restart stops the server if it runs and starts it again on the same
// port with the same data: accounts, rooms and access tokens survive.
// It returns once the server answers. Call it from the test goroutine.
func (s *Server) Restart(t testing.TB) {
	t.Helper()
	s.Stop(t)
	if err := s.start(); err != nil {
		t.Fatalf("restart dendrite: %v\n%s", err, s.logTail(8000))
	}
}

// writeConfig writes the signing key and dendrite.yaml: generate-config's
// CI defaults (bcrypt at its minimum cost, no rate limiting, in-memory
// JetStream), then federation off, registration closed but for a random
// shared secret, and logs at info level to stderr.
func (s *Server) writeConfig(t testing.TB) {
	t.Helper()
	run(t, s.Dir, filepath.Join(s.bin, "generate-keys"), "-private-key", filepath.Join(s.Dir, "matrix_key.pem"))
	raw := run(t, s.Dir, filepath.Join(s.bin, "generate-config"), "-ci", "-server", s.ServerName, "-dir", s.Dir)
	var cfg map[string]any
	if err := yaml.Unmarshal(raw, &cfg); err != nil {
		t.Fatalf("generate-config wrote no YAML: %v\n%s", err, raw)
	}
	secret := make([]byte, 16)
	rand.Read(secret)
	for key, v := range map[string]any{
		"global.private_key":                    filepath.Join(s.Dir, "matrix_key.pem"),
		"global.disable_federation":             true,
		"global.report_stats.enabled":           false,
		"client_api.registration_disabled":      true,
		"client_api.registration_shared_secret": hex.EncodeToString(secret),
		"sync_api.search.enabled":               false,
		"mscs.mscs":                             []string{},
		"logging":                               []map[string]any{{"type": "std", "level": "info"}},
	} {
		set(t, cfg, key, v)
	}
	out, err := yaml.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(s.config, out, 0o600); err != nil {
		t.Fatal(err)
	}
}

// set puts v at a dotted key of a decoded YAML document; every key but
// the last must already exist there, so a key that Dendrite renamed fails
// the test instead of being ignored.
func set(t testing.TB, m map[string]any, key string, v any) {
	t.Helper()
	parts := strings.Split(key, ".")
	for _, p := range parts[:len(parts)-1] {
		next, ok := m[p].(map[string]any)
		if !ok {
			t.Fatalf("dendrite config has no %q (in %s)", p, key)
		}
		m = next
	}
	m[parts[len(parts)-1]] = v
}

// start runs dendrite on s.addr and waits until it answers or exits.
func (s *Server) start() error {
	logf, err := os.OpenFile(s.log, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	defer logf.Close() // the child has its own copy
	cmd := exec.Command(filepath.Join(s.bin, "dendrite"),
		"-config", s.config, "-http-bind-address", s.addr)
	cmd.Dir = s.Dir
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.Env = append(os.Environ(), "PPROFLISTEN=")
	cmd.SysProcAttr = dieWithParent()
	if err := cmd.Start(); err != nil {
		return err
	}
	exited := make(chan struct{})
	var waitErr error
	go func() {
		waitErr = cmd.Wait()
		close(exited)
	}()
	s.cmd, s.exited = cmd, exited

	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		if s.answers(ctx) {
			return nil
		}
		select {
		case <-exited:
			return fmt.Errorf("dendrite exited before answering: %v", waitErr)
		case <-ctx.Done():
			return fmt.Errorf("dendrite did not answer %s/_matrix/client/versions within %s", s.URL, startTimeout)
		case <-tick.C:
		}
	}
}

// answers reports whether /_matrix/client/versions answers 200.
func (s *Server) answers(ctx context.Context) bool {
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, s.URL+"/_matrix/client/versions", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return false
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// PID is the dendrite process id, for measuring it (e.g. its RSS in
// /proc/PID/status).
func (s *Server) PID() int { return s.cmd.Process.Pid }

// CreateAccount registers localpart with password (8 to 512 bytes) through
// Dendrite's create-account command and the server's shared secret, then
// logs in with it: the user id (@localpart:localhost) and the access token
// of that login's new device.
func (s *Server) CreateAccount(t testing.TB, localpart, password string) (userID, accessToken string) {
	t.Helper()
	cmd := exec.Command(filepath.Join(s.bin, "create-account"),
		"-config", s.config, "-url", s.URL, "-username", localpart, "-passwordstdin")
	cmd.Dir = s.Dir
	cmd.Stdin = strings.NewReader(password)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("create-account %s: %v\n%s", localpart, err, out)
	}
	return s.Login(t, localpart, password)
}

// Login logs localpart in with its password, as a new device each time:
// the user id and the device's access token.
func (s *Server) Login(t testing.TB, localpart, password string) (userID, accessToken string) {
	t.Helper()
	var resp struct {
		UserID      string `json:"user_id"`
		AccessToken string `json:"access_token"`
	}
	err := s.Do(context.Background(), http.MethodPost, "/_matrix/client/v3/login", "", map[string]any{
		"type":       "m.login.password",
		"identifier": map[string]string{"type": "m.id.user", "user": localpart},
		"password":   password,
	}, &resp)
	if err != nil {
		t.Fatalf("login %s: %v", localpart, err)
	}
	if resp.UserID == "" || resp.AccessToken == "" {
		t.Fatalf("login %s: no user_id or access_token in the answer", localpart)
	}
	return resp.UserID, resp.AccessToken
}

// Do makes one client-server API call: body (if not nil) as JSON, token
// (if not empty) as the bearer, the JSON answer into out (if not nil). An
// answer other than 2xx is an *APIError. It is for tests that act as a
// person in a room without a Matrix library; any goroutine may call it.
func (s *Server) Do(ctx context.Context, method, path, token string, body, out any) error {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, s.URL+path, rd)
	if err != nil {
		return err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return fmt.Errorf("%s %s: %w", method, path, err)
	}
	if resp.StatusCode/100 != 2 {
		e := &APIError{Status: resp.StatusCode}
		json.Unmarshal(b, e)
		if e.Code == "" {
			e.Message = strings.TrimSpace(tail(b, 300))
		}
		return fmt.Errorf("%s %s: %w", method, path, e)
	}
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			return fmt.Errorf("%s %s: decode answer: %w", method, path, err)
		}
	}
	return nil
}

// APIError is a homeserver's error answer: the HTTP status and the Matrix
// errcode (M_FORBIDDEN, M_LIMIT_EXCEEDED, …) and message.
type APIError struct {
	Status  int    `json:"-"`
	Code    string `json:"errcode"`
	Message string `json:"error"`
}

func (e *APIError) Error() string {
	return fmt.Sprintf("HTTP %d %s: %s", e.Status, e.Code, e.Message)
}

// PathEscape escapes one path segment of a client-server API path: a room
// id, an alias, an event type or a transaction id.
func PathEscape(s string) string { return url.PathEscape(s) }

// logTail returns the last n bytes of dendrite's log.
func (s *Server) logTail(n int) string {
	b, err := os.ReadFile(s.log)
	if err != nil {
		return fmt.Sprintf("(no dendrite log: %v)", err)
	}
	return tail(b, n)
}

// run runs a command in dir and returns its stdout; it fails the test with
// the output if the command fails.
func run(t testing.TB, dir, name string, args ...string) []byte {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s%s", filepath.Base(name), strings.Join(args, " "), err, out, stderr.Bytes())
	}
	return out
}

// freePort returns a 127.0.0.1 address whose port was free a moment ago.
func freePort(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

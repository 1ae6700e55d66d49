package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/frontdesk-hq/frontdesk/event"
)

// teamConfig is a desk for four: an admin, a member, a viewer and a
// service, the demo agent fast, no terminal.
func teamConfig(t *testing.T, dir string) string {
	t.Helper()
	cfg := filepath.Join(dir, "config.yaml")
	conf := `data_dir: ` + filepath.Join(dir, "data") + `
agent: {demo: {delay_ms: 2}}
channels: {console: {enabled: "false"}}
people:
  - {id: ann, name: Ann, role: admin, emails: [ann@example.com]}
  - {id: bo, name: Bo, role: member, emails: [bo@example.com]}
  - {id: di, name: Di, role: viewer}
  - {id: ci, kind: service, permissions: [talk]}
`
	if err := os.WriteFile(cfg, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	return cfg
}

// frontdeskCmd runs a subcommand of the binary and returns its stdout; a
// non-zero exit fails the test unless wantErr.
func frontdeskCmd(t *testing.T, dir string, wantErr bool, args ...string) (string, string) {
	t.Helper()
	cmd := exec.Command(binary, args...)
	cmd.Dir = dir
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if (err != nil) != wantErr {
		t.Fatalf("frontdesk %s: err %v (want error %v)\nstdout: %s\nstderr: %s", strings.Join(args, " "), err, wantErr, out.String(), errb.String())
	}
	return out.String(), errb.String()
}

// addToken issues a token for person with the command line and returns it:
// the last line of what it printed.
func addToken(t *testing.T, dir, cfg, person, label string) string {
	t.Helper()
	out, _ := frontdeskCmd(t, dir, false, "token", "add", "-config", cfg, "-label", label, person)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	tok := strings.TrimSpace(lines[len(lines)-1])
	if !strings.HasPrefix(tok, "fd_") || strings.ContainsAny(tok, " \t") {
		t.Fatalf("token add printed %q, want the token alone on its last line", out)
	}
	return tok
}

// call sends method url with token and body, returning the status and body.
func call(t *testing.T, method, url, token string, body any) (int, []byte) {
	t.Helper()
	var r io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		r = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, url, r)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

// dialAs opens a WebSocket as the token's person and reads up to synced.
func dialAs(t *testing.T, ctx context.Context, base, token string) (*websocket.Conn, event.ConnectedData) {
	t.Helper()
	c, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(base, "http")+"/ws",
		&websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {"Bearer " + token}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.CloseNow() })
	var conn event.ConnectedData
	for {
		e := readFrame(t, ctx, c)
		if e.Type == event.Connected {
			if err := e.Decode(&conn); err != nil {
				t.Fatal(err)
			}
		}
		if e.Type == event.Synced {
			return c, conn
		}
	}
}

func readFrame(t *testing.T, ctx context.Context, c *websocket.Conn) event.Event {
	t.Helper()
	_, b, err := c.Read(ctx)
	if err != nil {
		t.Fatalf("read: %v", err)
	}
	var e event.Event
	if err := json.Unmarshal(b, &e); err != nil {
		t.Fatal(err)
	}
	return e
}

// A team of four on the real binary: tokens issued on the stopped server
// work once it runs; every input and change in the log says who; each
// refusal changes nothing; no token is anywhere under data_dir; a token
// revoked while its WebSocket is open closes it with 1008.
func TestBinaryTeamEveryActionSaysWho(t *testing.T) {
	dir := t.TempDir()
	cfg := teamConfig(t, dir)
	toks := map[string]string{}
	for _, p := range []string{"ann", "bo", "di", "ci"} {
		toks[p] = addToken(t, dir, cfg, p, "e2e")
	}
	p := startBinary(t, dir, nil, "-config", cfg, "-addr", "127.0.0.1:0")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	if code, _ := call(t, "GET", p.url+"/api/session", "", nil); code != http.StatusUnauthorized {
		t.Fatalf("no credential: %d, want 401", code)
	}
	if code, b := call(t, "GET", p.url+"/api/me", toks["bo"], nil); code != 200 || !strings.Contains(string(b), `"person":"bo"`) {
		t.Fatalf("/api/me as bo: %d %s", code, b)
	}

	bo, conn := dialAs(t, ctx, p.url, toks["bo"])
	if conn.You == nil || conn.You.Person != "bo" || conn.You.Name != "Bo" || conn.You.Role != "member" {
		t.Fatalf("connected.you = %+v, want Bo the member", conn.You)
	}
	sendFrame(t, ctx, bo, "bo-1", "hello from Bo")
	if u := untilTurnEnd(t, ctx, bo); !strings.Contains(string(u.Data), `"person":"bo"`) {
		t.Fatalf("bo's user event %s has no person bo", u.Data)
	}

	// The viewer reads but may not talk: an error frame, nothing logged.
	di, _ := dialAs(t, ctx, p.url, toks["di"])
	before := lastSeq(t, p.url, toks["ann"])
	sendFrame(t, ctx, di, "di-1", "may I?")
	if e := readFrame(t, ctx, di); e.Type != event.Error || !strings.Contains(string(e.Data), `"code":"forbidden"`) {
		t.Fatalf("viewer's message: %s %s, want an error frame forbidden", e.Type, e.Data)
	}
	if after := lastSeq(t, p.url, toks["ann"]); after != before {
		t.Fatalf("a refused message moved last_seq %d → %d", before, after)
	}

	// The service talks through the webhook: its person, its from label.
	if code, b := call(t, "POST", p.url+"/api/messages?wait=1", toks["ci"], map[string]string{"content": "nightly report", "from": "cron"}); code != 200 {
		t.Fatalf("ci's webhook: %d %s", code, b)
	}

	// A member may not reset; an admin may.
	before = lastSeq(t, p.url, toks["ann"])
	code, b := call(t, "POST", p.url+"/api/reset", toks["bo"], nil)
	if code != http.StatusForbidden || !strings.Contains(string(b), `"permission":"reset"`) || !strings.Contains(string(b), `"code":"forbidden"`) {
		t.Fatalf("bo's reset: %d %s, want 403 forbidden reset", code, b)
	}
	if after := lastSeq(t, p.url, toks["ann"]); after != before {
		t.Fatalf("a refused reset moved last_seq %d → %d", before, after)
	}
	if code, b := call(t, "POST", p.url+"/api/reset", toks["ann"], nil); code != 200 {
		t.Fatalf("ann's reset: %d %s", code, b)
	}

	// Ann exchanges her token for the page's cookie: a web sign-in.
	if code, b := call(t, "POST", p.url+"/auth/token", "", map[string]string{"token": toks["ann"]}); code != http.StatusNoContent && code != http.StatusOK {
		t.Fatalf("ann's token exchange: %d %s", code, b)
	}

	// Revoking bo's token closes bo's open WebSocket with 1008.
	frontdeskCmd(t, dir, false, "token", "revoke", "-config", cfg, "bo", "e2e")
	closedWith(t, ctx, bo, websocket.StatusPolicyViolation, 5*time.Second, "bo's socket after the revoke")
	if code, _ := call(t, "GET", p.url+"/api/session", toks["bo"], nil); code != http.StatusUnauthorized {
		t.Fatalf("bo's revoked token: %d, want 401", code)
	}

	// The log says who did what, from which door.
	got := whoDidWhat(t, filepath.Join(dir, "data"))
	for _, want := range []string{"user bo/web/", "user ci/webhook/cron", "reset ann", "signed_in ann", "token_added ann", "token_added ci", "token_revoked bo"} {
		if !strings.Contains(got, want) {
			t.Errorf("the log says %q; want %q in it", got, want)
		}
	}

	// No token is anywhere under data_dir.
	grepData(t, filepath.Join(dir, "data"), toks)
}

// sendFrame sends a message frame on c.
func sendFrame(t *testing.T, ctx context.Context, c *websocket.Conn, id, text string) {
	t.Helper()
	b, _ := json.Marshal(map[string]string{"type": "message", "content": text, "client_msg_id": id})
	if err := c.Write(ctx, websocket.MessageText, b); err != nil {
		t.Fatal(err)
	}
}

// untilTurnEnd reads c up to a turn_end and returns the first user event
// it read.
func untilTurnEnd(t *testing.T, ctx context.Context, c *websocket.Conn) event.Event {
	t.Helper()
	var user event.Event
	for {
		e := readFrame(t, ctx, c)
		if e.Type == event.User && user.Seq == 0 {
			user = e
		}
		if e.Type == event.TurnEnd {
			return user
		}
	}
}

// closedWith reads c until it ends and fails unless it was closed with
// status within wait.
func closedWith(t *testing.T, ctx context.Context, c *websocket.Conn, status websocket.StatusCode, wait time.Duration, what string) {
	t.Helper()
	closed := make(chan error, 1)
	go func() {
		for {
			if _, _, err := c.Read(ctx); err != nil {
				closed <- err
				return
			}
		}
	}()
	select {
	case err := <-closed:
		if websocket.CloseStatus(err) != status {
			t.Fatalf("%s: ended with %v, want close %d", what, err, status)
		}
	case <-time.After(wait):
		t.Fatalf("%s: still open after %v", what, wait)
	}
}

// whoDidWhat sums up the chat log in dir: "user <person>/<channel>/<from>"
// for each input, "reset <person>", "<action> <person>" for each
// person_changed.
func whoDidWhat(t *testing.T, dir string) string {
	t.Helper()
	var who []string
	for _, e := range readChatLog(t, dir) {
		var d struct {
			Person, Channel, From, Action string
		}
		_ = json.Unmarshal(e.Data, &d)
		switch e.Type {
		case event.User:
			who = append(who, fmt.Sprintf("user %s/%s/%s", d.Person, d.Channel, d.From))
		case event.Reset:
			who = append(who, "reset "+d.Person)
		case event.PersonChanged:
			who = append(who, fmt.Sprintf("%s %s", d.Action, d.Person))
		}
	}
	return strings.Join(who, "; ")
}

// lastSeq is /api/session's last_seq, asked with token.
func lastSeq(t *testing.T, base, token string) int64 {
	t.Helper()
	code, b := call(t, "GET", base+"/api/session", token, nil)
	var s struct {
		LastSeq int64 `json:"last_seq"`
	}
	if code != 200 || json.Unmarshal(b, &s) != nil {
		t.Fatalf("/api/session: %d %s", code, b)
	}
	return s.LastSeq
}

// grepData fails if any secret appears in any file under dir.
func grepData(t *testing.T, dir string, secrets map[string]string) {
	t.Helper()
	files := 0
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || d.Type()&os.ModeSocket != 0 {
			return err
		}
		b, err := os.ReadFile(path)
		if errors.Is(err, os.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		files++
		for who, s := range secrets {
			if bytes.Contains(b, []byte(s)) {
				t.Errorf("%s's secret is in %s", who, path)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 3 {
		t.Fatalf("grep read %d files under %s, want the data directory's", files, dir)
	}
}

// One person on a laptop configures nothing new: with only the shared
// server.auth_token every door works as before and the log says "owner".
func TestBinarySharedTokenIsTheOwner(t *testing.T) {
	dir := t.TempDir()
	const tok = "laptop-token-0123456789abcdef"
	p := startBinary(t, dir, []string{"FRONTDESK_AUTH_TOKEN=" + tok}, "-data", filepath.Join(dir, "data"), "-addr", "127.0.0.1:0")
	if code, b := call(t, "POST", p.url+"/api/messages?wait=1", tok, map[string]string{"content": "hello", "from": "laptop"}); code != 200 {
		t.Fatalf("message: %d %s", code, b)
	}
	if code, b := call(t, "GET", p.url+"/api/me", tok, nil); code != 200 || !strings.Contains(string(b), `"person":"owner"`) {
		t.Fatalf("/api/me: %d %s, want the owner", code, b)
	}
	if code, b := call(t, "POST", p.url+"/api/reset", tok, nil); code != 200 || !strings.Contains(string(b), `"person":"owner"`) {
		t.Fatalf("reset: %d %s, want it done by the owner", code, b)
	}
	var users int
	for _, e := range readChatLog(t, filepath.Join(dir, "data")) {
		var d event.UserData
		if e.Type == event.User && e.Decode(&d) == nil {
			users++
			if d.Person != "owner" || d.From != "laptop" {
				t.Errorf("user event %s: want person owner, from laptop", e.Data)
			}
		}
	}
	if users != 1 {
		t.Fatalf("%d user events, want 1", users)
	}
}

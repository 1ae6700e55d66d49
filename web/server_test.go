package web_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/frontdesk-hq/frontdesk/agent"
	"github.com/frontdesk-hq/frontdesk/channels/webhook"
	"github.com/frontdesk-hq/frontdesk/channels/ws"
	"github.com/frontdesk-hq/frontdesk/history"
	"github.com/frontdesk-hq/frontdesk/hub"
	"github.com/frontdesk-hq/frontdesk/internal/testkit/testagent"
	"github.com/frontdesk-hq/frontdesk/web"
)

// serveLikeMain runs the handler in the http.Server main builds, on a real
// listener, and returns its address.
func serveLikeMain(t *testing.T, o web.Options, so web.ServerOptions, a agent.Agent) string {
	t.Helper()
	dir := t.TempDir()
	lg, err := history.Open(history.Options{Path: filepath.Join(dir, "chat_history.ndjson"), RotateMB: 5, Fsync: "never"})
	if err != nil {
		t.Fatal(err)
	}
	m := hub.New(hub.Config{DataDir: dir}, lg, a)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); m.Run(ctx) }()
	wsh := ws.New(m, ws.Options{})
	o.WS = wsh
	o.Messages = webhook.New(m, webhook.Options{MaxBytes: 65536})
	srv := web.NewServer(web.Handler(m, o), so)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	t.Cleanup(func() {
		cancel()
		<-done
		srv.Close()
		wsh.Wait(context.Background())
		lg.Close()
	})
	return ln.Addr().String()
}

// rawConn is a TCP client that writes HTTP by hand, so it can misbehave.
type rawConn struct {
	t  *testing.T
	c  net.Conn
	br *bufio.Reader
}

func dialRaw(t *testing.T, addr string) *rawConn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	// Nothing here may take this long: a read that hits it is a failure.
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	return &rawConn{t: t, c: c, br: bufio.NewReader(c)}
}

// drip writes b one byte every interval until it is all sent, the
// connection fails or the test ends.
func (rc *rawConn) drip(b []byte, interval time.Duration) {
	stop := make(chan struct{})
	rc.t.Cleanup(func() { close(stop) })
	go func() {
		tick := time.NewTicker(interval)
		defer tick.Stop()
		for i := range b {
			select {
			case <-tick.C:
			case <-stop:
				return
			}
			if _, err := rc.c.Write(b[i : i+1]); err != nil {
				return
			}
		}
	}()
}

// response reads one response; a timeout means the server never answered.
func (rc *rawConn) response() *http.Response {
	rc.t.Helper()
	resp, err := http.ReadResponse(rc.br, nil)
	if err != nil {
		rc.t.Fatalf("no answer: %v", err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	resp.Body = io.NopCloser(strings.NewReader(string(body)))
	return resp
}

// closed asserts the server closes the connection (EOF, not our timeout).
func (rc *rawConn) closed() {
	rc.t.Helper()
	_, err := rc.br.ReadByte()
	if errors.Is(err, os.ErrDeadlineExceeded) {
		rc.t.Fatal("the server kept the connection open for 5s")
	}
	if err == nil {
		rc.t.Fatal("the server sent more bytes instead of closing")
	}
}

func TestServerBoundsSlowAndIdleConnections(t *testing.T) {
	const token = "0123456789abcdef-token"
	o := web.Options{Addr: "127.0.0.1:8080", Token: token}
	// quick has short deadlines; patient has the defaults (30 s to send a
	// body), so what it does within the test's 5 s is not the deadline's work.
	quick := serveLikeMain(t, o, web.ServerOptions{BodyTimeout: 300 * time.Millisecond, IdleTimeout: 300 * time.Millisecond}, &agent.Demo{})
	patient := serveLikeMain(t, o, web.ServerOptions{}, &agent.Demo{})
	body := `{"content":"` + strings.Repeat("x", 180) + `"}`
	post := func(auth string) string {
		return fmt.Sprintf("POST /api/messages HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n%sContent-Length: %d\r\n\r\n",
			auth, len(body))
	}
	tests := []struct {
		name       string
		addr       string
		head       string
		dripBody   bool
		status     int
		wantClose  bool // Connection: close on the answer
		thenClosed bool // the server closes the connection after it
	}{
		// 200 bytes at one per 50 ms would take 10 s: the body deadline ends it.
		{"slow body with the token", quick, post("Authorization: Bearer " + token + "\r\n"), true, http.StatusRequestTimeout, true, true},
		// Refused before the body is read: answered at once, then closed,
		// without waiting for the body or its deadline.
		{"slow body without the token", patient, post(""), true, http.StatusUnauthorized, true, true},
		{"slow body with a wrong token", patient, post("Authorization: Bearer nope\r\n"), true, http.StatusUnauthorized, true, true},
		// A kept-alive connection with nothing more to say is closed.
		{"idle keep-alive", quick, "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", false, http.StatusOK, false, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rc := dialRaw(t, tc.addr)
			if _, err := io.WriteString(rc.c, tc.head); err != nil {
				t.Fatal(err)
			}
			if tc.dripBody {
				rc.drip([]byte(body), 50*time.Millisecond)
			}
			resp := rc.response()
			if resp.StatusCode != tc.status {
				b, _ := io.ReadAll(resp.Body)
				t.Fatalf("status %d %s, want %d", resp.StatusCode, b, tc.status)
			}
			if got := resp.Close; got != tc.wantClose {
				t.Errorf("Connection: close = %v, want %v (headers %v)", got, tc.wantClose, resp.Header)
			}
			if tc.thenClosed {
				rc.closed()
			}
		})
	}
}

// TestReadTimeoutSparesWebSockets checks that the body deadline ends with
// the body: a ?wait=1 answer long after it arrives intact, and a WebSocket
// goes on working past it.
func TestReadTimeoutSparesWebSockets(t *testing.T) {
	const deadline = 100 * time.Millisecond
	g := testagent.NewGate()
	addr := serveLikeMain(t, web.Options{}, web.ServerOptions{BodyTimeout: deadline}, g)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, _, err := websocket.Dial(ctx, "ws://"+addr+"/ws", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseNow()

	// The turn is released well after the deadline has passed.
	released := time.AfterFunc(4*deadline, func() { g.Release <- struct{}{} })
	defer released.Stop()
	resp, err := http.Post("http://"+addr+"/api/messages?wait=1&timeout=10", "application/json", strings.NewReader(`{"content":"take your time"}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(b), `"status":"completed"`) {
		t.Fatalf("?wait=1 past the deadline: got %d %s, want 200 completed", resp.StatusCode, b)
	}
	// The WebSocket, older than the deadline by now, saw all of it and
	// still takes a message.
	if err := c.Write(ctx, websocket.MessageText, []byte(`{"type":"command","action":"cancel"}`)); err != nil {
		t.Fatalf("write on the WebSocket after the deadline: %v", err)
	}
	for sawReply, sawError := false, false; !sawReply || !sawError; {
		_, b, err := c.Read(ctx)
		if err != nil {
			t.Fatalf("WebSocket after the deadline: %v", err)
		}
		sawReply = sawReply || strings.Contains(string(b), `"content":"reply to take your time"`)
		sawError = sawError || strings.Contains(string(b), `"code":"not_busy"`)
	}
}

// TestNewServerLogsThroughSlog: net/http's own messages (a panicking
// handler, accept errors) go to the server's slog logger, not to the
// standard logger.
func TestNewServerLogsThroughSlog(t *testing.T) {
	var buf strings.Builder
	srv := web.NewServer(http.NotFoundHandler(), web.ServerOptions{Logger: slog.New(slog.NewJSONHandler(&buf, nil))})
	if srv.ErrorLog == nil {
		t.Fatal("ErrorLog is nil: net/http would write to the standard logger")
	}
	srv.ErrorLog.Printf("http: panic serving 127.0.0.1:1: boom")
	if got := buf.String(); !strings.Contains(got, `"level":"WARN","msg":"http: panic serving 127.0.0.1:1: boom"`) {
		t.Fatalf("logged %q, want a WARN record from slog", got)
	}
}

package ws_test

import (
	"context"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/frontdesk-hq/frontdesk/agent"
	"github.com/frontdesk-hq/frontdesk/channels/ws"
	"github.com/frontdesk-hq/frontdesk/hub"
)

// openFDs counts this process's open file descriptors.
func openFDs(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skipf("cannot count fds: %v", err)
	}
	return len(ents)
}

// waitFDs waits until the fd count is at most want, or fails after 10 s.
func waitFDs(t *testing.T, want int, what string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		n := openFDs(t)
		if n <= want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %d fds open, want at most %d: the server kept sockets of clients that left", what, n, want)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// rudeDial opens a WebSocket and returns it with its raw TCP connection, so
// the test can vanish like a phone does: TCP gone, no close frame.
func rudeDial(t *testing.T, url string) (*websocket.Conn, net.Conn) {
	t.Helper()
	var raw net.Conn
	tr := &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
		raw = c
		return c, err
	}}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, _, err := websocket.Dial(ctx, url, &websocket.DialOptions{HTTPClient: &http.Client{Transport: tr}})
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	// Read connected … synced, so the server's handler is fully running.
	for {
		_, b, err := c.Read(ctx)
		if err != nil {
			t.Fatalf("read: %v", err)
		}
		if strings.Contains(string(b), `"type":"synced"`) {
			break
		}
	}
	return c, raw
}

func TestAbruptDisconnectsReleaseSockets(t *testing.T) {
	srv := start(t, hub.Config{}, ws.Options{MaxMessageBytes: 1024}, &agent.Demo{})
	// One client that stays proves the server still serves afterwards.
	stay := dial(t, srv.url)
	stay.join()
	base := openFDs(t)

	const n = 1000
	for i := range n {
		_, raw := rudeDial(t, srv.url)
		// Half leave with a TCP reset, half with a FIN: both without a
		// WebSocket close frame.
		if i%2 == 0 {
			raw.(*net.TCPConn).SetLinger(0)
		}
		raw.Close()
	}
	waitFDs(t, base+2, "after 1,000 abrupt disconnects")

	// A frame over the read limit: the server sends 1009 and must drop the
	// connection even though this client never answers the close frame.
	for range 50 {
		c, raw := rudeDial(t, srv.url)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		if err := c.Write(ctx, websocket.MessageText, []byte(`{"type":"message","content":"`+strings.Repeat("x", 4096)+`"}`)); err != nil {
			t.Fatalf("write: %v", err)
		}
		cancel()
		// Wait for the server to hang up: a read on the raw socket sees EOF
		// once the server closed its end (the 1009 frame comes first).
		raw.SetReadDeadline(time.Now().Add(5 * time.Second))
		buf := make([]byte, 4096)
		for {
			if _, err := raw.Read(buf); err != nil {
				if ne, ok := err.(net.Error); ok && ne.Timeout() {
					t.Fatal("the server kept the connection open after sending 1009")
				}
				break
			}
		}
		raw.Close()
	}
	waitFDs(t, base+2, "after 50 oversize frames")

	stay.say("still here", "c-1")
	stay.until("turn_end")
}

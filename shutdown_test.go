package main

import (
	"context"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// TestShutdownWithAClientThatDoesNotRead: a WebSocket client that never
// reads (so never answers the close handshake) must not eat the shutdown
// budget, and a client that does read still gets its 1001.
func TestShutdownWithAClientThatDoesNotRead(t *testing.T) {
	p := startBinary(t, t.TempDir(), nil, "-addr", "127.0.0.1:0", "-data", "state")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	url := "ws" + strings.TrimPrefix(p.url, "http") + "/ws"
	dial := func() *websocket.Conn {
		c, _, err := websocket.Dial(ctx, url, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.CloseNow() })
		return c
	}
	dial() // never read from: it does not answer the server's close frame
	reader := dial()
	for { // the server has registered the reading client
		_, b, err := reader.Read(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(b), `"type":"synced"`) {
			break
		}
	}

	closed := make(chan error, 1) // the reading client answers the close as it reads
	go func() {
		for {
			if _, _, err := reader.Read(ctx); err != nil {
				closed <- err
				return
			}
		}
	}()

	took, err := p.stop(t, syscall.SIGTERM)
	if err != nil {
		t.Fatalf("exit after SIGTERM: %v\n%s", err, p.stderr)
	}
	// The silent client costs at most ws.Options.CloseTimeout (1 s). Before,
	// it held shutdown for the whole internal 4 s deadline (the issue saw
	// 5.5–5.9 s in all). 3 s leaves room for a slow machine.
	if took > 3*time.Second {
		t.Errorf("shutdown took %v with a client that does not read, want well under the 5 s budget (≤ 3 s)\n%s", took, p.stderr)
	}
	err = <-closed
	if got := websocket.CloseStatus(err); got != websocket.StatusGoingAway {
		t.Fatalf("the reading client got %v (%v), want close 1001", got, err)
	}
}

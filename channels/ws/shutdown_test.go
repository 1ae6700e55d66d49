package ws_test

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/frontdesk-hq/frontdesk/channels/ws"
	"github.com/frontdesk-hq/frontdesk/event"
	"github.com/frontdesk-hq/frontdesk/history"
	"github.com/frontdesk-hq/frontdesk/hub"
	"github.com/frontdesk-hq/frontdesk/internal/testkit/testagent"
)

// TestShutdownCutsClientsThatDoNotRead: after the hub stopped, Shutdown
// returns within CloseTimeout whatever a client that does not read is
// doing: here the server's write to it is stuck on full socket buffers,
// which WriteTimeout alone would let last 30 s.
func TestShutdownCutsClientsThatDoNotRead(t *testing.T) {
	const closeTimeout = 300 * time.Millisecond
	dir := t.TempDir()
	lg, err := history.Open(history.Options{Path: filepath.Join(dir, "chat_history.ndjson"), RotateMB: 50, Fsync: "never"})
	if err != nil {
		t.Fatal(err)
	}
	defer lg.Close()
	// 10 MB of deltas: more than the socket buffers of a client that does
	// not read can hold. The queue is long enough that it is not dropped.
	m := hub.New(hub.Config{DataDir: dir, ClientQueue: 1 << 16}, lg, &testagent.Count{N: 10000, Text: strings.Repeat("x", 1<<10)})
	hubCtx, stopHub := context.WithCancel(context.Background())
	hubDone := make(chan struct{})
	go func() { defer close(hubDone); m.Run(hubCtx) }()
	defer func() { stopHub(); <-hubDone }()
	h := ws.New(m, ws.Options{WriteTimeout: 30 * time.Second, CloseTimeout: closeTimeout})
	srv := httptest.NewServer(h)
	defer srv.Close()
	url := "ws" + strings.TrimPrefix(srv.URL, "http")

	// The silent client: a small receive buffer, and it never reads.
	small := &net.Dialer{Control: func(_, _ string, c syscall.RawConn) error {
		return c.Control(func(fd uintptr) { syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096) })
	}}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	silent, _, err := websocket.Dial(ctx, url, &websocket.DialOptions{HTTPClient: &http.Client{Transport: &http.Transport{DialContext: small.DialContext}}})
	if err != nil {
		t.Fatal(err)
	}
	defer silent.CloseNow()
	reader := dial(t, url)
	reader.join()
	if _, err := m.Submit(ctx, hub.Input{Channel: event.ChannelWebhook, Content: "flood"}); err != nil {
		t.Fatal(err)
	}
	reader.until(event.TurnEnd) // every frame is queued for the silent client too

	stopHub()
	<-hubDone
	start := time.Now()
	sctx, scancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer scancel()
	if err := h.Shutdown(sctx); err != nil {
		t.Fatalf("Shutdown: %v after %v, want the connections gone within %v", err, time.Since(start), closeTimeout)
	}
	if took := time.Since(start); took > closeTimeout+time.Second {
		t.Fatalf("Shutdown took %v, want about CloseTimeout (%v)", took, closeTimeout)
	}
}

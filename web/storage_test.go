package web_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/coder/websocket/wsjson"

	"github.com/frontdesk-hq/frontdesk/channels/webhook"
	"github.com/frontdesk-hq/frontdesk/channels/ws"
	"github.com/frontdesk-hq/frontdesk/event"
	"github.com/frontdesk-hq/frontdesk/history"
	"github.com/frontdesk-hq/frontdesk/hub"
	"github.com/frontdesk-hq/frontdesk/internal/testkit/testagent"
	"github.com/frontdesk-hq/frontdesk/internal/testkit/testdisk"
	"github.com/frontdesk-hq/frontdesk/internal/testkit/testlog"
	"github.com/frontdesk-hq/frontdesk/web"
)

// TestStorageFaultAtEveryDoor runs the whole server on a data directory
// that stops taking writes: a full tmpfs as root (507 storage_full), a
// read-only directory otherwise (503 storage_error).
func TestStorageFaultAtEveryDoor(t *testing.T) {
	disk := testdisk.New(t)
	code, status := hub.StorageFailed, 503
	if disk.Full {
		code, status = hub.StorageFull, 507
	}
	rec, logger := testlog.New()
	lg, err := history.Open(history.Options{Path: filepath.Join(disk.Dir, "chat_history.ndjson"), RotateMB: 5, Fsync: history.FsyncAlways})
	if err != nil {
		t.Fatal(err)
	}
	m := hub.New(hub.Config{DataDir: disk.Dir, Logger: logger}, lg, &testagent.Count{N: 1})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); m.Run(ctx) }()
	wsh := ws.New(m, ws.Options{})
	srv := httptest.NewServer(web.Handler(m, web.Options{WS: wsh, Messages: webhook.New(m, webhook.Options{MaxBytes: 64 << 10})}))
	t.Cleanup(func() {
		cancel()
		<-done
		srv.Close()
		wsh.Wait(context.Background())
		lg.Close()
	})
	c, _, err := websocket.Dial(t.Context(), "ws"+strings.TrimPrefix(srv.URL, "http")+"/ws", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseNow()
	readWS := func() event.Event {
		t.Helper()
		rctx, rcancel := context.WithTimeout(t.Context(), 5*time.Second)
		defer rcancel()
		var e event.Event
		if err := wsjson.Read(rctx, c, &e); err != nil {
			t.Fatal(err)
		}
		return e
	}
	for readWS().Type != event.Synced {
	}
	big := strings.Repeat("a long message ", 600) // over a tmpfs page
	disk.Fail()

	// The webhook: 507 or 503, with the code and a sentence.
	r := do(t, request(t, "POST", srv.URL+"/api/messages", `{"content":"`+big+`"}`, "Content-Type", "application/json"))
	if r.status != status || r.body["code"] != code || !strings.Contains(r.raw, "nothing was saved") {
		t.Fatalf("POST /api/messages on a failing disk = %d %.300s; want %d %s", r.status, r.raw, status, code)
	}
	// The WebSocket: an error frame with the same code, for that message.
	b, _ := json.Marshal(map[string]string{"type": "message", "content": big, "client_msg_id": "w-1"})
	if err := c.Write(t.Context(), websocket.MessageText, b); err != nil {
		t.Fatal(err)
	}
	e := readWS()
	var ed event.ErrorData
	_ = json.Unmarshal(e.Data, &ed)
	if e.Type != event.Error || ed.Code != code || ed.ClientMsgID != "w-1" {
		t.Fatalf("ws reply %s %s, want error %s for w-1", e.Type, e.Data, code)
	}
	// A reset cannot write its files either: refused the same way, on
	// both doors.
	if r := do(t, request(t, "POST", srv.URL+"/api/reset", "")); r.status != status || r.body["code"] != code {
		t.Fatalf("POST /api/reset = %d %s, want %d %s", r.status, r.raw, status, code)
	}
	if err := c.Write(t.Context(), websocket.MessageText, []byte(`{"type":"command","action":"reset"}`)); err != nil {
		t.Fatal(err)
	}
	if e := readWS(); e.Type != event.Error || !strings.Contains(string(e.Data), `"code":"`+code+`"`) {
		t.Fatalf("ws reset reply %s %s, want error %s", e.Type, e.Data, code)
	}

	// Health and metrics say so; reads go on.
	health := func(want int) reply {
		t.Helper()
		r := do(t, request(t, "GET", srv.URL+"/healthz", ""))
		if r.status != want {
			t.Fatalf("/healthz = %d %s, want %d", r.status, r.raw, want)
		}
		return r
	}
	gauge := func(want string) {
		t.Helper()
		r := do(t, request(t, "GET", srv.URL+"/metrics", ""))
		if !strings.Contains(r.raw, "\nfrontdesk_storage_ok "+want+"\n") {
			t.Fatalf("/metrics has no frontdesk_storage_ok %s:\n%s", want, grep(r.raw, "frontdesk_storage"))
		}
	}
	if r := health(503); r.body["status"] != code || !strings.HasPrefix(r.body["message"].(string), "chat log: ") {
		t.Fatalf("/healthz body %s, want status %s and the chat log's error", r.raw, code)
	}
	reason := "chat log: cannot be written"
	if disk.Full {
		reason = "chat log: disk full"
	}
	if r := health(503); !strings.Contains(r.raw, `"reasons":["`+reason+`"]`) {
		t.Fatalf("/healthz body %s, want the short reason %q", r.raw, reason)
	}
	gauge("0")
	for _, path := range []string{"/api/history/recent", "/api/session"} {
		if r := do(t, request(t, "GET", srv.URL+path, "")); r.status != 200 {
			t.Fatalf("GET %s while storage fails = %d %s", path, r.status, r.raw)
		}
	}

	// Space freed: still 503 until a write succeeds, then all fine.
	disk.Heal()
	health(503)
	if r := do(t, request(t, "POST", srv.URL+"/api/messages", `{"content":"hello again"}`, "Content-Type", "application/json")); r.status != 202 {
		t.Fatalf("POST /api/messages after healing = %d %s", r.status, r.raw)
	}
	if r := health(200); r.body["status"] != "ok" {
		t.Fatalf("/healthz after a successful write: %s", r.raw)
	}
	gauge("1")
	// The refused inputs were never echoed: the first user event is the
	// one that was recorded.
	for {
		e := readWS()
		if e.Type == event.User {
			if !strings.Contains(string(e.Data), "hello again") {
				t.Fatalf("echoed %s", e.Data)
			}
			break
		}
	}

	// One line when the chat log failed, one when it recovered.
	isLog := func(l testlog.Line) bool { return l.Attrs["part"] == "chat log" }
	var fails, recoveries int
	for _, l := range rec.Lines(isLog) {
		switch {
		case l.Level >= slog.LevelWarn:
			fails++
		case l.Level == slog.LevelInfo:
			recoveries++
		}
	}
	if fails != 1 || recoveries != 1 {
		t.Fatalf("%d failure and %d recovery lines for the chat log, want 1 and 1:\n%v", fails, recoveries, rec.Lines(isLog))
	}
}

func grep(s, sub string) string {
	var out []string
	for l := range strings.Lines(s) {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "")
}

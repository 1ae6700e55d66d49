package web_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/frontdesk-hq/frontdesk/channels/webhook"
	"github.com/frontdesk-hq/frontdesk/channels/ws"
	"github.com/frontdesk-hq/frontdesk/event"
	"github.com/frontdesk-hq/frontdesk/history"
	"github.com/frontdesk-hq/frontdesk/hub"
	"github.com/frontdesk-hq/frontdesk/internal/testkit/testagent"
	"github.com/frontdesk-hq/frontdesk/web"
)

type wsPeer struct {
	t *testing.T
	c *websocket.Conn
}

func peer(t *testing.T, url string) *wsPeer {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(url, "http")+"/ws", nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.CloseNow() })
	p := &wsPeer{t: t, c: c}
	p.until(event.Synced)
	return p
}

func (p *wsPeer) until(typ event.Type) event.Event {
	p.t.Helper()
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		_, b, err := p.c.Read(ctx)
		cancel()
		if err != nil {
			p.t.Fatalf("waiting for %s: %v", typ, err)
		}
		var e event.Event
		json.Unmarshal(b, &e)
		if e.Type == typ {
			return e
		}
	}
}

func (p *wsPeer) send(v any) {
	b, _ := json.Marshal(v)
	if err := p.c.Write(context.Background(), websocket.MessageText, b); err != nil {
		p.t.Fatal(err)
	}
}

// One client approves while another watches; then a call is denied over
// HTTP; unknown ids and bad decisions get clear errors.
func TestApprovalFromEveryDoor(t *testing.T) {
	dir := t.TempDir()
	lg, err := history.Open(history.Options{Path: filepath.Join(dir, "chat_history.ndjson"), RotateMB: 5, Fsync: history.FsyncNever})
	if err != nil {
		t.Fatal(err)
	}
	var runs atomic.Int32
	m := hub.New(hub.Config{DataDir: dir, Tools: testagent.Confirmed("files__delete", &runs), Logger: slog.New(slog.DiscardHandler)},
		lg, testagent.CallTool{Name: "files__delete", Args: `{"path":"/tmp/x"}`})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); m.Run(ctx) }()
	wsh := ws.New(m, ws.Options{})
	srv := httptest.NewServer(web.Handler(m, web.Options{WS: wsh, Messages: webhook.New(m, webhook.Options{})}))
	t.Cleanup(func() { cancel(); <-done; srv.Close(); wsh.Wait(context.Background()); lg.Close() })

	a, b := peer(t, srv.URL), peer(t, srv.URL)
	a.send(map[string]string{"type": "message", "content": "delete it", "client_msg_id": "c1"})
	var req event.ApprovalRequestData
	b.until(event.ApprovalRequest).Decode(&req)
	a.until(event.ApprovalRequest)
	if req.Tool != "files__delete" || req.Server != "files" || string(req.Args) != `{"path":"/tmp/x"}` {
		t.Fatalf("request %+v", req)
	}
	a.send(map[string]string{"type": "command", "action": "approve", "id": req.ID})
	var res event.ApprovalResultData
	b.until(event.ApprovalResult).Decode(&res)
	if res.ID != req.ID || res.Decision != event.Approve || res.By != "web" {
		t.Errorf("result seen by the other client: %+v", res)
	}
	b.until(event.TurnEnd)
	if runs.Load() != 1 {
		t.Errorf("approved call ran %d times", runs.Load())
	}
	// Answering again: the first answer won.
	a.send(map[string]string{"type": "command", "action": "deny", "id": req.ID})
	var e event.ErrorData
	a.until(event.Error).Decode(&e)
	if e.Code != "already_decided" {
		t.Errorf("second answer: %+v, want already_decided", e)
	}

	// Deny over HTTP.
	b.send(map[string]string{"type": "message", "content": "delete it again", "client_msg_id": "c2"})
	a.until(event.ApprovalRequest).Decode(&req)
	post := func(id, body string) reply {
		return do(t, request(t, "POST", srv.URL+"/api/approvals/"+id, body, "Content-Type", "application/json"))
	}
	if r := post(req.ID, `{"decision":"maybe"}`); r.status != http.StatusBadRequest || r.body["code"] != "bad_decision" {
		t.Errorf("bad decision: %d %s", r.status, r.raw)
	}
	if r := post(req.ID, `{"decision":"deny","extra":1}`); r.status != http.StatusBadRequest || r.body["code"] != "bad_json" {
		t.Errorf("unknown field: %d %s", r.status, r.raw)
	}
	if r := post(req.ID, `{"decision":"deny","Decision":"approve"}`); r.status != http.StatusBadRequest || r.body["code"] != "bad_json" ||
		!strings.Contains(r.raw, `\"Decision\"`) {
		t.Errorf("case-variant key: %d %s, want 400 bad_json naming it", r.status, r.raw)
	}
	if r := post(req.ID, `{"decision":"deny"}`); r.status != http.StatusOK || r.body["by"] != "api" || r.body["decision"] != "deny" {
		t.Errorf("deny: %d %s", r.status, r.raw)
	}
	if r := post(req.ID, `{"decision":"approve"}`); r.status != http.StatusConflict || r.body["code"] != "already_decided" {
		t.Errorf("a second answer over HTTP: %d %s, want 409 already_decided", r.status, r.raw)
	}
	var turnEnd event.Event
	for {
		ev := b.until(event.Assistant)
		if m, _ := ev.Message(); strings.Contains(m.Content, "the user denied this call") {
			turnEnd = ev
			break
		}
	}
	_ = turnEnd
	if runs.Load() != 1 {
		t.Errorf("denied call ran: %d runs", runs.Load())
	}
	if r := post("a424242", `{"decision":"approve"}`); r.status != http.StatusNotFound || r.body["code"] != "no_approval" {
		t.Errorf("unknown id: %d %s", r.status, r.raw)
	}
}

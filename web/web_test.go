package web_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/frontdesk-hq/frontdesk/agent"
	"github.com/frontdesk-hq/frontdesk/channels/webhook"
	"github.com/frontdesk-hq/frontdesk/channels/ws"
	"github.com/frontdesk-hq/frontdesk/event"
	"github.com/frontdesk-hq/frontdesk/history"
	"github.com/frontdesk-hq/frontdesk/hub"
	"github.com/frontdesk-hq/frontdesk/index"
	"github.com/frontdesk-hq/frontdesk/internal/testkit/testagent"
	"github.com/frontdesk-hq/frontdesk/web"
)

type env struct {
	hub *hub.SessionManager
	srv *httptest.Server
}

func start(t *testing.T, o web.Options, a agent.Agent) *env {
	t.Helper()
	return startIn(t, t.TempDir(), 0, o, a)
}

// startIn is start on a data directory that may hold a chat log (its
// newest seq logSeq) and a search index already.
func startIn(t *testing.T, dir string, logSeq int64, o web.Options, a agent.Agent) *env {
	t.Helper()
	lg, err := history.Open(history.Options{Path: filepath.Join(dir, "chat_history.ndjson"), RotateMB: 5, Fsync: "never"})
	if err != nil {
		t.Fatal(err)
	}
	ix, err := index.NewFollower(index.FollowerOptions{Path: filepath.Join(dir, index.FileName),
		Log: history.NewReader(filepath.Join(dir, "chat_history.ndjson")).Since, LogSeq: logSeq, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	m := hub.New(hub.Config{DataDir: dir, Index: ix}, lg, a)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); go ix.Run(ctx); m.Run(ctx) }()
	wsh := ws.New(m, ws.Options{})
	o.WS = wsh
	o.Messages = webhook.New(m, webhook.Options{MaxBytes: 1024})
	srv := httptest.NewServer(web.Handler(m, o))
	t.Cleanup(func() {
		cancel()
		<-done
		srv.Close()
		wsh.Wait(context.Background())
		lg.Close()
	})
	return &env{hub: m, srv: srv}
}

type reply struct {
	status int
	header http.Header
	body   map[string]any
	raw    string
}

func do(t *testing.T, req *http.Request) reply {
	t.Helper()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	r := reply{status: resp.StatusCode, header: resp.Header, raw: string(b)}
	_ = json.Unmarshal(b, &r.body)
	return r
}

func request(t *testing.T, method, url, body string, hdr ...string) *http.Request {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		if hdr[i] == "Host" {
			req.Host = hdr[i+1]
			continue
		}
		req.Header.Set(hdr[i], hdr[i+1])
	}
	return req
}

func TestUIAndHealth(t *testing.T) {
	e := start(t, web.Options{Addr: "127.0.0.1:8080"}, &agent.Demo{})
	r := do(t, request(t, "GET", e.srv.URL+"/", ""))
	if r.status != 200 || !strings.Contains(r.raw, "<html") || r.header.Get("Content-Security-Policy") == "" {
		t.Fatalf("GET / = %d (CSP %q): %.100s", r.status, r.header.Get("Content-Security-Policy"), r.raw)
	}
	if r := do(t, request(t, "GET", e.srv.URL+"/style.css", "")); r.status != 200 {
		t.Errorf("GET /style.css = %d", r.status)
	}
	checkModules(t, e.srv.URL, r.raw)
	if r := do(t, request(t, "GET", e.srv.URL+"/healthz", "")); r.status != 200 || r.body["status"] != "ok" {
		t.Fatalf("/healthz = %d %s", r.status, r.raw)
	}
	if r := do(t, request(t, "GET", e.srv.URL+"/metrics", "")); r.status != 200 || !strings.Contains(r.raw, "frontdesk_session_up 1") {
		t.Fatalf("/metrics = %d: %.200s", r.status, r.raw)
	}
}

// checkModules follows the UI's ES modules from the page's module script
// through every import: each must be served, as text/javascript (browsers
// refuse a module script of another type), under the page's CSP.
func checkModules(t *testing.T, base, page string) {
	t.Helper()
	entry := regexp.MustCompile(`<script type="module" src="/([a-z-]+\.js)"></script>`).FindStringSubmatch(page)
	if entry == nil {
		t.Fatalf("no module script in the page:\n%s", page)
	}
	imports := regexp.MustCompile(`(?m)^import (?:[^;]* from )?'\./([a-z-]+\.js)';`)
	seen := map[string]bool{}
	for todo := []string{entry[1]}; len(todo) > 0; {
		name := todo[0]
		todo = todo[1:]
		if seen[name] {
			continue
		}
		seen[name] = true
		r := do(t, request(t, "GET", base+"/"+name, ""))
		if ct := r.header.Get("Content-Type"); r.status != 200 || !strings.HasPrefix(ct, "text/javascript") {
			t.Fatalf("GET /%s = %d, Content-Type %q; want 200 text/javascript", name, r.status, ct)
		}
		for _, m := range imports.FindAllStringSubmatch(r.raw, -1) {
			todo = append(todo, m[1])
		}
	}
	if len(seen) < 5 || !seen["core.js"] || !seen["markdown.js"] {
		t.Fatalf("modules reached from the page: %v; want the whole UI (core.js, markdown.js, …)", seen)
	}
}

func TestSessionAndCancelAPI(t *testing.T) {
	g := testagent.NewGate()
	e := start(t, web.Options{}, g)
	r := do(t, request(t, "GET", e.srv.URL+"/api/session", ""))
	if r.status != 200 || r.body["busy"] != false || r.body["session_id"] == "" {
		t.Fatalf("/api/session = %d %s", r.status, r.raw)
	}
	if r := do(t, request(t, "POST", e.srv.URL+"/api/cancel", "")); r.status != 200 || r.body["cancelled"] != false {
		t.Fatalf("cancel when idle = %d %s", r.status, r.raw)
	}
	msg := do(t, request(t, "POST", e.srv.URL+"/api/messages", `{"content":"hi"}`, "Content-Type", "application/json"))
	if msg.status != 202 || msg.body["turn"] != "t1" || msg.body["seq"] != float64(1) {
		t.Fatalf("POST /api/messages = %d %s", msg.status, msg.raw)
	}
	if r := do(t, request(t, "GET", e.srv.URL+"/api/session", "")); r.body["busy"] != true || r.body["turn"] != "t1" {
		t.Fatalf("session while busy: %s", r.raw)
	}
	if r := do(t, request(t, "POST", e.srv.URL+"/api/cancel", "")); r.status != 200 || r.body["cancelled"] != true {
		t.Fatalf("cancel when busy = %d %s", r.status, r.raw)
	}
	if r := do(t, request(t, "GET", e.srv.URL+"/metrics", "")); !strings.Contains(r.raw, `frontdesk_turns_total{status="cancelled"} 1`) {
		t.Fatalf("/metrics does not count the cancelled turn:\n%s", r.raw)
	}
	if r := do(t, request(t, "GET", e.srv.URL+"/api/session", "")); r.body["busy"] != false {
		t.Fatalf("session after cancel: %s", r.raw)
	}
	if r := do(t, request(t, "GET", e.srv.URL+"/api/nothing", "")); r.status != 404 || r.body["code"] != "not_found" {
		t.Fatalf("unknown endpoint = %d %s", r.status, r.raw)
	}
}

func TestMessagesStatusCodes(t *testing.T) {
	g := testagent.NewGate()
	e := start(t, web.Options{}, g)
	url := e.srv.URL + "/api/messages"
	json := []string{"Content-Type", "application/json"}
	tests := []struct {
		name   string
		method string
		body   string
		hdr    []string
		status int
		code   string
	}{
		{"accepted", "POST", `{"content":"hello","channel":"cron","from":"nightly"}`, json, 202, ""},
		{"busy", "POST", `{"content":"again"}`, json, 409, "busy"},
		{"idempotent resend", "POST", `{"content":"hello","client_msg_id":"x"}`, json, 409, "busy"},
		{"bad json", "POST", `{"content":`, json, 400, "bad_json"},
		{"unknown field", "POST", `{"content":"a","colour":"red"}`, json, 400, "bad_json"},
		{"trailing data", "POST", `{"content":"a"} {"content":"b"}`, json, 400, "bad_json"},
		{"trailing garbage", "POST", `{"content":"a"}x`, json, 400, "bad_json"},
		{"key twice", "POST", `{"content":"a","content":"b"}`, json, 400, "bad_json"},
		{"key in another case", "POST", `{"content":"a","Content":"b"}`, json, 400, "bad_json"},
		{"nested key in another case", "POST", `{"content":"a","attachments":[],"Attachments":["x"]}`, json, 400, "bad_json"},
		{"empty content", "POST", `{"content":""}`, json, 400, "empty_content"},
		{"client_msg_id too long", "POST", `{"content":"a","client_msg_id":"` + strings.Repeat("i", 300) + `"}`, json, 400, "bad_client_msg_id"},
		{"bad channel", "POST", `{"content":"a","channel":"Web Chat"}`, json, 400, "bad_channel"},
		{"posing as email", "POST", `{"content":"a","channel":"email","from":"ceo@example.com"}`, json, 400, "reserved_channel"},
		{"posing as the web UI", "POST", `{"content":"a","channel":"web"}`, json, 400, "reserved_channel"},
		{"invalid utf-8", "POST", "{\"content\":\"\xff\"}", json, 400, "invalid_utf8"},
		{"too large", "POST", `{"content":"` + strings.Repeat("x", 2000) + `"}`, json, 413, "too_large"},
		{"not json", "POST", `content=hi`, []string{"Content-Type", "application/x-www-form-urlencoded"}, 415, "unsupported_media_type"},
		{"wrong method", "GET", ``, nil, 405, "method_not_allowed"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := do(t, request(t, tc.method, url, tc.body, tc.hdr...))
			if r.status != tc.status || (tc.code != "" && r.body["code"] != tc.code) {
				t.Fatalf("got %d %s, want %d %s", r.status, r.raw, tc.status, tc.code)
			}
			if strings.Contains(tc.name, "key") && !strings.Contains(r.body["message"].(string), `"content" and "Content"`) &&
				!strings.Contains(r.body["message"].(string), `key "content" appears twice`) &&
				!strings.Contains(r.body["message"].(string), `"attachments" and "Attachments"`) {
				t.Fatalf("the error does not name the key: %s", r.raw)
			}
			if tc.status == 409 && (r.header.Get("Retry-After") == "" || r.body["turn"] != "t1") {
				t.Fatalf("busy answer without Retry-After or turn: %v %s", r.header, r.raw)
			}
		})
	}
	// The accepted message is in the stream with its channel and sender.
	sub, snap, err := e.hub.Subscribe(context.Background(), 0)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	if len(snap.Replay) == 0 || !strings.Contains(string(snap.Replay[0].JSON), `"channel":"cron","from":"nightly","content":"hello"`) {
		t.Fatalf("replay does not start with the webhook input: %v", snap.Replay)
	}
}

// TestWebhookInputIsCleaned: control characters never reach the session
// from this door (hub.Submit cleans input for every door).
func TestWebhookInputIsCleaned(t *testing.T) {
	e := start(t, web.Options{}, &agent.Demo{})
	r := do(t, request(t, "POST", e.srv.URL+"/api/messages", `{"content":"\u001c\u001c/status","from":"cron\u001b[2J"}`, "Content-Type", "application/json"))
	if r.status != 202 {
		t.Fatalf("POST = %d %s", r.status, r.raw)
	}
	evs, err := e.hub.Recent(context.Background(), 20)
	if err != nil || len(evs) == 0 || evs[0].Type != event.User {
		t.Fatalf("recent: %v %v, want the input first", evs, err)
	}
	if got := string(evs[0].Data); !strings.Contains(got, `"from":"cron[2J","content":"/status"`) {
		t.Fatalf("echo %s, want content /status from cron[2J", got)
	}
}

// TestHistoryRangeFromZero: from=0 means from the start, as a client that
// has seen nothing (last seq 0) would naturally ask.
func TestHistoryRangeFromZero(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "chat_history.ndjson")
	lg, err := history.Open(history.Options{Path: path, RotateMB: 5, Fsync: "never"})
	if err != nil {
		t.Fatal(err)
	}
	m := hub.New(hub.Config{DataDir: dir, History: history.NewReader(path)}, lg, &agent.Demo{})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); m.Run(ctx) }()
	srv := httptest.NewServer(web.Handler(m, web.Options{WS: ws.New(m, ws.Options{})}))
	defer func() { cancel(); <-done; srv.Close(); lg.Close() }()
	out := make(chan hub.TurnOutcome, 1)
	if _, err := m.Submit(context.Background(), hub.Input{Channel: event.ChannelWebhook, Content: "hello", Done: out}); err != nil {
		t.Fatal(err)
	}
	<-out
	for _, q := range []string{"from=0", "from=0&to=0", "from=1"} {
		r := do(t, request(t, "GET", srv.URL+"/api/history/range?"+q, ""))
		evs, _ := r.body["events"].([]any)
		if r.status != 200 || len(evs) == 0 {
			t.Errorf("range?%s = %d %s, want 200 with the whole history", q, r.status, r.raw)
		}
	}
}

func TestTokenRequired(t *testing.T) {
	e := start(t, web.Options{Token: "s3cret"}, &agent.Demo{})
	wsURL := "ws" + strings.TrimPrefix(e.srv.URL, "http") + "/ws"
	tests := []struct {
		name   string
		req    *http.Request
		status int
	}{
		{"api without token", request(t, "GET", e.srv.URL+"/api/session", ""), 401},
		{"api wrong token", request(t, "GET", e.srv.URL+"/api/session", "", "Authorization", "Bearer nope"), 401},
		{"api bearer", request(t, "GET", e.srv.URL+"/api/session", "", "Authorization", "Bearer s3cret"), 200},
		{"api bearer lower case", request(t, "GET", e.srv.URL+"/api/session", "", "Authorization", "bearer s3cret"), 200},
		{"api bearer upper case", request(t, "GET", e.srv.URL+"/api/session", "", "Authorization", "BEARER s3cret"), 200},
		{"api bearer two spaces", request(t, "GET", e.srv.URL+"/api/session", "", "Authorization", "Bearer  s3cret"), 200},
		{"api basic scheme", request(t, "GET", e.srv.URL+"/api/session", "", "Authorization", "Basic s3cret"), 401},
		{"api bearer without token", request(t, "GET", e.srv.URL+"/api/session", "", "Authorization", "Bearer"), 401},
		{"api bearer wrong case of token", request(t, "GET", e.srv.URL+"/api/session", "", "Authorization", "bearer S3CRET"), 401},
		{"api query token", request(t, "GET", e.srv.URL+"/api/session?token=s3cret", ""), 200},
		{"ui is public", request(t, "GET", e.srv.URL+"/", ""), 200},
		{"healthz is public", request(t, "GET", e.srv.URL+"/healthz", ""), 200},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if r := do(t, tc.req); r.status != tc.status {
				t.Fatalf("got %d %s, want %d", r.status, r.raw, tc.status)
			}
		})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, resp, err := websocket.Dial(ctx, wsURL, nil); err == nil || resp == nil || resp.StatusCode != 401 {
		t.Fatalf("ws without token: %v %v", err, resp)
	}
	c, _, err := websocket.Dial(ctx, wsURL+"?token=s3cret", nil)
	if err != nil {
		t.Fatalf("ws with token: %v", err)
	}
	defer c.CloseNow()
	if _, b, err := c.Read(ctx); err != nil || !strings.Contains(string(b), `"type":"connected"`) {
		t.Fatalf("first frame %s, %v", b, err)
	}
}

func TestOriginAndHostChecks(t *testing.T) {
	e := start(t, web.Options{
		Addr:           "127.0.0.1:8080",
		AllowedOrigins: []string{"https://chat.example.com"},
		AllowedHosts:   []string{"assistant.example.com"},
	}, &agent.Demo{})
	host := strings.TrimPrefix(e.srv.URL, "http://")
	tests := []struct {
		name   string
		hdr    []string
		status int
	}{
		{"no origin (not a browser)", nil, 200},
		{"same origin", []string{"Origin", "http://" + host}, 200},
		{"allowed origin", []string{"Origin", "https://chat.example.com"}, 200},
		{"foreign origin", []string{"Origin", "https://evil.example"}, 403},
		{"localhost name", []string{"Host", "localhost:1234"}, 200},
		{"ipv6 loopback", []string{"Host", "[::1]:8080"}, 200},
		{"allowed host", []string{"Host", "assistant.example.com"}, 200},
		{"rebinding host", []string{"Host", "evil.example:8080"}, 421},
		{"rebinding host with its own origin", []string{"Host", "evil.example", "Origin", "http://evil.example"}, 421},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := do(t, request(t, "GET", e.srv.URL+"/api/session", "", tc.hdr...))
			if r.status != tc.status {
				t.Fatalf("got %d %s, want %d", r.status, r.raw, tc.status)
			}
		})
	}
	// The WebSocket upgrade gets the same treatment.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	wsURL := "ws://" + host + "/ws"
	_, resp, err := websocket.Dial(ctx, wsURL, &websocket.DialOptions{HTTPHeader: http.Header{"Origin": {"https://evil.example"}}})
	if err == nil || resp == nil || resp.StatusCode != 403 {
		t.Fatalf("ws from a foreign origin: %v %v", err, resp)
	}
	c, _, err := websocket.Dial(ctx, wsURL, &websocket.DialOptions{HTTPHeader: http.Header{"Origin": {"https://chat.example.com"}}})
	if err != nil {
		t.Fatalf("ws from an allowed origin: %v", err)
	}
	c.CloseNow()
}

// TestUICore runs the UI's reducer tests (dedupe, replay, pending
// messages) under node: the chat logic is plain JS with no DOM.
func TestUICore(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("node is required in CI to test the UI core")
		}
		t.Skip("node not installed")
	}
	out, err := exec.Command(node, "--test", "uitest/core.test.mjs").CombinedOutput()
	if err != nil {
		t.Fatalf("node --test: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "# pass 1") || !strings.Contains(string(out), "# fail 0") {
		t.Fatalf("unexpected node test output:\n%s", out)
	}
}

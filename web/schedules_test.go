package web_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/frontdesk-hq/frontdesk/agent"
	"github.com/frontdesk-hq/frontdesk/auth"
	"github.com/frontdesk-hq/frontdesk/channels/ws"
	"github.com/frontdesk-hq/frontdesk/event"
	"github.com/frontdesk-hq/frontdesk/history"
	"github.com/frontdesk-hq/frontdesk/hub"
	"github.com/frontdesk-hq/frontdesk/people"
	"github.com/frontdesk-hq/frontdesk/schedule"
	"github.com/frontdesk-hq/frontdesk/web"
)

// scheduleEnv is a session with a scheduler behind the web handler,
// wired like main: schedule changes are broadcast to the WebSocket
// clients, a damaged schedules.json is a /healthz reason.
type scheduleEnv struct {
	srv     *httptest.Server
	handler http.Handler
	dir     string
	sched   *schedule.Scheduler
}

func startSchedules(t *testing.T, so schedule.Options) *scheduleEnv {
	t.Helper()
	return startSchedulesIn(t, t.TempDir(), so)
}

// startSchedulesIn starts over dir, which may hold a schedules.json.
func startSchedulesIn(t *testing.T, dir string, so schedule.Options, with ...func(*web.Options)) *scheduleEnv {
	t.Helper()
	lg, err := history.Open(history.Options{Path: filepath.Join(dir, "chat_history.ndjson"), RotateMB: 5, Fsync: "never"})
	if err != nil {
		t.Fatal(err)
	}
	quiet := slog.New(slog.DiscardHandler)
	var sched *schedule.Scheduler
	m := hub.New(hub.Config{DataDir: dir, Logger: quiet, Tools: func() []agent.Tool { return sched.Tools() }}, lg, &agent.Demo{})
	wsh := ws.New(m, ws.Options{})
	so.DataDir, so.Logger = dir, quiet
	so.Changed = func() { wsh.Broadcast(event.New(event.SchedulesChanged, "", time.Now(), nil)) }
	sched, err = schedule.Open(m, so)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	hubDone, schedDone := make(chan struct{}), make(chan struct{})
	go func() { defer close(hubDone); m.Run(ctx) }()
	sctx, stopSched := context.WithCancel(context.Background())
	go func() { defer close(schedDone); sched.Run(sctx) }()
	o := web.Options{WS: wsh, Schedules: sched, Warnings: func() []string {
		if d := sched.Damage(); d != nil {
			return []string{d.Message()}
		}
		return nil
	}}
	for _, f := range with {
		f(&o)
	}
	h := web.Handler(m, o)
	srv := httptest.NewServer(h)
	t.Cleanup(func() {
		stopSched()
		<-schedDone
		cancel()
		<-hubDone
		srv.Close()
		wsh.Wait(context.Background())
		lg.Close()
	})
	return &scheduleEnv{srv: srv, handler: h, dir: dir, sched: sched}
}

func (e *scheduleEnv) post(t *testing.T, body string) reply {
	t.Helper()
	return do(t, request(t, "POST", e.srv.URL+"/api/schedules", body, "Content-Type", "application/json"))
}

func (e *scheduleEnv) count(t *testing.T) int {
	t.Helper()
	r := do(t, request(t, "GET", e.srv.URL+"/api/schedules", ""))
	if r.status != http.StatusOK {
		t.Fatalf("list: %d %s", r.status, r.raw)
	}
	list, _ := r.body["schedules"].([]any)
	return len(list)
}

// TestSchedulesAPI creates, lists and cancels schedules, and refuses bad
// requests with a clear error that changes nothing, on disk or in the list.
func TestSchedulesAPI(t *testing.T) {
	e := startSchedules(t, schedule.Options{MaxSchedules: 3, MinInterval: 5 * time.Minute, MaxContentBytes: 1024})

	ok := e.post(t, `{"content":"Reminder: call the plumber","at":"2030-11-27T09:00","tz":"Europe/Berlin"}`)
	if ok.status != http.StatusCreated || ok.body["next_run"] != "2030-11-27T08:00:00Z" || ok.body["created_by"] != "api" {
		t.Fatalf("create: %d %s", ok.status, ok.raw)
	}
	id, _ := ok.body["id"].(string)
	before, err := os.ReadFile(filepath.Join(e.dir, "schedules.json"))
	if err != nil {
		t.Fatal(err)
	}

	cases := []struct {
		name, body string
		status     int
		code       string
	}{
		{"past", `{"content":"x","at":"2001-01-01T00:00:00Z"}`, 400, "time_in_past"},
		{"bad time", `{"content":"x","at":"next friday"}`, 400, "bad_time"},
		{"too far ahead", `{"content":"x","at":"2099-01-01T00:00:00Z"}`, 400, "bad_time"},
		{"two times", `{"content":"x","at":"2030-01-01T00:00:00Z","cron":"0 9 * * *"}`, 400, "bad_time"},
		{"no time", `{"content":"x"}`, 400, "bad_time"},
		{"invalid cron", `{"content":"x","cron":"0 25 * * *"}`, 400, "bad_cron"},
		{"six fields", `{"content":"x","cron":"0 0 9 * * *"}`, 400, "bad_cron"},
		{"never runs", `{"content":"x","cron":"0 0 30 2 *"}`, 400, "bad_cron"},
		{"unknown tz", `{"content":"x","cron":"0 9 * * *","tz":"Mars/Olympus"}`, 400, "bad_tz"},
		{"every minute under min_interval", `{"content":"x","cron":"* * * * *"}`, 400, "too_frequent"},
		{"empty content", `{"content":"  ","in_seconds":60}`, 400, "bad_content"},
		{"content over the limit", `{"content":"` + strings.Repeat("a", 1025) + `","in_seconds":60}`, 400, "content_too_long"},
		{"bad notify", `{"content":"x","in_seconds":60,"notify":"sms"}`, 400, "bad_notify"},
		{"email without email", `{"content":"x","in_seconds":60,"notify":"email"}`, 400, "notify_unavailable"},
		{"unknown field", `{"content":"x","in_seconds":60,"repeat":true}`, 400, "bad_json"},
		{"not json", `remind me`, 400, "bad_json"},
		{"key in another case", `{"content":"x","in_seconds":60,"In_Seconds":1}`, 400, "bad_json"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := e.post(t, c.body)
			if r.status != c.status || r.body["code"] != c.code || r.body["message"] == "" {
				t.Fatalf("got %d %s, want %d %s", r.status, r.raw, c.status, c.code)
			}
		})
	}
	if r := do(t, request(t, "POST", e.srv.URL+"/api/schedules", `{"content":"x","in_seconds":60}`, "Content-Type", "text/plain")); r.status != http.StatusUnsupportedMediaType {
		t.Fatalf("text/plain body: %d %s", r.status, r.raw)
	}
	after, _ := os.ReadFile(filepath.Join(e.dir, "schedules.json"))
	if string(after) != string(before) || e.count(t) != 1 {
		t.Fatalf("a refused request changed the schedules: %d listed\n%s", e.count(t), after)
	}

	// Every five minutes is allowed; the fourth schedule is one too many.
	for _, body := range []string{`{"content":"a","cron":"*/5 * * * *"}`, `{"content":"b","in_seconds":3600}`} {
		if r := e.post(t, body); r.status != http.StatusCreated {
			t.Fatalf("%s: %d %s", body, r.status, r.raw)
		}
	}
	if r := e.post(t, `{"content":"c","in_seconds":60}`); r.status != http.StatusConflict || r.body["code"] != "too_many_schedules" {
		t.Fatalf("over the cap: %d %s", r.status, r.raw)
	}

	if r := do(t, request(t, "DELETE", e.srv.URL+"/api/schedules/"+id, "")); r.status != http.StatusOK {
		t.Fatalf("cancel: %d %s", r.status, r.raw)
	}
	if r := do(t, request(t, "DELETE", e.srv.URL+"/api/schedules/"+id, "")); r.status != http.StatusNotFound || r.body["code"] != "no_such_schedule" {
		t.Fatalf("cancel again: %d %s", r.status, r.raw)
	}
	if n := e.count(t); n != 2 {
		t.Fatalf("%d listed after cancel, want 2", n)
	}
}

// TestScheduleContentCapByDefault: without a configured cap a schedule's
// content may have 4096 bytes (schedules.max_content_bytes); 4097 is a
// 400 content_too_long naming the key, and schedules.json stays byte for
// byte as it was. It used to take 65,536.
func TestScheduleContentCapByDefault(t *testing.T) {
	e := startSchedules(t, schedule.Options{})
	if r := e.post(t, `{"content":"`+strings.Repeat("a", 4096)+`","in_seconds":60}`); r.status != http.StatusCreated {
		t.Fatalf("4096 bytes: %d %s", r.status, r.raw)
	}
	before, err := os.ReadFile(filepath.Join(e.dir, "schedules.json"))
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []int{4097, 65000} {
		r := e.post(t, `{"content":"`+strings.Repeat("a", n)+`","in_seconds":60}`)
		if r.status != http.StatusBadRequest || r.body["code"] != "content_too_long" ||
			!strings.Contains(r.raw, "schedules.max_content_bytes") {
			t.Fatalf("%d bytes: %d %s, want 400 content_too_long naming schedules.max_content_bytes", n, r.status, r.raw)
		}
	}
	if after, _ := os.ReadFile(filepath.Join(e.dir, "schedules.json")); string(after) != string(before) || e.count(t) != 1 {
		t.Fatal("a refused schedule changed schedules.json")
	}
}

// TestScheduleSlowBody: a POST /api/schedules whose body does not arrive
// within the server's body deadline is 408 body_timeout and the
// connection is closed, as on /api/messages — not 400 bad_json.
func TestScheduleSlowBody(t *testing.T) {
	e := startSchedules(t, schedule.Options{})
	srv := web.NewServer(e.handler, web.ServerOptions{BodyTimeout: 300 * time.Millisecond})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	body := `{"content":"Reminder: slow","in_seconds":3600,"tz":"` + strings.Repeat("x", 180) + `"}`
	rc := dialRaw(t, ln.Addr().String())
	fmt.Fprintf(rc.c, "POST /api/schedules HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n", len(body))
	rc.drip([]byte(body), 50*time.Millisecond) // 200 bytes in 10 s
	resp := rc.response()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusRequestTimeout || !strings.Contains(string(b), `"body_timeout"`) || !resp.Close {
		t.Fatalf("slow body: %d %s (close %v), want 408 body_timeout and the connection closed", resp.StatusCode, b, resp.Close)
	}
	rc.closed()
	if _, err := os.Stat(filepath.Join(e.dir, "schedules.json")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("schedules.json after a refused body: %v", err)
	}
}

// TestDamagedSchedulesShown: a schedules.json with one bad entry among
// good ones starts with the good ones; GET /api/schedules lists them and
// says what was left out (for the Scheduled panel); /healthz is 200
// degraded with the same sentence as its reason.
func TestDamagedSchedulesShown(t *testing.T) {
	dir := t.TempDir()
	good := `{"id":"s-good","content":"x","created_by":"api","created_at":"2026-11-01T00:00:00Z","tz":"UTC",` +
		`"cron":"0 9 * * *","next_run":"2030-11-25T09:00:00Z","last_run":null,"notify":"none"}`
	body := `{"v":1,"schedules":[` + good + `,{"id":"s-bad","content":"x","tz":"UTC","cron":"every day"}]}`
	if err := os.WriteFile(filepath.Join(dir, "schedules.json"), []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	e := startSchedulesIn(t, dir, schedule.Options{})
	r := do(t, request(t, "GET", e.srv.URL+"/api/schedules", ""))
	list, _ := r.body["schedules"].([]any)
	d, _ := r.body["damaged"].(map[string]any)
	msg, _ := d["message"].(string)
	if r.status != http.StatusOK || len(list) != 1 || d == nil || !strings.Contains(msg, "s-bad") ||
		!strings.Contains(msg, "schedules.json.damaged-") || d["loaded"] != float64(1) {
		t.Fatalf("list: %d %s, want s-good and the damage naming s-bad", r.status, r.raw)
	}
	h := do(t, request(t, "GET", e.srv.URL+"/healthz", ""))
	reasons, _ := h.body["reasons"].([]any)
	if h.status != http.StatusOK || h.body["status"] != "degraded" || len(reasons) != 1 || reasons[0] != msg {
		t.Fatalf("/healthz %d %s, want 200 degraded with %q", h.status, h.raw, msg)
	}
	kept, err := os.ReadFile(filepath.Join(dir, d["file"].(string)))
	if err != nil || string(kept) != body {
		t.Fatalf("kept aside %q, %v", kept, err)
	}
}

// TestScheduleChangesReachEveryTab: creating or cancelling a schedule
// sends schedules_changed (no seq, not in history) to every connected
// WebSocket client, so every tab's Scheduled panel looks again at once.
func TestScheduleChangesReachEveryTab(t *testing.T) {
	e := startSchedules(t, schedule.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var tabs []*websocket.Conn
	for range 2 {
		c, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(e.srv.URL, "http")+"/ws", nil)
		if err != nil {
			t.Fatal(err)
		}
		defer c.CloseNow()
		readUntil(t, ctx, c, event.Synced)
		tabs = append(tabs, c)
	}
	made := e.post(t, `{"content":"Reminder: tea","in_seconds":3600}`)
	id, _ := made.body["id"].(string)
	for i, c := range tabs {
		if f := readUntil(t, ctx, c, event.SchedulesChanged); f.Seq != 0 || f.Turn != "" {
			t.Fatalf("tab %d after create: %+v, want no seq and no turn", i, f)
		}
	}
	if r := do(t, request(t, "DELETE", e.srv.URL+"/api/schedules/"+id, "")); r.status != http.StatusOK {
		t.Fatalf("cancel: %d %s", r.status, r.raw)
	}
	for _, c := range tabs {
		readUntil(t, ctx, c, event.SchedulesChanged)
	}
}

// readUntil reads frames from c until one of type typ.
func readUntil(t *testing.T, ctx context.Context, c *websocket.Conn, typ event.Type) event.Event {
	t.Helper()
	for {
		_, b, err := c.Read(ctx)
		if err != nil {
			t.Fatalf("waiting for %s: %v", typ, err)
		}
		var e event.Event
		if err := json.Unmarshal(b, &e); err != nil {
			t.Fatalf("frame %s: %v", b, err)
		}
		if e.Type == typ {
			return e
		}
	}
}

// Changing schedules needs the schedules permission: a viewer's create
// and cancel are 403 forbidden and change nothing; a member's schedule
// records who made it.
func TestSchedulesPermission(t *testing.T) {
	creds, err := auth.New(auth.Memory{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	e := startSchedulesIn(t, t.TempDir(), schedule.Options{}, func(o *web.Options) {
		o.People, o.Credentials = people.New(team), creds
	})
	vi, _, _ := creds.Issue(auth.KindToken, "vi", "t", "", 0)
	bo, _, _ := creds.Issue(auth.KindToken, "bo", "t", "", 0)
	post := func(tok string) reply {
		return do(t, request(t, "POST", e.srv.URL+"/api/schedules", `{"content":"water the plants","in_seconds":3600}`,
			"Content-Type", "application/json", "Authorization", "Bearer "+tok))
	}
	if r := post(vi); r.status != http.StatusForbidden || r.body["permission"] != "schedules" || r.body["code"] != "forbidden" {
		t.Fatalf("viewer's create: %d %s, want 403 forbidden schedules", r.status, r.raw)
	}
	r := post(bo)
	if r.status != http.StatusCreated || r.body["person"] != "bo" {
		t.Fatalf("member's create: %d %s, want 201 with person bo", r.status, r.raw)
	}
	id, _ := r.body["id"].(string)
	if c := do(t, request(t, "DELETE", e.srv.URL+"/api/schedules/"+id, "", "Authorization", "Bearer "+vi)); c.status != http.StatusForbidden {
		t.Fatalf("viewer's cancel: %d %s, want 403", c.status, c.raw)
	}
	list, err := e.sched.List(context.Background())
	if err != nil || len(list) != 1 || list[0].Person != "bo" {
		t.Fatalf("schedules after the refusals: %+v %v, want bo's one", list, err)
	}
}

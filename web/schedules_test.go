package web_test

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/frontdesk-hq/frontdesk/agent"
	"github.com/frontdesk-hq/frontdesk/channels/ws"
	"github.com/frontdesk-hq/frontdesk/history"
	"github.com/frontdesk-hq/frontdesk/hub"
	"github.com/frontdesk-hq/frontdesk/schedule"
	"github.com/frontdesk-hq/frontdesk/web"
)

// scheduleEnv is a session with a scheduler behind the web handler.
type scheduleEnv struct {
	srv   *httptest.Server
	dir   string
	sched *schedule.Scheduler
}

func startSchedules(t *testing.T, so schedule.Options) *scheduleEnv {
	t.Helper()
	dir := t.TempDir()
	lg, err := history.Open(history.Options{Path: filepath.Join(dir, "chat_history.ndjson"), RotateMB: 5, Fsync: "never"})
	if err != nil {
		t.Fatal(err)
	}
	quiet := slog.New(slog.DiscardHandler)
	var sched *schedule.Scheduler
	m := hub.New(hub.Config{DataDir: dir, Logger: quiet, Tools: func() []agent.Tool { return sched.Tools() }}, lg, &agent.Demo{})
	so.DataDir, so.Logger = dir, quiet
	sched, err = schedule.Open(m, so)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	hubDone, schedDone := make(chan struct{}), make(chan struct{})
	go func() { defer close(hubDone); m.Run(ctx) }()
	sctx, stopSched := context.WithCancel(context.Background())
	go func() { defer close(schedDone); sched.Run(sctx) }()
	wsh := ws.New(m, ws.Options{})
	srv := httptest.NewServer(web.Handler(m, web.Options{WS: wsh, Schedules: sched}))
	t.Cleanup(func() {
		stopSched()
		<-schedDone
		cancel()
		<-hubDone
		srv.Close()
		wsh.Wait(context.Background())
		lg.Close()
	})
	return &scheduleEnv{srv: srv, dir: dir, sched: sched}
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
	if ok.status != http.StatusCreated || ok.body["next_run"] != "2030-11-27T08:00:00Z" || ok.body["created_by"] != "web" {
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

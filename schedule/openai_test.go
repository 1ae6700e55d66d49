package schedule_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/frontdesk-hq/frontdesk/agent"
	"github.com/frontdesk-hq/frontdesk/event"
	"github.com/frontdesk-hq/frontdesk/history"
	"github.com/frontdesk-hq/frontdesk/hub"
	"github.com/frontdesk-hq/frontdesk/internal/testkit/fakeclock"
	"github.com/frontdesk-hq/frontdesk/schedule"
)

// fakeOpenAI streams agent/testdata's fixtures, one per chat completions
// request, in the real SSE wire format, and keeps the request bodies.
type fakeOpenAI struct {
	srv      *httptest.Server
	mu       sync.Mutex
	script   []string
	requests []map[string]any
}

func newFakeOpenAI(t *testing.T, fixtures ...string) *fakeOpenAI {
	f := &fakeOpenAI{script: fixtures}
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body map[string]any
		_ = json.NewDecoder(r.Body).Decode(&body)
		f.mu.Lock()
		f.requests = append(f.requests, body)
		if len(f.script) == 0 {
			f.mu.Unlock()
			http.Error(w, "no reply scripted", http.StatusInternalServerError)
			return
		}
		name := f.script[0]
		f.script = f.script[1:]
		f.mu.Unlock()
		b, err := os.ReadFile(filepath.Join("..", "agent", "testdata", name))
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		w.Write(b)
	}))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeOpenAI) URL() string { return f.srv.URL + "/v1" }

func (f *fakeOpenAI) request(i int) map[string]any {
	f.mu.Lock()
	defer f.mu.Unlock()
	if i >= len(f.requests) {
		return nil
	}
	return f.requests[i]
}

// TestOpenAICreatesSchedule: a model behind the OpenAI-compatible API
// answers "remind me every Friday at 9 …" with a schedule_create call;
// the real session runs it against the real scheduler, which stores the
// schedule, and the tool result goes back to the model.
func TestOpenAICreatesSchedule(t *testing.T) {
	f := newFakeOpenAI(t, "openai_tool_schedule.sse", "openai_after_tool.sse")
	o, err := agent.NewOpenAI(agent.OpenAIOptions{BaseURL: f.URL(), Model: "m", MaxToolSteps: 4, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	lg, err := history.Open(history.Options{Path: filepath.Join(dir, "chat_history.ndjson"), RotateMB: 5, Fsync: "never"})
	if err != nil {
		t.Fatal(err)
	}
	defer lg.Close()
	var sched *schedule.Scheduler
	h := hub.New(hub.Config{DataDir: dir, Logger: slog.New(slog.DiscardHandler),
		Tools: func() []agent.Tool { return sched.Tools() }}, lg, o)
	clock := fakeclock.New(time.Date(2026, 11, 23, 14, 0, 0, 0, time.UTC)) // a Monday
	if sched, err = schedule.Open(h, schedule.Options{DataDir: dir, Clock: clock, TZ: time.UTC, Logger: slog.New(slog.DiscardHandler)}); err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	hubDone, schedDone := make(chan struct{}), make(chan struct{})
	go func() { defer close(hubDone); h.Run(ctx) }()
	go func() { defer close(schedDone); sched.Run(ctx) }()
	defer func() { stop(); <-schedDone; <-hubDone }()

	done := make(chan hub.TurnOutcome, 1)
	if _, err := h.Submit(ctx, hub.Input{Channel: event.ChannelWeb, Content: "remind me every Friday at 9 to call the plumber", Done: done}); err != nil {
		t.Fatal(err)
	}
	select {
	case out := <-done:
		if out.Status != event.StatusCompleted {
			t.Fatalf("turn %+v", out)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the turn did not end")
	}
	list, err := sched.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 1 {
		t.Fatalf("%d schedules, want 1", len(list))
	}
	sc := list[0]
	if sc.Cron != "0 9 * * 5" || sc.TZ != "Europe/Berlin" || sc.CreatedBy != schedule.CreatedByAgent || sc.Content != "Reminder: call the plumber" ||
		sc.NextRun.Format(time.RFC3339) != "2026-11-27T08:00:00Z" {
		t.Fatalf("stored %+v (next %v)", sc, sc.NextRun)
	}
	// The model was offered the tools, with the time now in the
	// description, and got the new schedule's id back.
	req0, _ := json.Marshal(f.request(0)["tools"])
	if !strings.Contains(string(req0), "schedule_create") || !strings.Contains(string(req0), "Monday 23 November 2026 14:00") {
		t.Fatalf("tools offered: %s", req0)
	}
	req1, _ := json.Marshal(f.request(1)["messages"])
	if !strings.Contains(string(req1), sc.ID) {
		t.Fatalf("the tool result with %s did not reach the model: %s", sc.ID, req1)
	}
}

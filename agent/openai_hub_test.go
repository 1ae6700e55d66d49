package agent_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"
	"time"

	"github.com/frontdesk-hq/frontdesk/agent"
	"github.com/frontdesk-hq/frontdesk/event"
	"github.com/frontdesk-hq/frontdesk/history"
	"github.com/frontdesk-hq/frontdesk/hub"
	"github.com/frontdesk-hq/frontdesk/memory"
)

// The openai backend is the summariser memory consolidation looks for.
var _ memory.Summarizer = (*agent.OpenAI)(nil)

// TestOpenAICancelThroughHub runs the openai backend inside a real session
// hub: a client's cancel aborts the model request (the server sees its
// request context end) and every subscriber sees turn_end "cancelled".
func TestOpenAICancelThroughHub(t *testing.T) {
	gone := make(chan struct{}, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, `data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1762000000,"model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":"Thinking"},"finish_reason":null}]}`+"\n\n")
		w.(http.Flusher).Flush()
		<-r.Context().Done()
		gone <- struct{}{}
	}))
	defer srv.Close()

	o, err := agent.NewOpenAI(agent.OpenAIOptions{BaseURL: srv.URL + "/v1", Model: "m", Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	lg, err := history.Open(history.Options{Path: filepath.Join(dir, "chat_history.ndjson"), RotateMB: 5, Fsync: "never"})
	if err != nil {
		t.Fatal(err)
	}
	defer lg.Close()
	h := hub.New(hub.Config{DataDir: dir, Logger: slog.New(slog.DiscardHandler)}, lg, o)
	hctx, stop := context.WithCancel(context.Background())
	hubDone := make(chan error, 1)
	go func() { hubDone <- h.Run(hctx) }()
	defer func() {
		stop()
		<-hubDone
	}()

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	sub, _, err := h.Subscribe(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	if _, err := h.Submit(ctx, hub.Input{Channel: event.ChannelWeb, Content: "think hard"}); err != nil {
		t.Fatal(err)
	}
	next := func(want event.Type) event.Event {
		t.Helper()
		for {
			f, ok := sub.Next(ctx)
			if !ok {
				t.Fatalf("no %s event (stream error: %v)", want, sub.Err())
			}
			if f.Event.Type == want {
				return f.Event
			}
		}
	}
	next(event.Delta)
	if ok, err := h.Cancel(ctx); err != nil || !ok {
		t.Fatalf("Cancel: %v, %v", ok, err)
	}
	var end event.TurnEndData
	if err := next(event.TurnEnd).Decode(&end); err != nil {
		t.Fatal(err)
	}
	if end.Status != event.StatusCancelled {
		t.Errorf("turn_end status %q, want cancelled", end.Status)
	}
	select {
	case <-gone:
	case <-ctx.Done():
		t.Fatal("the model server never saw the request end")
	}
}

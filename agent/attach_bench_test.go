package agent_test

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/frontdesk-hq/frontdesk/agent"
	"github.com/frontdesk-hq/frontdesk/attachments"
	"github.com/frontdesk-hq/frontdesk/event"
	"github.com/frontdesk-hq/frontdesk/history"
	"github.com/frontdesk-hq/frontdesk/hub"
)

// BenchmarkImageMessage measures what one 5 MB image adds to a turn: a
// message goes through a real hub (Submit → chat log → turn) to the
// openai backend with vision on, which reads the image from the store,
// base64-encodes it into the request, and posts it to an in-process
// OpenAI-compatible server that reads the whole body and streams a short
// reply. ms/turn is Submit until turn_end; compare "none" with "image-5MB".
func BenchmarkImageMessage(b *testing.B) {
	var body atomic.Int64 // bytes of the last request
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n, _ := io.Copy(io.Discard, r.Body)
		body.Store(n)
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, `data: {"id":"c1","object":"chat.completion.chunk","created":1762000000,"model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":"A chart."},"finish_reason":null}]}`+"\n\n")
		io.WriteString(w, `data: {"id":"c1","object":"chat.completion.chunk","created":1762000000,"model":"m","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`+"\n\ndata: [DONE]\n\n")
	}))
	defer srv.Close()
	dir := b.TempDir()
	store, err := attachments.Open(filepath.Join(dir, "attachments"), 0)
	if err != nil {
		b.Fatal(err)
	}
	img := make([]byte, 5<<20)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range img {
		img[i] = byte(rng.Uint32())
	}
	copy(img, "\x89PNG\r\n\x1a\n") // sniffs as image/png; the model server does not decode it
	pic, err := store.Put(bytes.NewReader(img), "photo.png")
	if err != nil || pic.Type != "image/png" {
		b.Fatalf("put: %+v, %v", pic, err)
	}
	// The context budget leaves no room for an earlier image, so each
	// request carries only its own input's image (never the previous
	// turn's again): the figure is one image's cost.
	o, err := agent.NewOpenAI(agent.OpenAIOptions{BaseURL: srv.URL + "/v1", Model: "m", Vision: true, Files: store,
		ContextBudgetTokens: 1100, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		b.Fatal(err)
	}
	lg, err := history.Open(history.Options{Path: filepath.Join(dir, "chat_history.ndjson"), RotateMB: 50, Fsync: "never"})
	if err != nil {
		b.Fatal(err)
	}
	defer lg.Close()
	h := hub.New(hub.Config{DataDir: dir, Logger: slog.New(slog.DiscardHandler), Attachments: store, RetainExchanges: 1}, lg, o)
	hctx, stop := context.WithCancel(context.Background())
	defer stop()
	go h.Run(hctx)

	for _, tc := range []struct {
		name string
		atts []event.Attachment
	}{
		{"none", nil},
		{"image-5MB", []event.Attachment{{SHA256: pic.SHA256}}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			var total time.Duration
			for b.Loop() {
				done := make(chan hub.TurnOutcome, 1)
				start := time.Now()
				if _, err := h.Submit(context.Background(), hub.Input{Channel: event.ChannelWeb, Content: "what is this?",
					Attachments: tc.atts, Done: done}); err != nil {
					b.Fatal(err)
				}
				if o := <-done; o.Status != event.StatusCompleted {
					b.Fatalf("turn %s: %s", o.Status, o.Error)
				}
				total += time.Since(start)
			}
			b.ReportMetric(float64(total.Microseconds())/1000/float64(b.N), "ms/turn")
			b.ReportMetric(float64(body.Load())/1e6, "MB/request")
		})
	}
}

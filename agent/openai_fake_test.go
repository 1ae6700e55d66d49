package agent

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/frontdesk-hq/frontdesk/event"
)

// fakeReply is what fakeOpenAI answers to one chat completions request.
type fakeReply struct {
	sse    string      // testdata .sse file streamed one event at a time
	status int         // an error status instead, with body
	body   string      // testdata file (or literal text) sent with status
	header http.Header // extra response headers (Retry-After)
	abort  bool        // after the events, abort the connection mid-stream
	hold   bool        // after the events, hold the stream until the client leaves
	hang   bool        // send nothing, not even headers, until the client leaves
}

// fakeOpenAI is an in-process OpenAI-compatible server on 127.0.0.1 that
// speaks the real SSE wire format: each POST {base}/chat/completions gets
// the next scripted reply; GET {base}/models answers modelsStatus. It
// records every request body and, for hold and hang replies, when the
// handler saw the request's context end.
type fakeOpenAI struct {
	t   *testing.T
	srv *httptest.Server
	// gone receives the time a hold or hang handler saw its request end.
	gone chan time.Time

	mu           sync.Mutex
	script       []fakeReply
	requests     []map[string]any
	auth         []string
	modelsStatus int
}

func newFakeOpenAI(t testing.TB, script ...fakeReply) *fakeOpenAI {
	f := &fakeOpenAI{script: script, gone: make(chan time.Time, 64), modelsStatus: http.StatusOK}
	if tt, ok := t.(*testing.T); ok {
		f.t = tt
	}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	return f
}

// URL is the base URL, ending in /v1 like the real servers'.
func (f *fakeOpenAI) URL() string { return f.srv.URL + "/v1" }

func (f *fakeOpenAI) push(r ...fakeReply) {
	f.mu.Lock()
	f.script = append(f.script, r...)
	f.mu.Unlock()
}

func (f *fakeOpenAI) requestCount() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.requests)
}

func (f *fakeOpenAI) request(i int) map[string]any {
	f.mu.Lock()
	defer f.mu.Unlock()
	if i >= len(f.requests) {
		return nil
	}
	return f.requests[i]
}

func (f *fakeOpenAI) serve(w http.ResponseWriter, r *http.Request) {
	switch {
	case r.Method == http.MethodGet && r.URL.Path == "/v1/models":
		f.mu.Lock()
		status := f.modelsStatus
		f.auth = append(f.auth, r.Header.Get("Authorization"))
		f.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		if status == http.StatusOK {
			io.WriteString(w, `{"object":"list","data":[{"id":"gpt-4o-mini","object":"model","created":1721172741,"owned_by":"system"}]}`)
		} else {
			io.WriteString(w, `{"error":{"message":"Incorrect API key provided.","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}`)
		}
		return
	case r.Method != http.MethodPost || r.URL.Path != "/v1/chat/completions":
		http.NotFound(w, r)
		return
	}
	var body map[string]any
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
		http.Error(w, "bad json", http.StatusBadRequest)
		return
	}
	f.mu.Lock()
	f.requests = append(f.requests, body)
	f.auth = append(f.auth, r.Header.Get("Authorization"))
	var rep fakeReply
	ok := len(f.script) > 0
	if ok {
		rep, f.script = f.script[0], f.script[1:]
	}
	f.mu.Unlock()
	if !ok {
		if f.t != nil {
			f.t.Errorf("unexpected request %d: no reply scripted", f.requestCount())
		}
		http.Error(w, "no reply scripted", http.StatusInternalServerError)
		return
	}
	if rep.hang {
		<-r.Context().Done()
		f.gone <- time.Now()
		return
	}
	for k, v := range rep.header {
		w.Header()[k] = v
	}
	if rep.status != 0 {
		b := []byte(rep.body)
		if fb, err := os.ReadFile(filepath.Join("testdata", rep.body)); err == nil {
			b = fb
		}
		if json.Valid(b) {
			w.Header().Set("Content-Type", "application/json")
		} else if len(b) > 0 && b[0] == '<' {
			w.Header().Set("Content-Type", "text/html")
		} else {
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		}
		w.WriteHeader(rep.status)
		w.Write(b)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	fl := w.(http.Flusher)
	fl.Flush()
	if rep.sse != "" {
		for _, ev := range sseEvents(readFixture(rep.sse)) {
			if _, err := io.WriteString(w, ev); err != nil {
				return
			}
			fl.Flush()
		}
	}
	switch {
	case rep.abort:
		panic(http.ErrAbortHandler) // closes the connection without ending the chunked body
	case rep.hold:
		<-r.Context().Done()
		f.gone <- time.Now()
	}
}

// readFixture reads a testdata file; fixtures are small and fixed.
func readFixture(name string) string {
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		panic(err)
	}
	return string(b)
}

// sseEvents splits an SSE body into events, each with its blank line.
func sseEvents(body string) []string {
	var out []string
	for _, ev := range strings.SplitAfter(body, "\n\n") {
		if ev != "" {
			out = append(out, ev)
		}
	}
	return out
}

// recorder collects what a backend emits. Deltas are also sent on
// deltas (buffered) so tests can wait for the first one.
type recorder struct {
	mu     sync.Mutex
	events []recorded
	deltas chan string
}

type recorded struct {
	typ  event.Type
	data any
}

func newRecorder() *recorder { return &recorder{deltas: make(chan string, 1024)} }

func (r *recorder) emit(t event.Type, data any) {
	if _, err := json.Marshal(data); err != nil {
		panic("emitted data does not marshal: " + err.Error())
	}
	r.mu.Lock()
	r.events = append(r.events, recorded{t, data})
	r.mu.Unlock()
	if d, ok := data.(event.TextData); ok && t == event.Delta {
		select {
		case r.deltas <- d.Text:
		default:
		}
	}
}

func (r *recorder) all() []recorded {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]recorded(nil), r.events...)
}

func (r *recorder) text() string {
	var b strings.Builder
	for _, e := range r.all() {
		if d, ok := e.data.(event.TextData); ok && e.typ == event.Delta {
			b.WriteString(d.Text)
		}
	}
	return b.String()
}

func (r *recorder) toolCalls() []event.ToolCallData {
	var out []event.ToolCallData
	for _, e := range r.all() {
		if d, ok := e.data.(event.ToolCallData); ok {
			out = append(out, d)
		}
	}
	return out
}

func (r *recorder) toolResults() []event.ToolResultData {
	var out []event.ToolResultData
	for _, e := range r.all() {
		if d, ok := e.data.(event.ToolResultData); ok {
			out = append(out, d)
		}
	}
	return out
}

// testCtx is a context that ends with the test, or after 20 s.
func testCtx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/frontdesk-hq/frontdesk/event"
)

// newTestOpenAI returns a backend for f whose retry waits are recorded
// and skipped, so retry tests take no time.
func newTestOpenAI(t testing.TB, baseURL string, mod func(*OpenAIOptions)) (*OpenAI, *[]time.Duration) {
	t.Helper()
	opts := OpenAIOptions{
		BaseURL: baseURL, APIKey: "sk-test", APIKeyEnv: "TEST_KEY", Model: "gpt-4o-mini",
		SystemPrompt: "You are a test.", MaxToolSteps: 8, RequestTimeout: 10 * time.Second,
		Logger: slog.New(slog.DiscardHandler),
	}
	if mod != nil {
		mod(&opts)
	}
	o, err := NewOpenAI(opts)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	waits := &[]time.Duration{}
	o.wait = func(ctx context.Context, d time.Duration) error {
		mu.Lock()
		*waits = append(*waits, d)
		mu.Unlock()
		return ctx.Err()
	}
	return o, waits
}

// searchTool is a history_search stand-in that records its arguments.
type searchTool struct {
	mu   sync.Mutex
	args []string
}

func (s *searchTool) tools() []Tool {
	call := func(name string) func(context.Context, json.RawMessage) (string, error) {
		return func(ctx context.Context, args json.RawMessage) (string, error) {
			s.mu.Lock()
			s.args = append(s.args, name+" "+string(args))
			s.mu.Unlock()
			return fmt.Sprintf(`[{"seq":3,"content":"the launch is on Friday","tool":%q}]`, name), nil
		}
	}
	return []Tool{
		{Name: "history_search", Description: "Search the conversation.",
			Parameters: json.RawMessage(`{"type":"object","properties":{"query":{"type":"string"}},"required":["query"]}`),
			Call:       call("history_search")},
		{Name: "history_get_recent", Description: "The newest messages.",
			Parameters: json.RawMessage(`{"type":"object","properties":{"n":{"type":"integer"}}}`),
			Call:       call("history_get_recent")},
	}
}

func (s *searchTool) calls() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.args...)
}

func TestOpenAIPlainAnswers(t *testing.T) {
	tests := []struct {
		fixture, want string
		usage         *event.Usage
	}{
		{"openai_plain.sse", "Hello! How can I help? ☕", &event.Usage{PromptTokens: 23, CompletionTokens: 9, TotalTokens: 32}},
		{"ollama_plain.sse", "Hello from Ollama.", &event.Usage{PromptTokens: 31, CompletionTokens: 4, TotalTokens: 35}},
		{"llamacpp_plain.sse", "Hi from llama.cpp", &event.Usage{PromptTokens: 17, CompletionTokens: 3, TotalTokens: 20}},
		{"azure_empty_choices.sse", "Hello from Azure.", nil},
	}
	for _, tc := range tests {
		t.Run(tc.fixture, func(t *testing.T) {
			f := newFakeOpenAI(t, fakeReply{sse: tc.fixture})
			o, _ := newTestOpenAI(t, f.URL(), nil)
			rec := newRecorder()
			reply, err := o.Run(testCtx(t), Request{Turn: "t1", Channel: "web", Content: "hi"}, rec.emit)
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
			if reply.Content != tc.want || rec.text() != tc.want {
				t.Errorf("content %q, deltas %q; want %q", reply.Content, rec.text(), tc.want)
			}
			if !reflect.DeepEqual(reply.Usage, tc.usage) {
				t.Errorf("usage %+v, want %+v", reply.Usage, tc.usage)
			}
			if evs := rec.all(); len(evs) < 2 || evs[0].typ != event.Status {
				t.Errorf("events %v; want a status, then the deltas", evs)
			}
		})
	}
}

func TestOpenAIToolCalls(t *testing.T) {
	type call struct{ name, args string }
	tests := []struct {
		fixture string
		calls   []call
		ids     []string
		usage   *event.Usage
	}{
		{"openai_tool_pieces.sse", []call{{"history_search", `{"query":"launch date"}`}}, []string{"call_Qm3TfYbM1kX"},
			&event.Usage{PromptTokens: 272, CompletionTokens: 27, TotalTokens: 299}},
		{"openai_two_tools.sse", []call{{"history_search", `{"query":"launch"}`}, {"history_get_recent", `{"n":5}`}},
			[]string{"call_aaa111", "call_bbb222"}, &event.Usage{PromptTokens: 160, CompletionTokens: 9, TotalTokens: 169}},
		{"ollama_tool_whole.sse", []call{{"history_search", `{"query":"launch date"}`}}, []string{"call_b7dmj4q0"},
			&event.Usage{PromptTokens: 370, CompletionTokens: 31, TotalTokens: 401}},
		{"ollama_old_two_tools_no_index.sse", []call{{"history_search", `{"query":"launch"}`}, {"history_get_recent", `{"n":3}`}},
			[]string{"call_p2x9ka1m", "call_z8c3vd0q"}, &event.Usage{PromptTokens: 160, CompletionTokens: 9, TotalTokens: 169}},
		{"llamacpp_tool_pieces.sse", []call{{"history_search", `{"query":"launch date"}`}}, []string{"OJwrYz5nYgjSWNdTrHqW9qBL2rjC9wmC"},
			&event.Usage{PromptTokens: 400, CompletionTokens: 30, TotalTokens: 430}},
		{"noindex_noid_whole.sse", []call{{"history_search", `{"query":"launch date"}`}}, []string{"call_t7_1"},
			&event.Usage{PromptTokens: 160, CompletionTokens: 9, TotalTokens: 169}},
		{"noindex_noid_pieces.sse", []call{{"history_search", `{"query":"launch"}`}, {"history_get_recent", `{"n":2}`}},
			[]string{"call_t7_1", "call_t7_2"}, &event.Usage{PromptTokens: 160, CompletionTokens: 9, TotalTokens: 169}},
	}
	for _, tc := range tests {
		t.Run(tc.fixture, func(t *testing.T) {
			f := newFakeOpenAI(t, fakeReply{sse: tc.fixture}, fakeReply{sse: "openai_after_tool.sse"})
			o, _ := newTestOpenAI(t, f.URL(), nil)
			st := &searchTool{}
			rec := newRecorder()
			reply, err := o.Run(testCtx(t), Request{Turn: "t7", Channel: "web", Content: "when is the launch?", Tools: st.tools()}, rec.emit)
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
			if want := "You said the launch is on Friday."; reply.Content != want {
				t.Errorf("content %q, want %q", reply.Content, want)
			}
			if !reflect.DeepEqual(reply.Usage, tc.usage) {
				t.Errorf("usage %+v, want %+v", reply.Usage, tc.usage)
			}
			// The tools ran with the assembled arguments, in order.
			got := st.calls()
			if len(got) != len(tc.calls) {
				t.Fatalf("tool calls %q, want %d", got, len(tc.calls))
			}
			for i, c := range tc.calls {
				name, args, _ := strings.Cut(got[i], " ")
				if name != c.name || !jsonEqual(args, c.args) {
					t.Errorf("call %d: %s %s, want %s %s", i, name, args, c.name, c.args)
				}
			}
			// tool_call and tool_result events carry the same ids.
			calls, results := rec.toolCalls(), rec.toolResults()
			if len(calls) != len(tc.ids) || len(results) != len(tc.ids) {
				t.Fatalf("%d tool_call and %d tool_result events, want %d", len(calls), len(results), len(tc.ids))
			}
			for i, id := range tc.ids {
				if calls[i].ID != id || results[i].ID != id || results[i].Error != "" {
					t.Errorf("event %d: call %+v result %+v, want id %s and no error", i, calls[i], results[i], id)
				}
				if !json.Valid(calls[i].Args) {
					t.Errorf("tool_call args %q not JSON", calls[i].Args)
				}
			}
			// The second request replays the calls and their results.
			if f.requestCount() != 2 {
				t.Fatalf("%d requests, want 2", f.requestCount())
			}
			msgs := f.request(1)["messages"].([]any)
			var asst map[string]any
			var toolIDs []string
			for _, m := range msgs {
				m := m.(map[string]any)
				switch m["role"] {
				case "assistant":
					asst = m
				case "tool":
					toolIDs = append(toolIDs, m["tool_call_id"].(string))
					if !strings.Contains(m["content"].(string), "Friday") {
						t.Errorf("tool message %v lacks the tool output", m)
					}
				}
			}
			if !reflect.DeepEqual(toolIDs, tc.ids) {
				t.Errorf("tool messages answer %v, want %v", toolIDs, tc.ids)
			}
			if asst == nil || len(asst["tool_calls"].([]any)) != len(tc.ids) {
				t.Fatalf("second request has no assistant message with %d tool calls: %v", len(tc.ids), msgs)
			}
		})
	}
}

func jsonEqual(a, b string) bool {
	var x, y any
	return json.Unmarshal([]byte(a), &x) == nil && json.Unmarshal([]byte(b), &y) == nil && reflect.DeepEqual(x, y)
}

func TestOpenAIMalformedToolArgs(t *testing.T) {
	f := newFakeOpenAI(t, fakeReply{sse: "bad_tool_args.sse"}, fakeReply{sse: "openai_after_tool.sse"})
	o, _ := newTestOpenAI(t, f.URL(), nil)
	st := &searchTool{}
	rec := newRecorder()
	reply, err := o.Run(testCtx(t), Request{Turn: "t2", Content: "launch?", Tools: st.tools()}, rec.emit)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if reply.Content == "" {
		t.Error("no answer after the tool error")
	}
	if got := st.calls(); len(got) != 0 {
		t.Errorf("tool ran with malformed arguments: %q", got)
	}
	calls, results := rec.toolCalls(), rec.toolResults()
	if len(calls) != 1 || len(results) != 1 {
		t.Fatalf("%d tool_call, %d tool_result events; want 1 each", len(calls), len(results))
	}
	var raw string
	if err := json.Unmarshal(calls[0].Args, &raw); err != nil || raw != `{"query": "launch` {
		t.Errorf("tool_call args %s; want the raw text as a JSON string", calls[0].Args)
	}
	if !strings.Contains(results[0].Error, "not a valid JSON object") {
		t.Errorf("tool_result error %q; want it to say the arguments are not valid JSON", results[0].Error)
	}
	var toolMsg, args string
	for _, m := range f.request(1)["messages"].([]any) {
		m := m.(map[string]any)
		if m["role"] == "tool" {
			toolMsg = m["content"].(string)
		}
		if tc, ok := m["tool_calls"].([]any); ok {
			args = tc[0].(map[string]any)["function"].(map[string]any)["arguments"].(string)
		}
	}
	if !strings.HasPrefix(toolMsg, "error: ") || !strings.Contains(toolMsg, "not a valid JSON object") {
		t.Errorf("the model got %q; want an error it can read", toolMsg)
	}
	if args != "{}" {
		t.Errorf("replayed arguments %q; want {} so strict servers accept the request", args)
	}
}

func TestOpenAIUnknownTool(t *testing.T) {
	f := newFakeOpenAI(t, fakeReply{sse: "openai_tool_pieces.sse"}, fakeReply{sse: "openai_after_tool.sse"})
	o, _ := newTestOpenAI(t, f.URL(), nil)
	rec := newRecorder()
	if _, err := o.Run(testCtx(t), Request{Turn: "t3", Content: "x"}, rec.emit); err != nil {
		t.Fatalf("Run: %v", err)
	}
	if _, ok := f.request(0)["tools"]; ok {
		t.Error("tools offered although the request had none")
	}
	res := rec.toolResults()
	if len(res) != 1 || !strings.Contains(res[0].Error, `no tool named "history_search"`) {
		t.Errorf("tool results %+v; want an unknown-tool error", res)
	}
}

func TestOpenAIToolStepLimit(t *testing.T) {
	f := newFakeOpenAI(t, fakeReply{sse: "openai_tool_pieces.sse"}, fakeReply{sse: "openai_tool_pieces.sse"})
	o, _ := newTestOpenAI(t, f.URL(), func(o *OpenAIOptions) { o.MaxToolSteps = 1 })
	st := &searchTool{}
	_, err := o.Run(testCtx(t), Request{Turn: "t4", Content: "x", Tools: st.tools()}, newRecorder().emit)
	if err == nil || !strings.Contains(err.Error(), "after 1 rounds") {
		t.Fatalf("err %v; want the step limit", err)
	}
	if got := f.request(1)["tool_choice"]; got != "none" {
		t.Errorf("last request tool_choice %v, want none", got)
	}
	if got := f.request(0)["tool_choice"]; got != nil {
		t.Errorf("first request tool_choice %v, want unset", got)
	}
	if n := len(st.calls()); n != 1 {
		t.Errorf("tool ran %d times, want 1", n)
	}
}

func TestOpenAIRequest(t *testing.T) {
	f := newFakeOpenAI(t, fakeReply{sse: "openai_plain.sse"})
	temp := 0.2
	o, _ := newTestOpenAI(t, f.URL(), func(o *OpenAIOptions) { o.Temperature = &temp; o.MaxTokens = 256 })
	req := Request{
		Turn: "t9", Channel: "email", From: "ann@example.com", Content: "status?",
		LongTermMemory: "- Ann runs the launch.",
		Notes:          []string{"The user text is untrusted content from ann@example.com."},
		Context: []event.Event{
			event.New(event.User, "t1", time.Now(), event.UserData{Channel: "web", Content: "hello"}),
			event.New(event.Assistant, "t1", time.Now(), event.AssistantData{Content: "Hi!"}),
		},
		Tools: (&searchTool{}).tools(),
	}
	if _, err := o.Run(testCtx(t), req, newRecorder().emit); err != nil {
		t.Fatal(err)
	}
	body := f.request(0)
	if body["model"] != "gpt-4o-mini" || body["stream"] != true || body["temperature"] != 0.2 || body["max_tokens"] != 256.0 {
		t.Errorf("model/stream/temperature/max_tokens: %v %v %v %v", body["model"], body["stream"], body["temperature"], body["max_tokens"])
	}
	if so, _ := body["stream_options"].(map[string]any); so["include_usage"] != true {
		t.Errorf("stream_options %v, want include_usage", body["stream_options"])
	}
	tools, _ := body["tools"].([]any)
	if len(tools) != 2 {
		t.Fatalf("tools %v", body["tools"])
	}
	fn := tools[0].(map[string]any)["function"].(map[string]any)
	if fn["name"] != "history_search" || fn["parameters"].(map[string]any)["type"] != "object" {
		t.Errorf("tool %v", fn)
	}
	msgs := body["messages"].([]any)
	roles := make([]string, len(msgs))
	for i, m := range msgs {
		roles[i] = m.(map[string]any)["role"].(string)
	}
	if want := []string{"system", "user", "assistant", "user"}; !reflect.DeepEqual(roles, want) {
		t.Fatalf("roles %v, want %v", roles, want)
	}
	sys := msgs[0].(map[string]any)["content"].(string)
	for _, want := range []string{"You are a test.", "untrusted content from ann@example.com", "Ann runs the launch."} {
		if !strings.Contains(sys, want) {
			t.Errorf("system message lacks %q:\n%s", want, sys)
		}
	}
	if got := msgs[3].(map[string]any)["content"]; got != "[email from ann@example.com] status?" {
		t.Errorf("input %q", got)
	}
	f.mu.Lock()
	auth := f.auth[0]
	f.mu.Unlock()
	if auth != "Bearer sk-test" {
		t.Errorf("Authorization %q", auth)
	}
}

func TestOpenAIContextBudget(t *testing.T) {
	var ctxEvents []event.Event
	for i := range 40 {
		ctxEvents = append(ctxEvents,
			event.New(event.User, "", time.Now(), event.UserData{Channel: "web", Content: fmt.Sprintf("question %02d %s", i, strings.Repeat("q", 400))}),
			event.New(event.Assistant, "", time.Now(), event.AssistantData{Content: fmt.Sprintf("answer %02d %s", i, strings.Repeat("a", 400))}))
	}
	tests := []struct {
		name    string
		budget  int
		tools   []Tool
		dropped bool
		note    string
	}{
		{"everything fits", 100000, (&searchTool{}).tools(), false, ""},
		{"oldest dropped, tools named", 2000, (&searchTool{}).tools(), true, "history_search"},
		{"oldest dropped, no tools", 2000, nil, true, "left out"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o, _ := newTestOpenAI(t, "http://127.0.0.1:1/v1", func(o *OpenAIOptions) { o.ContextBudgetTokens = tc.budget })
			req := Request{Content: "latest", Context: ctxEvents, Tools: tc.tools}
			msgs := o.messages(req)
			b, _ := json.Marshal(msgs)
			var decoded []struct{ Role, Content string }
			if err := json.Unmarshal(b, &decoded); err != nil {
				t.Fatal(err)
			}
			sys, hist, last := decoded[0], decoded[1:len(decoded)-1], decoded[len(decoded)-1]
			if last.Content != "latest" {
				t.Errorf("last message %q, want the input", last.Content)
			}
			if !tc.dropped {
				if len(hist) != 80 || strings.Contains(sys.Content, "left out") {
					t.Errorf("%d history messages (want 80), note present: %v", len(hist), strings.Contains(sys.Content, "left out"))
				}
				return
			}
			if !strings.Contains(sys.Content, tc.note) || !strings.Contains(sys.Content, "left out") {
				t.Errorf("system message lacks the note %q:\n%s", tc.note, sys.Content)
			}
			if len(hist) == 0 || len(hist) >= 80 {
				t.Fatalf("%d history messages kept; want some dropped", len(hist))
			}
			if hist[0].Role != "user" {
				t.Errorf("kept history starts with %s, want user", hist[0].Role)
			}
			if !strings.HasPrefix(hist[len(hist)-1].Content, "answer 39") {
				t.Errorf("newest exchange missing: %q", hist[len(hist)-1].Content[:12])
			}
			total := 0
			for _, m := range decoded {
				total += estimateTokens(m.Content)
			}
			if total > tc.budget {
				t.Errorf("prompt ≈ %d tokens, over the budget %d", total, tc.budget)
			}
		})
	}
}

// closedURL is a base URL on 127.0.0.1 where nothing listens.
func closedURL(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return "http://" + addr + "/v1"
}

func TestOpenAIErrors(t *testing.T) {
	retryAfter := func(v string) http.Header { return http.Header{"Retry-After": {v}} }
	tests := []struct {
		name     string
		script   []fakeReply
		refused  bool          // no server at all
		noKey    bool          // no API key configured
		timeout  time.Duration // RequestTimeout
		want     []string      // substrings of the error
		requests int           // requests the server saw
		waits    []time.Duration
		status   int
		ok       bool // the turn completes after retries
	}{
		{name: "connection refused", refused: true,
			want:  []string{"refused the connection (is it running?)", "retried 3 times over 7s"},
			waits: []time.Duration{time.Second, 2 * time.Second, 4 * time.Second}},
		{name: "401 openai", script: []fakeReply{{status: 401, body: "error_401_openai.json"}},
			want: []string{"the API key was rejected (401): check TEST_KEY", "Incorrect API key"}, requests: 1, status: 401},
		{name: "401 without key", noKey: true, script: []fakeReply{{status: 401, body: "error_401_openai.json"}},
			want: []string{"wants an API key (401): set TEST_KEY"}, requests: 1, status: 401},
		{name: "404 model openai", script: []fakeReply{{status: 404, body: "error_404_model_openai.json"}},
			want: []string{`model "gpt-4o-mini" not found (404)`, "does not exist"}, requests: 1, status: 404},
		{name: "404 model ollama", script: []fakeReply{{status: 404, body: "error_404_model_ollama.json"}},
			want: []string{`model "gpt-4o-mini" not found (404)`, "try pulling it first"}, requests: 1, status: 404},
		{name: "404 model vllm", script: []fakeReply{{status: 404, body: "error_404_model_vllm.json"}},
			want: []string{`not found (404)`, "does not exist"}, requests: 1, status: 404},
		{name: "404 wrong path", script: []fakeReply{{status: 404, body: "error_404_path_ollama.txt"}},
			want: []string{"has no chat completions endpoint", "ends in /v1"}, requests: 1, status: 404},
		{name: "429 retried then given up", script: []fakeReply{
			{status: 429, body: "error_429_openai.json", header: retryAfter("1")},
			{status: 429, body: "error_429_openai.json", header: retryAfter("2")},
			{status: 429, body: "error_429_openai.json", header: http.Header{"Retry-After-Ms": {"1500"}}},
			{status: 429, body: "error_429_openai.json", header: retryAfter("1")}},
			want:     []string{"rate limited (429) — retried 3 times over 4.5s", "Rate limit reached"},
			requests: 4, waits: []time.Duration{time.Second, 2 * time.Second, 1500 * time.Millisecond}, status: 429},
		{name: "429 retry-after too long", script: []fakeReply{{status: 429, body: "error_429_openai.json", header: retryAfter("60")}},
			want: []string{"rate limited (429); the server asks to wait 1m0s"}, requests: 1, status: 429},
		{name: "429 quota", script: []fakeReply{{status: 429, body: "error_429_quota_openai.json"}},
			want: []string{"no quota left (429 insufficient_quota)", "exceeded your current quota"}, requests: 1, status: 429},
		{name: "429 then answer", script: []fakeReply{{status: 429, body: "error_429_openai.json", header: retryAfter("3")}, {sse: "openai_plain.sse"}},
			ok: true, requests: 2, waits: []time.Duration{3 * time.Second}},
		{name: "500 retried then given up", script: []fakeReply{
			{status: 500, body: "error_500_openai.json"}, {status: 500, body: "error_500_openai.json"},
			{status: 500, body: "error_500_openai.json"}, {status: 500, body: "error_500_openai.json"}},
			want:     []string{"failed (500 Internal Server Error) — retried 3 times over 7s", "had an error"},
			requests: 4, waits: []time.Duration{time.Second, 2 * time.Second, 4 * time.Second}, status: 500},
		{name: "503 llama.cpp loading then answer", script: []fakeReply{{status: 503, body: "error_503_llamacpp.json"}, {sse: "llamacpp_plain.sse"}},
			ok: true, requests: 2, waits: []time.Duration{time.Second}},
		{name: "502 html", script: []fakeReply{{status: 502, body: "error_502_proxy.html"}, {status: 502, body: "error_502_proxy.html"},
			{status: 502, body: "error_502_proxy.html"}, {status: 502, body: "error_502_proxy.html"}},
			want: []string{"failed (502 Bad Gateway) — retried 3 times"}, requests: 4, status: 502,
			waits: []time.Duration{time.Second, 2 * time.Second, 4 * time.Second}},
		{name: "cut mid-answer", script: []fakeReply{{sse: "openai_cut.sse", abort: true}},
			want: []string{"the reply stream was cut after 3 tokens: unexpected EOF"}, requests: 1},
		{name: "cut before the first token then answer", script: []fakeReply{{abort: true}, {sse: "ollama_plain.sse"}},
			ok: true, requests: 2, waits: []time.Duration{time.Second}},
		{name: "error event mid-stream", script: []fakeReply{{sse: "openai_error_event.sse"}},
			want: []string{"reported an error after 1 tokens: The server had an error"}, requests: 1},
		{name: "no answer in time", timeout: 100 * time.Millisecond, script: []fakeReply{{hang: true}},
			want: []string{"did not answer within 100ms (agent.openai.request_timeout_sec)"}, requests: 1},
		{name: "stalled mid-answer", timeout: time.Second, script: []fakeReply{{sse: "openai_slow.sse", hold: true}},
			want: []string{"the reply stream stalled: nothing arrived for 1s after 1 tokens"}, requests: 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFakeOpenAI(t, tc.script...)
			url := f.URL()
			if tc.refused {
				url = closedURL(t)
			}
			o, waits := newTestOpenAI(t, url, func(o *OpenAIOptions) {
				if tc.noKey {
					o.APIKey = ""
				}
				if tc.timeout > 0 {
					o.RequestTimeout = tc.timeout
				}
			})
			rec := newRecorder()
			_, err := o.Run(testCtx(t), Request{Turn: "t5", Content: "hi"}, rec.emit)
			switch {
			case tc.ok && err != nil:
				t.Fatalf("Run: %v", err)
			case !tc.ok && err == nil:
				t.Fatal("Run succeeded; want an error")
			case err != nil:
				for _, w := range tc.want {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("error %q\n  does not contain %q", err, w)
					}
				}
				if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
					t.Errorf("error %v reads as cancelled; the hub would not show it", err)
				}
				var me *ModelError
				if !errors.As(err, &me) || me.Status != tc.status {
					t.Errorf("error %T %v; want a *ModelError with status %d", err, err, tc.status)
				}
			}
			if got := f.requestCount(); !tc.refused && got != tc.requests {
				t.Errorf("server saw %d requests, want %d", got, tc.requests)
			}
			if !reflect.DeepEqual(*waits, tc.waits) && (len(*waits) > 0 || len(tc.waits) > 0) {
				t.Errorf("retry waits %v, want %v", *waits, tc.waits)
			}
			// The backend keeps no state: the next turn works.
			if tc.refused {
				return
			}
			// A held or hung handler sees the request end.
			if len(tc.script) > 0 && (tc.script[0].hang || tc.script[0].hold) {
				select {
				case <-f.gone:
				case <-time.After(5 * time.Second):
					t.Fatal("the server never saw the timed-out request end")
				}
			}
			f.push(fakeReply{sse: "openai_plain.sse"})
			reply, err := o.Run(testCtx(t), Request{Turn: "t6", Content: "again"}, newRecorder().emit)
			if err != nil || reply.Content == "" {
				t.Errorf("next turn: %q, %v", reply.Content, err)
			}
		})
	}
}

func TestOpenAICancel(t *testing.T) {
	f := newFakeOpenAI(t, fakeReply{sse: "openai_slow.sse", hold: true})
	o, _ := newTestOpenAI(t, f.URL(), nil)
	rec := newRecorder()
	ctx, cancel := context.WithCancel(testCtx(t))
	done := make(chan error, 1)
	go func() {
		_, err := o.Run(ctx, Request{Turn: "t1", Content: "think"}, rec.emit)
		done <- err
	}()
	select {
	case <-rec.deltas:
	case <-time.After(5 * time.Second):
		t.Fatal("no delta")
	}
	cancelled := time.Now()
	cancel()
	select {
	case at := <-f.gone:
		if d := at.Sub(cancelled); d > time.Second {
			t.Errorf("the server saw the request end %v after cancel; want at once", d)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the server never saw the request end")
	}
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("Run returned %v, want context.Canceled", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not return after cancel")
	}
}

func TestOpenAICancelDuringBackoff(t *testing.T) {
	o, _ := newTestOpenAI(t, closedURL(t), nil)
	o.wait = sleepCtx // really wait, so cancel has something to cut short
	rec := newRecorder()
	ctx, cancel := context.WithCancel(testCtx(t))
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := o.Run(ctx, Request{Turn: "t1", Content: "x"}, func(typ event.Type, data any) {
			rec.emit(typ, data)
			if d, ok := data.(event.TextData); ok && strings.Contains(d.Text, "retrying") {
				cancel()
			}
		})
		done <- err
	}()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("Run returned %v, want context.Canceled", err)
		}
	case <-time.After(900 * time.Millisecond): // the first backoff is 1 s
		t.Fatal("cancel did not cut the backoff short")
	}
}

func TestOpenAISummarize(t *testing.T) {
	f := newFakeOpenAI(t, fakeReply{sse: "ollama_plain.sse"})
	o, _ := newTestOpenAI(t, f.URL(), nil)
	transcript := []event.Event{
		event.New(event.User, "t1", time.Now(), event.UserData{Channel: "web", From: "ann", Content: "the launch moves to Friday"}),
		event.New(event.ToolCall, "t1", time.Now(), event.ToolCallData{ID: "c", Name: "x", Args: json.RawMessage(`{}`)}),
		event.New(event.Assistant, "t1", time.Now(), event.AssistantData{Content: "Noted: Friday."}),
	}
	sum, err := o.Summarize(testCtx(t), transcript)
	if err != nil {
		t.Fatal(err)
	}
	if sum != "Hello from Ollama." {
		t.Errorf("summary %q", sum)
	}
	body := f.request(0)
	if _, ok := body["tools"]; ok {
		t.Error("tools offered to the summary request")
	}
	msgs := body["messages"].([]any)
	sys := msgs[0].(map[string]any)["content"].(string)
	user := msgs[1].(map[string]any)["content"].(string)
	if !strings.Contains(sys, "long-term memory") || !strings.Contains(user, "User: [web from ann] the launch moves to Friday") ||
		!strings.Contains(user, "Assistant: Noted: Friday.") || strings.Contains(user, `"c"`) {
		t.Errorf("summary request:\nsystem %q\nuser %q", sys, user)
	}
	if _, err := o.Summarize(testCtx(t), nil); err == nil {
		t.Error("an empty transcript was summarised")
	}
}

func TestOpenAICheck(t *testing.T) {
	f := newFakeOpenAI(t)
	o, _ := newTestOpenAI(t, f.URL(), nil)
	if err := o.Check(testCtx(t)); err != nil {
		t.Fatalf("Check: %v", err)
	}
	f.mu.Lock()
	f.modelsStatus = http.StatusUnauthorized
	auth := f.auth[0]
	f.mu.Unlock()
	if auth != "Bearer sk-test" {
		t.Errorf("Authorization %q", auth)
	}
	err := o.Check(testCtx(t))
	if err == nil || !strings.Contains(err.Error(), f.URL()+"/models") || !strings.Contains(err.Error(), "401") || !strings.Contains(err.Error(), "TEST_KEY") {
		t.Errorf("Check on 401: %v", err)
	}
	o, _ = newTestOpenAI(t, f.srv.URL+"/api", nil)
	if err := o.Check(testCtx(t)); err == nil || !strings.Contains(err.Error(), "404") || !strings.Contains(err.Error(), "/v1") {
		t.Errorf("Check on a wrong path: %v", err)
	}
	o, _ = newTestOpenAI(t, closedURL(t), nil)
	if err := o.Check(testCtx(t)); err == nil || !strings.Contains(err.Error(), "refused the connection") {
		t.Errorf("Check on a closed port: %v", err)
	}
}

func TestRetryAfter(t *testing.T) {
	now := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	tests := []struct {
		name   string
		header http.Header
		want   time.Duration
		ok     bool
	}{
		{"seconds", http.Header{"Retry-After": {"7"}}, 7 * time.Second, true},
		{"ms", http.Header{"Retry-After-Ms": {"250"}, "Retry-After": {"1"}}, 250 * time.Millisecond, true},
		{"date", http.Header{"Retry-After": {"Sun, 22 Nov 2026 10:00:12 GMT"}}, 12 * time.Second, true},
		{"past date", http.Header{"Retry-After": {"Sun, 22 Nov 2026 09:00:00 GMT"}}, 0, true},
		{"garbage", http.Header{"Retry-After": {"soon"}}, 0, false},
		{"none", nil, 0, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := retryAfter(tc.header, now)
			if got != tc.want || ok != tc.ok {
				t.Errorf("retryAfter = %v, %v; want %v, %v", got, ok, tc.want, tc.ok)
			}
		})
	}
}

func TestServerMessage(t *testing.T) {
	tests := []struct{ body, want string }{
		{readFixture("error_404_model_ollama.json"), `model "llama9" not found, try pulling it first`},
		{readFixture("error_404_model_vllm.json"), "The model `llama9` does not exist."},
		{`{"error":"model 'x' not found"}`, "model 'x' not found"},
		{`{"detail":"Not Found"}`, "Not Found"},
		{readFixture("error_502_proxy.html"), ""},
		{"404 page not found", "404 page not found"},
		{"", ""},
	}
	for _, tc := range tests {
		if got := serverMessage([]byte(tc.body)); got != tc.want {
			t.Errorf("serverMessage(%.40q) = %q, want %q", tc.body, got, tc.want)
		}
	}
}

// FuzzOpenAIStream feeds arbitrary stream bodies through the real SDK
// decoder and the backend: whatever a server sends, Run must return (an
// answer or an error), never panic, and every tool_call it emits must
// carry valid JSON.
func FuzzOpenAIStream(f *testing.F) {
	for _, name := range []string{"openai_plain.sse", "openai_tool_pieces.sse", "openai_two_tools.sse", "ollama_tool_whole.sse",
		"ollama_old_two_tools_no_index.sse", "noindex_noid_pieces.sse", "llamacpp_tool_pieces.sse", "bad_tool_args.sse", "openai_error_event.sse"} {
		f.Add(readFixture(name))
	}
	var body struct {
		sync.Mutex
		s string
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body.Lock()
		s := body.s
		body.Unlock()
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, s)
	}))
	f.Cleanup(srv.Close)
	f.Fuzz(func(t *testing.T, s string) {
		body.Lock()
		body.s = s
		body.Unlock()
		o, _ := newTestOpenAI(t, srv.URL+"/v1", func(o *OpenAIOptions) { o.MaxToolSteps = 1; o.RequestTimeout = 2 * time.Second })
		rec := newRecorder()
		o.Run(testCtx(t), Request{Turn: "t1", Content: "x", Tools: (&searchTool{}).tools()}, rec.emit)
		for _, c := range rec.toolCalls() {
			if !json.Valid(c.Args) {
				t.Fatalf("tool_call args %q are not JSON", c.Args)
			}
		}
	})
}

// TestOpenAIUnknownToolErrorIsCapped: a model that invents a huge tool
// name, with many tools on offer, gets a short error back — not its name
// and every tool's name in full (a 100 KB name came back whole before).
func TestOpenAIUnknownToolErrorIsCapped(t *testing.T) {
	var tools []Tool
	for i := range 128 {
		tools = append(tools, Tool{Name: fmt.Sprintf("server__%056d", i)})
	}
	o := &OpenAI{opts: OpenAIOptions{ContextBudgetTokens: 100000}}
	rec := newRecorder()
	out := o.runTool(testCtx(t), tools, toolCall{id: "c1", name: strings.Repeat("é", 50000), args: "{}"}, rec.emit)
	if len(out) > 2500 || !strings.Contains(out, "no tool named") || !strings.Contains(out, "…") || !strings.Contains(out, "more") {
		t.Errorf("the model got %d bytes: %.300s…", len(out), out)
	}
	if res := rec.toolResults(); len(res) != 1 || len(res[0].Error) > 2500 {
		t.Errorf("the tool_result event holds a %d-byte error", len(res[0].Error))
	}
}

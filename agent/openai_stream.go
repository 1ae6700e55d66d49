package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/frontdesk-hq/frontdesk/event"
)

var (
	// errStalled is the cause when RequestTimeout passed without a byte.
	errStalled = errors.New("stalled")
	// errNoFinish: the stream ended without any choice's finish_reason
	// (and so without the [DONE] that follows it) — the server went away.
	errNoFinish = errors.New("the connection closed before the model finished")
)

// stepResult is what one model request produced.
type stepResult struct {
	content string     // this request's text
	calls   []toolCall // in the order the model made them
	usage   *event.Usage
	chunks  int  // chunks that carried part of an answer (≈ tokens)
	started bool // part of an answer arrived: never retried after this
	finish  string
}

// failure is a failed attempt with what the HTTP exchange showed.
type failure struct {
	err     error
	status  int // 0 when no response arrived
	header  http.Header
	body    []byte // error bodies only
	stalled bool
}

// httpRecord keeps the status, headers and error body of an attempt's
// response: the SDK's own error type loses them when the body is not the
// OpenAI error shape (Ollama's {"error":"…"}, vLLM's {"message":…}, a
// proxy's HTML page).
type httpRecord struct {
	status int
	header http.Header
	body   []byte
}

func (r *httpRecord) middleware(req *http.Request, next option.MiddlewareNext) (*http.Response, error) {
	res, err := next(req)
	if res != nil {
		r.status, r.header = res.StatusCode, res.Header
		if res.StatusCode >= 400 && res.Body != nil {
			b, _ := io.ReadAll(io.LimitReader(res.Body, 64<<10))
			res.Body.Close()
			r.body = b
			res.Body = io.NopCloser(bytes.NewReader(b))
		}
	}
	return res, err
}

// complete runs one model request, retrying failures that happen before
// the first token, and returns the result or an error for people. Once
// ctx is cancelled it returns ctx.Err() at once. emit may be nil.
func (o *OpenAI) complete(ctx context.Context, p openai.ChatCompletionNewParams, emit Emitter, ts *turnState) (stepResult, error) {
	var retries int
	var waited time.Duration
	for {
		res, f := o.attempt(ctx, p, emit, ts)
		if f == nil {
			return res, nil
		}
		if err := ctx.Err(); err != nil {
			return res, err
		}
		d, retry, why := o.retryDelay(f, res, retries, waited)
		if !retry {
			return res, o.describe(f, res, retries, waited, why)
		}
		o.opts.Logger.Warn("model request failed; retrying", "url", o.baseURL, "status", f.status, "err", f.err, "retry_in", d)
		if emit != nil {
			emit(event.Status, event.TextData{Text: fmt.Sprintf("%s; retrying in %s…", o.shortReason(f), fmtDuration(d))})
		}
		if err := o.wait(ctx, d); err != nil {
			return res, err
		}
		retries++
		waited += d
	}
}

// attempt makes one streaming request. Text deltas are emitted as they
// arrive; tool calls are assembled and returned when the stream ends. The
// attempt's context is cancelled (cause errStalled) when RequestTimeout
// passes without a chunk, which aborts the HTTP request.
func (o *OpenAI) attempt(ctx context.Context, p openai.ChatCompletionNewParams, emit Emitter, ts *turnState) (stepResult, *failure) {
	actx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	idle := time.AfterFunc(o.opts.RequestTimeout, func() { cancel(errStalled) })
	defer idle.Stop()

	var rec httpRecord
	stream := o.chat.NewStreaming(actx, p, option.WithMiddleware(rec.middleware))
	defer stream.Close()

	var res stepResult
	var text strings.Builder
	acc := toolAccumulator{byIndex: map[int64]*toolCall{}}
	thinking := false
	for stream.Next() {
		idle.Reset(o.opts.RequestTimeout)
		chunk := stream.Current()
		if chunk.JSON.Usage.Valid() {
			u := chunk.Usage
			res.usage = &event.Usage{PromptTokens: int(u.PromptTokens), CompletionTokens: int(u.CompletionTokens), TotalTokens: int(u.TotalTokens)}
		}
		for _, ch := range chunk.Choices { // empty on usage-only and Azure's filter chunks
			if ch.Index != 0 {
				continue // n=1 is requested; ignore anything else
			}
			d := ch.Delta
			got := false
			if s := d.Content + d.Refusal; s != "" {
				got = true
				text.WriteString(s)
				ts.text.WriteString(s)
				if emit != nil {
					emit(event.Delta, event.TextData{Text: s})
				}
			}
			if hasReasoning(d) {
				got = true
				if !thinking && emit != nil {
					emit(event.Status, event.TextData{Text: "thinking…"})
				}
				thinking = true
			}
			for _, tc := range d.ToolCalls {
				got = true
				acc.add(tc)
			}
			if got {
				res.started = true
				res.chunks++
			}
			if ch.FinishReason != "" {
				res.finish = ch.FinishReason
			}
		}
	}
	res.content = text.String()
	err := stream.Err()
	if err == nil && res.finish == "" {
		err = errNoFinish
	}
	if err != nil {
		return res, &failure{err: err, status: rec.status, header: rec.header, body: rec.body,
			stalled: errors.Is(context.Cause(actx), errStalled)}
	}
	res.calls = acc.finish(ts)
	return res, nil
}

// hasReasoning reports whether a delta carries reasoning text, which
// Ollama, llama.cpp, vLLM and DeepSeek send as reasoning_content or
// reasoning before the answer. It is not shown, but it is progress.
func hasReasoning(d openai.ChatCompletionChunkChoiceDelta) bool {
	for _, k := range []string{"reasoning_content", "reasoning"} {
		if f, ok := d.JSON.ExtraFields[k]; ok {
			if raw := f.Raw(); raw != "" && raw != "null" && raw != `""` {
				return true
			}
		}
	}
	return false
}

// toolCall is one tool call assembled from stream deltas.
type toolCall struct {
	id, name, args string
}

// validArgs reports whether the arguments are a JSON object (or empty,
// which means no arguments).
func (c toolCall) validArgs() bool {
	s := strings.TrimSpace(c.args)
	return s == "" || s[0] == '{' && json.Valid([]byte(s))
}

// toolAccumulator assembles tool calls from the deltas of one stream.
// Servers differ:
//   - OpenAI, llama.cpp and vLLM send index, id and name in a call's first
//     delta, then index and pieces of the arguments;
//   - Ollama sends each call whole in one delta, with an id such as
//     "call_x1y2z3w4" (and an index in recent versions, none in older ones);
//   - some servers omit the index, the id, or both.
//
// A delta goes to the call at its index; without an index (decoded as
// absent, not as 0), to the latest call. It starts a new call instead when
// it names a different id than that call has — or, lacking ids, carries a
// name while that call has one — and that call's arguments are already
// complete JSON (or empty). A repeated name alone with no arguments changes
// nothing. Calls without an id get "call_<turn>_<n>".
type toolAccumulator struct {
	calls   []*toolCall
	byIndex map[int64]*toolCall
}

func (a *toolAccumulator) add(d openai.ChatCompletionChunkChoiceDeltaToolCall) {
	args := d.Function.Arguments
	if f := d.Function.JSON.Arguments; !f.Valid() && strings.HasPrefix(strings.TrimSpace(f.Raw()), "{") {
		args = f.Raw() // arguments sent as an object instead of a string
	}
	idx := int64(-1)
	if d.JSON.Index.Valid() {
		idx = d.Index
	}
	var cur *toolCall
	if idx >= 0 {
		cur = a.byIndex[idx]
	} else if n := len(a.calls); n > 0 {
		cur = a.calls[n-1]
	}
	if cur != nil && startsNewCall(cur, d.ID, d.Function.Name, args) {
		cur = nil
	}
	if cur == nil {
		cur = &toolCall{}
		a.calls = append(a.calls, cur)
	}
	if idx >= 0 {
		a.byIndex[idx] = cur
	}
	if cur.id == "" {
		cur.id = d.ID
	}
	if cur.name == "" {
		cur.name = d.Function.Name
	}
	cur.args += args
}

func startsNewCall(cur *toolCall, id, name, args string) bool {
	var fresh bool
	switch {
	case id != "" && cur.id != "":
		fresh = id != cur.id
	case id == "" && name == cur.name && args == "":
		fresh = false
	default:
		fresh = name != "" && cur.name != ""
	}
	if !fresh {
		return false
	}
	s := strings.TrimSpace(cur.args)
	return s == "" || json.Valid([]byte(s))
}

// finish returns the calls in order, with ids made up where the server
// sent none or repeated one.
func (a *toolAccumulator) finish(ts *turnState) []toolCall {
	out := make([]toolCall, 0, len(a.calls))
	seen := map[string]bool{}
	for _, c := range a.calls {
		ts.calls++
		if c.id == "" || seen[c.id] {
			c.id = fmt.Sprintf("call_%s_%d", ts.turn, ts.calls)
		}
		seen[c.id] = true
		out = append(out, *c)
	}
	return out
}

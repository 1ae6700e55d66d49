package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/frontdesk-hq/frontdesk/event"
)

// The openai backend talks to any OpenAI-compatible chat completions
// endpoint through github.com/openai/openai-go/v3. go.mod pins the SDK to
// an exact version on purpose: it is a generated SDK that releases almost
// daily, its minor releases have raised the minimum Go version, and this
// backend depends on details below its typed API (the raw chunk fields it
// decodes, the SSE decoder's handling of comments, [DONE] and error
// events). Upgrade it deliberately, with the fixture tests in
// openai_test.go as the gate.

// Defaults of OpenAIOptions.
const (
	DefaultOpenAIBaseURL       = "https://api.openai.com/v1"
	DefaultOpenAITimeout       = 120 * time.Second
	DefaultContextBudgetTokens = 12000
)

// Retry policy: failures before the first token of an answer (refused or
// reset connections, 429, 5xx) are retried with exponential backoff that
// honours Retry-After, within a total wait of retryBudget.
const (
	maxRetries  = 3
	retryBase   = time.Second
	retryBudget = 20 * time.Second
)

// OpenAIOptions configures NewOpenAI. Zero values mean the defaults noted.
type OpenAIOptions struct {
	// BaseURL is the API root, e.g. http://127.0.0.1:11434/v1. Default
	// DefaultOpenAIBaseURL.
	BaseURL string
	// APIKey is sent as a bearer token when not empty.
	APIKey string
	// APIKeyEnv names where the key came from, for error messages
	// ("check OPENAI_API_KEY"). Default "the API key".
	APIKeyEnv string
	// Model is the model name. Required.
	Model string
	// SystemPrompt opens the system message. Empty: none.
	SystemPrompt string
	// Temperature is sent when not nil.
	Temperature *float64
	// MaxTokens caps a reply when positive. It is sent as
	// max_completion_tokens to api.openai.com (whose newer models refuse
	// max_tokens) and as max_tokens to everyone else (which all know it).
	MaxTokens int
	// RequestTimeout is the longest wait for the server to start answering
	// and between two streamed chunks. Default DefaultOpenAITimeout.
	RequestTimeout time.Duration
	// MaxToolSteps bounds the tool rounds of one turn; 0 offers no tools.
	MaxToolSteps int
	// ContextBudgetTokens bounds the prompt, estimated as bytes/4.
	// Default DefaultContextBudgetTokens.
	ContextBudgetTokens int
	// Vision sends the images of the input (and of the newest earlier
	// message that has some) as image content parts; false only names
	// them in text. It needs Files.
	Vision bool
	// Files reads attachments: text files go inline, images (Vision) as
	// data: URLs. Nil: attachments are only named.
	Files Files
	// HTTPClient makes the requests. Default: a client of its own with no
	// overall timeout (replies stream for as long as they take).
	HTTPClient *http.Client
	// Logger receives operational messages (retries). Default slog.Default().
	Logger *slog.Logger
}

// OpenAI is the backend for OpenAI-compatible servers. It streams the
// answer, offers the request's tools and runs the tool loop, retries
// failures that happen before the first token, and explains every other
// failure in a sentence meant for people. Its methods may be called from
// any goroutine; it keeps no per-turn state.
type OpenAI struct {
	opts    OpenAIOptions
	baseURL string // without a trailing slash, for messages
	chat    openai.ChatCompletionService
	// wait sleeps between retries; tests replace it to record the delays.
	wait func(ctx context.Context, d time.Duration) error
}

var (
	_ Agent                                     = (*OpenAI)(nil)
	_ interface{ Check(context.Context) error } = (*OpenAI)(nil)
)

// NewOpenAI returns the backend for opts. It makes no request: Check does.
func NewOpenAI(opts OpenAIOptions) (*OpenAI, error) {
	if opts.BaseURL == "" {
		opts.BaseURL = DefaultOpenAIBaseURL
	}
	u, err := url.Parse(opts.BaseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("openai base URL %q is not an http(s) URL", opts.BaseURL)
	}
	if strings.TrimSpace(opts.Model) == "" {
		return nil, errors.New("openai: no model configured")
	}
	if opts.APIKeyEnv == "" {
		opts.APIKeyEnv = "the API key"
	}
	if opts.RequestTimeout <= 0 {
		opts.RequestTimeout = DefaultOpenAITimeout
	}
	if opts.ContextBudgetTokens <= 0 {
		opts.ContextBudgetTokens = DefaultContextBudgetTokens
	}
	if opts.MaxToolSteps < 0 {
		opts.MaxToolSteps = 0
	}
	if opts.HTTPClient == nil {
		tr := http.DefaultTransport.(*http.Transport).Clone()
		opts.HTTPClient = &http.Client{Transport: tr}
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	// The services are built without openai.NewClient on purpose: NewClient
	// also reads OPENAI_BASE_URL, OPENAI_ORG_ID and friends from the
	// environment, and the configuration alone decides here.
	reqOpts := []option.RequestOption{
		option.WithBaseURL(opts.BaseURL),
		option.WithHTTPClient(opts.HTTPClient),
		option.WithMaxRetries(0), // retried here, and only before the first token
	}
	if opts.APIKey != "" {
		reqOpts = append(reqOpts, option.WithAPIKey(opts.APIKey))
	}
	return &OpenAI{
		opts:    opts,
		baseURL: strings.TrimRight(opts.BaseURL, "/"),
		chat:    openai.NewChatCompletionService(reqOpts...),
		wait:    sleepCtx,
	}, nil
}

// turnState is what one Run accumulates across its model requests.
type turnState struct {
	turn  string
	text  strings.Builder // every delta of the turn
	usage *event.Usage
	calls int // tool calls seen, for synthesised ids
}

func (t *turnState) addUsage(u *event.Usage) {
	if u == nil {
		return
	}
	if t.usage == nil {
		t.usage = &event.Usage{}
	}
	t.usage.PromptTokens += u.PromptTokens
	t.usage.CompletionTokens += u.CompletionTokens
	t.usage.TotalTokens += u.TotalTokens
}

// Run implements Agent: one streamed request, then as long as the model
// calls tools (at most MaxToolSteps rounds) the calls are run in order and
// their results sent back in a further request. The reply's content is
// every delta of the turn; its usage sums all requests.
func (o *OpenAI) Run(ctx context.Context, req Request, emit Emitter) (Reply, error) {
	emit(event.Status, event.TextData{Text: fmt.Sprintf("asking %s…", o.opts.Model)})
	msgs := o.messages(req)
	var tools []openai.ChatCompletionToolUnionParam
	if o.opts.MaxToolSteps > 0 {
		tools = toolParams(req.Tools)
	}
	ts := &turnState{turn: req.Turn}
	reply := func() Reply { return Reply{Content: ts.text.String(), Usage: ts.usage} }
	for step := 0; ; step++ {
		last := step >= o.opts.MaxToolSteps
		res, err := o.complete(ctx, o.params(msgs, tools, last), emit, ts)
		ts.addUsage(res.usage)
		if err != nil {
			return reply(), err
		}
		if len(res.calls) == 0 {
			return reply(), nil
		}
		if last {
			// Asked not to (tool_choice none), the model still wants tools.
			if strings.TrimSpace(ts.text.String()) != "" {
				return reply(), nil
			}
			return reply(), fmt.Errorf("the model still wanted to call tools after %d rounds and gave no answer (agent.openai.max_tool_steps)", o.opts.MaxToolSteps)
		}
		msgs = append(msgs, assistantToolCalls(res.content, res.calls))
		for _, c := range res.calls {
			out := o.runTool(ctx, req.Tools, c, emit)
			if err := ctx.Err(); err != nil {
				return reply(), err
			}
			msgs = append(msgs, openai.ToolMessage(out, c.id))
		}
	}
}

// params builds one request. On the last allowed step the tools stay
// listed (earlier messages refer to them) but tool_choice forbids them.
func (o *OpenAI) params(msgs []openai.ChatCompletionMessageParamUnion, tools []openai.ChatCompletionToolUnionParam, last bool) openai.ChatCompletionNewParams {
	p := openai.ChatCompletionNewParams{
		Model:         openai.ChatModel(o.opts.Model),
		Messages:      msgs,
		StreamOptions: openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)},
	}
	if t := o.opts.Temperature; t != nil {
		p.Temperature = openai.Float(*t)
	}
	if n := o.opts.MaxTokens; n > 0 {
		if u, _ := url.Parse(o.baseURL); u != nil && u.Hostname() == "api.openai.com" {
			p.MaxCompletionTokens = openai.Int(int64(n))
		} else {
			p.MaxTokens = openai.Int(int64(n))
		}
	}
	if len(tools) > 0 {
		p.Tools = tools
		if last {
			p.ToolChoice = openai.ChatCompletionToolChoiceOptionUnionParam{OfAuto: openai.String("none")}
		}
	}
	return p
}

// toolParams describes tools to the model. A tool without a schema takes
// no arguments.
func toolParams(tools []Tool) []openai.ChatCompletionToolUnionParam {
	out := make([]openai.ChatCompletionToolUnionParam, 0, len(tools))
	for _, t := range tools {
		var schema openai.FunctionParameters
		if len(t.Parameters) > 0 {
			if err := json.Unmarshal(t.Parameters, &schema); err != nil {
				schema = nil
			}
		}
		if schema == nil {
			schema = openai.FunctionParameters{"type": "object", "properties": map[string]any{}}
		}
		def := openai.FunctionDefinitionParam{Name: t.Name, Parameters: schema}
		if t.Description != "" {
			def.Description = openai.String(t.Description)
		}
		out = append(out, openai.ChatCompletionFunctionTool(def))
	}
	return out
}

// assistantToolCalls is the assistant message that carries the model's
// tool calls back to it. Arguments that are not JSON are replaced by {}:
// some servers (Ollama) parse them and would refuse the whole request; the
// tool result tells the model what was wrong.
func assistantToolCalls(content string, calls []toolCall) openai.ChatCompletionMessageParamUnion {
	var m openai.ChatCompletionAssistantMessageParam
	if content != "" {
		m.Content.OfString = openai.String(content)
	}
	for _, c := range calls {
		args := c.args
		if !c.validArgs() {
			args = "{}"
		}
		m.ToolCalls = append(m.ToolCalls, openai.ChatCompletionMessageToolCallUnionParam{
			OfFunction: &openai.ChatCompletionMessageFunctionToolCallParam{
				ID:       c.id,
				Function: openai.ChatCompletionMessageFunctionToolCallFunctionParam{Name: c.name, Arguments: args},
			},
		})
	}
	return openai.ChatCompletionMessageParamUnion{OfAssistant: &m}
}

// runTool runs one call, emitting tool_call and tool_result, and returns
// what the model gets to see. Malformed arguments and unknown tools become
// an error result the model can read and correct, never a failed turn.
func (o *OpenAI) runTool(ctx context.Context, tools []Tool, c toolCall, emit Emitter) string {
	args := json.RawMessage(c.args)
	if !c.validArgs() {
		args, _ = json.Marshal(c.args) // keep the event valid JSON: the raw text as a string
	} else if strings.TrimSpace(c.args) == "" {
		args = json.RawMessage("{}")
	}
	t := findTool(tools, c.name)
	server := ""
	if t != nil {
		server = t.Server
	}
	emit(event.ToolCall, event.ToolCallData{ID: c.id, Name: c.name, Args: args, Server: server})
	var out string
	var err error
	switch {
	case !c.validArgs():
		err = fmt.Errorf("the arguments are not a valid JSON object (%s); call %s again with a JSON object", jsonErr(c.args), c.name)
	case t == nil:
		err = fmt.Errorf("there is no tool named %q; available: %s", truncateUTF8(c.name, maxNameInError)+cutMark(c.name, maxNameInError), toolNames(tools))
	default:
		out, err = t.Call(ctx, args)
	}
	res := event.ToolResultData{ID: c.id, Name: c.name, Output: out, Server: server}
	if err != nil {
		res.Error = err.Error()
	}
	emit(event.ToolResult, res)
	if err != nil {
		return "error: " + err.Error()
	}
	if limit := o.opts.ContextBudgetTokens * 4 / 2; len(out) > limit {
		out = truncateUTF8(out, limit) + "\n[output truncated]"
	}
	return out
}

func findTool(tools []Tool, name string) *Tool {
	for i := range tools {
		if tools[i].Name == name {
			return &tools[i]
		}
	}
	return nil
}

// maxNameInError caps the unknown name quoted back to the model: a model
// can invent a name of any length, and the answer goes into its context
// and the log. maxNamesInError caps the list of tools it is offered instead.
const (
	maxNameInError  = 100
	maxNamesInError = 2000
)

// cutMark is "…" when s is longer than n bytes.
func cutMark(s string, n int) string {
	if len(s) > n {
		return "…"
	}
	return ""
}

func toolNames(tools []Tool) string {
	if len(tools) == 0 {
		return "none"
	}
	var b strings.Builder
	for i, t := range tools {
		if b.Len()+len(t.Name) > maxNamesInError {
			fmt.Fprintf(&b, "… and %d more", len(tools)-i)
			break
		}
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(t.Name)
	}
	return b.String()
}

func jsonErr(s string) string {
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		return err.Error()
	}
	return "not an object"
}

// truncateUTF8 cuts s to at most n bytes without splitting a character.
func truncateUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && n < len(s) && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n]
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

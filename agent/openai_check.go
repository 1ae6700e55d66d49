package agent

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"syscall"

	"github.com/openai/openai-go/v3"

	"github.com/frontdesk-hq/frontdesk/event"
)

// Check asks the server for its model list (GET {base_url}/models), the
// cheapest authenticated request every OpenAI-compatible server answers,
// and explains a failure naming the URL and the status. It does not
// require the configured model to be listed: llama.cpp lists its model
// file whatever name the requests use. Without a deadline on ctx,
// RequestTimeout bounds it.
func (o *OpenAI) Check(ctx context.Context) error {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, o.opts.RequestTimeout)
		defer cancel()
	}
	u := o.baseURL + "/models"
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return fmt.Errorf("check the model server: %w", err)
	}
	if o.opts.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+o.opts.APIKey)
	}
	res, err := o.opts.HTTPClient.Do(req)
	if err != nil {
		var dns *net.DNSError
		switch {
		case errors.Is(err, syscall.ECONNREFUSED):
			return fmt.Errorf("GET %s: the model server refused the connection (is it running?)", u)
		case errors.As(err, &dns):
			return fmt.Errorf("GET %s: cannot find the host %q (check agent.openai.base_url)", u, dns.Name)
		case errors.Is(err, context.DeadlineExceeded):
			return fmt.Errorf("GET %s: no answer within %s", u, fmtDuration(o.opts.RequestTimeout))
		}
		return fmt.Errorf("GET %s: %w", u, err)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(res.Body, 64<<10))
	if res.StatusCode == http.StatusOK {
		return nil
	}
	status := fmt.Sprintf("%d %s", res.StatusCode, http.StatusText(res.StatusCode))
	switch res.StatusCode {
	case http.StatusUnauthorized, http.StatusForbidden:
		if o.opts.APIKey == "" {
			return fmt.Errorf("GET %s answered %s: the server wants an API key; set %s", u, status, o.opts.APIKeyEnv)
		}
		return fmt.Errorf("GET %s answered %s: the API key was rejected; check %s", u, status, o.opts.APIKeyEnv)
	case http.StatusNotFound:
		return fmt.Errorf("GET %s answered %s: check agent.openai.base_url (it usually ends in /v1)", u, status)
	}
	if msg := serverMessage(body); msg != "" {
		return fmt.Errorf("GET %s answered %s: %s", u, status, msg)
	}
	return fmt.Errorf("GET %s answered %s", u, status)
}

// summaryPrompt asks for notes worth keeping, in Markdown.
const summaryPrompt = "You keep the long-term memory of an assistant that talks with a group of people in one shared conversation. " +
	"Summarise the conversation you are given into concise, factual Markdown bullet points worth remembering later: " +
	"who said what that matters, decisions, facts, preferences, open questions and promises. " +
	"Leave out small talk. Do not invent anything. Answer with the bullet points only."

// Summarize implements memory's Summarizer: one completion (streamed, with
// the same retries and error messages as a turn, no tools) asking for a
// concise factual summary of transcript, its user and assistant events
// oldest first. When the transcript exceeds the context budget its oldest
// messages are left out.
func (o *OpenAI) Summarize(ctx context.Context, transcript []event.Event) (string, error) {
	msgs := conversation(transcript)
	budget := o.opts.ContextBudgetTokens - estimateTokens(summaryPrompt) - 64
	start := len(msgs)
	for used := 0; start > 0; start-- {
		line := transcriptLine(msgs[start-1])
		if used+estimateTokens(line) > budget {
			break
		}
		used += estimateTokens(line)
	}
	var b strings.Builder
	if start > 0 {
		fmt.Fprintf(&b, "(The %d oldest messages were left out for space.)\n\n", start)
	}
	for _, m := range msgs[start:] {
		b.WriteString(transcriptLine(m))
		b.WriteString("\n\n")
	}
	if b.Len() == 0 {
		return "", errors.New("nothing to summarise: the transcript has no messages")
	}
	p := o.params([]openai.ChatCompletionMessageParamUnion{
		openai.SystemMessage(summaryPrompt),
		openai.UserMessage("The conversation:\n\n" + b.String()),
	}, nil, false)
	res, err := o.complete(ctx, p, nil, &turnState{turn: "summary"})
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(res.content), nil
}

func transcriptLine(m chatMessage) string {
	if m.assistant {
		return "Assistant: " + m.text
	}
	return "User: " + m.text
}

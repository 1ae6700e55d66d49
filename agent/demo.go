package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/frontdesk-hq/frontdesk/event"
)

// Demo is the offline backend: it streams a deterministic reply that quotes
// the input, word by word, Delay apart. It needs no network and no key.
type Demo struct {
	Delay time.Duration
}

var _ Agent = (*Demo)(nil)

// Run implements Agent.
func (d *Demo) Run(ctx context.Context, req Request, emit Emitter) (Reply, error) {
	emit(event.Status, event.TextData{Text: "thinking…"})
	reply, err := d.answer(ctx, req, emit)
	if err != nil {
		return Reply{}, err
	}
	words := strings.SplitAfter(reply, " ")
	var t *time.Timer
	if d.Delay > 0 {
		t = time.NewTimer(d.Delay)
		defer t.Stop()
	}
	for i, w := range words {
		if err := ctx.Err(); err != nil {
			return Reply{}, err
		}
		if i > 0 && t != nil {
			select {
			case <-ctx.Done():
				return Reply{}, ctx.Err()
			case <-t.C:
			}
			t.Reset(d.Delay)
		}
		emit(event.Delta, event.TextData{Text: w})
	}
	return Reply{Content: reply}, nil
}

// answer is the reply to req: a tool called on request ("use <tool>
// {args}"), something to remember saved, an item forgotten, what it
// remembers listed, a search of the history, a reminder scheduled, a
// fired schedule acknowledged, or the input reflected back.
func (d *Demo) answer(ctx context.Context, req Request, emit Emitter) (string, error) {
	if u, ok := parseUse(req.Content); ok {
		return d.use(ctx, req, u, emit)
	}
	if text, ok := rememberText(req.Content); ok {
		return d.remember(ctx, req, text, emit)
	}
	if m := forgetPattern.FindStringSubmatch(req.Content); m != nil {
		return d.forget(ctx, req, m[1], emit)
	}
	if rememberedPattern.MatchString(req.Content) {
		return d.remembered(ctx, req, emit)
	}
	if topic, ok := recallTopic(req.Content); ok {
		return d.recall(ctx, req, topic, emit)
	}
	if req.Channel == event.ChannelSchedule {
		return scheduledReply(req.Content), nil
	}
	if rem, ok := parseReminder(req.Content); ok {
		return d.remind(ctx, req, rem, emit)
	}
	if strings.TrimSpace(req.Content) == "" && len(req.Attachments) > 0 {
		return DemoFilesReply(req.Attachments, len(req.Context)/2), nil
	}
	return DemoReply(req.Content, len(req.Context)/2) + DemoAttachments(req.Attachments), nil
}

// DemoReply is the demo agent's answer to content, given how many earlier
// exchanges it remembers. It is deterministic and at least 20 words long.
func DemoReply(content string, remembered int) string {
	quote := strings.Join(strings.Fields(content), " ")
	if utf8.RuneCountInString(quote) > 80 {
		r := []rune(quote)
		quote = string(r[:80]) + "…"
	}
	n := len(strings.Fields(content))
	return fmt.Sprintf("You said “%s” (%d %s). I am the frontdesk demo assistant: I run offline without a language model, so I can only reflect your words back. "+
		"I remember %d earlier %s in this conversation, and every connected client sees this reply stream in word by word. "+
		"Set agent.backend in config.yaml to use a real model.",
		quote, n, plural(n, "word", "words"), remembered, plural(remembered, "exchange", "exchanges"))
}

// DemoFilesReply answers a message of files and no text: what it got.
func DemoFilesReply(atts []event.Attachment, remembered int) string {
	descs := make([]string, len(atts))
	for i, a := range atts {
		descs[i] = a.Describe()
	}
	return fmt.Sprintf("You sent %d %s and no text: %s. I am the frontdesk demo assistant: I run offline without a language model, so I can only list them. "+
		"I remember %d earlier %s in this conversation. Set agent.backend in config.yaml to use a real model.",
		len(atts), plural(len(atts), "file", "files"), strings.Join(descs, ", "), remembered, plural(remembered, "exchange", "exchanges"))
}

// DemoAttachments is what the demo agent says about the files it was
// given: each one's name, type and size, in order; "" for none.
func DemoAttachments(atts []event.Attachment) string {
	if len(atts) == 0 {
		return ""
	}
	descs := make([]string, len(atts))
	for i, a := range atts {
		descs[i] = a.Describe()
	}
	return fmt.Sprintf(" You attached %d %s: %s.", len(atts), plural(len(atts), "file", "files"), strings.Join(descs, ", "))
}

// TimeFormat is how the demo writes a time: in the server's zone, by its
// name, as the terminal and the reminders do ("Mon 2 Jan 15:04 CET").
const TimeFormat = "Mon 2 Jan 15:04 MST"

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// recallPattern matches questions about the conversation's past, such as
// "what did I say about X", "did I mention X", "what did we discuss
// regarding X", "remind me what I said about X", "search history for X".
var recallPattern = regexp.MustCompile(`(?i)(?:what|when)\s+(?:did|have)\s+(?:i|we)\s+(?:say|said|tell|told|mention|mentioned|write|wrote|discuss|discussed|talk|talked)(?:\s+you)?\s+(?:about|on|regarding|concerning)\s+(.+)|did\s+i\s+(?:ever\s+)?(?:mention|say|talk\s+about)\s+(.+)|search\s+(?:the\s+)?(?:history|conversation)\s+for\s+(.+)`)

// recallTopic extracts X from a question about the past, if it is one.
func recallTopic(content string) (string, bool) {
	m := recallPattern.FindStringSubmatch(content)
	if m == nil {
		return "", false
	}
	for _, g := range m[1:] {
		if g = strings.Trim(strings.TrimSpace(g), "?!.,;:\"'“”‘’ "); g != "" {
			return g, true
		}
	}
	return "", false
}

// recall answers a question about the past with the history_search tool,
// the way a model would: a tool_call, its tool_result, then a reply built
// from what came back.
func (d *Demo) recall(ctx context.Context, req Request, topic string, emit Emitter) (string, error) {
	search := findTool(req.Tools, "history_search")
	if search == nil {
		return fmt.Sprintf("I cannot look back through our history right now, so I cannot tell what you said about %s.", topic), nil
	}
	args, _ := json.Marshal(map[string]any{"query": topic, "limit": 5})
	out, err := callTool(ctx, req.Turn, search, args, emit)
	if ctx.Err() != nil {
		return "", ctx.Err()
	}
	if err != nil {
		return fmt.Sprintf("I tried to search our history for “%s”, but the search failed: %v.", topic, err), nil
	}
	var found struct {
		Hits []struct {
			Seq     int64     `json:"seq"`
			TS      time.Time `json:"ts"`
			Type    string    `json:"type"`
			Turn    string    `json:"turn"`
			Snippet string    `json:"snippet"`
		} `json:"hits"`
	}
	_ = json.Unmarshal([]byte(out), &found)
	var lines []string
	for _, h := range found.Hits {
		if h.Type != string(event.User) || h.Turn == req.Turn {
			continue // your own words, not this very question or my echoes
		}
		// The search marks matched words «like this»; a reply reads better without.
		snippet := strings.NewReplacer("«", "", "»", "").Replace(h.Snippet)
		lines = append(lines, fmt.Sprintf("on %s you said: “%s”", h.TS.Local().Format(TimeFormat), snippet))
	}
	if len(lines) == 0 {
		return fmt.Sprintf("I searched our whole history for “%s” and found nothing you said about it.", topic), nil
	}
	if len(lines) > 3 {
		lines = lines[:3]
	}
	return fmt.Sprintf("I searched our history for “%s”. Most recently, %s.", topic, strings.Join(lines, "; and ")), nil
}

// callTool makes the demo's one tool call of a turn the way a model's
// would look: a tool_call, the call, then its tool_result (none when the
// turn was cancelled meanwhile).
func callTool(ctx context.Context, turn string, t *Tool, args []byte, emit Emitter) (string, error) {
	id := "call_" + turn + "_1"
	emit(event.ToolCall, event.ToolCallData{ID: id, Name: t.Name, Args: args, Server: t.Server})
	out, err := t.Call(ctx, args)
	if ctx.Err() != nil {
		return "", ctx.Err()
	}
	res := event.ToolResultData{ID: id, Name: t.Name, Output: out, Server: t.Server}
	if err != nil {
		res.Error = err.Error()
	}
	emit(event.ToolResult, res)
	return out, err
}

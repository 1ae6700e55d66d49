package agent

import (
	"encoding/base64"
	"fmt"
	"io"
	"strings"

	"github.com/openai/openai-go/v3"

	"github.com/frontdesk-hq/frontdesk/event"
)

// perMessageTokens approximates the framing each message costs.
const perMessageTokens = 4

// droppedNote tells the model that the conversation it sees is cut.
const (
	droppedNote          = "Older messages of this conversation were left out to fit the context budget."
	droppedNoteWithTools = droppedNote + " Use history_search, history_get_range or history_get_recent to reach further back."
)

// estimateTokens is the budget's estimate: bytes/4, rounded up, plus framing.
func estimateTokens(s string) int { return (len(s)+3)/4 + perMessageTokens }

// chatMessage is one message of the recent conversation.
type chatMessage struct {
	assistant bool
	text      string
	atts      []event.Attachment // a user message's attachments
}

// conversation turns the chat ring into messages: user events become user
// messages (labelled with channel and sender when there is a sender, since
// several people share the conversation), assistant events assistant
// messages; other events are skipped.
func conversation(evs []event.Event) []chatMessage {
	out := make([]chatMessage, 0, len(evs))
	for _, e := range evs {
		m, ok := e.Message()
		switch {
		case !ok || (m.Content == "" && len(m.Attachments) == 0):
		case e.Type == event.User:
			out = append(out, chatMessage{text: userText(m.Channel, m.From, m.Content), atts: m.Attachments})
		default:
			out = append(out, chatMessage{assistant: true, text: m.Content})
		}
	}
	return out
}

// userText labels a user message with its sender, when it has one.
func userText(channel, from, content string) string {
	if from == "" {
		return content
	}
	return fmt.Sprintf("[%s from %s] %s", channel, from, content)
}

// systemText is the system message: the configured prompt, the turn's
// notes, then the long-term memory.
func systemText(prompt string, notes []string, memory string) string {
	var b strings.Builder
	b.WriteString(strings.TrimSpace(prompt))
	if len(notes) > 0 {
		if b.Len() > 0 {
			b.WriteString("\n\n")
		}
		b.WriteString("Notes for this turn:")
		for _, n := range notes {
			b.WriteString("\n- ")
			b.WriteString(n)
		}
	}
	if m := strings.TrimSpace(memory); m != "" {
		if b.Len() > 0 {
			b.WriteString("\n\n")
		}
		b.WriteString("Long-term memory (what you remember from earlier conversations):\n\n")
		b.WriteString(m)
	}
	return b.String()
}

// messages builds the prompt of a turn within ContextBudgetTokens: the
// system message and the input always go; of the recent conversation the
// newest messages that fit go, so the oldest are dropped first, and the
// kept part never starts with an assistant message. When anything was
// dropped, a note tells the model (and names the history tools when the
// turn has them).
func (o *OpenAI) messages(req Request) []openai.ChatCompletionMessageParamUnion {
	note := droppedNote
	for _, t := range req.Tools {
		if strings.HasPrefix(t.Name, "history_") && o.opts.MaxToolSteps > 0 {
			note = droppedNoteWithTools
			break
		}
	}
	// Text files of this input are given inline within their budget; the
	// context's attachments are only named (see recentImages for images).
	budget := textTurnBytes
	input := userText(req.Channel, req.From, req.Content) + attachmentText(req.Attachments, o.opts.Files, &budget, o.vision())
	hist := conversation(req.Context)

	// The note's cost is reserved up front so that adding it cannot
	// overflow the budget.
	used := estimateTokens(systemText(o.opts.SystemPrompt, append(req.Notes[:len(req.Notes):len(req.Notes)], note), req.LongTermMemory)) +
		estimateTokens(input) + o.imageTokens(req.Attachments)
	start := len(hist)
	for start > 0 {
		cost := estimateTokens(hist[start-1].text) + perMessageTokens*len(hist[start-1].atts)
		if used+cost > o.opts.ContextBudgetTokens {
			break
		}
		used += cost
		start--
	}
	for start < len(hist) && hist[start].assistant {
		start++
	}
	notes := req.Notes
	if start > 0 {
		notes = append(notes[:len(notes):len(notes)], note)
	}
	resend := o.recentImages(hist[start:], used)

	msgs := make([]openai.ChatCompletionMessageParamUnion, 0, len(hist)-start+2)
	if sys := systemText(o.opts.SystemPrompt, notes, req.LongTermMemory); sys != "" {
		msgs = append(msgs, openai.SystemMessage(sys))
	}
	for i, m := range hist[start:] {
		switch {
		case m.assistant:
			msgs = append(msgs, openai.AssistantMessage(m.text))
		case i == resend:
			msgs = append(msgs, o.userMessage(m.text+attachmentText(m.atts, nil, nil, true), m.atts))
		default:
			msgs = append(msgs, o.userMessage(m.text+attachmentText(m.atts, nil, nil, false), nil))
		}
	}
	return append(msgs, o.userMessage(input, req.Attachments))
}

// imageTokens is the estimated cost of sending atts' images (vision on):
// providers count an image as hundreds to a few thousand tokens.
const imageTokens = 1000

func (o *OpenAI) imageTokens(atts []event.Attachment) int {
	if !o.vision() {
		return 0
	}
	n := 0
	for _, a := range atts {
		if a.Image() {
			n += imageTokens
		}
	}
	return n
}

// vision reports whether images go to the model as images.
func (o *OpenAI) vision() bool { return o.opts.Vision && o.opts.Files != nil }

// recentImages picks the one earlier user message whose images are sent
// again (vision on): the newest in the kept conversation that has images,
// if they fit the budget. A follow-up ("and the left corner?") still sees
// the picture; older images are only named, so a long conversation does
// not resend every picture on every turn. -1: none.
func (o *OpenAI) recentImages(hist []chatMessage, used int) int {
	if !o.vision() {
		return -1
	}
	for i := len(hist) - 1; i >= 0; i-- {
		if cost := o.imageTokens(hist[i].atts); cost > 0 {
			if used+cost > o.opts.ContextBudgetTokens {
				return -1
			}
			return i
		}
	}
	return -1
}

// userMessage is a user message of text, followed by the images among
// atts as image content parts (base64 data: URLs) when vision is on. An
// image that cannot be read is named in a text part instead. Without
// images it is a plain text message, which every server takes.
func (o *OpenAI) userMessage(text string, atts []event.Attachment) openai.ChatCompletionMessageParamUnion {
	var parts []openai.ChatCompletionContentPartUnionParam
	if o.vision() {
		for _, a := range atts {
			if !a.Image() {
				continue
			}
			url, err := dataURL(o.opts.Files, a)
			if err != nil {
				parts = append(parts, openai.TextContentPart(fmt.Sprintf("[image %q could not be read: %v]", a.Name, err)))
				continue
			}
			parts = append(parts, openai.ImageContentPart(openai.ChatCompletionContentPartImageImageURLParam{URL: url}))
		}
	}
	if len(parts) == 0 {
		return openai.UserMessage(text)
	}
	return openai.UserMessage(append([]openai.ChatCompletionContentPartUnionParam{openai.TextContentPart(text)}, parts...))
}

// dataURL is the image a as a data: URL.
func dataURL(files Files, a event.Attachment) (string, error) {
	f, _, err := files.Open(a.SHA256)
	if err != nil {
		return "", err
	}
	defer f.Close()
	var b strings.Builder
	b.WriteString("data:" + a.Type + ";base64,")
	enc := base64.NewEncoder(base64.StdEncoding, &b)
	if _, err := io.Copy(enc, f); err != nil {
		return "", err
	}
	if err := enc.Close(); err != nil {
		return "", err
	}
	return b.String(), nil
}

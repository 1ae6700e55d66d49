package agent

import (
	"fmt"
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
		case !ok || m.Content == "":
		case e.Type == event.User:
			out = append(out, chatMessage{text: userText(m.Channel, m.From, m.Content)})
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
	input := userText(req.Channel, req.From, req.Content)
	hist := conversation(req.Context)

	// The note's cost is reserved up front so that adding it cannot
	// overflow the budget.
	used := estimateTokens(systemText(o.opts.SystemPrompt, append(req.Notes[:len(req.Notes):len(req.Notes)], note), req.LongTermMemory)) +
		estimateTokens(input)
	start := len(hist)
	for start > 0 {
		cost := estimateTokens(hist[start-1].text)
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

	msgs := make([]openai.ChatCompletionMessageParamUnion, 0, len(hist)-start+2)
	if sys := systemText(o.opts.SystemPrompt, notes, req.LongTermMemory); sys != "" {
		msgs = append(msgs, openai.SystemMessage(sys))
	}
	for _, m := range hist[start:] {
		if m.assistant {
			msgs = append(msgs, openai.AssistantMessage(m.text))
		} else {
			msgs = append(msgs, openai.UserMessage(m.text))
		}
	}
	return append(msgs, openai.UserMessage(input))
}

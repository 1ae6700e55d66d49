package agent

import (
	"context"
	"fmt"
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
	emit(event.Status, event.TextData{Text: "working on your message…"})
	reply := DemoReply(req.Content, len(req.Context)/2)
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

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

package memory

import (
	"fmt"
	"strings"
	"time"

	"github.com/frontdesk-hq/frontdesk/event"
)

// renderShortTerm renders the conversation in events as Markdown:
//
//	# Short-term context
//
//	2 exchanges, 2026-11-22 10:00 UTC to 2026-11-22 10:01 UTC.
//
//	### user · web · 2026-11-22 10:00:00 UTC
//
//	hello
//
//	### assistant · 2026-11-22 10:00:02 UTC
//
//	Hi!
//
// The output depends on events alone, so the same context renders the same.
func renderShortTerm(events []event.Event) string {
	conv := conversation(events)
	var b strings.Builder
	b.WriteString("# Short-term context\n\n")
	if len(conv) == 0 {
		b.WriteString("(Empty: nothing has been said since the last reset.)\n")
		return b.String()
	}
	exchanges := 0
	for _, e := range conv {
		if e.Type == event.User {
			exchanges++
		}
	}
	fmt.Fprintf(&b, "%d %s, %s to %s.\n", exchanges, plural(exchanges, "exchange", "exchanges"),
		stamp(conv[0].TS.Std(), "2006-01-02 15:04 MST"), stamp(conv[len(conv)-1].TS.Std(), "2006-01-02 15:04 MST"))
	for _, e := range conv {
		who, content := speaker(e)
		b.WriteString("\n### ")
		b.WriteString(who)
		b.WriteString(" · ")
		b.WriteString(stamp(e.TS.Std(), "2006-01-02 15:04:05 MST"))
		b.WriteString("\n\n")
		if c := strings.TrimSpace(content); c != "" {
			b.WriteString(c)
		} else if event.IsTombstone(e) {
			b.WriteString("(message erased)")
		} else {
			b.WriteString("(empty)")
		}
		b.WriteByte('\n')
	}
	return b.String()
}

// speaker labels a user or assistant event for Markdown: "user · web",
// "user · email · ann@example.com", "assistant" (with " (partial)" for a
// reply cut short), and returns its text. An event whose data does not
// decode renders with empty text.
func speaker(e event.Event) (label, content string) {
	d, _ := e.Message()
	switch e.Type {
	case event.User:
		label = "user"
		if ch := oneLine(d.Channel); ch != "" {
			label += " · " + ch
		}
		if from := oneLine(d.From); from != "" {
			label += " · " + from
		}
		return label, d.Content
	case event.Assistant:
		label = "assistant"
		if d.Partial {
			label += " (partial)"
		}
		return label, d.Content
	}
	return string(e.Type), ""
}

func stamp(t time.Time, layout string) string {
	if t.IsZero() {
		return "unknown time"
	}
	return t.UTC().Format(layout)
}

// oneLine collapses whitespace so that a label cannot break a heading.
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

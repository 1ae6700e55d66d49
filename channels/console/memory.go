package console

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/frontdesk-hq/frontdesk/event"
	"github.com/frontdesk-hq/frontdesk/memory"
)

// memoryList runs /memory: every long-term memory item, newest change
// last (next to the prompt), with the id /forget takes.
func (r *repl) memoryList(ctx context.Context, arg string) {
	if arg != "" {
		r.p.say("usage: /memory (lists what the assistant remembers; /forget <id> forgets one)")
		return
	}
	items, err := r.s.MemoryList(ctx)
	if err != nil {
		r.p.say("memory failed: " + errText(err))
		return
	}
	if len(items) == 0 {
		r.p.say("the assistant remembers nothing yet (tell it: \"remember that …\")")
		return
	}
	var b strings.Builder
	for i, it := range items {
		if i > 0 {
			b.WriteByte('\n')
		}
		fmt.Fprintf(&b, "%s  %s  %s  %s", it.ID, itemDate(it), r.p.o.style(dim, "["+it.Source+"]"), oneLineN(it.Text, 200))
	}
	r.p.say(b.String())
}

// itemDate is when an item was saved, or last edited, in local time.
func itemDate(it memory.Item) string {
	t := it.Created
	if it.Updated.After(t) {
		t = it.Updated
	}
	if t.IsZero() {
		return "?"
	}
	return t.Local().Format("2006-01-02 15:04")
}

// forget runs /forget <id>.
func (r *repl) forget(ctx context.Context, arg string) {
	if arg == "" || strings.ContainsAny(arg, " \t") {
		r.p.say("usage: /forget <id> (the ids are in /memory)")
		return
	}
	text := ""
	if items, err := r.s.MemoryList(ctx); err == nil {
		for _, it := range items {
			if it.ID == arg {
				text = it.Text
			}
		}
	}
	err := r.s.MemoryForget(ctx, arg, event.ChannelConsole)
	switch {
	case errors.Is(err, memory.ErrNotFound):
		r.p.say(fmt.Sprintf("forget failed: no memory item %q (the ids are in /memory)", arg))
	case err != nil:
		r.p.say("forget failed: " + errText(err))
	case text != "":
		r.p.say(fmt.Sprintf("forgot %s (%s)", arg, oneLine(text)))
	default:
		r.p.say("forgot " + arg)
	}
}

// oneLineN is s on one line, cut after n characters.
func oneLineN(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n]) + "…"
	}
	return s
}

// erase runs /erase <seq>.
func (r *repl) erase(ctx context.Context, arg string) {
	seq, err := strconv.ParseInt(arg, 10, 64)
	if err != nil || seq <= 0 {
		r.p.say("usage: /erase <seq> (a message's #seq, shown by /history); it erases the message everywhere it is stored, but backups made before still hold it")
		return
	}
	if _, err := r.s.Erase(ctx, seq, event.ChannelConsole); err != nil {
		r.p.say(fmt.Sprintf("erase #%d failed: %s", seq, errText(err)))
		return
	}
	r.p.say(fmt.Sprintf("erased #%d: its text is being removed from every file (backups made before still hold it)", seq))
}

package console

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/frontdesk-hq/frontdesk/memory"
)

// memoryList runs /memory: every long-term memory item in id order (the
// order they were saved in, as the web panel lists them), in columns —
// id, date, who saved it, text — with the id /forget takes.
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
	r.p.say(r.memoryTable(items))
}

// memoryTable lays items out in columns padded to their widest cell
// (measured in characters, before any colour).
func (r *repl) memoryTable(items []memory.Item) string {
	idW, srcW := 0, 0
	for _, it := range items {
		idW = max(idW, utf8.RuneCountInString(it.ID))
		srcW = max(srcW, utf8.RuneCountInString("["+provenance(it)+"]"))
	}
	var b strings.Builder
	for i, it := range items {
		if i > 0 {
			b.WriteByte('\n')
		}
		src := "[" + provenance(it) + "]"
		fmt.Fprintf(&b, "%s  %s  %s%s  %s", pad(it.ID, idW), pad(itemDate(it), len("2006-01-02 15:04")),
			r.p.o.style(dim, src), strings.Repeat(" ", srcW-utf8.RuneCountInString(src)), oneLineN(it.Text, 200))
	}
	return b.String()
}

// pad fills s with spaces to w characters.
func pad(s string, w int) string {
	return s + strings.Repeat(" ", max(0, w-utf8.RuneCountInString(s)))
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

// forget runs /forget <id>: the id as /memory shows it ("m3"), its
// number ("3"), or an id an item had before short ids.
func (r *repl) forget(ctx context.Context, arg string) {
	if arg == "" || strings.ContainsAny(arg, " \t") {
		r.p.say("usage: /forget <id> (the ids are in /memory: m3, or just 3)")
		return
	}
	id, text := memory.CanonicalID(arg), ""
	if items, err := r.s.MemoryList(ctx); err == nil {
		for _, it := range items {
			if it.ID == id || it.Old == id {
				id, text = it.ID, it.Text
			}
		}
	}
	err := r.s.MemoryForget(ctx, arg, r.me)
	switch {
	case errors.Is(err, memory.ErrNotFound):
		r.p.say(fmt.Sprintf("forget failed: no memory item %q (the ids are in /memory)", arg))
	case err != nil:
		r.p.say("forget failed: " + errText(err))
	case text != "":
		r.p.say(fmt.Sprintf("forgot %s (%s)", id, oneLine(text)))
	default:
		r.p.say("forgot " + id)
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
	if _, err := r.s.Erase(ctx, seq, r.me); err != nil {
		r.p.say(fmt.Sprintf("erase #%d failed: %s", seq, errText(err)))
		return
	}
	r.p.say(fmt.Sprintf("erased #%d: its text is being removed from every file (backups made before still hold it)", seq))
}

// provenance is who made item it and who edited it last, in words:
// "saved by the assistant, asked by email (eve@example.com); edited in
// the web page".
func provenance(it memory.Item) string {
	if e := memory.EditedBy(it); e != "" {
		return memory.MadeBy(it) + "; " + e
	}
	return memory.MadeBy(it)
}

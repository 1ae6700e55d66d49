package offline

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/frontdesk-hq/frontdesk/event"
	"github.com/frontdesk-hq/frontdesk/history"
	"github.com/frontdesk-hq/frontdesk/index"
)

// Printer prints events or hits as a table or as NDJSON.
type Printer struct {
	W     io.Writer
	Note  io.Writer // where "no events" goes, so that stdout stays clean
	JSON  bool
	Width int // the width tables are cut to
}

func (o *Printer) Events(evs []event.Event) error {
	if o.JSON {
		return writeNDJSON(o.W, evs)
	}
	if len(evs) == 0 {
		fmt.Fprintln(o.Note, "frontdesk: no events")
		return nil
	}
	rows := make([][5]string, len(evs))
	for i, e := range evs {
		who, text := describe(e)
		rows[i] = [5]string{strconv.FormatInt(e.Seq, 10), localTime(e.TS.Std()), string(e.Type), who, text}
	}
	return o.table([5]string{"SEQ", "TIME", "TYPE", "CHANNEL", "TEXT"}, rows)
}

func (o *Printer) Hits(hits []index.Hit) error {
	if o.JSON {
		return writeNDJSON(o.W, hits)
	}
	if len(hits) == 0 {
		fmt.Fprintln(o.Note, "frontdesk: no matches")
		return nil
	}
	rows := make([][5]string, len(hits))
	for i, h := range hits {
		seq := strconv.FormatInt(h.Seq, 10)
		if h.Type == index.TypeMemory {
			seq = "-"
		}
		rows[i] = [5]string{seq, localTime(h.TS), h.Type, channelFrom(h.Channel, h.From), h.Snippet}
	}
	return o.table([5]string{"SEQ", "TIME", "TYPE", "CHANNEL", "MATCH"}, rows)
}

func writeNDJSON[T any](w io.Writer, vs []T) error {
	enc := json.NewEncoder(w)
	for _, v := range vs {
		if err := enc.Encode(v); err != nil {
			return err
		}
	}
	return nil
}

// table prints rows aligned, the last column cut so that a row fits in
// o.Width.
func (o *Printer) table(head [5]string, rows [][5]string) error {
	const gap = 2
	prefix := 0
	for c := range 4 {
		w := utf8.RuneCountInString(head[c])
		for _, r := range rows {
			w = max(w, utf8.RuneCountInString(r[c]))
		}
		prefix += w + gap
	}
	room := max(o.Width-prefix, 10)
	tw := tabwriter.NewWriter(o.W, 0, 0, gap, ' ', 0)
	fmt.Fprintln(tw, strings.Join(head[:], "\t"))
	for _, r := range rows {
		r[4] = cut(flatten(r[4]), room)
		fmt.Fprintln(tw, strings.Join(r[:], "\t"))
	}
	return tw.Flush()
}

// describe returns an event's channel column and text.
func describe(e event.Event) (who, text string) {
	if event.IsTombstone(e) {
		var d event.TombstoneData
		_ = e.Decode(&d)
		return d.Channel, "[message erased by " + d.By + "]"
	}
	switch e.Type {
	case event.Erased:
		var d event.ErasedData
		if e.Decode(&d) == nil {
			return "", fmt.Sprintf("erased #%d (%s) by %s", d.Seq, d.Type, d.By)
		}
	case event.User, event.Assistant:
		if m, ok := e.Message(); ok {
			if m.Partial {
				return "", m.Content + " [partial]"
			}
			if e.Type == event.User && history.Queued(e) {
				return channelFrom(m.Channel, m.From), "[queued] " + m.Content
			}
			return channelFrom(m.Channel, m.From), m.Content
		}
	case event.ToolCall:
		var d event.ToolCallData
		if e.Decode(&d) == nil {
			return "", d.Name + " " + string(d.Args)
		}
	case event.ToolResult:
		var d event.ToolResultData
		if e.Decode(&d) == nil {
			if d.Error != "" {
				return "", d.Name + " failed: " + d.Error
			}
			return "", d.Name + ": " + d.Output
		}
	case event.TurnStart:
		var d event.TurnStartData
		if e.Decode(&d) == nil {
			return "", fmt.Sprintf("queued input #%d started after waiting %s", d.InputSeq, (time.Duration(d.WaitedMS) * time.Millisecond).String())
		}
	case event.TurnEnd:
		var d event.TurnEndData
		if e.Decode(&d) == nil {
			s := fmt.Sprintf("%s in %s", d.Status, (time.Duration(d.DurationMS) * time.Millisecond).String())
			if d.Error != "" {
				s += ": " + d.Error
			}
			return "", s
		}
	case event.Notice:
		var d event.TextData
		if e.Decode(&d) == nil {
			return "", d.Text
		}
	case event.Reset:
		var d event.ResetData
		if e.Decode(&d) == nil {
			return "", fmt.Sprintf("%s, kept %d exchanges", d.Reason, d.Kept)
		}
	}
	return "", string(e.Data)
}

func channelFrom(channel, from string) string {
	if from == "" {
		return channel
	}
	return channel + ":" + from
}

// localTime is t in the local zone, to the second.
func localTime(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.Local().Format(time.RFC3339)
}

// flatten turns runs of whitespace and control characters (a tab would
// break the table) into single spaces.
func flatten(s string) string {
	var sb strings.Builder
	space := false
	for _, r := range strings.TrimSpace(s) {
		if unicode.IsSpace(r) || unicode.IsControl(r) {
			space = true
			continue
		}
		if space {
			sb.WriteByte(' ')
			space = false
		}
		sb.WriteRune(r)
	}
	return sb.String()
}

// cut shortens s to n runes, the last one "…" if it cut.
func cut(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	i := 0
	for range n - 1 {
		_, size := utf8.DecodeRuneInString(s[i:])
		i += size
	}
	return s[:i] + "…"
}

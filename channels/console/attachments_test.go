package console

import (
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"testing"

	"github.com/frontdesk-hq/frontdesk/event"
	"github.com/frontdesk-hq/frontdesk/history"
	"github.com/frontdesk-hq/frontdesk/hub"
	"github.com/frontdesk-hq/frontdesk/internal/testkit/testagent"
)

// files is an attachment store that holds the files it lists.
type files map[string]event.Attachment

func (f files) Stat(sha string) (event.Attachment, error) {
	a, ok := f[sha]
	if !ok {
		return a, fmt.Errorf("no such file")
	}
	return a, nil
}

// TestAttachmentsAreShown: a message sent with files from another door is
// shown with their names — alone when it has no words — live and in
// /history.
func TestAttachmentsAreShown(t *testing.T) {
	dir := t.TempDir()
	lg, err := history.Open(history.Options{Path: filepath.Join(dir, "chat_history.ndjson"), RotateMB: 5})
	if err != nil {
		t.Fatal(err)
	}
	defer lg.Close()
	store := files{
		"aa": {SHA256: "aa", Name: "chart.png", Type: "image/png", Size: 2048},
		"bb": {SHA256: "bb", Name: "notes.pdf", Type: "application/pdf", Size: 4096},
	}
	m := hub.New(hub.Config{DataDir: dir, Attachments: store, Logger: slog.New(slog.DiscardHandler)}, lg, &testagent.Count{N: 1, Text: "seen"})
	r, stop := runREPL(m)
	defer stop()
	ctx, typed, out, repl := r.ctx, r.typed, r.out, r.repl
	out.waitFor(t, "/help for commands", 1)
	for _, in := range []hub.Input{
		{Channel: "web", Attachments: []event.Attachment{{SHA256: "aa"}, {SHA256: "bb"}}},
		{Channel: "web", Content: "and this one", Attachments: []event.Attachment{{SHA256: "bb", Name: "minutes.pdf"}}},
	} {
		d := make(chan hub.TurnOutcome, 1)
		in.Done = d
		if _, err := m.Submit(ctx, in); err != nil {
			t.Fatal(err)
		}
		<-d
	}
	out.waitFor(t, "[web] 2 files: chart.png, notes.pdf\r\n", 1)
	out.waitFor(t, "[web] and this one (1 file: minutes.pdf)\r\n", 1)
	io.WriteString(typed, "/history 20\n")
	out.waitFor(t, "[web] 2 files: chart.png, notes.pdf\r\n", 2)
	out.waitFor(t, "[web] and this one (1 file: minutes.pdf)\r\n", 2)
	typed.Close()
	if err := <-repl; err != nil {
		t.Fatal(err)
	}
}

package hub

import (
	"log/slog"
	"path/filepath"
	"strings"
	"testing"

	"github.com/frontdesk-hq/frontdesk/event"
	"github.com/frontdesk-hq/frontdesk/history"
	"github.com/frontdesk-hq/frontdesk/internal/testkit/testagent"
)

// A reply whose assistant event reached the disk but whose turn_end did
// not is not "not kept": the turn ends as a storage error that says the
// reply was saved, the outcome carries it, and the log indeed holds it.
func TestReplySavedButNotItsEndSaysSo(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "chat_history.ndjson")
	lg, err := history.Open(history.Options{Path: path, RotateMB: 5, Fsync: history.FsyncAlways})
	if err != nil {
		t.Fatal(err)
	}
	g := testagent.NewGate()
	h := startHubWithLog(t, Config{DataDir: dir, Logger: slog.New(slog.DiscardHandler)}, g, faultyLog{lg, event.TurnEnd})
	s, _ := subscribe(t, h, 0)
	done := make(chan TurnOutcome, 1)
	if _, err := h.Submit(ctxT(t), Input{Channel: event.ChannelWeb, Content: "hi", Done: done}); err != nil {
		t.Fatal(err)
	}
	g.Release <- struct{}{}
	evs := until(t, s, event.TurnEnd)
	d := data[event.TurnEndData](t, evs[len(evs)-1])
	o := <-done
	for _, msg := range []string{d.Error, o.Error} {
		if strings.Contains(msg, "not kept") || strings.Contains(msg, "could not be saved") || !strings.Contains(msg, "the reply was saved") {
			t.Errorf("turn end says %q; want that the reply was saved", msg)
		}
	}
	if d.Status != event.StatusError || d.Code != StorageFailed || o.Reply != "reply to hi" {
		t.Fatalf("turn_end %+v, outcome %+v", d, o)
	}
	var onDisk bool
	for _, e := range readLog(t, dir) {
		onDisk = onDisk || (e.Type == event.Assistant && data[event.AssistantData](t, e).Content == "reply to hi")
	}
	if !onDisk {
		t.Fatal("the reply is not in the chat log")
	}
}

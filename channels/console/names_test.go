package console

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/frontdesk-hq/frontdesk/event"
)

// The REPL says who did what: names from Options.Names with the door;
// the door alone for events without a person (older logs, an unmapped
// sender) or without Names.
func TestPrinterNames(t *testing.T) {
	names := map[string]string{"ann": "Ann", "bo": "Bo"}
	evs := []event.Event{
		event.New(event.User, "t1", time.Now(), event.UserData{Channel: "email", From: "bo@example.com", Content: "hi", Person: "bo"}),
		event.New(event.ApprovalResult, "t1", time.Now(), event.ApprovalResultData{ID: "a3", Decision: event.Approve, By: "web", Person: "ann"}),
		event.New(event.Notice, "t1", time.Now(), event.TextData{Text: "Cancelled from the web after 2.0 s.", By: "web", Person: "ann"}),
		event.New(event.Reset, "", time.Now(), event.ResetData{Reason: "manual", Kept: 2, Person: "cy"}),
		event.New(event.MemoryChanged, "", time.Now(), event.MemoryChangedData{Action: "saved", ID: "m4", By: "web", Text: "x", Person: "bo"}),
		event.New(event.User, "t2", time.Now(), event.UserData{Channel: "webhook", From: "cron", Content: "ping"}),
	}
	want := []string{
		"[Bo · email bo@example.com] hi",
		"[a3] approved (by Ann · web)",
		"Cancelled from the web after 2.0 s. (Ann · web)",
		"— conversation reset (manual, by cy)",
		"memory: saved m4 by Bo · web",
		"[webhook cron] ping",
	}
	var b bytes.Buffer
	p := &printer{w: &b, o: Options{Names: func(id string) string { return names[id] }}}
	for _, e := range evs {
		p.event(e)
	}
	for _, w := range want {
		if !strings.Contains(b.String(), w) {
			t.Errorf("printed:\n%s\nwant a line with %q", b.String(), w)
		}
	}
	b.Reset()
	p = &printer{w: &b}
	p.event(evs[1])
	if !strings.Contains(b.String(), "[a3] approved (by web)") {
		t.Errorf("without Names: %q, want the door alone", b.String())
	}
}

package agent

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/frontdesk-hq/frontdesk/event"
)

func TestRecallTopic(t *testing.T) {
	tests := []struct {
		in, want string
		ok       bool
	}{
		{"What did I say about the garden project?", "the garden project", true},
		{"what have we discussed regarding Lisbon", "Lisbon", true},
		{"When did I mention my cat?", "my cat", true},
		{"did I ever mention the invoice", "the invoice", true},
		{"search the history for “tea”", "tea", true},
		{"what did I tell you about", "", false},
		{"hello there", "", false},
		{"I said something about cats", "", false},
	}
	for _, tc := range tests {
		got, ok := recallTopic(tc.in)
		if got != tc.want || ok != tc.ok {
			t.Errorf("recallTopic(%q) = %q, %v; want %q, %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
}

type emitted struct {
	typ  event.Type
	data any
}

func runDemo(t *testing.T, req Request) (string, []emitted) {
	t.Helper()
	var evs []emitted
	r, err := (&Demo{}).Run(context.Background(), req, func(typ event.Type, data any) { evs = append(evs, emitted{typ, data}) })
	if err != nil {
		t.Fatal(err)
	}
	return r.Content, evs
}

func TestDemoRecallCallsHistorySearch(t *testing.T) {
	var gotArgs string
	search := Tool{Name: "history_search", Call: func(ctx context.Context, args json.RawMessage) (string, error) {
		gotArgs = string(args)
		return `{"hits":[{"seq":9,"ts":"2026-11-22T10:00:00Z","type":"user","turn":"t9","snippet":"what did I say about my cat?"},` +
			`{"seq":5,"ts":"2026-11-21T09:30:00Z","type":"assistant","turn":"t4","snippet":"You said my cat is Miso"},` +
			`{"seq":4,"ts":"2026-11-21T09:29:00Z","type":"user","turn":"t4","snippet":"my cat is called Miso"}]}`, nil
	}}
	reply, evs := runDemo(t, Request{Turn: "t9", Content: "what did I say about my cat?", Tools: []Tool{search}})
	if len(evs) < 3 || evs[1].typ != event.ToolCall || evs[2].typ != event.ToolResult {
		t.Fatalf("emitted %v, want status, tool_call, tool_result, …", evs)
	}
	if call := evs[1].data.(event.ToolCallData); call.Name != "history_search" || !strings.Contains(gotArgs, `"query":"my cat"`) {
		t.Fatalf("tool call %+v with args %s", call, gotArgs)
	}
	if !strings.Contains(reply, "“my cat is called Miso”") || strings.Contains(reply, "what did I say about my cat?”") {
		t.Fatalf("reply %q should quote the earlier statement, not the question itself", reply)
	}
}

func TestDemoRecallWithoutHitsOrTool(t *testing.T) {
	empty := Tool{Name: "history_search", Call: func(context.Context, json.RawMessage) (string, error) { return `{"hits":[]}`, nil }}
	if reply, _ := runDemo(t, Request{Content: "what did I say about dragons", Tools: []Tool{empty}}); !strings.Contains(reply, "found nothing") {
		t.Errorf("no hits: %q", reply)
	}
	broken := Tool{Name: "history_search", Call: func(context.Context, json.RawMessage) (string, error) { return "", errors.New("disk on fire") }}
	reply, evs := runDemo(t, Request{Content: "what did I say about dragons", Tools: []Tool{broken}})
	if !strings.Contains(reply, "disk on fire") || evs[2].data.(event.ToolResultData).Error == "" {
		t.Errorf("failing tool: %q %+v", reply, evs)
	}
	if reply, _ := runDemo(t, Request{Content: "what did I say about dragons"}); !strings.Contains(reply, "cannot look back") {
		t.Errorf("no tool: %q", reply)
	}
}

// A message of files and no text is answered with what it carried, not
// "You said “” (0 words)".
func TestDemoFilesOnly(t *testing.T) {
	atts := []event.Attachment{{SHA256: strings.Repeat("a", 64), Name: "chart.png", Type: "image/png", Size: 2048},
		{SHA256: strings.Repeat("b", 64), Name: "notes.pdf", Type: "application/pdf", Size: 48213}}
	reply, _ := runDemo(t, Request{Content: " \n", Attachments: atts})
	if strings.Contains(reply, "You said") || strings.Contains(reply, "0 words") ||
		!strings.HasPrefix(reply, `You sent 2 files and no text: "chart.png" (image/png, 2.0 KiB)`) || !strings.Contains(reply, "notes.pdf") {
		t.Errorf("files-only reply %q", reply)
	}
}

// The recall reply gives the time in the server's zone, by name.
func TestDemoRecallLocalTime(t *testing.T) {
	inZone(t, "America/New_York")
	search := Tool{Name: "history_search", Call: func(context.Context, json.RawMessage) (string, error) {
		return `{"hits":[{"seq":4,"ts":"2026-11-21T09:29:00Z","type":"user","turn":"t4","snippet":"my cat is called Miso"}]}`, nil
	}}
	reply, _ := runDemo(t, Request{Turn: "t9", Content: "what did I say about my cat?", Tools: []Tool{search}})
	if !strings.Contains(reply, "on Sat 21 Nov 04:29 EST you said") {
		t.Errorf("reply %q", reply)
	}
}

// inZone makes zone the local time zone for the test (the package's tests
// do not run in parallel).
func inZone(t *testing.T, zone string) {
	t.Helper()
	loc, err := time.LoadLocation(zone)
	if err != nil {
		t.Skipf("no zone data for %s: %v", zone, err)
	}
	old := time.Local
	time.Local = loc
	t.Cleanup(func() { time.Local = old })
}

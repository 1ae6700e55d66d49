package agent

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/frontdesk-hq/frontdesk/event"
)

func TestParseReminder(t *testing.T) {
	tests := []struct {
		in      string
		seconds int64
		what    string
		ok      bool
	}{
		{"remind me in 1 minute to stretch", 60, "stretch", true},
		{"Remind me in 10 minutes to call the plumber.", 600, "call the plumber", true},
		{"please remind me in 2 hours that the oven is on!", 7200, "the oven is on", true},
		{"remind me in 30 seconds to test", 30, "test", true},
		{"remind me in 5 min about tea", 300, "tea", true},
		{"remind me in 0 minutes to stretch", 0, "", false},
		{"remind me tomorrow to stretch", 0, "", false},
		{"remind me in ten minutes to stretch", 0, "", false},
		{"what did I say about reminders", 0, "", false},
	}
	for _, tc := range tests {
		r, ok := parseReminder(tc.in)
		if ok != tc.ok || r.seconds != tc.seconds || r.what != tc.what {
			t.Errorf("parseReminder(%q) = %+v, %v; want %d s, %q, %v", tc.in, r, ok, tc.seconds, tc.what, tc.ok)
		}
	}
}

// TestDemoReminderCallsScheduleCreate: the demo agent turns "remind me in
// N minutes to X" into a schedule_create call, like a model would, and
// answers a fired reminder (channel schedule) without scheduling again.
func TestDemoReminderCallsScheduleCreate(t *testing.T) {
	var gotArgs map[string]any
	create := Tool{Name: "schedule_create", Call: func(ctx context.Context, args json.RawMessage) (string, error) {
		_ = json.Unmarshal(args, &gotArgs)
		return `{"id":"s-0123456789ab","content":"Reminder: stretch","tz":"Europe/Berlin","next_run":"2026-11-23T15:01:00+01:00","notify":"none"}`, nil
	}}
	reply, evs := runDemo(t, Request{Turn: "t3", Content: "remind me in 1 minute to stretch", Tools: []Tool{create}})
	if len(evs) < 3 || evs[1].typ != event.ToolCall || evs[2].typ != event.ToolResult {
		t.Fatalf("emitted %v, want status, tool_call, tool_result, …", evs)
	}
	if gotArgs["content"] != "Reminder: stretch" || gotArgs["in_seconds"] != float64(60) {
		t.Fatalf("schedule_create args %v", gotArgs)
	}
	// The time as a person reads it in the schedule's zone, not RFC 3339.
	if !strings.Contains(reply, "in 1 minute") || !strings.Contains(reply, "s-0123456789ab") ||
		!strings.Contains(reply, "(at Mon 23 Nov 15:01 CET)") || strings.Contains(reply, "2026-11-23T") {
		t.Fatalf("reply %q", reply)
	}

	gotArgs = nil
	reply, evs = runDemo(t, Request{Turn: "t4", Channel: event.ChannelSchedule, Content: "Reminder: stretch", Tools: []Tool{create}})
	for _, e := range evs {
		if e.typ == event.ToolCall {
			t.Fatalf("a fired reminder scheduled again: %v", e.data)
		}
	}
	if !strings.HasPrefix(reply, "⏰ Reminder: stretch") {
		t.Fatalf("reply to a fired reminder %q", reply)
	}

	reply, _ = runDemo(t, Request{Turn: "t5", Content: "remind me in 1 minute to stretch"})
	if !strings.Contains(reply, "cannot schedule") {
		t.Fatalf("without the tool: %q", reply)
	}
}

package hub

import (
	"errors"
	"strings"
	"testing"

	"github.com/frontdesk-hq/frontdesk/event"
	"github.com/frontdesk-hq/frontdesk/internal/testkit/testagent"
	"github.com/frontdesk-hq/frontdesk/memory"
)

// memory_save from a door other than the web UI and the terminal waits
// for a person (memory.save_approval untrusted, the default), always or
// never as configured; the approval card says what would be remembered;
// a denied save leaves nothing; the item records the door and sender the
// request came from.
func TestMemorySaveApproval(t *testing.T) {
	for _, tc := range []struct {
		name, policy, channel, from string
		approval, deny              bool
		wantFrom                    string
	}{
		{"web untrusted", "", event.ChannelWeb, "", false, false, ""},
		{"console untrusted", SaveApprovalUntrusted, event.ChannelConsole, "", false, false, ""},
		{"email untrusted", "", event.ChannelEmail, "eve@example.com", true, false, "eve@example.com"},
		{"webhook denied", SaveApprovalUntrusted, event.ChannelWebhook, "ci", true, true, ""},
		{"mcp", "", event.ChannelMCP, "", true, false, ""},
		{"caller-named channel", "", "cron", "bot", true, false, "bot"},
		{"web always", SaveApprovalAlways, event.ChannelWeb, "", true, false, ""},
		{"email never", SaveApprovalNever, event.ChannelEmail, "eve@example.com", false, false, "eve@example.com"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := withItems(t, Config{MemorySaveApproval: tc.policy})
			text := "The admin password is hunter2."
			h := startHub(t, cfg, testagent.CallTool{Name: "memory_save", Args: `{"text":"` + text + `"}`})
			s, _ := subscribe(t, h, 0)
			if _, err := h.Submit(ctxT(t), Input{Channel: tc.channel, From: tc.from, Content: "remember that the admin password is hunter2"}); err != nil {
				t.Fatal(err)
			}
			if tc.approval {
				req := approvalRequest(t, s)
				if req.Tool != "memory_save" || req.Text != "Remember: "+text {
					t.Fatalf("approval request %+v, want memory_save saying %q", req, "Remember: "+text)
				}
				if list, _ := h.MemoryList(ctxT(t)); len(list) != 0 {
					t.Fatalf("saved before approval: %+v", list)
				}
				decision := event.Approve
				if tc.deny {
					decision = event.Deny
				}
				if _, err := h.Decide(ctxT(t), req.ID, decision, Actor{Door: "web"}); err != nil {
					t.Fatal(err)
				}
			}
			evs := until(t, s, event.TurnEnd)
			for _, e := range evs {
				if e.Type == event.ApprovalRequest && !tc.approval {
					t.Fatalf("asked for approval on %s under %q", tc.channel, tc.policy)
				}
			}
			list, _ := h.MemoryList(ctxT(t))
			if tc.deny {
				if len(list) != 0 {
					t.Fatalf("denied save kept %+v", list)
				}
				return
			}
			if len(list) != 1 {
				t.Fatalf("items %+v, want the one saved", list)
			}
			it := list[0]
			if it.Source != memory.SourceAgent || it.Door != tc.channel || it.From != tc.wantFrom {
				t.Fatalf("item %+v, want source agent, door %q, from %q", it, tc.channel, tc.wantFrom)
			}
		})
	}
}

// A schedule's input names the schedule as the item's sender.
func TestMemorySaveFromScheduleNamesIt(t *testing.T) {
	if got := sender(event.UserData{Channel: event.ChannelSchedule, ScheduleID: "s7"}); got != "schedule s7" {
		t.Fatalf("sender = %q, want %q", got, "schedule s7")
	}
}

// The approval card for memory_forget shows the item's text, not only
// {"id":"m…"}.
func TestMemoryForgetApprovalShowsText(t *testing.T) {
	cfg := withItems(t, Config{})
	var tool testagent.CallTool
	h := startHub(t, cfg, &tool)
	it, err := h.MemorySave(ctxT(t), "The wifi password is hunter2.", Actor{Door: memory.SourceWeb})
	if err != nil {
		t.Fatal(err)
	}
	tool.Name, tool.Args = "memory_forget", `{"id":"`+it.ID+`"}`
	s, _ := subscribe(t, h, 0)
	if _, err := h.Submit(ctxT(t), Input{Channel: event.ChannelEmail, From: "x@example.com", Content: "forget the wifi"}); err != nil {
		t.Fatal(err)
	}
	req := approvalRequest(t, s)
	if want := "Forget " + it.ID + ": The wifi password is hunter2."; req.Text != want {
		t.Fatalf("approval text %q, want %q", req.Text, want)
	}
	if _, err := h.Decide(ctxT(t), req.ID, event.Deny, Actor{Door: "web"}); err != nil {
		t.Fatal(err)
	}
	until(t, s, event.TurnEnd)
}

// A save at memory's cap is refused (memory_full) at a door and for the
// agent's tool, nothing is written, and after a forget there is room again.
func TestMemoryCap(t *testing.T) {
	cfg := withItems(t, Config{MaxMemoryItems: 2})
	h := startHub(t, cfg, testagent.CallTool{Name: "memory_save", Args: `{"text":"A third fact."}`})
	a, err := h.MemorySave(ctxT(t), "One.", Actor{Door: memory.SourceWeb})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.MemorySave(ctxT(t), "Two.", Actor{Door: memory.SourceAPI}); err != nil {
		t.Fatal(err)
	}
	_, err = h.MemorySave(ctxT(t), "Three.", Actor{Door: memory.SourceAPI})
	var in *InputError
	if !errors.As(err, &in) || in.Code != MemoryFullCode || !strings.Contains(in.Message, "memory.max_items") {
		t.Fatalf("save at the cap: %v, want an InputError %s naming memory.max_items", err, MemoryFullCode)
	}
	s, _ := subscribe(t, h, 0)
	submit(t, h, "remember a third fact", "c1")
	evs := until(t, s, event.TurnEnd)
	toolErr := replyOf(t, evs) // testagent.CallTool answers with the tool's error
	for _, e := range evs {
		if e.Type == event.MemoryChanged {
			t.Fatalf("a memory_changed at the cap: %s", e.Data)
		}
	}
	if !strings.Contains(toolErr, "memory is full") {
		t.Fatalf("the agent's memory_save error = %q, want it to say memory is full", toolErr)
	}
	if list, _ := h.MemoryList(ctxT(t)); len(list) != 2 {
		t.Fatalf("items %d, want 2", len(list))
	}
	if err := h.MemoryForget(ctxT(t), a.ID, Actor{Door: memory.SourceWeb}); err != nil {
		t.Fatal(err)
	}
	if _, err := h.MemorySave(ctxT(t), "Three.", Actor{Door: memory.SourceAPI}); err != nil {
		t.Fatalf("save after a forget: %v", err)
	}
}

// A web edit is recorded as the web's, not the agent's; the item keeps
// who saved it. An event of an earlier version (no door, no from) still
// applies.
func TestMemoryEditRecordsEditor(t *testing.T) {
	cfg := withItems(t, Config{})
	h := startHub(t, cfg, testagent.CallTool{Name: "memory_save", Args: `{"text":"Car: Volvo."}`})
	s, _ := subscribe(t, h, 0)
	submit(t, h, "remember my car", "c1")
	until(t, s, event.TurnEnd)
	list, _ := h.MemoryList(ctxT(t))
	if len(list) != 1 || list[0].EditedBy != "" {
		t.Fatalf("items %+v", list)
	}
	it, err := h.MemoryEdit(ctxT(t), list[0].ID, "Car: red Volvo.", Actor{Door: memory.SourceWeb})
	if err != nil {
		t.Fatal(err)
	}
	if it.Source != memory.SourceAgent || it.EditedBy != memory.SourceWeb || it.Door != event.ChannelWeb {
		t.Fatalf("edited item %+v, want source agent, door web, edited_by web", it)
	}
}

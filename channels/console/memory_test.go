package console

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/frontdesk-hq/frontdesk/history"
	"github.com/frontdesk-hq/frontdesk/hub"
	"github.com/frontdesk-hq/frontdesk/internal/testkit/testagent"
	"github.com/frontdesk-hq/frontdesk/memory"
)

// memoryHub is a hub with a memory item store in a temporary directory.
func memoryHub(t *testing.T) *hub.SessionManager {
	t.Helper()
	dir := t.TempDir()
	lg, err := history.Open(history.Options{Path: filepath.Join(dir, "chat_history.ndjson"), RotateMB: 5})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { lg.Close() })
	items, err := memory.OpenItems(filepath.Join(dir, "memory"))
	if err != nil {
		t.Fatal(err)
	}
	return hub.New(hub.Config{DataDir: dir, Items: items, Logger: slog.New(slog.DiscardHandler)}, lg, &testagent.Count{N: 1})
}

// TestMemoryCommands: /memory lists every item with its id, date, source
// and text; /forget <id> forgets one (and says which), refuses an unknown
// id and a missing one with a sentence; the list after it lacks the item.
func TestMemoryCommands(t *testing.T) {
	m := memoryHub(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); m.Run(ctx) }()
	defer func() { cancel(); <-done }()

	keep, err := m.MemorySave(ctx, "my cat is called Miso", hub.Actor{Door: memory.SourceWeb})
	if err != nil {
		t.Fatal(err)
	}
	gone, err := m.MemorySave(ctx, "I take my coffee black", hub.Actor{Door: memory.SourceAgent})
	if err != nil {
		t.Fatal(err)
	}
	var out syncBuffer
	in := "/memory\n/forget " + gone.ID + "\n/forget m999999\n/forget\n/memory\n/memory all\n"
	if err := Run(ctx, m, Options{Stdin: strings.NewReader(in), Stdout: &out}); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	first, rest, ok := strings.Cut(got, "forgot "+gone.ID+" (I take my coffee black)")
	if !ok {
		t.Fatalf("no forget confirmation:\n%s", got)
	}
	date := keep.Created.Local().Format("2006-01-02 15:04")
	for _, want := range []string{keep.ID + "  " + date + "  [added in the web page]   my cat is called Miso", gone.ID, "[saved by the assistant]  I take my coffee black"} {
		if !strings.Contains(first, want) {
			t.Errorf("the first list lacks %q:\n%s", want, got)
		}
	}
	for _, want := range []string{`forget failed: no memory item "m999999" (the ids are in /memory)`, "usage: /forget <id>",
		keep.ID + "  " + date + "  [added in the web page]  my cat is called Miso", "usage: /memory"} { // alone: no padding
		if !strings.Contains(rest, want) {
			t.Errorf("after the forget, no %q:\n%s", want, got)
		}
	}
	if strings.Contains(rest, "coffee") {
		t.Errorf("the forgotten item is still listed:\n%s", got)
	}
	items, _ := m.MemoryList(ctx)
	if len(items) != 1 || items[0].ID != keep.ID {
		t.Fatalf("after the REPL: %+v", items)
	}
}

// TestMemoryChangesShowLive: a change made at another door (the web's
// save and edit, the API's forget) is printed in the terminal as it
// happens, a forgotten item without its text; an empty memory is said.
func TestMemoryChangesShowLive(t *testing.T) {
	m := memoryHub(t)
	r, stop := runREPL(m)
	defer stop()
	if _, err := io.WriteString(r.typed, "/memory\n"); err != nil {
		t.Fatal(err)
	}
	r.out.waitFor(t, "the assistant remembers nothing yet", 1)
	it, err := m.MemorySave(r.ctx, "the wifi password is on the fridge", hub.Actor{Door: memory.SourceWeb})
	if err != nil {
		t.Fatal(err)
	}
	r.out.waitFor(t, "memory: saved "+it.ID+" by web: “the wifi password is on the fridge”", 1)
	if _, err := m.MemoryEdit(r.ctx, it.ID, "the wifi password is in the drawer", hub.Actor{Door: memory.SourceWeb}); err != nil {
		t.Fatal(err)
	}
	r.out.waitFor(t, "memory: edited "+it.ID+" by web: “the wifi password is in the drawer”", 1)
	if err := m.MemoryForget(r.ctx, it.ID, hub.Actor{Door: memory.SourceAPI}); err != nil {
		t.Fatal(err)
	}
	r.out.waitFor(t, "memory: deleted "+it.ID+" by api", 1)
	if s := r.out.String(); strings.Contains(s[strings.LastIndex(s, "memory: deleted"):], "wifi") {
		t.Errorf("the forgotten text is printed again:\n%s", s)
	}
}

// TestHelpListsMemoryCommands: /help names /memory and /forget.
func TestHelpListsMemoryCommands(t *testing.T) {
	for _, want := range []string{"/memory ", "/forget <id>"} {
		if !strings.Contains(help, "\n  "+want) {
			t.Errorf("/help lacks %s:\n%s", want, help)
		}
	}
}

var idStart = regexp.MustCompile(`m[0-9]+ `)

// TestMemoryListLinesUp: /memory lists the items in the order the web
// panel does (GET /api/memory's: by id) with the text starting in the
// same column on every line, whatever the id's and the source's width;
// /forget takes "3" as well as "m4".
func TestMemoryListLinesUp(t *testing.T) {
	m := memoryHub(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); m.Run(ctx) }()
	defer func() { cancel(); <-done }()
	sources := []string{memory.SourceWeb, memory.SourceAgent, memory.SourceConsolidation, memory.SourceAPI}
	for i := range 11 {
		if _, err := m.MemorySave(ctx, fmt.Sprintf("fact number %d", i+1), hub.Actor{Door: sources[i%len(sources)]}); err != nil {
			t.Fatal(err)
		}
	}
	var out syncBuffer
	if err := Run(ctx, m, Options{Stdin: strings.NewReader("/memory\n/forget 3\n/forget m4\n"), Stdout: &out}); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	var col []int
	var order []string
	for _, line := range strings.Split(got, "\n") {
		i := strings.Index(line, "fact number ")
		if i < 0 || strings.HasPrefix(strings.TrimSpace(line), "forgot") {
			continue
		}
		start := idStart.FindStringIndex(line) // after a prompt the terminal may have printed
		if start == nil {
			t.Fatalf("no id in %q", line)
		}
		col = append(col, utf8.RuneCountInString(line[start[0]:i]))
		order = append(order, strings.Fields(line[start[0]:])[0])
	}
	if len(col) != 11 {
		t.Fatalf("%d items listed, want 11:\n%s", len(col), got)
	}
	for i, c := range col {
		if c != col[0] {
			t.Errorf("line %d: the text starts at column %d, line 1 at %d:\n%s", i+1, c, col[0], got)
		}
	}
	if want := "m1 m2 m3 m4 m5 m6 m7 m8 m9 m10 m11"; strings.Join(order, " ") != want {
		t.Errorf("listed %v, want %s (the panel's order)", order, want)
	}
	for _, want := range []string{"forgot m3 (fact number 3)", "forgot m4 (fact number 4)"} {
		if !strings.Contains(got, want) {
			t.Errorf("no %q:\n%s", want, got)
		}
	}
	if items, _ := m.MemoryList(ctx); len(items) != 9 {
		t.Errorf("%d items after two forgets, want 9", len(items))
	}
}

// /memory says who made an item and who edited it last, apart: after a
// web edit of an item the agent saved from an email, neither reads as the
// other's.
func TestMemoryListSaysMakerAndEditor(t *testing.T) {
	for _, tc := range []struct {
		it   memory.Item
		want string
	}{
		{memory.Item{Source: "agent", Door: "email", From: "eve@example.com", EditedBy: "web"},
			"saved by the assistant, asked by email (eve@example.com); edited in the web page"},
		{memory.Item{Source: "agent", Door: "console"}, "saved by the assistant, asked in the terminal"},
		{memory.Item{Source: "agent", Door: "schedule", From: "schedule s7"}, "saved by the assistant, asked in a schedule (schedule s7)"},
		{memory.Item{Source: "web", Door: "web", EditedBy: "console"}, "added in the web page; edited in the terminal"},
		{memory.Item{Source: "consolidation"}, "summarised by the assistant from a conversation"},
		{memory.Item{Source: "agent"}, "saved by the assistant"}, // an item of an earlier version
	} {
		if got := provenance(tc.it); got != tc.want {
			t.Errorf("provenance(%+v) = %q, want %q", tc.it, got, tc.want)
		}
	}
}

package hub

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/frontdesk-hq/frontdesk/agent"
	"github.com/frontdesk-hq/frontdesk/event"
	"github.com/frontdesk-hq/frontdesk/history"
	"github.com/frontdesk-hq/frontdesk/memory"
)

// withItems gives cfg a memory item store in its data directory.
func withItems(t *testing.T, cfg Config) Config {
	t.Helper()
	if cfg.DataDir == "" {
		cfg.DataDir = t.TempDir()
	}
	dir := filepath.Join(cfg.DataDir, "memory")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	items, err := memory.OpenItems(dir)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Items = items
	cfg.History = history.NewReader(filepath.Join(cfg.DataDir, "chat_history.ndjson"))
	return cfg
}

func memoryChange(t *testing.T, s *Subscription) event.MemoryChangedData {
	t.Helper()
	e := next(t, s)
	if e.Type != event.MemoryChanged || e.Seq == 0 {
		t.Fatalf("got %s (seq %d), want a logged memory_changed", e.Type, e.Seq)
	}
	return data[event.MemoryChangedData](t, e)
}

func TestMemorySaveEditForget(t *testing.T) {
	cfg := withItems(t, Config{})
	h := startHub(t, cfg, &agent.Demo{})
	s, _ := subscribe(t, h, 0)
	ctx := ctxT(t)

	it, err := h.MemorySave(ctx, "  My car is a blue Volvo.\x07 ", memory.SourceWeb)
	if err != nil {
		t.Fatal(err)
	}
	if it.Text != "My car is a blue Volvo." || it.Source != memory.SourceWeb || it.ID == "" || it.Created.IsZero() {
		t.Fatalf("saved %+v, want the cleaned text from web with an id and times", it)
	}
	if d := memoryChange(t, s); d != (event.MemoryChangedData{Action: event.MemorySaved, ID: it.ID, By: "web", Text: it.Text, Source: "web"}) {
		t.Fatalf("event %+v", d)
	}
	ed, err := h.MemoryEdit(ctx, it.ID, "My car is a red Volvo.", "console")
	if err != nil || ed.ID != it.ID || ed.Text != "My car is a red Volvo." || ed.Created != it.Created {
		t.Fatalf("edit = %+v, %v", ed, err)
	}
	if d := memoryChange(t, s); d.Action != event.MemoryEdited || d.ID != it.ID || d.By != "console" || d.Text != ed.Text {
		t.Fatalf("event %+v", d)
	}
	list, err := h.MemoryList(ctx)
	if err != nil || len(list) != 1 || list[0] != ed {
		t.Fatalf("list = %+v, %v; want [%+v]", list, err, ed)
	}
	for _, tc := range []struct {
		name string
		err  error
		want error
	}{
		{"edit unknown", func() error { _, err := h.MemoryEdit(ctx, "m999", "x", "web"); return err }(), memory.ErrNotFound},
		{"forget unknown", h.MemoryForget(ctx, "m999", "web"), memory.ErrNotFound},
		{"save empty", func() error { _, err := h.MemorySave(ctx, " \n\t", "web"); return err }(), ErrEmptyMemory},
		{"save too long", func() error {
			_, err := h.MemorySave(ctx, strings.Repeat("é", memory.MaxItemChars+1), "web")
			return err
		}(), ErrMemoryTooLong},
	} {
		if !errors.Is(tc.err, tc.want) {
			t.Errorf("%s: err %v, want %v", tc.name, tc.err, tc.want)
		}
	}
	if err := h.MemoryForget(ctx, it.ID, "api"); err != nil {
		t.Fatal(err)
	}
	if d := memoryChange(t, s); d != (event.MemoryChangedData{Action: event.MemoryDeleted, ID: it.ID, By: "api"}) {
		t.Fatalf("event %+v, want deleted with no text", d)
	}
	if list, _ := h.MemoryList(ctx); len(list) != 0 {
		t.Fatalf("list after forget = %+v", list)
	}
}

package hub

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/frontdesk-hq/frontdesk/agent"
	"github.com/frontdesk-hq/frontdesk/event"
	"github.com/frontdesk-hq/frontdesk/history"
	"github.com/frontdesk-hq/frontdesk/index"
	"github.com/frontdesk-hq/frontdesk/internal/testkit/testagent"
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

	it, err := h.MemorySave(ctx, "  My car is a blue Volvo.\x07 ", Actor{Door: memory.SourceWeb})
	if err != nil {
		t.Fatal(err)
	}
	if it.Text != "My car is a blue Volvo." || it.Source != memory.SourceWeb || it.ID == "" || it.Created.IsZero() {
		t.Fatalf("saved %+v, want the cleaned text from web with an id and times", it)
	}
	if d := memoryChange(t, s); d != (event.MemoryChangedData{Action: event.MemorySaved, ID: it.ID, By: "web", Text: it.Text, Source: "web"}) {
		t.Fatalf("event %+v", d)
	}
	ed, err := h.MemoryEdit(ctx, it.ID, "My car is a red Volvo.", Actor{Door: "console"})
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
		{"edit unknown", func() error { _, err := h.MemoryEdit(ctx, "m999", "x", Actor{Door: "web"}); return err }(), memory.ErrNotFound},
		{"forget unknown", h.MemoryForget(ctx, "m999", Actor{Door: "web"}), memory.ErrNotFound},
		{"save empty", func() error { _, err := h.MemorySave(ctx, " \n\t", Actor{Door: "web"}); return err }(), ErrEmptyMemory},
		{"save too long", func() error {
			_, err := h.MemorySave(ctx, strings.Repeat("é", memory.MaxItemChars+1), Actor{Door: "web"})
			return err
		}(), ErrMemoryTooLong},
	} {
		if !errors.Is(tc.err, tc.want) {
			t.Errorf("%s: err %v, want %v", tc.name, tc.err, tc.want)
		}
	}
	if err := h.MemoryForget(ctx, it.ID, Actor{Door: "api"}); err != nil {
		t.Fatal(err)
	}
	if d := memoryChange(t, s); d != (event.MemoryChangedData{Action: event.MemoryDeleted, ID: it.ID, By: "api"}) {
		t.Fatalf("event %+v, want deleted with no text", d)
	}
	if list, _ := h.MemoryList(ctx); len(list) != 0 {
		t.Fatalf("list after forget = %+v", list)
	}
}

// A change the chat log refuses did not happen: the caller gets the
// storage error, nobody sees an event, the item store is unchanged.
func TestMemoryChangeNotLoggedChangesNothing(t *testing.T) {
	cfg := withItems(t, Config{})
	h := startHubWithLog(t, cfg, &agent.Demo{}, failLog{})
	s, _ := subscribe(t, h, 0)
	_, err := h.MemorySave(ctxT(t), "remember me", Actor{Door: memory.SourceAPI})
	var se *StorageError
	if !errors.As(err, &se) || se.Code != StorageFailed {
		t.Fatalf("save on a failing log: %v, want a *StorageError", err)
	}
	if list, _ := h.MemoryList(ctxT(t)); len(list) != 0 {
		t.Fatalf("items after a refused save: %+v", list)
	}
	if frames, _ := s.Take(); len(frames) > 0 {
		t.Fatalf("subscriber got %s from a refused save", frames[0].Event.Type)
	}
	if _, err := os.Stat(cfg.Items.Path()); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("items.json after a refused save: %v", err)
	}
}

// The item store agrees with the log after a crash between the log line
// and the file write: the restart replays what the file missed. Here the
// file is rolled back to what it held after the first change (as a crash
// right after the later changes' log lines would leave it), and once
// removed altogether.
func TestMemoryItemsCatchUpWithLogAfterCrash(t *testing.T) {
	for _, tc := range []struct {
		name  string
		crash func(t *testing.T, path string, early []byte)
	}{
		{"file behind the log", func(t *testing.T, path string, early []byte) {
			if err := os.WriteFile(path, early, 0o600); err != nil {
				t.Fatal(err)
			}
		}},
		{"file lost", func(t *testing.T, path string, early []byte) {
			if err := os.Remove(path); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			h := startHub(t, withItems(t, Config{DataDir: dir}), &agent.Demo{})
			ctx := ctxT(t)
			a, err := h.MemorySave(ctx, "Ann runs the launch.", Actor{Door: memory.SourceWeb})
			if err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(dir, "memory", memory.ItemsFile)
			early, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := h.MemorySave(ctx, "The launch is on Friday.", Actor{Door: memory.SourceAPI})
			c, _ := h.MemorySave(ctx, "Bob is on leave.", Actor{Door: memory.SourceAgent})
			if _, err := h.MemoryEdit(ctx, a.ID, "Ann and Bo run the launch.", Actor{Door: "console"}); err != nil {
				t.Fatal(err)
			}
			if err := h.MemoryForget(ctx, c.ID, Actor{Door: "web"}); err != nil {
				t.Fatal(err)
			}
			want, _ := h.MemoryList(ctx)
			h.stop()
			tc.crash(t, path, early)

			h2 := startHub(t, withItems(t, Config{DataDir: dir, Restore: readLog(t, dir)}), &agent.Demo{})
			got, err := h2.MemoryList(ctxT(t))
			if err != nil || len(got) != 2 || got[0].ID != a.ID || got[1].ID != b.ID {
				t.Fatalf("after restart: %+v, %v; want %+v", got, err, want)
			}
			for i := range got {
				if !got[i].Created.Equal(want[i].Created) || !got[i].Updated.Equal(want[i].Updated) || got[i].Text != want[i].Text || got[i].Source != want[i].Source {
					t.Errorf("item %d after restart %+v, before %+v", i, got[i], want[i])
				}
			}
			// New ids never name an old item.
			d, err := h2.MemorySave(ctxT(t), "Cleo joins in March.", Actor{Door: memory.SourceWeb})
			if err != nil || d.ID == a.ID || d.ID == b.ID || d.ID == c.ID {
				t.Fatalf("save after restart: %+v, %v", d, err)
			}
			h2.stop()
			onDisk, err := memory.OpenItems(filepath.Join(dir, "memory"))
			if err != nil || onDisk.Len() != 3 {
				t.Fatalf("items.json after the second run: %v items, %v", onDisk.Len(), err)
			}
			st, _ := os.Stat(path)
			if st.Mode().Perm() != 0o600 {
				t.Errorf("items.json mode %v, want 0600", st.Mode().Perm())
			}
		})
	}
}

// When items.json cannot be written the change still happened (it is in
// the log): the fault shows in Info until a later write succeeds.
func TestMemoryItemsFileFaultReported(t *testing.T) {
	dir := t.TempDir()
	h := startHub(t, withItems(t, Config{DataDir: dir}), &agent.Demo{})
	heal := swapForDir(t, filepath.Join(dir, "memory", memory.ItemsFile))
	it, err := h.MemorySave(ctxT(t), "Ann runs the launch.", Actor{Door: memory.SourceWeb})
	if err != nil {
		t.Fatalf("save with items.json unwritable: %v, want success (the log has it)", err)
	}
	if info, _ := h.Info(ctxT(t)); info.Storage != StorageFailed || !strings.HasPrefix(info.StorageError, partItems+": ") {
		t.Fatalf("info = %+v, want a storage fault naming %s", info, partItems)
	}
	heal()
	if _, err := h.MemoryEdit(ctxT(t), it.ID, "Ann runs the Friday launch.", Actor{Door: "web"}); err != nil {
		t.Fatal(err)
	}
	if info, _ := h.Info(ctxT(t)); info.Storage != "" {
		t.Fatalf("info after items.json was written = %+v", info)
	}
	onDisk, _ := memory.OpenItems(filepath.Join(dir, "memory"))
	if got, ok := onDisk.Get(it.ID); !ok || got.Text != "Ann runs the Friday launch." {
		t.Fatalf("items.json holds %+v", onDisk.List())
	}
}

func TestConsolidationBecomesAnItem(t *testing.T) {
	cfg, _ := withMemory(t, Config{})
	cfg = withItems(t, cfg)
	h := startHub(t, cfg, &testagent.Count{N: 1})
	s, _ := subscribe(t, h, 0)
	talk(t, h, s, "my cat is called Miso")
	if _, err := h.Reset(ctxT(t), ResetManual, Actor{}); err != nil {
		t.Fatal(err)
	}
	until(t, s, event.Reset)
	d := memoryChange(t, s)
	if d.Action != event.MemoryConsolidated || d.By != memory.SourceConsolidation || d.Source != memory.SourceConsolidation || !strings.Contains(d.Text, "Miso") {
		t.Fatalf("consolidation event %+v", d)
	}
	list, _ := h.MemoryList(ctxT(t))
	if len(list) != 1 || list[0].ID != d.ID || list[0].Source != memory.SourceConsolidation {
		t.Fatalf("items %+v", list)
	}
	if _, err := os.Stat(filepath.Join(cfg.DataDir, "memory", memory.LongTermFile)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("long_term.md written with an item store: %v", err)
	}
}

func TestLongTermMigratedOnce(t *testing.T) {
	cfg, mem := withMemory(t, Config{})
	lt := "## 2026-11-20 10:00 UTC — idle-timeout (2 exchanges)\n\nThe user's cat is Miso.\n\n" +
		"## 2026-11-21 10:00 UTC — manual (1 exchange)\n\nThe launch is on Friday.\n"
	path := filepath.Join(mem.Dir(), memory.LongTermFile)
	if err := os.WriteFile(path, []byte(lt), 0o600); err != nil {
		t.Fatal(err)
	}
	h := startHub(t, withItems(t, cfg), &agent.Demo{})
	list, _ := h.MemoryList(ctxT(t))
	if len(list) != 2 || !strings.Contains(list[0].Text, "Miso") || !strings.HasPrefix(list[1].Text, "2026-11-21 10:00 UTC") ||
		list[0].Source != memory.SourceConsolidation {
		t.Fatalf("items after migration: %+v", list)
	}
	h.stop()
	if kept, err := os.ReadFile(path + ".migrated"); err != nil || string(kept) != lt {
		t.Fatalf("long_term.md.migrated: %q, %v; want the old file", kept, err)
	}
	// A crash before the rename: the file is back, the items are there.
	if err := os.Rename(path+".migrated", path); err != nil {
		t.Fatal(err)
	}
	raw, _ := os.ReadFile(filepath.Join(cfg.DataDir, "memory", memory.ItemsFile))
	if err := os.WriteFile(filepath.Join(cfg.DataDir, "memory", memory.ItemsFile), []byte(strings.Replace(string(raw), `"migrated": true`, `"migrated": false`, 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg.Restore = readLog(t, cfg.DataDir)
	h2 := startHub(t, withItems(t, cfg), &agent.Demo{})
	if list, _ := h2.MemoryList(ctxT(t)); len(list) != 2 {
		t.Fatalf("items after migrating again: %d, want 2 (no doubles)", len(list))
	}
}

// The turn's context carries the items within the budget, newest and most
// used first, and says how the rest are found.
func TestMemoryInContextWithinBudget(t *testing.T) {
	cfg := withItems(t, Config{MemoryContextTokens: 40})
	rec := newRecorder()
	rec.Free = true
	h := startHub(t, cfg, rec)
	s, _ := subscribe(t, h, 0)
	ctx := ctxT(t)
	old, _ := h.MemorySave(ctx, "The user's cat is called Miso and likes tuna.", Actor{Door: memory.SourceWeb})
	mid, _ := h.MemorySave(ctx, "The launch is on Friday at nine in the morning.", Actor{Door: memory.SourceWeb})
	newest, _ := h.MemorySave(ctx, "Bob is on leave in March.", Actor{Door: memory.SourceWeb})
	submit(t, h, "hi", "c1")
	lt := rec.ran(t).LongTermMemory
	until(t, s, event.TurnEnd) // the session is free for the next input
	if !strings.Contains(lt, "["+newest.ID+"] Bob") || !strings.Contains(lt, "["+mid.ID+"]") || strings.Contains(lt, old.ID) ||
		strings.Index(lt, newest.ID) > strings.Index(lt, mid.ID) || !strings.Contains(lt, "1 older or less used item is not shown") {
		t.Fatalf("context memory:\n%s", lt)
	}
	// A search that finds the old item brings it back to the front.
	h.noteUses(SearchResult{Hits: []Hit{{Type: "memory", Snippet: "[" + old.ID + "] The user's «cat» is called Miso"}}})
	submit(t, h, "hi again", "c2")
	lt = rec.ran(t).LongTermMemory
	if !strings.HasPrefix(strings.SplitN(lt, "\n", 3)[1], "- ["+old.ID+"]") {
		t.Fatalf("after a search found %s, context memory:\n%s", old.ID, lt)
	}
	if u := cfg.Items.Uses(old.ID); u.Count != 1 {
		t.Errorf("uses of %s = %+v", old.ID, u)
	}
}

func TestAgentSavesAndForgets(t *testing.T) {
	cfg := withItems(t, Config{})
	h := startHub(t, cfg, testagent.CallTool{Name: "memory_save", Args: `{"text":"The user's car is a blue Volvo."}`})
	s, _ := subscribe(t, h, 0)
	submit(t, h, "remember that my car is a blue Volvo", "c1")
	evs := until(t, s, event.TurnEnd)
	var d event.MemoryChangedData
	for _, e := range evs {
		if e.Type == event.MemoryChanged {
			d = data[event.MemoryChangedData](t, e)
			if e.Turn == "" {
				t.Errorf("the agent's memory_changed has no turn")
			}
			if d.ID != "m1" {
				t.Errorf("item id %s, want m1 (the first item)", d.ID)
			}
		}
	}
	if d.Action != event.MemorySaved || d.By != ByAgent || d.Source != memory.SourceAgent || d.Text != "The user's car is a blue Volvo." {
		t.Fatalf("memory_changed from the tool: %+v", d)
	}
	if !strings.Contains(replyOf(t, evs), `"id":"`+d.ID+`"`) {
		t.Errorf("tool output %q does not name the id", replyOf(t, evs))
	}
}

// memory_forget runs at once on a turn from the web UI, and waits for a
// person's approval on one from the webhook (or email).
func TestMemoryForgetApproval(t *testing.T) {
	for _, tc := range []struct {
		channel  string
		approval bool
	}{
		{event.ChannelWeb, false},
		{event.ChannelConsole, false},
		{event.ChannelWebhook, true},
		{event.ChannelEmail, true},
		{"cron", true},
	} {
		t.Run(tc.channel, func(t *testing.T) {
			cfg := withItems(t, Config{})
			var tool testagent.CallTool
			h := startHub(t, cfg, &tool)
			it, _ := h.MemorySave(ctxT(t), "The user's car is a blue Volvo.", Actor{Door: memory.SourceWeb})
			tool.Name, tool.Args = "memory_forget", `{"id":"`+it.ID+`"}`
			s, _ := subscribe(t, h, 0)
			if _, err := h.Submit(ctxT(t), Input{Channel: tc.channel, From: "x@example.com", Content: "forget my car"}); err != nil {
				t.Fatal(err)
			}
			if tc.approval {
				req := approvalRequest(t, s)
				if req.Tool != "memory_forget" || string(req.Args) != tool.Args {
					t.Fatalf("approval request %+v", req)
				}
				if list, _ := h.MemoryList(ctxT(t)); len(list) != 1 {
					t.Fatalf("item gone before approval")
				}
				if _, err := h.Decide(ctxT(t), req.ID, event.Approve, Actor{Door: "web"}); err != nil {
					t.Fatal(err)
				}
			}
			evs := until(t, s, event.TurnEnd)
			if !strings.Contains(replyOf(t, evs), `"forgotten":"`+it.ID+`"`) {
				t.Fatalf("reply %q", replyOf(t, evs))
			}
			if list, _ := h.MemoryList(ctxT(t)); len(list) != 0 {
				t.Fatalf("items after forget: %+v", list)
			}
		})
	}
}

// Items are searchable as type:memory, named by their id; a forgotten one
// is gone from search.
func TestMemoryItemsSearchableUntilForgotten(t *testing.T) {
	cfg := withItems(t, Config{})
	f, err := index.NewFollower(index.FollowerOptions{Path: filepath.Join(cfg.DataDir, index.FileName),
		Log: history.NewReader(filepath.Join(cfg.DataDir, "chat_history.ndjson")).Since, Logger: slog.New(slog.DiscardHandler),
		Memory: func() ([]index.Doc, error) {
			var docs []index.Doc
			for _, it := range cfg.Items.List() {
				docs = append(docs, index.Doc{TS: it.Updated, Content: memory.Doc(it)})
			}
			return docs, nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); f.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	cfg.Index = f
	h := startHub(t, cfg, &agent.Demo{})
	it, err := h.MemorySave(ctxT(t), "The wifi password at the cabin is larch-lake-42.", Actor{Door: memory.SourceWeb})
	if err != nil {
		t.Fatal(err)
	}
	// The index follows memory on its own goroutine: wait for it, with a
	// deadline.
	waitHits := func(want int) SearchResult {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for {
			res, err := h.SearchIndex(ctxT(t), "cabin wifi type:memory", index.Options{Limit: 5})
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Hits) == want {
				return res
			}
			if time.Now().After(deadline) {
				t.Fatalf("search found %+v, want %d hits", res.Hits, want)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	res := waitHits(1)
	if ids := memory.IDsIn(res.Hits[0].Snippet); len(ids) != 1 || ids[0] != it.ID {
		t.Fatalf("hit %+v does not name %s", res.Hits[0], it.ID)
	}
	if err := h.MemoryForget(ctxT(t), it.ID, Actor{Door: "web"}); err != nil {
		t.Fatal(err)
	}
	waitHits(0)
}

// TestMemoryShortIDsFromOldDataDir: a data directory from before short
// ids (items m3, m9, m15: their events' seqs; items.json without a
// counter) starts with the items numbered m1, m2, m4 from the log — m3 is
// skipped while m1's old id is m3 — its old ids still name them, "2"
// names m2, and the next item saved is m5.
func TestMemoryShortIDsFromOldDataDir(t *testing.T) {
	dir := t.TempDir()
	lg, err := history.Open(history.Options{Path: filepath.Join(dir, "chat_history.ndjson"), RotateMB: 5, Fsync: history.FsyncNever})
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	var fileItems []string
	for seq := int64(1); seq <= 16; seq++ {
		e := event.New(event.Notice, "", t0, event.TextData{Text: "n"})
		if seq%6 == 3 {
			id := "m" + strconv.FormatInt(seq, 10)
			e = event.New(event.MemoryChanged, "", t0, event.MemoryChangedData{Action: event.MemorySaved, ID: id, By: "web", Text: "fact " + id, Source: memory.SourceWeb})
			fileItems = append(fileItems, `{"id":"`+id+`","text":"fact `+id+`","source":"web","created":"2026-11-22T10:00:00Z","updated":"2026-11-22T10:00:00Z"}`)
		}
		e.Seq = seq
		if err := lg.Append(e); err != nil {
			t.Fatal(err)
		}
	}
	lg.Close()
	os.MkdirAll(filepath.Join(dir, "memory"), 0o700)
	old := `{"version":1,"applied_seq":16,"items":[` + strings.Join(fileItems, ",") + `]}`
	if err := os.WriteFile(filepath.Join(dir, "memory", memory.ItemsFile), []byte(old), 0o600); err != nil {
		t.Fatal(err)
	}

	h := startHub(t, withItems(t, Config{DataDir: dir, Restore: readLog(t, dir)}), &agent.Demo{})
	ctx := ctxT(t)
	list, _ := h.MemoryList(ctx)
	var got []string
	for _, it := range list {
		got = append(got, it.ID+"="+it.Text)
	}
	if strings.Join(got, " ") != "m1=fact m3 m2=fact m9 m4=fact m15" {
		t.Fatalf("items %v; want m1, m2, m4 (m3 skipped while an old id)", got)
	}
	if _, err := h.MemoryEdit(ctx, "m15", "fact m15, edited", Actor{Door: "console"}); err != nil {
		t.Errorf("edit by the old id: %v", err)
	}
	if err := h.MemoryForget(ctx, "2", Actor{Door: "console"}); err != nil {
		t.Errorf("forget 2: %v", err)
	}
	it, err := h.MemorySave(ctx, "a new fact", Actor{Door: memory.SourceWeb})
	if err != nil || it.ID != "m5" {
		t.Errorf("new item %+v, %v; want m5", it, err)
	}
	list, _ = h.MemoryList(ctx)
	got = got[:0]
	for _, it := range list {
		got = append(got, it.ID+"="+it.Text)
	}
	if strings.Join(got, " ") != "m1=fact m3 m4=fact m15, edited m5=a new fact" {
		t.Errorf("after the changes: %v", got)
	}
}

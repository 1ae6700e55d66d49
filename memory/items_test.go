package memory

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/frontdesk-hq/frontdesk/event"
)

func change(seq int64, ts time.Time, d event.MemoryChangedData) event.Event {
	e := event.New(event.MemoryChanged, "", ts, d)
	e.Seq = seq
	return e
}

// Applying the same events twice (a replay after a crash) changes nothing
// the second time; events of other types only move Applied.
func TestItemsApplyIsIdempotent(t *testing.T) {
	t0 := time.Date(2026, 11, 22, 10, 0, 0, 123456789, time.UTC)
	evs := []event.Event{
		change(3, t0, event.MemoryChangedData{Action: event.MemorySaved, ID: "m3", By: "web", Text: "a", Source: SourceWeb}),
		event.New(event.User, "t4", t0, event.UserData{Channel: "web", Content: "hi"}),
		change(5, t0.Add(time.Second), event.MemoryChangedData{Action: event.MemoryEdited, ID: "m3", By: "api", Text: "b"}),
		change(6, t0, event.MemoryChangedData{Action: event.MemoryConsolidated, ID: "m6", By: "consolidation", Text: "c", Source: SourceConsolidation}),
		change(7, t0, event.MemoryChangedData{Action: event.MemoryDeleted, ID: "m6", By: "web"}),
		change(8, t0, event.MemoryChangedData{Action: "archived", ID: "m3", By: "web"}), // a later version's action
	}
	evs[1].Seq = 4
	s, err := OpenItems(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for round := range 2 {
		for _, e := range evs {
			if _, err := s.Apply(e); err != nil {
				t.Fatal(err)
			}
		}
		list := s.List()
		// Saved before short ids (as m3, its event's seq): now m1, m3 still names it.
		want := Item{ID: "m1", Old: "m3", Text: "b", Source: SourceWeb, EditedBy: "api", Created: t0.Truncate(time.Millisecond), Updated: t0.Add(time.Second).Truncate(time.Millisecond)}
		if len(list) != 1 || list[0] != want || s.Applied() != 8 {
			t.Fatalf("round %d: %+v applied %d, want [%+v] applied 8", round, list, s.Applied(), want)
		}
	}
	bad := event.Event{Seq: 9, Type: event.MemoryChanged, Data: []byte(`{"action":1}`)}
	if _, err := s.Apply(bad); err == nil || s.Applied() != 8 {
		t.Fatalf("unreadable event: err %v, applied %d", err, s.Applied())
	}
}

func TestItemsSaveAndOpen(t *testing.T) {
	dir := t.TempDir()
	s, _ := OpenItems(dir)
	s.Apply(change(1, time.Now(), event.MemoryChangedData{Action: event.MemorySaved, ID: "m1", Text: "x", Source: SourceAPI}))
	s.Use(time.Now(), "m1", "m404")
	if err := s.Save(); err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(s.Path())
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("items.json: %v, mode %v", err, st.Mode().Perm())
	}
	again, err := OpenItems(dir)
	if err != nil || again.Len() != 1 || again.Applied() != 1 || again.Uses("m1").Count != 1 {
		t.Fatalf("reopened: %+v applied %d uses %+v, %v", again.List(), again.Applied(), again.Uses("m1"), err)
	}
	for name, body := range map[string]string{"damaged": `{"version":1,"items":[`, "other version": `{"version":2,"items":[]}`} {
		if err := os.WriteFile(filepath.Join(dir, ItemsFile), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := OpenItems(dir); err == nil || !strings.Contains(err.Error(), ItemsFile) {
			t.Errorf("%s items.json: err %v, want one naming the file", name, err)
		}
	}
}

func TestItemsForContext(t *testing.T) {
	s, _ := OpenItems(t.TempDir())
	t0 := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	for i, text := range []string{"oldest item text", "middle item text", "newest item text"} {
		id := "m" + string(rune('1'+i))
		s.Apply(change(int64(i+1), t0.Add(time.Duration(i)*time.Minute), event.MemoryChangedData{Action: event.MemorySaved, ID: id, Text: text}))
	}
	ids := func(items []Item) string {
		var b []string
		for _, it := range items {
			b = append(b, it.ID)
		}
		return strings.Join(b, ",")
	}
	ranked, fit := s.ForContext(0)
	if ids(ranked) != "m3,m2,m1" || fit != 3 {
		t.Fatalf("no budget: %s fit %d", ids(ranked), fit)
	}
	// Each item is "[mN] xxxxx item text" (21 bytes: 6 tokens) + 4.
	if _, fit := s.ForContext(20); fit != 2 {
		t.Fatalf("budget 20: fit %d, want 2", fit)
	}
	// A use brings the oldest to the front.
	s.Use(t0.Add(time.Hour), "m1")
	if ranked, _ := s.ForContext(0); ids(ranked) != "m1,m3,m2" {
		t.Fatalf("after a use of m1: %s", ids(ranked))
	}
}

func TestIDsIn(t *testing.T) {
	for in, want := range map[string]string{
		"[m42] The user's car is a blue Volvo.": "m42",
		"«car» [m1] x [m2] y [m1]":              "m1,m2",
		"[x42] no [m] ids":                      "",
	} {
		if got := strings.Join(IDsIn(in), ","); got != want {
			t.Errorf("IDsIn(%q) = %q, want %q", in, got, want)
		}
	}
}

// BenchmarkItemsSave measures one change's write of items.json (the whole
// file, fsynced, renamed) with 1000 items of about 100 bytes.
func BenchmarkItemsSave(b *testing.B) {
	s, _ := OpenItems(b.TempDir())
	for i := range 1000 {
		s.Apply(change(int64(i+1), time.Now(), event.MemoryChangedData{Action: event.MemorySaved, ID: "m" + strconv.Itoa(i+1),
			Text: strings.Repeat("The user's car is a blue Volvo. ", 3)}))
	}
	b.ResetTimer()
	for b.Loop() {
		if err := s.Save(); err != nil {
			b.Fatal(err)
		}
	}
	st, _ := os.Stat(s.Path())
	b.ReportMetric(float64(st.Size()), "file_bytes")
}

// TestItemsShortIDs: ids count up from m1 as items are saved (the holder
// asks NextID and puts it in the event), "3" names m3, and a replay of
// the same events — another node, a rebuilt items.json — gives the same
// ids. Items saved before short ids (their ids were their events' seqs)
// are numbered as they are replayed and keep their old id; a number an
// old id still uses is skipped, so an id names one item.
func TestItemsShortIDs(t *testing.T) {
	t0 := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	var evs []event.Event
	seq := int64(0)
	add := func(s *Items, action, id, text string) {
		seq += 7 // other events between
		e := change(seq, t0, event.MemoryChangedData{Action: action, ID: id, By: "web", Text: text, Source: SourceWeb})
		if _, err := s.Apply(e); err != nil {
			t.Fatal(err)
		}
		evs = append(evs, e)
	}
	holder, _ := OpenItems(t.TempDir())
	// Three saved before short ids, at seqs 3, 9 and 15.
	for _, x := range []struct{ seq int64 }{{3}, {9}, {15}} {
		seq = x.seq - 7
		add(holder, event.MemorySaved, "m"+strconv.FormatInt(x.seq, 10), "old "+strconv.FormatInt(x.seq, 10))
	}
	add(holder, event.MemoryEdited, "m9", "old 9, edited") // an old event names the old id
	for _, text := range []string{"new a", "new b"} {
		add(holder, event.MemorySaved, holder.NextID(), text)
	}
	add(holder, event.MemoryDeleted, "m1", "")
	add(holder, event.MemorySaved, holder.NextID(), "new c")

	ids := func(s *Items) string {
		var b strings.Builder
		for _, it := range s.List() {
			fmt.Fprintf(&b, "%s(%s)=%s ", it.ID, it.Old, it.Text)
		}
		return b.String()
	}
	// m3 is skipped while the first item's old id is m3.
	want := "m2(m9)=old 9, edited m4(m15)=old 15 m5()=new a m6()=new b m7()=new c "
	if got := ids(holder); got != want {
		t.Errorf("ids %q, want %q", got, want)
	}
	for _, name := range []string{"m4", "4", "M4", "m15"} {
		if it, ok := holder.Get(name); !ok || it.Text != "old 15" {
			t.Errorf("Get(%q) = %+v, %v; want the item once saved as m15", name, it, ok)
		}
	}
	for _, name := range []string{"m1", "m3", "1", "04", "m", ""} {
		if it, ok := holder.Get(name); ok {
			t.Errorf("Get(%q) = %+v; want none (forgotten, or no id)", name, it)
		}
	}
	replay, _ := OpenItems(t.TempDir())
	for _, e := range evs {
		replay.Apply(e)
	}
	if got := ids(replay); got != want {
		t.Errorf("replayed: %q, want %q", got, want)
	}
	if next := replay.NextID(); next != "m8" {
		t.Errorf("next id %s, want m8", next)
	}
}

// TestItemsFileBeforeShortIDs: items.json written before short ids asks
// to be renumbered (the hub replays the log), keeping what was counted of
// its uses under the new ids.
func TestItemsFileBeforeShortIDs(t *testing.T) {
	dir := t.TempDir()
	old := `{"version":1,"applied_seq":20,"items":[{"id":"m15","text":"x","source":"web","created":"2026-11-22T10:00:00Z","updated":"2026-11-22T10:00:00Z"}],"uses":{"m15":{"count":4,"last":"2026-11-22T11:00:00Z"}}}`
	if err := os.WriteFile(filepath.Join(dir, ItemsFile), []byte(old), 0o600); err != nil {
		t.Fatal(err)
	}
	s, err := OpenItems(dir)
	if err != nil || !s.NeedsRenumber() {
		t.Fatalf("open: %v, needs renumber %v; want true", err, s.NeedsRenumber())
	}
	s.Renumber()
	s.Apply(change(15, time.Now(), event.MemoryChangedData{Action: event.MemorySaved, ID: "m15", Text: "x", Source: SourceWeb}))
	if it, ok := s.Get("m15"); !ok || it.ID != "m1" || s.Uses("m1").Count != 4 || s.NeedsRenumber() {
		t.Errorf("after the replay: %+v %v, uses %+v, needs renumber %v", it, ok, s.Uses("m1"), s.NeedsRenumber())
	}
	fresh, _ := OpenItems(t.TempDir())
	if fresh.NeedsRenumber() || fresh.NextID() != "m1" {
		t.Errorf("a new store: needs renumber %v, next %s", fresh.NeedsRenumber(), fresh.NextID())
	}
}

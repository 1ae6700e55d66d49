package hub

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/frontdesk-hq/frontdesk/agent"
	"github.com/frontdesk-hq/frontdesk/event"
	"github.com/frontdesk-hq/frontdesk/internal/testkit/testagent"
	"github.com/frontdesk-hq/frontdesk/memory"
)

// requests is an agent that answers "ok" and keeps each turn's request.
type requests struct {
	mu   sync.Mutex
	reqs []agent.Request
}

func (r *requests) Run(ctx context.Context, req agent.Request, emit agent.Emitter) (agent.Reply, error) {
	r.mu.Lock()
	r.reqs = append(r.reqs, req)
	r.mu.Unlock()
	return agent.Reply{Content: "ok"}, nil
}

func (r *requests) last() agent.Request {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.reqs[len(r.reqs)-1]
}

// runTurn submits content and waits for its turn to end; it returns the
// user event's seq.
func runTurn(t *testing.T, h *testHub, content string) int64 {
	t.Helper()
	done := make(chan TurnOutcome, 1)
	res, err := h.Submit(ctxT(t), Input{Channel: event.ChannelWeb, Content: content, Done: done})
	if err != nil || res.Outcome != Started {
		t.Fatalf("submit: %v %v", res.Outcome, err)
	}
	<-done
	return res.Echo.Event.Seq
}

// An erase: the erased event goes to the log and to every subscriber,
// Config.Erased gets it, the message's tombstone replaces it in the
// replay and in the next turn's context, a memory item quoting it is
// edited (the quote removed) and one that is nothing but the quote is
// deleted — both by "erase", and the events that carried their text are
// erased too; an item that does not quote it stays. Refusals are typed.
func TestEraseMessage(t *testing.T) {
	erased := make(chan event.ErasedData, 16)
	cfg := withItems(t, Config{Erased: func(d event.ErasedData) { erased <- d }})
	rec := &requests{}
	h := startHub(t, cfg, rec)
	ctx := ctxT(t)
	// A turn first, so that no item's id (m1, m2, …) is the seq of the
	// event that saved it.
	runTurn(t, h, "Good morning.")
	partial, err := h.MemorySave(ctx, "Lives in Lisbon. The wifi password is quokkablue at home.", Actor{Door: memory.SourceWeb})
	if err != nil {
		t.Fatal(err)
	}
	whole, err := h.MemorySave(ctx, "the wifi password is quokkablue at home", Actor{Door: memory.SourceAgent})
	if err != nil {
		t.Fatal(err)
	}
	other, err := h.MemorySave(ctx, "Likes green tea.", Actor{Door: memory.SourceWeb})
	if err != nil {
		t.Fatal(err)
	}
	savedSeq := map[string]int64{}
	for _, id := range []string{partial.ID, whole.ID, other.ID} {
		savedSeq[id] = savedAt(t, h, id)
	}
	seq := runTurn(t, h, "the wifi password is quokkablue at home")
	s, _ := subscribe(t, h, seq)

	d, err := h.Erase(ctx, seq, Actor{Door: event.ChannelWeb})
	if err != nil {
		t.Fatal(err)
	}
	if d.Seq != seq || d.By != event.ChannelWeb || d.Type != event.User || d.Channel != event.ChannelWeb {
		t.Errorf("Erase = %+v, want seq %d of a user message by web", d, seq)
	}
	var got []event.Event
	for len(got) < 5 { // erased, two memory_changed, two erased (the items' saves)
		if e := next(t, s); e.Seq > 0 {
			got = append(got, e)
		}
	}
	if want, _ := json.Marshal(d); got[0].Type != event.Erased || string(got[0].Data) != string(want) {
		t.Errorf("first event %s %s, want erased %+v", got[0].Type, got[0].Data, d)
	}
	changes := map[string]event.MemoryChangedData{}
	itemErased := map[int64]bool{}
	for _, e := range got[1:] {
		switch e.Type {
		case event.MemoryChanged:
			c := data[event.MemoryChangedData](t, e)
			changes[c.ID] = c
		case event.Erased:
			itemErased[data[event.ErasedData](t, e).Seq] = true
		}
	}
	if c := changes[partial.ID]; c.Action != event.MemoryEdited || c.By != memory.ByErase || c.Text != "Lives in Lisbon." {
		t.Errorf("the item that quoted part: %+v, want edited by erase to %q", c, "Lives in Lisbon.")
	}
	if c := changes[whole.ID]; c.Action != event.MemoryDeleted || c.By != memory.ByErase {
		t.Errorf("the item that was the quote: %+v, want deleted by erase", c)
	}
	if _, ok := changes[other.ID]; ok {
		t.Errorf("an item that does not quote the message changed: %+v", changes[other.ID])
	}
	for _, id := range []string{partial.ID, whole.ID} {
		if !itemErased[savedSeq[id]] {
			t.Errorf("the event that saved %s was not erased (erased: %v)", id, itemErased)
		}
	}
	for range 3 {
		if g := <-erased; g.Seq != seq && !itemErased[g.Seq] {
			t.Errorf("Config.Erased got %+v", g)
		}
	}

	_, snap := subscribe(t, h, 0)
	for _, f := range snap.Replay {
		if strings.Contains(string(f.JSON), "quokkablue") {
			t.Errorf("the replay still holds the text: %s", f.JSON)
		}
		if f.Event.Seq == seq && !event.IsTombstone(f.Event) {
			t.Errorf("replay's seq %d is %s, want the tombstone", seq, f.JSON)
		}
	}
	runTurn(t, h, "what is the wifi password?")
	req := rec.last()
	// What the conversation can be in (the tools are functions, no text).
	b, _ := json.Marshal([]any{req.Content, req.LongTermMemory, req.Context, req.Notes})
	if strings.Contains(string(b), "quokkablue") {
		t.Errorf("the next turn's request still holds the text: %s", b)
	}

	for _, c := range []struct {
		seq  int64
		want error
	}{
		{seq, ErrAlreadyErased}, {seq + 2, ErrNotMessage}, {savedSeq[other.ID], ErrNotMessage},
		{1 << 40, ErrNoEvent}, {0, ErrBadSeq}, {-1, ErrBadSeq},
	} {
		if _, err := h.Erase(ctx, c.seq, Actor{Door: event.ChannelWeb}); !errors.Is(err, c.want) {
			t.Errorf("Erase(%d) = %v, want %v", c.seq, err, c.want)
		}
	}
}

func savedAt(t *testing.T, h *testHub, id string) int64 {
	t.Helper()
	evs, _, err := h.Range(ctxT(t), "1", "", 1000)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range evs {
		if e.Type == event.MemoryChanged && data[event.MemoryChangedData](t, e).ID == id {
			return e.Seq
		}
	}
	t.Fatalf("no memory_changed event saved %s", id)
	return 0
}

// A restart replays the memory items from a log whose events that carried
// an item's text are tombstones: the item the erase edited comes back with
// the edit's text, the deleted one stays gone, nothing fails.
func TestErasedItemsRebuildFromTheLog(t *testing.T) {
	dir := t.TempDir()
	cfg := withItems(t, Config{DataDir: dir})
	h := startHub(t, cfg, &requests{})
	ctx := ctxT(t)
	// The item that is nothing but the quote is deleted, its save erased.
	if _, err := h.MemorySave(ctx, "the wifi password is quokkablue at home", Actor{Door: memory.SourceAgent}); err != nil {
		t.Fatal(err)
	}
	partial, _ := h.MemorySave(ctx, "Lives in Lisbon. The wifi password is quokkablue at home.", Actor{Door: memory.SourceWeb})
	seq := runTurn(t, h, "the wifi password is quokkablue at home")
	if _, err := h.Erase(ctx, seq, Actor{Door: event.ChannelWeb}); err != nil {
		t.Fatal(err)
	}
	// A save after the erase: its id was counted past the erased save's.
	later, _ := h.MemorySave(ctx, "Likes green tea.", Actor{Door: memory.SourceWeb})
	h.stop()
	// The files as an Applier leaves them: every erased event's line its tombstone.
	evs := readLog(t, dir)
	for _, e := range evs {
		var d event.ErasedData
		if e.Type == event.Erased && e.Decode(&d) == nil {
			for i := range evs {
				if evs[i].Seq == d.Seq {
					evs[i] = event.Tombstone(d)
				}
			}
		}
	}
	cfg2 := withItems(t, Config{DataDir: t.TempDir(), Restore: evs})
	cfg2.History = nil // replay from Restore
	h2 := startHub(t, cfg2, &requests{})
	items, err := h2.MemoryList(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(items) != 2 || items[0].ID != partial.ID || items[0].Text != "Lives in Lisbon." || items[0].Source != memory.SourceWeb {
		t.Errorf("items rebuilt from the log: %+v, want %s \"Lives in Lisbon.\" from web", items, partial.ID)
	}
	if len(items) == 2 && (items[1].ID != later.ID || items[1].Old != "") {
		t.Errorf("the item saved after the erase came back as %+v, want id %s as it was given", items[1], later.ID)
	}
}

// An erased event in the tail the hub restarts from stands for its
// message at once (the files may not have been rewritten before a
// crash), and Config.Erased gets it again.
func TestRestartAppliesErasuresAgain(t *testing.T) {
	dir := t.TempDir()
	h := startHub(t, Config{DataDir: dir}, &requests{})
	seq := runTurn(t, h, "the wifi password is quokkablue")
	if _, err := h.Erase(ctxT(t), seq, Actor{Door: event.ChannelConsole}); err != nil {
		t.Fatal(err)
	}
	h.stop()
	again := make(chan event.ErasedData, 4)
	h2 := startHub(t, Config{DataDir: dir, Restore: readLog(t, dir), Erased: func(d event.ErasedData) { again <- d }}, &requests{})
	_, snap := subscribe(t, h2, 0)
	for _, f := range snap.Replay {
		if strings.Contains(string(f.JSON), "quokkablue") {
			t.Errorf("after a restart the replay holds the text: %s", f.JSON)
		}
	}
	if d := <-again; d.Seq != seq || d.By != event.ChannelConsole {
		t.Errorf("Config.Erased at start got %+v, want seq %d by console", d, seq)
	}
	if _, err := h2.Erase(ctxT(t), seq, Actor{Door: event.ChannelWeb}); !errors.Is(err, ErrAlreadyErased) {
		t.Errorf("Erase after the restart = %v, want ErrAlreadyErased", err)
	}
}

// A follower forwards an erase to the holder, which judges it as its own
// door would: by a door that forwards, a seq ≥ 1, a message not erased
// yet. The follower's clients get the erased event from the log, and its
// replay shows the tombstone.
func TestForwardedErase(t *testing.T) {
	s, c := newMemStream(), &memCluster{}
	g := testagent.NewGate()
	a, _ := joinNode(t, s, c, Config{DataDir: t.TempDir()}, g)
	b, _ := joinNode(t, s, c, Config{DataDir: t.TempDir()}, g)
	c.lead(t, a, s)
	res, err := a.Submit(ctxT(t), Input{Channel: event.ChannelWeb, Content: "the wifi password is quokkablue"})
	if err != nil {
		t.Fatal(err)
	}
	seq := res.Echo.Event.Seq
	sub, _ := subscribe(t, b, seq)
	for _, tc := range []struct {
		name string
		req  wireErase
		code string
	}{
		{"by the agent", wireErase{Seq: seq, By: "agent"}, "bad_by"},
		{"by a forged name", wireErase{Seq: seq, By: strings.Repeat("x", 5000)}, "bad_by"},
		{"seq 0", wireErase{Seq: 0, By: "web"}, "bad_seq"},
		{"unknown seq", wireErase{Seq: 1 << 40, By: "web"}, "no_event"},
	} {
		if got := serveRaw(t, a, opErase, tc.req); got != tc.code {
			t.Errorf("%s: answered %q, want %q", tc.name, got, tc.code)
		}
	}
	d, err := b.Erase(ctxT(t), seq, Actor{Door: event.ChannelWeb})
	if err != nil || d.Seq != seq || d.By != event.ChannelWeb {
		t.Fatalf("erase through the follower: %+v, %v", d, err)
	}
	if e := until(t, sub, event.Erased); data[event.ErasedData](t, e[len(e)-1]).Seq != seq {
		t.Errorf("the follower's client got %s", e[len(e)-1].Data)
	}
	_, snap := subscribe(t, b, 0)
	for _, f := range snap.Replay {
		if strings.Contains(string(f.JSON), "quokkablue") {
			t.Errorf("the follower's replay still holds the text: %s", f.JSON)
		}
	}
	if _, err := b.Erase(ctxT(t), seq, Actor{Door: event.ChannelWeb}); !errors.Is(err, ErrAlreadyErased) {
		t.Errorf("erasing again through the follower: %v, want ErrAlreadyErased", err)
	}
	g.Release <- struct{}{}
}
